package pipeline

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestLanguageOf(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]syntaxLang{
		"a/b.py": langPython, "x.js": langJS, "x.mjs": langJS, "x.cjs": langJS,
		"x.ts": langTS, "x.tsx": langTS, "x.jsx": langTS, "x.go": langNone, "Makefile": langNone, "x.pyc": langNone,
	} {
		if got := languageOf(p); got != want {
			t.Errorf("languageOf(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	tmp := "/work/src/app.selfcode-syntax-1.js"
	// Captured from node 18's --check on a file with a missing brace.
	out := tmp + ":3\n}\n^\n\nSyntaxError: Unexpected token '}'\n    at internalCompileFunction (node:internal/vm:76:18)\n    at wrapSafe (node:internal/modules/cjs/loader:1283:20)\n\nNode.js v18.20.4\n"
	want := []string{"src/app.js:3", "}", "^", "SyntaxError: Unexpected token '}'"}
	if got := syntaxErrors(out, tmp, "src/app.js"); !reflect.DeepEqual(got, want) {
		t.Errorf("syntaxErrors = %q, want %q", got, want)
	}
	if got := syntaxErrors("", tmp, "src/app.js"); len(got) != 1 {
		t.Errorf("empty output: %q, want one line saying the check failed", got)
	}
}

func TestSandboxSyntaxWithoutSandbox(t *testing.T) {
	t.Parallel()
	c := &sandboxSyntax{}
	if !c.Checks("a.py") || c.Checks("a.go") {
		t.Error("Checks: want .py yes, .go no (Go is checked on the host with go/parser)")
	}
	if _, err := c.Check(context.Background(), "a.py", []byte("x=1")); !errors.Is(err, errNoSandbox) {
		t.Errorf("err = %v, want errNoSandbox", err)
	}
}
