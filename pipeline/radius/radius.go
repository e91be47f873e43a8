package radius

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/selfcode/selfcode/internal/shortlist"
)

// Language is a language whose imports radius reads.
type Language string

// The languages radius understands.
const (
	Go         Language = "go"
	Python     Language = "python"
	JavaScript Language = "javascript" // and TypeScript
)

// Bounds on what Compute reads.
const (
	// MaxSourceFiles is how many source files a repository may have; past
	// it the radius is not computed (ErrTooLarge).
	MaxSourceFiles = 50_000
	// MaxFileBytes is how much of one Python or JavaScript file is read;
	// longer files (bundles, generated code) are left out and named in
	// Result.Skipped. Of a Go file only the header (package clause and
	// imports) is read.
	MaxFileBytes  = 2 << 20
	goHeaderBytes = 256 << 10
)

// ErrTooLarge: the repository has more source files than MaxSourceFiles.
var ErrTooLarge = errors.New("too many source files to read their imports")

// ErrUnsupported: the change touches code in a language whose imports
// radius does not read (or a file of a kind it does not know), so what
// depends on it is unknown.
var ErrUnsupported = errors.New("code in a language whose imports selfcode does not read")

// ErrUnread: files in the language of a touched unit were too large to
// read (MaxFileBytes), so units that import it may be missing from the
// radius.
var ErrUnread = errors.New("files too large to read (over 2 MiB) were left out, so what imports the change may be missing")

// Result is what Compute found.
type Result struct {
	// Touched are the units the files belong to: Go packages (by import
	// path), Python modules (dotted), JavaScript/TypeScript modules (by
	// path). Sorted.
	Touched []string
	// Radius are the other units that import a touched one, directly or
	// through others; test code is not counted. Sorted.
	Radius []string
	// Languages are the languages whose imports were read (those the
	// repository has code in).
	Languages []Language
	// Skipped names files left out as too large to read; none of them is
	// in the language of a touched unit (that is ErrUnread).
	Skipped []string
}

// unit is one node of the import graph: a Go package, a Python or
// JavaScript module; its key is unique across languages.
type unit struct {
	lang Language
	name string
}

func (u unit) key() string { return string(u.lang) + "\x00" + u.name }

// graph is the repository's imports: which unit each (non-test) source
// file belongs to and what each unit imports.
type graph struct {
	fileUnit map[string]unit            // relative slash path → its unit
	imports  map[string]map[string]bool // unit key → imported unit keys
	units    map[string]unit            // by key
	langs    map[Language]bool
	skipped  []string
}

func newGraph() *graph {
	return &graph{fileUnit: map[string]unit{}, imports: map[string]map[string]bool{}, units: map[string]unit{}, langs: map[Language]bool{}}
}

func (g *graph) add(u unit) {
	g.units[u.key()] = u
	g.langs[u.lang] = true
}

// source records that file rel is unit u and reads it; ok is false (and
// the file named in Result.Skipped) when it is too large to read.
func (g *graph) source(root, rel string, u unit) (src string, ok bool, err error) {
	g.add(u)
	g.fileUnit[rel] = u
	b, whole, err := readText(root, rel, MaxFileBytes)
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", rel, err)
	}
	if !whole {
		g.skipped = append(g.skipped, rel)
		return "", false, nil
	}
	return string(b), true, nil
}

func (g *graph) edge(from, to unit) {
	if from.key() == to.key() {
		return
	}
	g.add(from)
	g.add(to)
	m := g.imports[from.key()]
	if m == nil {
		m = map[string]bool{}
		g.imports[from.key()] = m
	}
	m[to.key()] = true
}

