package repomap

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/pipeline/tools"
)

// sample copies testdata/sample and adds what git cannot carry: a .git
// directory, a binary file, a huge file and a symlink.
func sample(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir("testdata/sample", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/sample", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(root, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(root, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{
		".git/config":         "[core]\n",
		".git/hooks/x.go":     "package hooks\n",
		"assets/logo.png":     "\x89PNG\r\n\x1a\n\x00\x00",
		"data/huge.txt":       strings.Repeat("x", maxFileSize+1),
		".github/workflows/a": "on: push\n",
		".selfcode.yml":       "paths: {deny: [secret/**]}\n",
	}
	for rel, content := range extra {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	return root
}

var samplePolicy = tools.Policy{Deny: []string{"secret/**"}}

func TestBuildOutlines(t *testing.T) {
	root := sample(t)
	got, err := Build(context.Background(), Options{Root: root, Policy: samplePolicy, Budget: 4000})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Repository map: 7 files;",
		"internal/store/store.go (package store)\n",
		"  const DefaultPath\n",
		"  var ErrNotFound\n",
		"  type ID = string\n",
		"  type Getter interface{Get, Put}\n",
		"  type Store struct{mu, data, Path}\n",
		"  type Cache[K comparable, V any] struct{items}\n",
		"  func New(path string) (*Store, error)\n",
		"  func (s *Store) Get(key string) ([]byte, error)\n",
		"  func (s *Store) size() int\n",
		"cmd/app/main.go (package main)\n  func main()\n  func run(ctx context.Context, args []string) error\n",
		"internal/billing/invoice.go (package billing)\n  type Invoice struct{Lines, Currency}\n",
		"internal/store/store_test.go (package store)\n  func newTestStore(t *testing.T) *Store\n  tests: TestGetMissing, TestPutGet\n",
		"Other files:\nREADME.md\ndocs/guide.md\ngo.mod\n",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("map lacks %q:\n%s", w, got)
		}
	}
	// Non-test Go before tests, tests before other files.
	if strings.Index(got, "internal/store/store.go") > strings.Index(got, "store_test.go") ||
		strings.Index(got, "store_test.go") > strings.Index(got, "README.md") {
		t.Errorf("wrong order:\n%s", got)
	}
}

func TestBuildExcludes(t *testing.T) {
	root := sample(t)
	got, err := Build(context.Background(), Options{Root: root, Policy: samplePolicy, Budget: 4000})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"secret", "APIKey", "vendor", "Vendored", "node_modules", ".git/", "hooks", "logo.png", "huge.txt", "etc/", "passwd", ".selfcode.yml", "workflows"} {
		if strings.Contains(got, bad) {
			t.Errorf("map contains %q:\n%s", bad, got)
		}
	}
	// Without the deny glob the secret package is mapped.
	open, err := Build(context.Background(), Options{Root: root, Budget: 4000})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(open, "secret/keys.go") {
		t.Errorf("secret/keys.go missing without deny:\n%s", open)
	}
}

func TestBuildBudget(t *testing.T) {
	root := sample(t)
	for _, budget := range []int{0, 20, 40, 60, 100, 150, 250, 400, 10000} {
		got, err := Build(context.Background(), Options{Root: root, Policy: samplePolicy, Budget: budget, Focus: []string{"store"}})
		if err != nil {
			t.Fatal(err)
		}
		limit := budget
		if limit == 0 {
			limit = DefaultBudget
		}
		if len(got)/CharsPerToken > limit || len(got) > limit*CharsPerToken {
			t.Errorf("budget %d: map is %d bytes:\n%s", budget, len(got), got)
		}
		if budget == 100 && (!strings.Contains(got, "more files") || !strings.Contains(got, "internal/store/store.go")) {
			t.Errorf("budget %d: expected a partial map with the focus file:\n%s", budget, got)
		}
		if budget == 10000 && strings.Contains(got, "more files") {
			t.Errorf("budget %d: files left out:\n%s", budget, got)
		}
	}
}

func TestBuildFocus(t *testing.T) {
	root := sample(t)
	tests := []struct {
		name  string
		focus []string
		first string
	}{
		{"path", []string{"internal/billing/invoice.go"}, "internal/billing/invoice.go"},
		{"directory", []string{"internal/billing/"}, "internal/billing/invoice.go"},
		{"file name", []string{"invoice.go"}, "internal/billing/invoice.go"},
		{"identifier word", []string{"Total"}, "internal/billing/invoice.go"},
		{"path word", []string{"billing"}, "internal/billing/invoice.go"},
		{"code before its test", []string{"store"}, "internal/store/store.go"},
		{"markdown doc", []string{"docs/guide.md"}, "docs/guide.md"},
		{"no focus: non-test Go first", nil, "cmd/app/main.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Build(context.Background(), Options{Root: root, Policy: samplePolicy, Budget: 4000, Focus: tt.focus})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(got, "\n")
			first := ""
			for _, l := range lines[1:] {
				if l != "" && !strings.HasPrefix(l, " ") && l != "Other files:" {
					first = strings.Fields(l)[0]
					break
				}
			}
			if tt.first == "docs/guide.md" {
				// Non-Go focus files lead the path list.
				i := strings.Index(got, "Other files:\n")
				if i < 0 || !strings.HasPrefix(got[i+len("Other files:\n"):], "docs/guide.md\n") {
					t.Errorf("docs/guide.md does not lead the path list:\n%s", got)
				}
				return
			}
			if first != tt.first {
				t.Errorf("first file %q, want %q:\n%s", first, tt.first, got)
			}
		})
	}
}

func TestBuildDeterministic(t *testing.T) {
	root := sample(t)
	opts := Options{Root: root, Policy: samplePolicy, Budget: 300, Focus: []string{"store", "Total"}}
	a, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b, err := Build(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("run %d differs:\n%s\n---\n%s", i, a, b)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(context.Background(), Options{Root: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("missing root accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, Options{Root: sample(t)}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: err = %v", err)
	}
}

func TestBuildBrokenGo(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\nfunc Good() {}\n\nfunc bad( {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Build(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "a.go (package a)\n  func Good()\n") {
		t.Errorf("broken file not outlined as far as it parses:\n%s", got)
	}
}

func BenchmarkBuildSelf(b *testing.B) {
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Root: root, Focus: []string{"pipeline/tools", "str_replace", "Policy"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(context.Background(), opts); err != nil {
			b.Fatal(err)
		}
	}
}
