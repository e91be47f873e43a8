package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// workspace is one task's scratch space: the base commit checked out for
// the model (dir), and the base with the held-back tests applied
// (withTests). Neither holds the commit itself or anything after it: dir
// is fetched alone, by its id, from the repository.
type workspace struct {
	root      string
	dir       string
	withTests string
}

// newWorkspace checks out c's base twice and applies its held-back tests
// to the second copy.
func newWorkspace(ctx context.Context, top string, c Candidate) (*workspace, error) {
	root, err := os.MkdirTemp("", "selfcode-eval-")
	if err != nil {
		return nil, err
	}
	ws := &workspace{root: root, dir: filepath.Join(root, "src"), withTests: filepath.Join(root, "with-tests")}
	steps := [][]string{
		{"init", "-q", ws.dir},
		{"-C", ws.dir, "fetch", "-q", "--no-tags", "--depth=1", "--", top, c.Base},
		{"-C", ws.dir, "checkout", "-q", "--detach", "FETCH_HEAD"},
		{"-C", ws.dir, "worktree", "add", "-q", "--detach", ws.withTests, "HEAD"},
	}
	for _, args := range steps {
		if _, err := git(ctx, root, args...); err != nil {
			ws.remove()
			return nil, fmt.Errorf("check out the base %s: %w", short(c.Base), err)
		}
	}
	if err := applyTests(ctx, top, c, ws.withTests); err != nil {
		ws.remove()
		return nil, err
	}
	return ws, nil
}

func (ws *workspace) remove() { os.RemoveAll(ws.root) }

// applyTests writes c's test changes into the tree at dir: each held-back
// file as the commit has it, or removed when the commit deleted it. What
// the model did to those files is replaced, as SWE-bench's harness does.
func applyTests(ctx context.Context, top string, c Candidate, dir string) error {
	for _, ch := range c.Tests {
		if ch.Deleted {
			if err := removeInside(dir, ch.Path); err != nil {
				return fmt.Errorf("held-back test %s: %w", ch.Path, err)
			}
			continue
		}
		mode, data, err := blobAt(ctx, top, c.Commit, ch.Path)
		if err != nil {
			return fmt.Errorf("held-back test %s: %w", ch.Path, err)
		}
		if mode == "" {
			continue // a submodule: nothing to write
		}
		if err := writeInside(dir, ch.Path, data, mode); err != nil {
			return fmt.Errorf("held-back test %s: %w", ch.Path, err)
		}
	}
	return nil
}

// errNotInCommit: the path is not in the commit.
var errNotInCommit = errors.New("not in commit")

// blobAt returns the git mode and content of path at commit ("" for a
// submodule); errNotInCommit when the commit has no such path.
func blobAt(ctx context.Context, top, commit, path string) (string, []byte, error) {
	out, err := git(ctx, top, "ls-tree", "-z", commit, "--", path)
	if err != nil {
		return "", nil, err
	}
	meta, _, ok := strings.Cut(string(bytes.TrimSuffix(out, []byte{0})), "\t")
	f := strings.Fields(meta)
	if !ok || len(f) != 3 {
		return "", nil, fmt.Errorf("%w %s", errNotInCommit, short(commit))
	}
	if f[1] != "blob" {
		return "", nil, nil
	}
	data, err := git(ctx, top, "cat-file", "blob", f[2])
	return f[0], data, err
}

var errOutside = errors.New("path leaves the tree through a symbolic link")

// parentInside returns rel under root, refusing a path whose folders are
// symbolic links so nothing is written outside root; create makes the
// missing folders (otherwise a missing one is fs.ErrNotExist).
func parentInside(root, rel string, create bool) (string, error) {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(rel) || rel == "." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || rel == ".." {
		return "", fmt.Errorf("%w: %s", errOutside, rel)
	}
	cur := root
	parts := strings.Split(rel, string(filepath.Separator))
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !create:
			return "", err
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir():
			return "", fmt.Errorf("%w: %s", errOutside, rel)
		}
	}
	return filepath.Join(root, rel), nil
}

// writeInside writes a file of git mode mode (100644, 100755, 120000) at
// rel under root, replacing whatever is there.
func writeInside(root, rel string, data []byte, mode string) error {
	target, err := parentInside(root, rel, true)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	switch mode {
	case "120000":
		return os.Symlink(string(data), target)
	case "100755":
		return os.WriteFile(target, data, 0o755)
	}
	return os.WriteFile(target, data, 0o644)
}

// removeInside removes the file at rel under root, if there is one.
func removeInside(root, rel string) error {
	target, err := parentInside(root, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // its folder is not there: neither is the file
	}
	if err != nil {
		return err
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