// Compute reads the imports of the repository checked out at root and
// returns the units that files (slash-separated paths relative to root, as
// a plan names them) touch and the units that depend on those. Files known
// not to be code (documentation, data, configuration: NotCode) and test
// files touch nothing; a file not yet written touches its Go package if
// the directory has one, and nothing otherwise (nothing can import it
// yet). It fails when a touched file that exists is anything else — code
// in another language, a script, a schema, a file of an unknown kind
// (ErrUnsupported) —, when a touched Go file belongs to no module, when a
// file it must read cannot be read or parsed, or when a file in the
// language of a touched unit was too large to read (ErrUnread): a radius
// it cannot vouch for is an error, never an empty or smaller answer.
func Compute(ctx context.Context, root string, files []string) (Result, error) {
	tree, err := walk(ctx, root)
	if err != nil {
		return Result{}, err
	}
	g := newGraph()
	if err := readGo(ctx, root, tree, g); err != nil {
		return Result{}, err
	}
	if err := readPython(ctx, root, tree, g); err != nil {
		return Result{}, err
	}
	if err := readJavaScript(ctx, root, tree, g); err != nil {
		return Result{}, err
	}
	var res Result
	for l := range g.langs {
		res.Languages = append(res.Languages, l)
	}
	slices.Sort(res.Languages)
	hit := map[string]bool{}
	touchedLangs := map[Language]bool{}
	for _, f := range files {
		u, ok, err := touchedUnit(root, tree, g, f)
		if err != nil {
			return Result{}, err
		}
		if ok && !hit[u.key()] {
			hit[u.key()] = true
			touchedLangs[u.lang] = true
			res.Touched = append(res.Touched, u.name)
		}
	}
	// A file left unread could import a touched unit of its language;
	// other languages' cannot.
	var unread []string
	for _, rel := range g.skipped {
		if touchedLangs[g.fileUnit[rel].lang] {
			unread = append(unread, rel)
		} else {
			res.Skipped = append(res.Skipped, rel)
		}
	}
	if len(unread) > 0 {
		return Result{}, fmt.Errorf("%w: %s", ErrUnread, strings.Join(shortlist.Abbreviate(unread, 5), ", "))
	}
	sort.Strings(res.Touched)
	res.Radius = dependents(g, hit)
	return res, nil
}

// touchedUnit is the unit a planned file belongs to, if any.
func touchedUnit(root string, tree *tree, g *graph, f string) (unit, bool, error) {
	rel := path.Clean(strings.TrimPrefix(filepath.ToSlash(f), "./"))
	if rel == "." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return unit{}, false, nil
	}
	if u, ok := g.fileUnit[rel]; ok {
		return u, true, nil
	}
	switch {
	case strings.HasSuffix(rel, ".go"):
		if isGoTest(rel) {
			return unit{}, false, nil
		}
		// A file not written yet (or left out by its build constraints)
		// belongs to its directory's package, if there is one.
		if u, ok := g.goDirUnit(path.Dir(rel)); ok {
			return u, true, nil
		}
		if _, ok := tree.moduleOf(path.Dir(rel)); !ok {
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
				return unit{}, false, fmt.Errorf("%s belongs to no Go module (no go.mod above it)", rel)
			}
		}
		return unit{}, false, nil
	case readsLanguage(rel) || NotCode(rel):
		// A test, a file in a directory never read (build output,
		// dependencies), or not code at all.
		return unit{}, false, nil
	}
	if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); errors.Is(err, fs.ErrNotExist) {
		return unit{}, false, nil // not written yet: nothing imports it
	}
	return unit{}, false, fmt.Errorf("%s: %w", rel, ErrUnsupported)
}

// dependents are the units, not in hit, that import one in hit, directly
// or not; sorted by name.
func dependents(g *graph, hit map[string]bool) []string {
	importedBy := map[string][]string{}
	for from, tos := range g.imports {
		for to := range tos {
			importedBy[to] = append(importedBy[to], from)
		}
	}
	seen := map[string]bool{}
	queue := make([]string, 0, len(hit))
	for k := range hit {
		queue = append(queue, k)
	}
	var out []string
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		for _, from := range importedBy[k] {
			if seen[from] || hit[from] {
				continue
			}
			seen[from] = true
			out = append(out, g.units[from].name)
			queue = append(queue, from)
		}
	}
	sort.Strings(out)
	return out
}

// readsLanguage reports a file of a language whose imports radius reads.
func readsLanguage(rel string) bool {
	ext := path.Ext(rel)
	return ext == ".go" || ext == ".py" || ext == ".pyi" || slices.Contains(jsExts, ext)
}

