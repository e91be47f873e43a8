package fakegithub

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// RepoOptions describes a repository to create.
type RepoOptions struct {
	// DefaultBranch; default "main".
	DefaultBranch string
	// Files of the initial commit (path → content). Together with Dir; when both are
	// empty the commit holds a README.md.
	Files map[string]string
	// Dir is copied (without its .git) into the initial commit.
	Dir string
	// Private marks the repository private.
	Private bool
	// Description of the repository.
	Description string
	// ForkOf ("owner/name") makes this repository a fork of an existing one.
	ForkOf string
}

const gitTimeout = 60 * time.Second

// gitEnv isolates git from the machine's configuration.
func (s *Server) gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+s.root,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Fake GitHub",
		"GIT_AUTHOR_EMAIL=noreply@fakegithub.invalid",
		"GIT_COMMITTER_NAME=Fake GitHub",
		"GIT_COMMITTER_EMAIL=noreply@fakegithub.invalid",
	)
}

func (s *Server) runGit(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = s.gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// AddRepo creates a repository backed by a real bare git repository whose default
// branch holds one initial commit.
func (s *Server) AddRepo(owner, name string, opts RepoOptions) error {
	if opts.DefaultBranch == "" {
		opts.DefaultBranch = "main"
	}
	key := repoKey(owner, name)
	dir := filepath.Join(s.root, "repos", filepath.FromSlash(key)+".git")
	s.mu.Lock()
	_, exists := s.repos[key]
	var parent string
	if opts.ForkOf != "" {
		po, pn, _ := strings.Cut(opts.ForkOf, "/")
		if _, err := s.repoLocked(po, pn); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("fork parent: %w", err)
		}
		parent = repoKey(po, pn)
	}
	s.mu.Unlock()
	if exists {
		return fmt.Errorf("repository %s already exists", key)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create repo dir: %w", err)
	}
	if _, err := s.runGit(s.root, "init", "--quiet", "--bare", "--initial-branch="+opts.DefaultBranch, dir); err != nil {
		return err
	}
	if parent != "" {
		// A fork starts with the parent's history.
		if _, err := s.runGit(dir, "fetch", "--quiet", filepath.Join(s.root, "repos", filepath.FromSlash(parent)+".git"), "+refs/heads/*:refs/heads/*"); err != nil {
			return err
		}
	} else if err := s.seed(dir, opts); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUserLocked(owner)
	s.repos[key] = &repo{
		id: s.newIDLocked(), owner: owner, name: name, defaultBranch: opts.DefaultBranch,
		private: opts.Private, description: opts.Description, parent: parent, dir: dir,
		issues: map[int]*Issue{}, perms: map[string]permission{}, labels: map[string]*label{},
	}
	return nil
}

func (s *Server) seed(bare string, opts RepoOptions) error {
	work, err := os.MkdirTemp(s.root, "seed-*")
	if err != nil {
		return fmt.Errorf("seed worktree: %w", err)
	}
	defer os.RemoveAll(work)
	if _, err := s.runGit(work, "init", "--quiet", "--initial-branch="+opts.DefaultBranch); err != nil {
		return err
	}
	if opts.Dir != "" {
		if err := copyTree(opts.Dir, work); err != nil {
			return err
		}
	}
	files := opts.Files
	if len(files) == 0 && opts.Dir == "" {
		files = map[string]string{"README.md": "# " + filepath.Base(bare) + "\n"}
	}
	if err := writeFiles(work, files); err != nil {
		return err
	}
	if _, err := s.runGit(work, "add", "-A"); err != nil {
		return err
	}
	if _, err := s.runGit(work, "commit", "--quiet", "--allow-empty", "-m", "Initial commit"); err != nil {
		return err
	}
	_, err = s.runGit(work, "push", "--quiet", bare, "HEAD:refs/heads/"+opts.DefaultBranch)
	return err
}

func writeFiles(root string, files map[string]string) error {
	for p, content := range files {
		clean := filepath.Clean(filepath.FromSlash(p))
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return fmt.Errorf("file path %q leaves the repository", p)
		}
		full := filepath.Join(root, clean)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm())
		}
	})
}

func (s *Server) repoDir(owner, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, name)
	if err != nil {
		return "", err
	}
	return rp.dir, nil
}

// BareDir is the bare git repository behind owner/name on disk: tests plant
// in it what its owner could (its own config and hooks).
func (s *Server) BareDir(owner, name string) (string, error) { return s.repoDir(owner, name) }

