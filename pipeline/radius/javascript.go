package radius

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// JavaScript and TypeScript: every source file is a module, named by its
// path; the edges are its static imports and re-exports, require() and
// dynamic import() calls with a literal specifier. Relative specifiers are
// resolved as Node and TypeScript do (extensions, index files, a .js
// specifier naming a .ts file); bare ones when they name a package of the
// repository (a package.json's "name", as in workspaces) or match the root
// tsconfig.json/jsconfig.json "paths" and "baseUrl". Everything is read as
// text by a tokenizer that knows comments, strings, template literals and
// regular expressions: no package.json script, bundler or compiler runs.

var jsExts = []string{".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"}

// jsSkipDirs hold build output, never source.
var jsSkipDirs = []string{"dist", "build", "coverage"}

// isJSTest reports test modules: *.test.*, *.spec.*, and anything under
// __tests__, __mocks__, test or tests.
func isJSTest(rel string) bool {
	base := path.Base(rel)
	if strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") {
		return true
	}
	for _, part := range strings.Split(path.Dir(rel), "/") {
		switch part {
		case "__tests__", "__mocks__", "test", "tests":
			return true
		}
	}
	return false
}

func jsIgnored(rel string) bool {
	for _, part := range strings.Split(path.Dir(rel), "/") {
		if slices.Contains(jsSkipDirs, part) {
			return true
		}
	}
	return strings.HasSuffix(rel, ".d.ts") || strings.HasSuffix(rel, ".min.js")
}

// jsResolver resolves specifiers to the repository's files.
type jsResolver struct {
	t        *tree
	packages map[string]jsPackage // by package name
	baseURL  string               // tsconfig baseUrl, relative to the root ("" none)
	paths    [][2]string          // tsconfig paths: pattern → first target, relative to baseURL
}

type jsPackage struct {
	dir   string
	entry []string // entry candidates relative to dir
}

func readJavaScript(ctx context.Context, root string, t *tree, g *graph) error {
	files := t.withExt(jsExts...)
	if len(files) == 0 {
		return nil
	}
	if len(files) > MaxSourceFiles {
		return fmt.Errorf("%w: %d JavaScript/TypeScript files", ErrTooLarge, len(files))
	}
	r := &jsResolver{t: t, packages: map[string]jsPackage{}}
	if err := r.load(root); err != nil {
		return err
	}
	for i, rel := range files {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if isJSTest(rel) || jsIgnored(rel) {
			continue
		}
		from := unit{lang: JavaScript, name: rel}
		src, ok, err := g.source(root, rel, from)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		for _, spec := range jsImports(src) {
			if target, ok := r.resolve(rel, spec); ok && !isJSTest(target) && !jsIgnored(target) {
				g.edge(from, unit{lang: JavaScript, name: target})
			}
		}
	}
	return nil
}

// load reads the repository's package.json names and entries and the root
// tsconfig.json (or jsconfig.json) paths — as data.
func (r *jsResolver) load(root string) error {
	for _, f := range r.t.files {
		if path.Base(f) != "package.json" {
			continue
		}
		b, ok, err := readText(root, f, MaxFileBytes)
		if err != nil || !ok {
			continue // an unreadable manifest names no package
		}
		var pj struct {
			Name    string          `json:"name"`
			Main    string          `json:"main"`
			Module  string          `json:"module"`
			Types   string          `json:"types"`
			Source  string          `json:"source"`
			Exports json.RawMessage `json:"exports"`
		}
		if json.Unmarshal(b, &pj) != nil || pj.Name == "" {
			continue
		}
		var entry []string
		for _, e := range append([]string{pj.Source, exportsEntry(pj.Exports), pj.Module, pj.Main, pj.Types}, "index", "src/index") {
			if e != "" {
				entry = append(entry, e)
			}
		}
		r.packages[pj.Name] = jsPackage{dir: path.Dir(f), entry: entry}
	}
	for _, name := range []string{"tsconfig.json", "jsconfig.json"} {
		b, ok, err := readText(root, name, MaxFileBytes)
		if err != nil || !ok {
			continue
		}
		var tc struct {
			CompilerOptions struct {
				BaseURL string              `json:"baseUrl"`
				Paths   map[string][]string `json:"paths"`
			} `json:"compilerOptions"`
		}
		if json.Unmarshal(stripJSONC(b), &tc) != nil {
			continue
		}
		co := tc.CompilerOptions
		if co.BaseURL != "" {
			r.baseURL = path.Clean(co.BaseURL)
		}
		for pat, targets := range co.Paths {
			if len(targets) > 0 {
				r.paths = append(r.paths, [2]string{pat, targets[0]})
			}
		}
		// Longest pattern first, as TypeScript prefers the longest prefix.
		sort.Slice(r.paths, func(i, j int) bool { return len(r.paths[i][0]) > len(r.paths[j][0]) })
		break
	}
	return nil
}

