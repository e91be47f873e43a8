package radius

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"unicode"
)

// Python: every .py file is a module, named by its path under a source
// root (the repository, src/, and each directory holding a pyproject.toml,
// setup.py or setup.cfg, with its src/); the edges are its import and
// from-import statements (a module imports its packages' __init__ too),
// relative ones resolved against its directory. Statements are read with a
// tokenizer that knows comments, strings and line joining; nothing is
// evaluated, so imports computed at run time (importlib) are not seen.

// pyImport is one import statement's target: a module path with the
// number of leading dots of a relative import, and the names imported
// from it (from-imports).
type pyImport struct {
	dots   int
	module string   // dotted, may be empty ("from . import x")
	names  []string // from-import names; nil for "import a.b"
}

// isPyTest reports test modules: test_*.py, *_test.py, conftest.py, and
// anything under a test or tests directory.
func isPyTest(rel string) bool {
	base := path.Base(rel)
	if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" {
		return true
	}
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if part == "test" || part == "tests" {
			return true
		}
	}
	return false
}

// pyRoots are the directories module names are relative to, deepest first.
func pyRoots(t *tree) []string {
	roots := map[string]bool{".": true}
	if t.dirs["src"] {
		roots["src"] = true
	}
	for _, f := range t.files {
		switch path.Base(f) {
		case "pyproject.toml", "setup.py", "setup.cfg":
			d := path.Dir(f)
			roots[d] = true
			if s := path.Join(d, "src"); t.dirs[s] {
				roots[s] = true
			}
		}
	}
	out := slices.Collect(maps.Keys(roots))
	// Deepest first, then by name.
	depth := func(dir string) int {
		if dir == "." {
			return 0
		}
		return strings.Count(dir, "/") + 1
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := depth(b) - depth(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// pyModuleName is rel's dotted module name under root, or "" when rel is
// not under root or a part is not an identifier.
func pyModuleName(root, rel string) string {
	if root != "." {
		if !strings.HasPrefix(rel, root+"/") {
			return ""
		}
		rel = strings.TrimPrefix(rel, root+"/")
	}
	rel = strings.TrimSuffix(rel, ".py")
	rel = strings.TrimSuffix(rel, "/__init__")
	if rel == "__init__" {
		return ""
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if !isIdent(p) {
			return ""
		}
	}
	return strings.Join(parts, ".")
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

func readPython(ctx context.Context, root string, t *tree, g *graph) error {
	files := t.withExt(".py")
	if len(files) == 0 {
		return nil
	}
	if len(files) > MaxSourceFiles {
		return fmt.Errorf("%w: %d Python files", ErrTooLarge, len(files))
	}
	roots := pyRoots(t)
	byName := map[string][]string{} // module name (under any root) → files
	unitOf := map[string]unit{}     // file → unit
	for _, rel := range files {
		if isPyTest(rel) {
			continue
		}
		for _, r := range roots {
			if n := pyModuleName(r, rel); n != "" {
				byName[n] = append(byName[n], rel)
				if _, ok := unitOf[rel]; !ok {
					unitOf[rel] = unit{lang: Python, name: n} // the deepest root names it
				}
			}
		}
	}
	for i, rel := range files {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		from, ok := unitOf[rel]
		if !ok {
			continue
		}
		src, ok, err := g.source(root, rel, from)
		if err != nil {
			return err
		}
		// Loading a module runs its packages' __init__ first.
		parts := strings.Split(from.name, ".")
		for i := 1; i < len(parts); i++ {
			for _, f := range byName[strings.Join(parts[:i], ".")] {
				if u, ok := unitOf[f]; ok {
					g.edge(from, u)
				}
			}
		}
		if !ok {
			continue
		}
		for _, imp := range pythonImports(src) {
			for _, target := range resolvePython(t, byName, rel, imp) {
				if u, ok := unitOf[target]; ok {
					g.edge(from, u)
				}
			}
		}
	}
	return nil
}

// resolvePython lists the repository files an import may load.
func resolvePython(t *tree, byName map[string][]string, rel string, imp pyImport) []string {
	var out []string
	if imp.dots > 0 {
		// Relative: from the file's directory, one level up per extra dot.
		dir := path.Dir(rel)
		for range imp.dots - 1 {
			dir = path.Dir(dir)
		}
		base := dir
		if imp.module != "" {
			base = path.Join(dir, strings.ReplaceAll(imp.module, ".", "/"))
			// Each package on the way is loaded too.
			p := dir
			for _, part := range strings.Split(imp.module, ".") {
				p = path.Join(p, part)
				out = append(out, pyFile(t, p)...)
			}
		} else {
			out = append(out, pyFile(t, base)...)
		}
		for _, n := range imp.names {
			out = append(out, pyFile(t, path.Join(base, n))...)
		}
		return out
	}
	parts := strings.Split(imp.module, ".")
	for i := range parts {
		out = append(out, byName[strings.Join(parts[:i+1], ".")]...)
	}
	for _, n := range imp.names {
		out = append(out, byName[imp.module+"."+n]...)
	}
	return out
}

// pyFile is the module at p (a path without extension): p.py or the
// package p/__init__.py.
func pyFile(t *tree, p string) []string {
	var out []string
	for _, c := range []string{p + ".py", p + "/__init__.py"} {
		if t.has(c) {
			out = append(out, c)
		}
	}
	return out
}

// pythonImports finds the import statements of a Python source: at any
// indentation, after ";", and after the colon of a one-line compound
// statement.
func pythonImports(src string) []pyImport {
	var out []pyImport
	for _, stmt := range pythonStatements(src) {
		out = append(out, parsePyImport(stmt)...)
	}
	return out
}

// parsePyImport reads "import a.b as c, d" or "from ..a import (b as c, d)".
func parsePyImport(stmt string) []pyImport {
	f := strings.Fields(stmt)
	for len(f) > 0 && f[0] != "import" && f[0] != "from" {
		// A one-line compound statement: "if x: import y", "try: import y".
		i := indexColon(f)
		if i < 0 {
			return nil
		}
		f = f[i:]
	}
	if len(f) < 2 {
		return nil
	}
	if f[0] == "import" {
		var out []pyImport
		for _, item := range strings.Split(strings.Join(f[1:], " "), ",") {
			name := strings.Fields(item)
			if len(name) > 0 && isDotted(name[0]) {
				out = append(out, pyImport{module: name[0]})
			}
		}
		return out
	}
	// from X import names
	if len(f) < 4 || f[2] != "import" {
		return nil
	}
	mod := f[1]
	dots := len(mod) - len(strings.TrimLeft(mod, "."))
	mod = mod[dots:]
	if mod != "" && !isDotted(mod) {
		return nil
	}
	list := strings.Trim(strings.Join(f[3:], " "), "() ")
	var names []string
	for _, item := range strings.Split(list, ",") {
		n := strings.Fields(strings.Trim(item, "() "))
		if len(n) > 0 && isIdent(n[0]) {
			names = append(names, n[0])
		}
	}
	return []pyImport{{dots: dots, module: mod, names: names}}
}

// indexColon returns the index just after the first field ending a
// compound statement's header with ":", or -1.
func indexColon(f []string) int {
	for i, w := range f {
		if j := strings.IndexByte(w, ':'); j >= 0 {
			rest := strings.TrimSpace(w[j+1:])
			if rest != "" {
				f[i] = rest
				return i
			}
			return i + 1
		}
	}
	return -1
}

func isDotted(s string) bool {
	for _, p := range strings.Split(s, ".") {
		if !isIdent(p) {
			return false
		}
	}
	return true
}

// pythonStatements splits Python source into simple statements with
// comments removed, every string literal replaced by "" and physical lines
// joined (backslash continuations and open brackets).
func pythonStatements(src string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			i++
			if src[i] == '\r' && i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			cur.WriteByte(' ')
		case c == '\'' || c == '"':
			i = skipPyString(src, i) - 1
			cur.WriteString(`""`)
		case c == '(' || c == '[' || c == '{':
			depth++
			cur.WriteByte(c)
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
			cur.WriteByte(c)
		case c == '\n':
			if depth == 0 {
				flush()
			} else {
				cur.WriteByte(' ')
			}
		case c == ';' && depth == 0:
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// skipPyString returns the index just past the string literal whose
// opening quote is at i (prefixes such as r or b come before i and are
// kept as an identifier; they change nothing about where it ends). An
// unterminated single-quoted string ends at the line's end.
func skipPyString(src string, i int) int {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	if triple {
		for j := i + 3; j < len(src); j++ {
			switch {
			case src[j] == '\\':
				j++
			case src[j] == q && j+2 < len(src) && src[j+1] == q && src[j+2] == q:
				return j + 3
			}
		}
		return len(src)
	}
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(src)
}