// notCodeExts are the extensions of documentation, data, configuration,
// styles and media: files no code imports as code. Anything else —
// programming languages radius does not read, shell and other scripts,
// SQL, Protocol Buffers, Terraform, unknown kinds — is code whose
// dependents are unknown.
var notCodeExts = []string{
	".md", ".markdown", ".mdown", ".rst", ".txt", ".text", ".adoc", ".asciidoc", ".org", ".rdoc",
	".json", ".jsonc", ".json5", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".properties", ".env",
	".xml", ".csv", ".tsv", ".lock", ".sum", ".mod", ".gitignore", ".gitattributes", ".gitmodules",
	".dockerignore", ".npmignore", ".prettierignore", ".eslintignore", ".editorconfig", ".nvmrc", ".python-version",
	".tool-versions", ".css", ".scss", ".sass", ".less", ".html", ".htm",
	".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".bmp", ".pdf", ".woff", ".woff2", ".ttf", ".otf", ".eot",
}

// notCodeNames are files without an extension known by name as
// documentation or build configuration (LICENSE, LICENSE-MIT, Makefile);
// buildFiles may also have one (Dockerfile.dev, Makefile.in).
var (
	notCodeNames = []string{"license", "licence", "copying", "notice", "authors", "contributors", "codeowners", "owners",
		"readme", "changelog", "changes", "history", "version", "procfile", "gnumakefile"}
	buildFiles = []string{"dockerfile", "containerfile", "makefile"}
)

// NotCode reports a file that is documentation, data or configuration,
// by its extension or name: a change to it has no blast radius.
func NotCode(rel string) bool {
	base := strings.ToLower(path.Base(rel))
	ext := path.Ext(base)
	if slices.Contains(notCodeExts, ext) {
		return true
	}
	name, _, _ := strings.Cut(base, ".")
	if slices.Contains(buildFiles, name) {
		return true
	}
	if ext != "" {
		return false
	}
	name, _, _ = strings.Cut(strings.ReplaceAll(base, "_", "-"), "-")
	return slices.Contains(notCodeNames, name)
}

// tree is the repository's files, as read once (no symlink followed).
type tree struct {
	files   []string          // regular files, relative slash paths, sorted
	dirs    map[string]bool   // directories walked (not skipped)
	modules map[string]string // directory of a go.mod → the module path ("" until read)
}

// skipDir reports directories never read: version control, dependencies
// and virtual environments, build output, and hidden directories.
func skipDir(name string) bool {
	switch name {
	case "node_modules", "bower_components", "vendor", "__pycache__", "site-packages", "testdata":
		return true
	}
	return strings.HasPrefix(name, ".")
}

// walk lists root's regular files, not following symlinks, skipping
// directories skipDir names and virtual environments.
func walk(ctx context.Context, root string) (*tree, error) {
	t := &tree{dirs: map[string]bool{".": true}, modules: map[string]string{}}
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n%512 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(d.Name()) || isVirtualEnv(p) {
				return filepath.SkipDir
			}
			t.dirs[rel] = true
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(t.files) >= 4*MaxSourceFiles {
			return ErrTooLarge
		}
		t.files = append(t.files, rel)
		if d.Name() == "go.mod" {
			t.modules[path.Dir(rel)] = ""
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the repository's files: %w", err)
	}
	sort.Strings(t.files)
	return t, nil
}

// isVirtualEnv reports a Python virtual environment (it has pyvenv.cfg).
func isVirtualEnv(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, "pyvenv.cfg"))
	return err == nil
}

// moduleOf returns the directory of the go.mod that dir belongs to.
func (t *tree) moduleOf(dir string) (string, bool) {
	for {
		if _, ok := t.modules[dir]; ok {
			return dir, true
		}
		if dir == "." {
			return "", false
		}
		dir = path.Dir(dir)
	}
}

// withExt lists the files whose names end with one of exts, in order.
func (t *tree) withExt(exts ...string) []string {
	var out []string
	for _, f := range t.files {
		for _, e := range exts {
			if strings.HasSuffix(f, e) {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func (t *tree) has(rel string) bool {
	_, ok := slices.BinarySearch(t.files, rel)
	return ok
}

// readText reads a regular file of at most limit bytes (true), or
// reports it too large (false).
func readText(root, rel string, limit int64) ([]byte, bool, error) {
	b, whole, err := readPrefix(root, rel, limit)
	if err != nil || !whole {
		return nil, false, err
	}
	return b, true, nil
}

// readPrefix reads at most the first limit bytes of a regular file; whole
// says whether that is all of it.
func readPrefix(root, rel string, limit int64) ([]byte, bool, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !info.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	return b, info.Size() <= limit, err
}
