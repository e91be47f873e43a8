package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The model's checkout is the base alone: the commit is not in it, not
// even as an object; the copy with the tests has them as the commit does.
func TestWorkspaceHoldsTheBaseOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := history(t)
	cands, err := Candidates(ctx, repo, 1)
	if err != nil || len(cands) != 1 || cands[0].Commit != commitMul {
		t.Fatalf("candidates %+v, %v", cands, err)
	}
	ws, err := newWorkspace(ctx, repo, cands[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ws.remove()
	read := func(dir, p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if strings.Contains(read(ws.dir, "calc_test.go"), "TestMulForReportTotals") || strings.Contains(read(ws.dir, "calc.go"), "Mul") {
		t.Fatal("the model's checkout holds the commit's change")
	}
	if !strings.Contains(read(ws.withTests, "calc_test.go"), "TestMulForReportTotals") || strings.Contains(read(ws.withTests, "calc.go"), "Mul") {
		t.Fatal("the copy with the tests does not hold the held-back tests alone")
	}
	for _, rev := range []string{commitMul, commitMul + "^{tree}"} {
		if _, err := git(ctx, ws.dir, "cat-file", "-e", rev); err == nil {
			t.Fatalf("%s is in the model's checkout's repository", rev)
		}
	}
	if _, err := git(ctx, ws.dir, "cat-file", "-e", cands[0].Base); err != nil {
		t.Fatalf("the base is not checked out: %v", err)
	}
	ws.remove()
	if _, err := os.Stat(ws.root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the workspace is still there: %v", err)
	}
}

// Held-back files are written inside the tree only: never through a
// symbolic link, whoever made it.
func TestWriteInsideStaysInside(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "tests")); err != nil {
		t.Fatal(err)
	}
	if err := writeInside(root, "tests/x_test.py", []byte("x"), "100644"); !errors.Is(err, errOutside) {
		t.Fatalf("write through a linked folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(outside, "keep_test.py"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := removeInside(root, "tests/keep_test.py"); !errors.Is(err, errOutside) {
		t.Fatalf("remove through a linked folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep_test.py")); err != nil {
		t.Fatal("a file outside the tree was removed")
	}
	for _, bad := range []string{"../x_test.go", "/etc/x_test.go"} {
		if err := writeInside(root, bad, nil, "100644"); !errors.Is(err, errOutside) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// A link the model left where a test goes is replaced, not followed.
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(root, "a_test.go")); err != nil {
		t.Fatal(err)
	}
	if err := writeInside(root, "a_test.go", []byte("package a\n"), "100755"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "a_test.go")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("a_test.go: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "target")); err == nil {
		t.Fatal("the write followed the link out of the tree")
	}
	if err := writeInside(root, "deep/new/dir/b_test.go", []byte("b"), "100644"); err != nil {
		t.Fatal(err)
	}
	if err := removeInside(root, "deep/new/dir/b_test.go"); err != nil {
		t.Fatal(err)
	}
	if err := removeInside(root, "not/there_test.go"); err != nil {
		t.Fatalf("removing what is not there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "not")); err == nil {
		t.Fatal("a removal made folders")
	}
}
