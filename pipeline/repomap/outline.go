package repomap

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strconv"
	"strings"
)

// Outline limits.
const (
	maxDeclLen  = 160 // one declaration line
	maxNames    = 8   // names listed per const/var group or struct
	maxOutlined = 60  // declaration lines per file
)

// outline is a Go file's top-level declarations, one line each.
type outline struct {
	pkg   string
	decls []string
	names []string // lower-cased declared identifiers, for focus matching
}

// outlineFile parses a Go file and outlines it; nil when it cannot be
// read or has no package clause. A file with syntax errors is outlined
// as far as the parser got.
func outlineFile(p string) *outline {
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
	if f == nil || f.Name == nil {
		return nil
	}
	o := &outline{pkg: f.Name.Name}
	isTest := strings.HasSuffix(p, "_test.go")
	var tests []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			o.names = append(o.names, strings.ToLower(d.Name.Name))
			if isTest && d.Recv == nil && testFunc(d.Name.Name) {
				tests = append(tests, d.Name.Name)
				continue
			}
			o.decls = append(o.decls, shorten(funcLine(fset, d)))
		case *ast.GenDecl:
			o.genDecl(fset, d)
		}
	}
	if len(tests) > 0 {
		o.decls = append(o.decls, shorten("tests: "+list(tests)))
	}
	return o
}

// testFunc reports a name go test runs by itself.
func testFunc(name string) bool {
	for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

func (o *outline) genDecl(fset *token.FileSet, d *ast.GenDecl) {
	switch d.Tok {
	case token.CONST, token.VAR:
		var names []string
		for _, s := range d.Specs {
			if vs, ok := s.(*ast.ValueSpec); ok {
				for _, n := range vs.Names {
					if n.Name == "_" {
						continue
					}
					names = append(names, n.Name)
					o.names = append(o.names, strings.ToLower(n.Name))
				}
			}
		}
		if len(names) > 0 {
			o.decls = append(o.decls, shorten(d.Tok.String()+" "+list(names)))
		}
	case token.TYPE:
		for _, s := range d.Specs {
			ts, ok := s.(*ast.TypeSpec)
			if !ok {
				continue
			}
			o.names = append(o.names, strings.ToLower(ts.Name.Name))
			o.decls = append(o.decls, shorten(typeLine(fset, ts)))
		}
	}
}

// funcLine prints a function's signature without its body or comments.
func funcLine(fset *token.FileSet, d *ast.FuncDecl) string {
	sig := &ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type}
	return oneLine(fset, sig)
}

// typeLine summarises a type: field names of structs, method names of
// interfaces, the underlying type otherwise.
func typeLine(fset *token.FileSet, ts *ast.TypeSpec) string {
	head := "type " + ts.Name.Name
	if ts.TypeParams != nil {
		var params []string
		for _, f := range ts.TypeParams.List {
			params = append(params, list(fieldNames(&ast.FieldList{List: []*ast.Field{f}}))+" "+oneLine(fset, f.Type))
		}
		head += "[" + strings.Join(params, ", ") + "]"
	}
	if ts.Assign.IsValid() {
		head += " ="
	}
	switch t := ts.Type.(type) {
	case *ast.StructType:
		return head + " struct{" + list(fieldNames(t.Fields)) + "}"
	case *ast.InterfaceType:
		return head + " interface{" + list(fieldNames(t.Methods)) + "}"
	}
	return head + " " + oneLine(fset, ts.Type)
}

// fieldNames lists a struct's field names or an interface's methods;
// embedded entries are named by their type.
func fieldNames(fl *ast.FieldList) []string {
	if fl == nil {
		return nil
	}
	var out []string
	for _, f := range fl.List {
		if len(f.Names) == 0 {
			out = append(out, embeddedName(f.Type))
			continue
		}
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return "*" + embeddedName(t.X)
	case *ast.SelectorExpr:
		return embeddedName(t.X) + "." + t.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(t.X)
	case *ast.IndexListExpr:
		return embeddedName(t.X)
	}
	return "…"
}

// oneLine prints a node with its whitespace collapsed to single spaces.
func oneLine(fset *token.FileSet, n any) string {
	var b bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&b, fset, n); err != nil {
		return "…"
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func list(names []string) string {
	if len(names) > maxNames {
		return strings.Join(names[:maxNames], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

func shorten(s string) string {
	if len(s) <= maxDeclLen {
		return s
	}
	n := maxDeclLen
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// render writes the outline under its path, indented.
func (o *outline) render(rel string) string {
	var b strings.Builder
	b.WriteString(rel + " (package " + o.pkg + ")\n")
	for i, d := range o.decls {
		if i == maxOutlined {
			b.WriteString("  … " + strconv.Itoa(len(o.decls)-maxOutlined) + " more declarations\n")
			break
		}
		b.WriteString("  " + d + "\n")
	}
	return b.String()
}

// matches scores a focus word against the declared names: 30 for an exact
// identifier, 10 for a part of one (words of four letters or more).
func (o *outline) matches(word string) int {
	best := 0
	for _, n := range o.names {
		if n == word {
			return 30
		}
		if len(word) >= 4 && strings.Contains(n, word) {
			best = 10
		}
	}
	return best
}
