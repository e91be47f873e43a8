package radius

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// copyTestdata copies testdata/name into a temporary directory (so a test
// may add to it) and returns that directory.
func copyTestdata(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestCompute(t *testing.T) {
	t.Parallel()
	goRadius := []string{"example.com/layers/b", "example.com/layers/c", "example.com/layers/cmd/tool",
		"example.com/layers/d", "example.com/layers/h", "example.com/tools/gen"}
	pyRadius := []string{"scripts.seed", "shop._private.impl", "shop.api", "shop.api.routes", "shop.cart", "shop.cli", "shop.lazy"}
	jsRadius := []string{"packages/app/src/app.ts", "packages/ui/src/index.ts", "src/components/Button.tsx",
		"src/lazy.mjs", "src/main.js", "src/util/index.ts"}
	tests := []struct {
		name, repo    string
		files         []string
		touched, want []string
		langs         []Language
	}{
		// Go: a go.mod naming a toolchain nobody has does not matter; build
		// constraints, ignored directories and tests are honoured, and a
		// second module of the repository counts.
		{"go leaf reaches its importers", "gomodule", []string{"a/a.go"}, []string{"example.com/layers/a"}, goRadius, []Language{Go}},
		{"go: touched packages are not their own radius", "gomodule", []string{"a/a.go", "b/b.go"},
			[]string{"example.com/layers/a", "example.com/layers/b"},
			[]string{"example.com/layers/c", "example.com/layers/cmd/tool", "example.com/layers/d", "example.com/layers/h", "example.com/tools/gen"}, []Language{Go}},
		{"go: a top package has none", "gomodule", []string{"cmd/tool/main.go"}, []string{"example.com/layers/cmd/tool"}, nil, []Language{Go}},
		{"go: a new file joins its directory's package", "gomodule", []string{"c/new.go"}, []string{"example.com/layers/c"},
			[]string{"example.com/layers/cmd/tool", "example.com/tools/gen"}, []Language{Go}},
		{"go: tests, data and new directories touch nothing", "gomodule", []string{"a/a_test.go", "README.md", "a/data.json", "z/new.go"}, nil, nil, []Language{Go}},
		{"go: the nested module's own packages", "gomodule", []string{"tools/gen/gen.go"}, []string{"example.com/tools/gen"}, nil, []Language{Go}},
		{"documentation, configuration and files not written yet touch nothing", "gomodule",
			[]string{"Dockerfile", "Makefile", "LICENSE-MIT", "docs/guide.rst", ".github/workflows/ci.yml", "web/site.css", "scripts/new.sh", "db/new.sql"},
			nil, nil, []Language{Go}},

		// Python: relative and absolute imports, parenthesised and continued
		// lines, imports inside functions; comments, strings and tests do not
		// count.
		{"python module reaches its importers", "python", []string{"src/shop/money.py"}, []string{"shop.money"}, pyRadius, []Language{Python}},
		{"python: a package's __init__ is imported by its users", "python", []string{"src/shop/api/__init__.py"}, []string{"shop.api"},
			[]string{"shop.api.routes", "shop.cli"}, []Language{Python}},
		{"python: tests touch nothing", "python", []string{"tests/test_cart.py"}, nil, nil, []Language{Python}},

		// JavaScript/TypeScript: import, export-from, require, import(),
		// tsconfig paths, workspace packages by name, .js naming .ts.
		{"typescript module reaches its importers", "javascript", []string{"src/util/format.ts"}, []string{"src/util/format.ts"}, jsRadius, []Language{JavaScript}},
		{"javascript: nothing imports the entry", "javascript", []string{"src/main.js", "src/util/format.test.ts"}, []string{"src/main.js"}, nil, []Language{JavaScript}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Compute(context.Background(), filepath.Join("testdata", tt.repo), tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Touched, tt.touched) || !reflect.DeepEqual(res.Radius, tt.want) {
				t.Errorf("touched %q radius %q\nwant    %q and %q", res.Touched, res.Radius, tt.touched, tt.want)
			}
			if !reflect.DeepEqual(res.Languages, tt.langs) {
				t.Errorf("languages %v, want %v", res.Languages, tt.langs)
			}
		})
	}
}

