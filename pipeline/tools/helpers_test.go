package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// crlfContent is a Windows-style file the CRLF tests edit.
const crlfContent = "first line\r\nsecond line\r\nthird line\r\n"

// trailingContent has trailing whitespace the model usually drops.
const trailingContent = "keep this   \nsecond\t\nthird\n"

// messyGo is valid Go that is not gofmt-clean.
const messyGo = "package util\n\nfunc  Messy( a int )int{\nreturn a+1\n}\n"

// sampleRepo copies testdata/repo into a fresh directory and adds what a
// git checkout cannot carry: a .git directory, a CRLF file and a file with
// trailing whitespace. It returns the directory.
func sampleRepo(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir("testdata/repo", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/repo", p)
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, ".git/config", "[core]\n\tbare = false\n")
	write(t, root, "docs/crlf.txt", crlfContent)
	write(t, root, "docs/trailing.txt", trailingContent)
	// Kept out of testdata so gofmt -w over the repository leaves it alone.
	write(t, root, "util/messy.go", messyGo)
	return root
}

func write(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, root, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func newTools(t testing.TB, root string, opts Options) *Tools {
	t.Helper()
	opts.Root = root
	tl, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func do(t testing.TB, tl *Tools, name string, args map[string]any) Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(context.Background(), chat.ToolCall{ID: "1", Name: name, Arguments: string(b)})
}

// treeHash fingerprints every entry under root: file content, directory,
// or symlink target.
func treeHash(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[rel] = fi.Mode().String() + ":" + hex.EncodeToString(sum[:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertSameTree(t testing.TB, before map[string]string, root string) {
	t.Helper()
	after := treeHash(t, root)
	if reflect.DeepEqual(before, after) {
		return
	}
	for k, v := range after {
		if before[k] != v {
			t.Errorf("tree changed: %s is now %q (was %q)", k, v, before[k])
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("tree changed: %s removed", k)
		}
	}
}
