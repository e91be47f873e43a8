package gitops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// Export writes the files of the workspace's base commit into dst, an empty
// directory, as the checkout had them before anyone edited it: a pristine
// copy of the base from the repository's objects, which nothing of the
// job can change. The checkout itself and its index are left alone; the
// scratch index the export reads the commit into is made in dst's parent
// (the job's own space) and removed.
func (g *Git) Export(ctx context.Context, ws *Workspace, dst string) error {
	return export(ctx, ws.BaseSHA, dst, func(env []string, args ...string) error {
		_, err := g.run(ctx, call{dir: dst, noRepo: true, repo: ws.Repo.FullName(), env: env, gitDir: ws.GitDir,
			args: append([]string{"--git-dir=" + ws.GitDir, "--work-tree=" + dst}, args...)})
		return err
	})
}

// ExportLocal is Export for a repository of this machine (the scratch
// clones of `selfcode run` and `selfcode eval`): commit rev of the
// repository whose git directory is gitDir, into dst.
func ExportLocal(ctx context.Context, gitDir, rev, dst string) error {
	bin, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("find git: %w", err)
	}
	drivers, err := driverOptions(ctx, bin, gitDir)
	if err != nil {
		return err
	}
	return export(ctx, rev, dst, func(env []string, args ...string) error {
		_, err := Local(ctx, dst, env, slices.Concat(drivers, []string{"--git-dir=" + gitDir, "--work-tree=" + dst}, args)...)
		return err
	})
}

// export reads rev into a scratch index and checks every file of it out
// into dst (the work tree git runs on), with the same hardened git as
// every other call: the repository's .gitattributes name no driver that
// is defined, so nothing of the repository runs.
func export(ctx context.Context, rev, dst string, git func(env []string, args ...string) error) error {
	if err := validRev(rev); err != nil {
		return err
	}
	// The scratch index goes beside dst (the job's own space), not into
	// the host's /tmp: a large repository's index is large.
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if err := git(env, "read-tree", rev+"^{tree}"); err != nil {
		return fmt.Errorf("export %.12s: %w", rev, err)
	}
	if err := git(env, "checkout-index", "--all", "--force"); err != nil {
		return fmt.Errorf("export %.12s: %w", rev, err)
	}
	return ctx.Err()
}
