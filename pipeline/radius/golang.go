package radius

import (
	"bytes"
	"context"
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"path"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
)

// Go: every go.mod of the repository is a module; a directory's buildable
// non-test .go files (for linux/amd64, as the sandbox builds) are a package
// named by its module path and directory; the graph's edges are the
// import declarations between the repository's packages. Only go.mod's
// module line and each file's header (build constraints, package clause,
// imports) are read, by Go's own parsers: no go command runs, so no
// toolchain line, GOFLAGS or workspace of the repository has any effect.

// goContext decides which files a package has: the sandbox's platform,
// with cgo, every release tag of this Go.
func goContext() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = "linux", "amd64", true
	c.GOROOT, c.GOPATH = "", ""
	return c
}

func isGoTest(rel string) bool { return strings.HasSuffix(rel, "_test.go") }

// goIgnored reports files the go command never builds: under testdata,
// vendor, or a directory whose name starts with "_" or ".".
func goIgnored(rel string) bool {
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if strings.HasPrefix(part, "_") || strings.HasPrefix(part, ".") || part == "testdata" || part == "vendor" {
			return true
		}
	}
	return strings.HasPrefix(path.Base(rel), "_") || strings.HasPrefix(path.Base(rel), ".")
}

func readGo(ctx context.Context, root string, t *tree, g *graph) error {
	files := t.withExt(".go")
	if len(files) == 0 {
		return nil
	}
	if len(files) > MaxSourceFiles {
		return fmt.Errorf("%w: %d Go files", ErrTooLarge, len(files))
	}
	for dir := range t.modules {
		b, ok, err := readText(root, path.Join(dir, "go.mod"), MaxFileBytes)
		if err != nil {
			return fmt.Errorf("read %s: %w", path.Join(dir, "go.mod"), err)
		}
		mp := ""
		if ok {
			mp = modfile.ModulePath(b)
		}
		if mp == "" {
			return fmt.Errorf("%s names no module", path.Join(dir, "go.mod"))
		}
		t.modules[dir] = mp
	}
	bc := goContext()
	fset := token.NewFileSet()
	pkgImports := map[string][]string{} // package dir → imports
	for i, rel := range files {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if isGoTest(rel) || goIgnored(rel) {
			continue
		}
		mod, ok := t.moduleOf(path.Dir(rel))
		if !ok {
			continue // not in a module: only an error if the plan touches it
		}
		head, err := goHeader(root, rel)
		if err != nil {
			return err
		}
		fc := bc
		fc.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(head)), nil }
		match, err := fc.MatchFile(path.Dir(rel), path.Base(rel))
		if err != nil {
			return fmt.Errorf("read the build constraints of %s: %w", rel, err)
		}
		if !match {
			continue
		}
		f, err := parser.ParseFile(fset, rel, head, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("read the imports of %s: %w", rel, err)
		}
		dir := path.Dir(rel)
		u := goUnit(t.modules[mod], mod, dir)
		g.add(u)
		g.fileUnit[rel] = u
		for _, is := range f.Imports {
			ip, err := strconv.Unquote(is.Path.Value)
			if err == nil {
				pkgImports[dir] = append(pkgImports[dir], ip)
			}
		}
	}
	// Edges to the repository's own packages (of any of its modules).
	for dir, imps := range pkgImports {
		mod, _ := t.moduleOf(dir)
		from := goUnit(t.modules[mod], mod, dir)
		for _, ip := range imps {
			to := unit{lang: Go, name: ip}
			if _, ok := g.units[to.key()]; ok {
				g.edge(from, to)
			}
		}
	}
	return nil
}

// goUnit is the package in dir of the module at modDir named modPath.
func goUnit(modPath, modDir, dir string) unit {
	if dir == modDir {
		return unit{lang: Go, name: modPath}
	}
	rel := strings.TrimPrefix(dir, modDir+"/")
	if modDir == "." {
		rel = dir
	}
	return unit{lang: Go, name: modPath + "/" + rel}
}

// goDirUnit is the package of a directory that has one.
func (g *graph) goDirUnit(dir string) (unit, bool) {
	for rel, u := range g.fileUnit {
		if u.lang == Go && path.Dir(rel) == dir {
			return u, true
		}
	}
	return unit{}, false
}

// goHeader reads the start of a Go file: enough for its build constraints,
// package clause and imports (parsing stops after them).
func goHeader(root, rel string) ([]byte, error) {
	b, _, err := readPrefix(root, rel, goHeaderBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	return b, nil
}