// When the radius cannot be vouched for, Compute says why instead of
// answering "nothing depends on it".
func TestComputeRefusesWhatItCannotMeasure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		add   map[string]string
		files []string
		want  string
		is    error
	}{
		{"code in another language", map[string]string{"native/lib.rs": "fn main() {}\n"}, []string{"native/lib.rs"}, "native/lib.rs", ErrUnsupported},
		// Scripts, schemas and infrastructure have dependents radius does
		// not read; a kind of file it does not know may be code.
		{"a shell script", map[string]string{"scripts/deploy.sh": "#!/bin/sh\n"}, []string{"a/a.go", "scripts/deploy.sh"}, "scripts/deploy.sh", ErrUnsupported},
		{"SQL", map[string]string{"db/schema.sql": "create table t (id int);\n"}, []string{"db/schema.sql"}, "db/schema.sql", ErrUnsupported},
		{"a protocol buffer", map[string]string{"api/greet.proto": "syntax = \"proto3\";\n"}, []string{"api/greet.proto"}, "api/greet.proto", ErrUnsupported},
		{"terraform", map[string]string{"infra/main.tf": "module \"x\" {}\n"}, []string{"infra/main.tf"}, "infra/main.tf", ErrUnsupported},
		{"an unknown kind of file", map[string]string{"tools/run.zz": "x\n"}, []string{"tools/run.zz"}, "tools/run.zz", ErrUnsupported},
		{"a Go file in no module", nil, []string{"../outside.go"}, "", nil},
		{"a Go file whose imports cannot be read", map[string]string{"broken/broken.go": "package broken\n\nimport (\n\t\"fmt\n"}, []string{"a/a.go"}, "broken/broken.go", nil},
		{"a go.mod without a module line", map[string]string{"tools/go.mod": "go 1.22\n"}, []string{"a/a.go"}, "tools/go.mod names no module", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTestdata(t, "gomodule")
			for p, content := range tt.add {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Compute(context.Background(), dir, tt.files)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("a path outside the checkout touches nothing: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
	// A Go file outside any module, in a checkout without go.mod.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Compute(context.Background(), dir, []string{"main.go"}); err == nil || !strings.Contains(err.Error(), "no Go module") {
		t.Fatalf("a Go file in no module: %v", err)
	}
}

// A file too large to read is never silently left out of a radius: in
// the language of a touched unit it could import it, so the radius is
// refused (ErrUnread, naming it); in another language it cannot, and it
// is only listed in Result.Skipped.
func TestComputeRefusesARadiusWithUnreadFiles(t *testing.T) {
	t.Parallel()
	dir := copyTestdata(t, "python")
	huge := "import shop.money\n" + strings.Repeat("# padding\n", MaxFileBytes/10+1)
	for _, p := range []string{"src/shop/huge.py", "web/bundle.js"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(huge), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Compute(context.Background(), dir, []string{"src/shop/money.py"})
	if !errors.Is(err, ErrUnread) || !strings.Contains(err.Error(), "src/shop/huge.py") || strings.Contains(err.Error(), "bundle.js") {
		t.Fatalf("err = %v, want ErrUnread naming src/shop/huge.py alone", err)
	}
	// A plan touching no Python unit: the Python file cannot import it.
	res, err := Compute(context.Background(), dir, []string{"README.md"})
	if err != nil || !reflect.DeepEqual(res.Skipped, []string{"src/shop/huge.py", "web/bundle.js"}) {
		t.Fatalf("skipped %v, err %v", res.Skipped, err)
	}
}

func TestNotCode(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"README", "README.md", "docs/a.rst", "LICENSE", "LICENSE-APACHE", "COPYING", "Dockerfile", "Dockerfile.dev",
		"Makefile", ".gitignore", ".env", "config/app.yaml", "package.json", "go.sum", "go.mod", "img/logo.svg", "web/a.css"} {
		if !NotCode(f) {
			t.Errorf("%s is not code", f)
		}
	}
	for _, f := range []string{"deploy.sh", "version.sh", "license.py", "schema.sql", "a.proto", "main.tf", "x.rs", "build.gradle", "Jenkinsfile", "run"} {
		if NotCode(f) {
			t.Errorf("%s may be code", f)
		}
	}
}

// Nothing is followed out of the checkout: a symlinked directory or file
// is not read, whatever it points at.
func TestComputeDoesNotFollowSymlinks(t *testing.T) {
	t.Parallel()
	dir := copyTestdata(t, "gomodule")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.go"), []byte("package x\n\nimport \"example.com/layers/a\"\n\nvar X = a.A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "x.go"), filepath.Join(dir, "b", "x.go")); err != nil {
		t.Fatal(err)
	}
	res, err := Compute(context.Background(), dir, []string{"a/a.go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Radius {
		if strings.Contains(u, "linked") {
			t.Fatalf("a symlinked directory was read: %v", res.Radius)
		}
	}
}

func TestPythonImports(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []pyImport
	}{
		{"import a.b as c, d\n", []pyImport{{module: "a.b"}, {module: "d"}}},
		{"from . import x, y as z\n", []pyImport{{dots: 1, names: []string{"x", "y"}}}},
		{"from ..pkg.mod import (\n  a,\n  b as c,  # why\n)\n", []pyImport{{dots: 2, module: "pkg.mod", names: []string{"a", "b"}}}},
		{"x = 1; import y\n", []pyImport{{module: "y"}}},
		{"try: import fast\nexcept ImportError: import slow\n", []pyImport{{module: "fast"}, {module: "slow"}}},
		{"s = '''\nimport no\n'''\n# import no\nt = \"import no\"\n", nil},
		{"from x import *\n", []pyImport{{module: "x"}}},
		{"import \\\n  cont\n", []pyImport{{module: "cont"}}},
		{"print('it''s'); from m import n\n", []pyImport{{module: "m", names: []string{"n"}}}},
	}
	for _, tt := range tests {
		if got := pythonImports(tt.src); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.src, got, tt.want)
		}
	}
}