// exportsEntry is the "." entry of a package.json "exports" field.
func exportsEntry(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	if dot, ok := m["."]; ok {
		return exportsEntry(dot)
	}
	for _, k := range []string{"source", "import", "require", "default", "types"} {
		if v, ok := m[k]; ok {
			if e := exportsEntry(v); e != "" {
				return e
			}
		}
	}
	return ""
}

// resolve finds the repository file spec names from the file from.
func (r *jsResolver) resolve(from, spec string) (string, bool) {
	if spec == "" || strings.ContainsAny(spec, "\x00?#") {
		return "", false
	}
	if spec == "." || spec == ".." || strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") {
		return r.file(path.Join(path.Dir(from), spec))
	}
	if strings.HasPrefix(spec, "/") || strings.Contains(spec, ":") {
		return "", false // absolute paths, node:fs, URLs
	}
	for _, p := range r.paths {
		pre, suf, wild := strings.Cut(p[0], "*")
		switch {
		case !wild && spec == p[0]:
			return r.file(path.Join(r.baseOr(), p[1]))
		case wild && strings.HasPrefix(spec, pre) && strings.HasSuffix(spec, suf) && len(spec) >= len(pre)+len(suf):
			star := spec[len(pre) : len(spec)-len(suf)]
			return r.file(path.Join(r.baseOr(), strings.Replace(p[1], "*", star, 1)))
		}
	}
	if name, sub := packageName(spec); name != "" {
		if pkg, ok := r.packages[name]; ok {
			if sub != "" {
				if f, ok := r.file(path.Join(pkg.dir, sub)); ok {
					return f, true
				}
				return r.file(path.Join(pkg.dir, "src", sub))
			}
			for _, e := range pkg.entry {
				if f, ok := r.file(path.Join(pkg.dir, e)); ok {
					return f, true
				}
				if f, ok := r.file(path.Join(pkg.dir, sourceOf(e))); ok {
					return f, true
				}
			}
			return "", false
		}
	}
	if r.baseURL != "" {
		return r.file(path.Join(r.baseURL, spec))
	}
	return "", false
}

func (r *jsResolver) baseOr() string {
	if r.baseURL == "" {
		return "."
	}
	return r.baseURL
}

// sourceOf guesses the source of a built entry: dist/x.js → src/x.
func sourceOf(entry string) string {
	e := strings.TrimPrefix(path.Clean(entry), "./")
	for _, out := range []string{"dist/", "lib/", "build/", "out/"} {
		if strings.HasPrefix(e, out) {
			return "src/" + strings.TrimPrefix(e, out)
		}
	}
	return e
}

// packageName splits "@scope/name/sub" or "name/sub".
func packageName(spec string) (name, sub string) {
	parts := strings.SplitN(spec, "/", 3)
	if strings.HasPrefix(spec, "@") {
		if len(parts) < 2 {
			return "", ""
		}
		name = parts[0] + "/" + parts[1]
		if len(parts) == 3 {
			sub = parts[2]
		}
		return name, sub
	}
	name = parts[0]
	if len(parts) > 1 {
		sub = strings.Join(parts[1:], "/")
	}
	return name, sub
}

// file resolves p (relative to the root) as Node and TypeScript would: the
// file itself, with an extension added, a .js name standing for a .ts
// source, or the directory's index.
func (r *jsResolver) file(p string) (string, bool) {
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	ext := path.Ext(p)
	if slices.Contains(jsExts, ext) && r.t.has(p) {
		return p, true
	}
	stem := p
	switch ext {
	case ".js", ".jsx", ".mjs", ".cjs":
		stem = strings.TrimSuffix(p, ext)
	}
	for _, e := range jsExts {
		if r.t.has(stem + e) {
			return stem + e, true
		}
	}
	for _, e := range jsExts {
		if r.t.has(p + "/index" + e) {
			return p + "/index" + e, true
		}
	}
	return "", false
}

// jsImports lists the module specifiers a JavaScript or TypeScript source
// imports: import … from "x", import "x", export … from "x", import("x"),
// require("x") (and TypeScript's import x = require("x")).
func jsImports(src string) []string {
	toks := jsTokens(src)
	var out []string
	for i, t := range toks {
		if t.kind != jsIdent || (i > 0 && toks[i-1].text == ".") {
			continue
		}
		next := func(k int) jsToken {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return jsToken{}
		}
		switch t.text {
		case "from":
			if n := next(1); n.kind == jsString && i > 0 {
				out = append(out, n.text)
			}
		case "import":
			if n := next(1); n.kind == jsString {
				out = append(out, n.text)
			} else if n.text == "(" && next(2).kind == jsString {
				out = append(out, next(2).text)
			}
		case "require":
			if next(1).text == "(" && next(2).kind == jsString && next(3).text == ")" {
				out = append(out, next(2).text)
			}
		}
	}
	return out
}