// CommitFiles commits files (path → content) on branch, as a person pushing would,
// creating the branch from the default branch when it does not exist. It returns the
// new commit's SHA.
func (s *Server) CommitFiles(owner, name, branch, message string, files map[string]string) (string, error) {
	dir, err := s.repoDir(owner, name)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	def := s.repos[repoKey(owner, name)].defaultBranch
	s.mu.Unlock()
	work, err := os.MkdirTemp(s.root, "commit-*")
	if err != nil {
		return "", fmt.Errorf("commit worktree: %w", err)
	}
	defer os.RemoveAll(work)
	if _, err := s.runGit(work, "clone", "--quiet", dir, "."); err != nil {
		return "", err
	}
	start := "origin/" + def
	if _, err := s.runGit(work, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch); err == nil {
		start = "origin/" + branch
	}
	if _, err := s.runGit(work, "checkout", "--quiet", "-B", branch, start); err != nil {
		return "", err
	}
	if err := writeFiles(work, files); err != nil {
		return "", err
	}
	if _, err := s.runGit(work, "add", "-A"); err != nil {
		return "", err
	}
	if _, err := s.runGit(work, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	if _, err := s.runGit(work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch); err != nil {
		return "", err
	}
	out, err := s.runGit(work, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// BranchSHA is the commit a branch points at; the error wraps ErrNotFound when the
// branch (or repository) does not exist.
func (s *Server) BranchSHA(owner, name, branch string) (string, error) {
	dir, err := s.repoDir(owner, name)
	if err != nil {
		return "", err
	}
	return s.revParse(dir, "refs/heads/"+branch)
}

func (s *Server) revParse(dir, ref string) (string, error) {
	out, err := s.runGit(dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("ref %s: %w", ref, ErrNotFound)
	}
	return strings.TrimSpace(out), nil
}

// branchSHAs maps every branch of a bare repository to its commit.
func (s *Server) branchSHAs(dir string) map[string]string {
	out, err := s.runGit(dir, "for-each-ref", "--format=%(refname:lstrip=2) %(objectname)", "refs/heads")
	m := map[string]string{}
	if err != nil {
		return m
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if b, sha, ok := strings.Cut(line, " "); ok {
			m[b] = sha
		}
	}
	return m
}

// Commit is one entry of Log.
type Commit struct {
	SHA            string
	AuthorName     string
	AuthorEmail    string
	CommitterName  string
	CommitterEmail string
	Subject        string
	Body           string
}

// Log lists the commits reachable from ref (a branch name or any revision), newest first.
func (s *Server) Log(owner, name, ref string) ([]Commit, error) {
	dir, err := s.repoDir(owner, name)
	if err != nil {
		return nil, err
	}
	out, err := s.runGit(dir, "log", "--format=%H%x00%an%x00%ae%x00%cn%x00%ce%x00%s%x00%b%x1e", ref, "--")
	if err != nil {
		return nil, fmt.Errorf("log %s: %w", ref, err)
	}
	var commits []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		f := strings.Split(rec, "\x00")
		if len(f) != 7 {
			continue
		}
		commits = append(commits, Commit{SHA: f[0], AuthorName: f[1], AuthorEmail: f[2], CommitterName: f[3], CommitterEmail: f[4], Subject: f[5], Body: strings.TrimSpace(f[6])})
	}
	return commits, nil
}

// FileAt returns a file's content at ref.
func (s *Server) FileAt(owner, name, ref, path string) (string, error) {
	dir, err := s.repoDir(owner, name)
	if err != nil {
		return "", err
	}
	out, err := s.runGit(dir, "show", ref+":"+path)
	if err != nil {
		return "", fmt.Errorf("%s:%s: %w", ref, path, ErrNotFound)
	}
	return out, nil
}

// splitGitPath recognises "/{owner}/{repo}.git/{rest}".
func splitGitPath(escaped string) (owner, name, rest string, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(escaped, "/"), "/", 3)
	if len(parts) < 2 || !strings.HasSuffix(parts[1], ".git") || parts[0] == "repos" {
		return "", "", "", false
	}
	o, err1 := url.PathUnescape(parts[0])
	n, err2 := url.PathUnescape(strings.TrimSuffix(parts[1], ".git"))
	if err1 != nil || err2 != nil || o == "" || n == "" {
		return "", "", "", false
	}
	if len(parts) == 3 {
		rest = parts[2]
	}
	return o, n, rest, true
}

// serveGit serves smart HTTP through git http-backend. Only Basic auth
// x-access-token:<valid installation token> covering the owner is accepted; anything
// else gets 401 with a Basic challenge, so git retries with credentials.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, owner, name, rest string) {
	userName, pass, ok := r.BasicAuth()
	inst, valid := s.installationForToken(pass)
	if !ok || userName != "x-access-token" || !valid || !strings.EqualFold(inst.account, owner) {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token. Password authentication is not supported for Git operations.", http.StatusUnauthorized)
		return
	}
	if _, err := s.repoDir(owner, name); err != nil {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + repoKey(owner, name) + ".git/" + rest
	r2.URL.RawPath = ""
	h := &cgi.Handler{
		Path: s.gitBackend,
		Root: "/",
		Dir:  s.root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Join(s.root, "repos"),
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + userName,
			"HOME=" + s.root,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
		},
		InheritEnv: []string{"PATH"},
		Stderr:     logWriter{s},
	}
	h.ServeHTTP(w, r2)
}

type logWriter struct{ s *Server }

func (l logWriter) Write(p []byte) (int, error) {
	l.s.logger.Warn("git http-backend", "stderr", strings.TrimSpace(string(p)))
	return len(p), nil
}

// gitDiff is "git diff base...head" between two commits of a bare repository.
func (s *Server) gitDiff(dir, base, head string) (string, error) {
	out, err := s.runGit(dir, "diff", "--no-color", base+"..."+head)
	if err != nil {
		return "", err
	}
	return out, nil
}

// isAncestor reports whether commit a is reachable from b.
func (s *Server) isAncestor(dir, a, b string) bool {
	_, err := s.runGit(dir, "merge-base", "--is-ancestor", a, b)
	return err == nil
}
