package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/app/job"
)

// Workspace is one job's independent checkout. Dir holds only the files (no
// .git); GitDir is its repository, kept beside it.
type Workspace struct {
	ID      string
	Dir     string // the checkout the model edits and the sandbox mounts
	GitDir  string // the checkout's repository, never mounted
	Branch  string // local branch checked out
	BaseSHA string // commit the branch started from
	Repo    job.Repo

	root   string
	remote string
}

// Scratch is a directory of the workspace's own, beside its checkout and
// repository and removed with them, for a job's temporary copies (the
// pristine base): in the data directory, never the host's /tmp.
func (w *Workspace) Scratch() string { return w.root }

// Remove deletes the workspace: checkout and repository.
func (w *Workspace) Remove() error {
	if w == nil || w.root == "" {
		return nil
	}
	if err := os.RemoveAll(w.root); err != nil {
		return fmt.Errorf("remove workspace %s: %w", w.ID, err)
	}
	return nil
}

// WorkspaceOptions says which checkout to make.
type WorkspaceOptions struct {
	Repo job.Repo
	// ID names the workspace directory (e.g. the job id); an existing
	// workspace of that name is replaced.
	ID string
	// Branch is the local branch to create (or reset) at Base, e.g.
	// "selfcode/issue-12", or a human PR branch to add commits to.
	Branch string
	// Base is a branch name, tag, full ref (refs/pull/5/head) or commit SHA
	// as known to the remote.
	Base string
	// Token reads the remote when the mirror is refreshed.
	Token TokenSource
}

// NewWorkspace refreshes the repository's mirror, then makes a fresh
// workspace from it on a new local branch at Base.
func (g *Git) NewWorkspace(ctx context.Context, o WorkspaceOptions) (*Workspace, error) {
	if !workspaceRE.MatchString(o.ID) || strings.Contains(o.ID, "..") {
		return nil, fmt.Errorf("workspace id %q: %w", o.ID, ErrInvalidName)
	}
	if err := validBranch(o.Branch); err != nil {
		return nil, err
	}
	if err := validRev(o.Base); err != nil {
		return nil, err
	}
	remote, err := g.remoteURL(o.Repo)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(g.workspaces, o.ID)
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("clear old workspace: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "src"), 0o700); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	ws := &Workspace{
		ID: o.ID, Dir: filepath.Join(root, "src"), GitDir: filepath.Join(root, "git"),
		Branch: o.Branch, Repo: o.Repo, root: root, remote: remote.String(),
	}
	if err := g.populate(ctx, ws, o); err != nil {
		_ = ws.Remove()
		return nil, err
	}
	g.log.InfoContext(ctx, "workspace created", "repo", o.Repo.FullName(), "workspace", o.ID,
		"branch", o.Branch, "base", ws.BaseSHA)
	return ws, nil
}