type jsKind int

const (
	jsPunct jsKind = iota
	jsIdent
	jsString // a string literal, or a template literal without substitutions
	jsOther  // numbers, regular expressions, template literals with substitutions
)

type jsToken struct {
	kind jsKind
	text string // the identifier, punctuation, or the string's value
}

// regexAfter are keywords after which "/" starts a regular expression.
var regexAfter = map[string]bool{"return": true, "typeof": true, "case": true, "do": true, "else": true, "in": true,
	"of": true, "new": true, "delete": true, "void": true, "throw": true, "instanceof": true, "yield": true, "await": true}

// jsTokens splits source into identifiers, string literals and punctuation,
// dropping comments. It never fails: on text it does not understand (JSX
// text, say) it resynchronises at the end of the line.
func jsTokens(src string) []jsToken {
	var toks []jsToken
	var braces []int // for each open template substitution, its brace depth
	depth := 0
	regexOK := func() bool {
		if len(toks) == 0 {
			return true
		}
		last := toks[len(toks)-1]
		switch last.kind {
		case jsIdent:
			return regexAfter[last.text]
		case jsString, jsOther:
			return false
		}
		return last.text != ")" && last.text != "]" && last.text != "}"
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += end + 4
		case c == '\'' || c == '"':
			val, j := jsString1(src, i)
			toks = append(toks, jsToken{kind: jsString, text: val})
			i = j
		case c == '`' || (c == '}' && len(braces) > 0 && braces[len(braces)-1] == depth):
			if c == '}' {
				braces = braces[:len(braces)-1]
			}
			val, j, subst := jsTemplate(src, i+1)
			if subst {
				braces = append(braces, depth)
				toks = append(toks, jsToken{kind: jsOther})
			} else if c == '`' {
				toks = append(toks, jsToken{kind: jsString, text: val})
			} else {
				toks = append(toks, jsToken{kind: jsOther})
			}
			i = j
		case c == '/' && regexOK():
			i = jsRegex(src, i+1)
			toks = append(toks, jsToken{kind: jsOther})
		case isJSIdentStart(c):
			j := i + 1
			for j < len(src) && isJSIdentPart(src[j]) {
				j++
			}
			kind := jsIdent
			if c >= '0' && c <= '9' {
				kind = jsOther
			}
			toks = append(toks, jsToken{kind: kind, text: src[i:j]})
			i = j
		default:
			switch c {
			case '{':
				depth++
			case '}':
				depth--
			}
			toks = append(toks, jsToken{kind: jsPunct, text: string(c)})
			i++
		}
	}
	return toks
}

func isJSIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isJSIdentPart(c byte) bool { return isJSIdentStart(c) }

// jsString1 reads the quoted string at i; an unterminated one ends at the
// line's end. It returns the value (escapes of quotes and backslashes
// undone) and the index after it.
func jsString1(src string, i int) (string, int) {
	q := src[i]
	var b strings.Builder
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			if j+1 < len(src) {
				j++
				b.WriteByte(src[j])
			}
		case q:
			return b.String(), j + 1
		case '\n':
			return b.String(), j
		default:
			b.WriteByte(src[j])
		}
	}
	return b.String(), len(src)
}

// jsTemplate reads template text from i up to its closing backtick or the
// next "${": it returns the text, the index after it, and whether a
// substitution begins there.
func jsTemplate(src string, i int) (string, int, bool) {
	var b strings.Builder
	for j := i; j < len(src); j++ {
		switch {
		case src[j] == '\\' && j+1 < len(src):
			j++
			b.WriteByte(src[j])
		case src[j] == '`':
			return b.String(), j + 1, false
		case src[j] == '$' && j+1 < len(src) && src[j+1] == '{':
			return b.String(), j + 2, true
		default:
			b.WriteByte(src[j])
		}
	}
	return b.String(), len(src), false
}

// jsRegex skips a regular expression literal's body and flags from i (just
// after its opening slash); it ends at the line's end at the latest.
func jsRegex(src string, i int) int {
	class := false
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if !class {
				j++
				for j < len(src) && isJSIdentPart(src[j]) {
					j++
				}
				return j
			}
		case '\n':
			return j
		}
	}
	return len(src)
}

// stripJSONC turns JSON with comments and trailing commas (tsconfig.json)
// into JSON.
func stripJSONC(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return append(out, b[i:]...)
			}
			out = append(out, b[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			i--
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := strings.Index(string(b[i+2:]), "*/")
			if end < 0 {
				return out
			}
			i += end + 3
		case c == ',':
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				continue
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
