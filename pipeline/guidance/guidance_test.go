package guidance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	repo := map[string]string{
		"AGENTS.md":                       "Run make test.\n",
		"api/AGENTS.md":                   "API handlers return errors, never panic.\n",
		"api/v2/handlers.go":              "package v2\n",
		"web/app.js":                      "",
		".github/copilot-instructions.md": "Prefer small functions.\n",
	}
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{"no files: the repository's", nil, []string{"AGENTS.md", ".github/copilot-instructions.md"}},
		{"nearest up the tree", []string{"api/v2/handlers.go"}, []string{"AGENTS.md", "api/AGENTS.md", ".github/copilot-instructions.md"}},
		{"none nearer than the root", []string{"web/app.js", "README.md"}, []string{"AGENTS.md", ".github/copilot-instructions.md"}},
		{"each once", []string{"api/x.go", "api/v2/handlers.go"}, []string{"AGENTS.md", "api/AGENTS.md", ".github/copilot-instructions.md"}},
	}
	root := t.TempDir()
	write(t, root, repo)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range Find(root, tt.files, Options{}) {
				got = append(got, f.Path)
				if f.Text != strings.TrimSpace(repo[f.Path]) {
					t.Errorf("%s: %q", f.Path, f.Text)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("files %q, want %q", got, tt.want)
			}
		})
	}
}

// Symbolic links are never followed (a repository could point one at a
// file of the server); what is read is capped, per file and in all.
func TestFindBounds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, root, map[string]string{"AGENTS.md": strings.Repeat("é", 100), "deep/x.go": "", "linked/y.go": ""})
	if err := os.Symlink(outside, filepath.Join(root, ".github-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "deep", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, ".github", "copilot-instructions.md")); err != nil {
		t.Fatal(err)
	}
	got := Find(root, []string{"deep/x.go"}, Options{PerFile: 51, Total: 1000})
	if len(got) != 1 || got[0].Path != "AGENTS.md" || !got[0].Truncated || got[0].Text != strings.Repeat("é", 25) {
		t.Fatalf("got %+v: want the root's AGENTS.md cut at a rune boundary, and no symbolic link followed", got)
	}
}