func (g *Git) populate(ctx context.Context, ws *Workspace, o WorkspaceOptions) error {
	full := o.Repo.FullName()
	err := func() error {
		unlock, err := g.lock(ctx, repoKey(o.Repo))
		if err != nil {
			return err
		}
		defer unlock()
		mirror, err := g.syncLocked(ctx, o.Repo, o.Token)
		if err != nil {
			return err
		}
		// Local clone with hard-linked objects: no object is copied, and
		// none can vanish from under the job when the mirror drops it (git
		// copies instead where a link cannot be made).
		_, err = g.run(ctx, call{dir: ws.root, noRepo: true, repo: full,
			args: []string{"clone", "--mirror", "--quiet", "--", mirror, ws.GitDir}})
		if err != nil {
			return fmt.Errorf("copy mirror of %s: %w", full, err)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	for _, args := range [][]string{
		{"config", "core.bare", "false"},
		{"config", "gc.auto", "0"},
		{"config", "--unset", "remote.origin.mirror"},
		{"config", "remote.origin.url", ws.remote},
		{"config", "--replace-all", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"},
	} {
		if _, err := g.wsRun(ctx, ws, call{args: args}); err != nil {
			return fmt.Errorf("configure workspace: %w", err)
		}
	}
	sha, err := g.resolve(ctx, ws, o.Base)
	if err != nil {
		return err
	}
	ws.BaseSHA = sha
	for _, args := range [][]string{
		{"update-ref", "refs/heads/" + o.Branch, sha},
		{"symbolic-ref", "HEAD", "refs/heads/" + o.Branch},
		{"reset", "--quiet", "--hard", "HEAD"},
	} {
		if _, err := g.wsRun(ctx, ws, call{args: args}); err != nil {
			return fmt.Errorf("check out %s at %s: %w", o.Branch, o.Base, err)
		}
	}
	return nil
}

// wsRun runs git on the workspace's repository and checkout.
func (g *Git) wsRun(ctx context.Context, ws *Workspace, c call) (result, error) {
	c.dir, c.gitDir = ws.Dir, ws.GitDir
	c.repo = ws.Repo.FullName()
	c.args = append([]string{"--git-dir=" + ws.GitDir, "--work-tree=" + ws.Dir}, c.args...)
	return g.run(ctx, c)
}

// resolve turns a branch, tag, ref or SHA into a commit SHA.
func (g *Git) resolve(ctx context.Context, ws *Workspace, rev string) (string, error) {
	if err := validRev(rev); err != nil {
		return "", err
	}
	res, err := g.wsRun(ctx, ws, call{args: []string{"rev-parse", "--verify", "--quiet", rev + "^{commit}"}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("revision %q: %w", rev, ErrNotFound)
		}
		return "", fmt.Errorf("resolve %q: %w", rev, err)
	}
	return strings.TrimSpace(string(res.stdout)), nil
}

// HeadSHA is the commit the workspace's branch points at.
func (g *Git) HeadSHA(ctx context.Context, ws *Workspace) (string, error) {
	return g.resolve(ctx, ws, "HEAD")
}

// Commit stages every change in the checkout (git add -A, honouring
// .gitignore) and commits it as the bot identity. With nothing to commit it
// returns the current HEAD and changed=false.
func (g *Git) Commit(ctx context.Context, ws *Workspace, message string) (sha string, changed bool, err error) {
	if strings.TrimSpace(message) == "" {
		return "", false, errors.New("commit: empty message")
	}
	if _, err := g.wsRun(ctx, ws, call{args: []string{"add", "--all"}}); err != nil {
		return "", false, fmt.Errorf("stage changes: %w", err)
	}
	_, err = g.wsRun(ctx, ws, call{args: []string{"diff", "--cached", "--quiet"}})
	switch code := exitCode(err); {
	case err == nil:
		sha, err := g.HeadSHA(ctx, ws)
		return sha, false, err
	case code != 1:
		return "", false, fmt.Errorf("check staged changes: %w", err)
	}
	id := g.identity
	_, err = g.wsRun(ctx, ws, call{
		args:  []string{"commit", "--quiet", "--no-verify", "--cleanup=whitespace", "--file=-"},
		stdin: []byte(message),
		env: []string{
			"GIT_AUTHOR_NAME=" + id.Name, "GIT_AUTHOR_EMAIL=" + id.Email,
			"GIT_COMMITTER_NAME=" + id.Name, "GIT_COMMITTER_EMAIL=" + id.Email,
		},
	})
	if err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	sha, err = g.HeadSHA(ctx, ws)
	if err != nil {
		return "", false, err
	}
	g.log.InfoContext(ctx, "committed", "repo", ws.Repo.FullName(), "workspace", ws.ID, "sha", sha)
	return sha, true, nil
}

// Reset moves the workspace's branch to rev and makes the checkout match it:
// tracked files are restored and untracked files removed; files ignored by
// .gitignore (build caches, dependencies from setup) are kept.
func (g *Git) Reset(ctx context.Context, ws *Workspace, rev string) error {
	sha, err := g.resolve(ctx, ws, rev)
	if err != nil {
		return err
	}
	if _, err := g.wsRun(ctx, ws, call{args: []string{"reset", "--quiet", "--hard", sha}}); err != nil {
		return fmt.Errorf("reset to %s: %w", rev, err)
	}
	if _, err := g.wsRun(ctx, ws, call{args: []string{"clean", "-ffdq"}}); err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	return nil
}

// ReadFileAt returns the content of path at rev (e.g. ".selfcode.yml" on the
// default branch), or ErrNotFound.
func (g *Git) ReadFileAt(ctx context.Context, ws *Workspace, rev, path string) ([]byte, error) {
	sha, err := g.resolve(ctx, ws, rev)
	if err != nil {
		return nil, err
	}
	clean := filepath.ToSlash(filepath.Clean(path))
	if path == "" || filepath.IsAbs(path) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(path, "\x00\n") {
		return nil, fmt.Errorf("path %q: %w", path, ErrInvalidName)
	}
	res, err := g.wsRun(ctx, ws, call{args: []string{"cat-file", "blob", sha + ":" + clean}})
	if err != nil {
		if exitCode(err) == 128 {
			return nil, fmt.Errorf("%s at %s: %w", path, rev, ErrNotFound)
		}
		return nil, fmt.Errorf("read %s at %s: %w", path, rev, err)
	}
	return res.stdout, nil
}

// withFullIndex runs fn with GIT_INDEX_FILE set to a scratch copy of the index
// into which every change in the checkout, untracked files included, has been
// staged. The real index is untouched.
func (g *Git) withFullIndex(ctx context.Context, ws *Workspace, fn func(env []string) error) error {
	tmp, err := os.CreateTemp(ws.GitDir, "selfcode-index-")
	if err != nil {
		return fmt.Errorf("create scratch index: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	cur, err := os.ReadFile(filepath.Join(ws.GitDir, "index"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		tmp.Close()
		return fmt.Errorf("read index: %w", err)
	}
	_, werr := tmp.Write(cur)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write scratch index: %w", werr)
	}
	env := []string{"GIT_INDEX_FILE=" + name}
	if _, err := g.wsRun(ctx, ws, call{args: []string{"add", "--all"}, env: env}); err != nil {
		return fmt.Errorf("stage into scratch index: %w", err)
	}
	return fn(env)
}

// Diff is the unified diff from base to the checkout as it is now, untracked
// (not ignored) files included.
func (g *Git) Diff(ctx context.Context, ws *Workspace, base string) (string, error) {
	sha, err := g.resolve(ctx, ws, base)
	if err != nil {
		return "", err
	}
	var out []byte
	err = g.withFullIndex(ctx, ws, func(env []string) error {
		res, err := g.wsRun(ctx, ws, call{env: env, args: []string{"diff", "--cached", "--no-color",
			"--no-ext-diff", "--no-textconv", "--no-renames", sha, "--"}})
		out = res.stdout
		return err
	})
	if err != nil {
		return "", fmt.Errorf("diff against %s: %w", base, err)
	}
	return string(out), nil
}

// FileChange is one path changed between base and the checkout.
type FileChange struct {
	Path    string
	Status  string // "added", "modified", "deleted", "type-changed"
	Added   int    // lines; 0 for binary files
	Deleted int
	Binary  bool
}

// ChangedFiles lists the paths that differ between base and the checkout as
// it is now, untracked files included, sorted by path.
func (g *Git) ChangedFiles(ctx context.Context, ws *Workspace, base string) ([]FileChange, error) {
	sha, err := g.resolve(ctx, ws, base)
	if err != nil {
		return nil, err
	}
	var status, numstat []byte
	err = g.withFullIndex(ctx, ws, func(env []string) error {
		common := []string{"diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "-z"}
		res, err := g.wsRun(ctx, ws, call{env: env, args: append(append([]string{}, common...), "--name-status", sha, "--")})
		if err != nil {
			return err
		}
		status = res.stdout
		res, err = g.wsRun(ctx, ws, call{env: env, args: append(append([]string{}, common...), "--numstat", sha, "--")})
		numstat = res.stdout
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list changes against %s: %w", base, err)
	}
	return parseChanges(status, numstat)
}

// parseChanges combines `--name-status -z` and `--numstat -z` output (no renames).
func parseChanges(status, numstat []byte) ([]FileChange, error) {
	var out []FileChange
	index := map[string]int{}
	fields := bytes.Split(bytes.TrimSuffix(status, []byte{0}), []byte{0})
	if len(status) == 0 {
		fields = nil
	}
	for i := 0; i+1 < len(fields); i += 2 {
		fc := FileChange{Path: string(fields[i+1])}
		switch string(fields[i]) {
		case "A":
			fc.Status = "added"
		case "M":
			fc.Status = "modified"
		case "D":
			fc.Status = "deleted"
		case "T":
			fc.Status = "type-changed"
		default:
			return nil, fmt.Errorf("unexpected diff status %q for %s", fields[i], fc.Path)
		}
		index[fc.Path] = len(out)
		out = append(out, fc)
	}
	for _, rec := range bytes.Split(numstat, []byte{0}) {
		parts := strings.SplitN(string(rec), "\t", 3)
		if len(parts) != 3 {
			continue
		}
		i, ok := index[parts[2]]
		if !ok {
			continue
		}
		if parts[0] == "-" {
			out[i].Binary = true
			continue
		}
		out[i].Added, _ = strconv.Atoi(parts[0])
		out[i].Deleted, _ = strconv.Atoi(parts[1])
	}
	return out, nil
}