func TestJSImports(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []string
	}{
		{`import a from "./a"; import "./side"; export * from './b'; export { c } from "./c"`, []string{"./a", "./side", "./b", "./c"}},
		{"const x = require('./x'); const y = await import(`./y`);", []string{"./x", "./y"}},
		{`import type { T } from "./types"; import x = require("./legacy");`, []string{"./types", "./legacy"}},
		{"// import './no'\n/* require('./no') */ const s = \"import x from './no'\";", nil},
		{"const r = /import '\\.\\/no'/; const d = a / b / c; const t = `${require('./in-template')}`;", []string{"./in-template"}},
		{"obj.require('./no'); import.meta.url; const u = `./${name}`; import(name);", nil},
		{"const p = <p>Don't</p>;\nimport z from './z';", []string{"./z"}},
	}
	for _, tt := range tests {
		if got := jsImports(tt.src); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q:\n got %q\nwant %q", tt.src, got, tt.want)
		}
	}
}

func FuzzPythonImports(f *testing.F) {
	for _, s := range []string{"import a\n", "from . import (x,\n y)\n", "'''\n", "\\\n", "if x: import y; from z import w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, imp := range pythonImports(src) {
			if imp.module != "" && !isDotted(imp.module) {
				t.Fatalf("module %q from %q", imp.module, src)
			}
		}
	})
}

func FuzzJSImports(f *testing.F) {
	for _, s := range []string{`import a from "./a"`, "`${`${x}`}`", "/[/]/", "/*", "require(", "'\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		jsImports(src) // must end, without panicking
	})
}
