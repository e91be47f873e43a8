package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

type entry struct {
	name, link, body string
	typ              byte
	uid, gid         int
	mode             int64
}

func readTar(t *testing.T, b []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h.Name, h.Linkname, string(body), h.Typeflag, h.Uid, h.Gid, h.Mode})
	}
}

func names(es []entry) []string {
	var n []string
	for _, e := range es {
		n = append(n, e.name)
	}
	return n
}

func sampleTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "a")
	writeFile(t, filepath.Join(dir, "sub", "b.txt"), "b")
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref")
	writeFile(t, filepath.Join(dir, "sub", ".git"), "gitdir: elsewhere") // only the top-level .git is skipped
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o4755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWriteTree(t *testing.T) {
	dir := sampleTree(t)
	tests := []struct {
		includeGit bool
		want       []string
	}{
		{false, []string{"./", "a.txt", "out", "sub/", "sub/.git", "sub/b.txt"}},
		{true, []string{"./", ".git/", ".git/HEAD", "a.txt", "out", "sub/", "sub/.git", "sub/b.txt"}},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		if err := writeTree(&buf, dir, 10001, 10002, tc.includeGit); err != nil {
			t.Fatal(err)
		}
		es := readTar(t, buf.Bytes())
		if got := names(es); !slices.Equal(got, tc.want) {
			t.Errorf("includeGit=%v: entries %v, want %v", tc.includeGit, got, tc.want)
		}
		if tc.includeGit {
			continue
		}
		// A worktree's checkout has a .git file, not a folder: the files
		// after it are copied all the same.
		wt := t.TempDir()
		writeFile(t, filepath.Join(wt, ".git"), "gitdir: /elsewhere/.git/worktrees/wt")
		writeFile(t, filepath.Join(wt, "go.mod"), "module x")
		buf.Reset()
		if err := writeTree(&buf, wt, 10001, 10002, false); err != nil {
			t.Fatal(err)
		}
		if got := names(readTar(t, buf.Bytes())); !slices.Equal(got, []string{"./", "go.mod"}) {
			t.Errorf("a worktree's tree: entries %v, want ./ and go.mod", got)
		}
		for _, e := range es {
			if e.uid != 10001 || e.gid != 10002 {
				t.Errorf("%s owned by %d:%d", e.name, e.uid, e.gid)
			}
			switch e.name {
			case "a.txt":
				if e.body != "a" || e.mode != 0o755 {
					t.Errorf("a.txt: body %q mode %o; want setuid stripped", e.body, e.mode)
				}
			case "out":
				if e.typ != tar.TypeSymlink || e.link != "/etc/passwd" || e.body != "" {
					t.Errorf("symlink copied as %+v; want the link itself, not its target", e)
				}
			}
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := sampleTree(t)
	var buf bytes.Buffer
	if err := writeFiles(&buf, dir, []string{"sub/b.txt", "a.txt", "sub/b.txt"}, 7, 8); err != nil {
		t.Fatal(err)
	}
	if got, want := names(readTar(t, buf.Bytes())), []string{"sub/", "a.txt", "sub/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v (parents first, no duplicates)", got, want)
	}

	// A symlinked parent pointing out of the tree must not be followed.
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret"), "s")
	if err := os.Symlink(outside, filepath.Join(dir, "esc")); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := writeFiles(&buf, dir, []string{"esc/secret"}, 7, 8); err == nil {
		t.Errorf("read a file through a symlink leaving the tree")
	}
	if slices.Contains(names(readTar(t, buf.Bytes())), "esc/secret") {
		t.Errorf("the outside file reached the archive")
	}
	buf.Reset()
	if err := writeFiles(&buf, dir, []string{"missing.txt"}, 7, 8); err == nil {
		t.Errorf("missing file accepted")
	}
}
