package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzStrReplace throws arbitrary paths and strings at str_replace: it
// must not panic, must write only inside the root, and must leave the tree
// untouched whenever it answers ERROR.
func FuzzStrReplace(f *testing.F) {
	f.Add("notes.txt", "beta", "BETA")
	f.Add("notes.txt", "alpha", "x")
	f.Add("crlf.txt", "one\ntwo", "1\n2\n")
	f.Add("a.go", "return 1", "return (")
	f.Add("a.go", "func A", "func  B")
	f.Add("../sentinel.txt", "keep", "lost")
	f.Add("link/sentinel.txt", "keep", "lost")
	f.Add("/etc/hosts", "localhost", "x")
	f.Add("notes.txt", "beta  \r\n", "")
	f.Add("sub/../notes.txt", "beta", "b")
	f.Fuzz(func(t *testing.T, path, old, new string) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		write(t, parent, "sentinel.txt", "keep\n")
		write(t, root, "notes.txt", "alpha\nbeta  \ngamma\nalpha\n")
		write(t, root, "crlf.txt", "one\r\ntwo\r\n")
		write(t, root, "a.go", "package a\n\nfunc A() int {\n\treturn 1\n}\n")
		if err := os.Symlink(parent, filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		outside := treeHash(t, parent)
		before := treeHash(t, root)
		tl := newTools(t, root, Options{MaxFiles: 1})
		res := do(t, tl, StrReplace, map[string]any{"path": path, "old_str": old, "new_str": new})
		after := treeHash(t, parent)
		for k, v := range outside {
			if !strings.HasPrefix(k, "root") && after[k] != v {
				t.Fatalf("wrote outside the root: %s", k)
			}
		}
		for k := range after {
			if _, ok := outside[k]; !ok && !strings.HasPrefix(k, "root") {
				t.Fatalf("created outside the root: %s", k)
			}
		}
		if strings.HasPrefix(res.Output, "ERROR:") {
			assertSameTree(t, before, root)
			if res.Outcome == OutcomeApplied || res.Outcome == OutcomeOK {
				t.Fatalf("error with outcome %s", res.Outcome)
			}
			return
		}
		if res.Outcome != OutcomeApplied || len(res.Changed) != 1 {
			t.Fatalf("success without change: %+v", res)
		}
		if strings.HasSuffix(res.Changed[0], ".go") {
			data, err := os.ReadFile(filepath.Join(root, res.Changed[0]))
			if err != nil {
				t.Fatal(err)
			}
			if errs := parseErrors(res.Changed[0], data); len(errs) > 0 {
				t.Fatalf("broken Go written: %v", errs)
			}
		}
	})
}
