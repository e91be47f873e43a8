package tripwire

import (
	"os"
	"path/filepath"
	"testing"
)

// Wire is an executable that appends how it was called to a marker file.
// It reads and discards its input (a filter's) and succeeds.
type Wire struct {
	Path   string // the executable
	Marker string // written only when Path runs
}

// New writes a fresh wire in the test's temporary directories.
func New(t testing.TB) *Wire {
	t.Helper()
	w := &Wire{Path: filepath.Join(t.TempDir(), "tripwire"), Marker: filepath.Join(t.TempDir(), "tripped")}
	script := "#!/bin/sh\necho \"$0 $*\" >>'" + w.Marker + "'\ncat >/dev/null 2>&1\nexit 0\n"
	if err := os.WriteFile(w.Path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// HookNames are the hooks a client-side git command may run.
var HookNames = []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
	"post-merge", "pre-push", "reference-transaction", "post-index-change", "pre-auto-gc", "post-rewrite",
	"fsmonitor-watchman", "push-to-checkout"}

// Link makes each of names in dir (created if missing) the wire.
func (w *Wire) Link(t testing.TB, dir string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Symlink(w.Path, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
}

// Hooks is a new directory in which every hook of HookNames is the wire.
func (w *Wire) Hooks(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	w.Link(t, dir, HookNames...)
	return dir
}

// OnPath puts a command called name first on PATH that is the wire (for
// the rest of the test; it cannot run in parallel).
func (w *Wire) OnPath(t testing.TB, name string) {
	t.Helper()
	bin := t.TempDir()
	w.Link(t, bin, name)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Untouched fails the test when the wire has run, saying what ran it.
func (w *Wire) Untouched(t testing.TB, what string) {
	t.Helper()
	if b, err := os.ReadFile(w.Marker); err == nil {
		t.Fatalf("%s ran on the host:\n%s", what, b)
	}
}
