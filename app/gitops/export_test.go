package gitops

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/internal/tripwire"
)

// treeOf lists every file under dir (not .git) with its mode and content,
// a symbolic link as its target.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "link " + target
			return err
		}
		b, err := os.ReadFile(p)
		out[rel] = info.Mode().Perm().String() + " " + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Export gives the base commit's files as the checkout had them before the
// job edited it — changed, added and removed files, an executable bit and
// a symbolic link included — and leaves the edited checkout and its index
// as they were.
func TestExportIsTheBaseAsCheckedOut(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	human.write("bin/run.sh", "#!/bin/sh\necho run\n")
	if err := os.Chmod(filepath.Join(human.dir, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/run.sh", filepath.Join(human.dir, "run")); err != nil {
		t.Fatal(err)
	}
	human.write(".gitattributes", "*.txt text eol=lf\n")
	human.write("notes.txt", "one\ntwo\n")
	human.commit("files of every kind")
	human.push("main")
	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: remote.repo("acme", "widgets"), ID: "export",
		Branch: "selfcode/issue-1", Base: "main", Token: StaticToken(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	pristine := treeOf(t, ws.Dir)
	writeFile(t, filepath.Join(ws.Dir, "main.go"), "package main\n\nfunc main() { println(1) }\n")
	writeFile(t, filepath.Join(ws.Dir, "added.go"), "package main\n")
	writeFile(t, filepath.Join(ws.Dir, "sub/.gitattributes"), "* text eol=crlf\n")
	if err := os.Remove(filepath.Join(ws.Dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	edited := treeOf(t, ws.Dir)

	for name, export := range map[string]func(dst string) error{
		"workspace": func(dst string) error { return h.g.Export(t.Context(), ws, dst) },
		"local":     func(dst string) error { return ExportLocal(t.Context(), ws.GitDir, ws.BaseSHA, dst) },
	} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			// Nothing goes to the host's temporary directory: the scratch
			// index is made beside dst, and removed.
			t.Setenv("TMPDIR", filepath.Join(dst, "no-such-dir"))
			if err := export(dst); err != nil {
				t.Fatal(err)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".export-*")); len(left) > 0 {
				t.Errorf("the scratch index was left behind: %q", left)
			}
			got := treeOf(t, dst)
			if len(got) != len(pristine) {
				t.Errorf("exported %d files, the base has %d: %v", len(got), len(pristine), got)
			}
			for p, want := range pristine {
				if got[p] != want {
					t.Errorf("%s: exported %q, want %q", p, got[p], want)
				}
			}
			if !strings.HasPrefix(got["bin/run.sh"], "-rwx") || got["run"] != "link bin/run.sh" {
				t.Errorf("mode or link lost: %q %q", got["bin/run.sh"], got["run"])
			}
		})
	}
	if after := treeOf(t, ws.Dir); len(after) != len(edited) || after["main.go"] != edited["main.go"] {
		t.Error("export changed the edited checkout")
	}
	if staged := gitIn(t, ws.Dir, "--git-dir="+ws.GitDir, "--work-tree="+ws.Dir, "diff", "--cached", "--name-only"); staged != "" {
		t.Fatalf("export changed the real index: %q", staged)
	}
	if err := h.g.Export(t.Context(), &Workspace{GitDir: ws.GitDir, BaseSHA: "--output=x"}, t.TempDir()); err == nil {
		t.Error("an option for a revision was exported")
	}
}

// A base commit whose .gitattributes names a filter the git directory's
// configuration defines (planted) runs nothing when it is exported: the
// export is a checkout, where a smudge filter would run.
func TestExportRunsNoPlantedFilter(t *testing.T) {
	remote := newFakeRemote(t)
	h := newHarness(t)
	human := remote.create(t, "acme", "widgets")
	human.write(".gitattributes", "* filter=evil\n")
	human.write("notes.txt", "one\n")
	human.commit("attributes name a filter")
	human.push("main")
	ws, err := h.g.NewWorkspace(t.Context(), WorkspaceOptions{Repo: remote.repo("acme", "widgets"), ID: "export",
		Branch: "selfcode/issue-1", Base: "main", Token: StaticToken(testToken)})
	if err != nil {
		t.Fatal(err)
	}
	w := tripwire.New(t)
	runGit(t, "", "--git-dir="+ws.GitDir, "config", "filter.evil.smudge", w.Path)
	runGit(t, "", "--git-dir="+ws.GitDir, "config", "filter.evil.required", "true")
	for name, export := range map[string]func(dst string) error{
		"workspace": func(dst string) error { return h.g.Export(t.Context(), ws, dst) },
		"local":     func(dst string) error { return ExportLocal(t.Context(), ws.GitDir, ws.BaseSHA, dst) },
	} {
		if err := export(t.TempDir()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w.Untouched(t, name+" export")
	}
}
