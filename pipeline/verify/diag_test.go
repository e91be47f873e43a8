package verify

import (
	"slices"
	"testing"
)

func TestParseDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // String() of each
		pkgs []string
	}{
		{
			name: "go build",
			in:   fixture(t, "broken-build.txt"),
			want: []string{"bad/bad.go:6: undefined: undefinedThing", "bad/bad.go:6: undefined: ok.Missing", "bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement"},
			pkgs: []string{"example.com/broken/bad", "example.com/broken/bad", "example.com/broken/bad"},
		},
		{
			name: "go vet with vet: prefix",
			in:   fixture(t, "broken-vet.txt"),
			want: []string{"bad/bad.go:6: undefined: undefinedThing"},
			pkgs: []string{"example.com/broken/bad"},
		},
		{
			name: "dot-slash and column-less forms, de-duplicated",
			in:   "# p\n./x.go:12:3: msg one\nx.go:7: msg two\n./x.go:12:3: msg one\n/abs/dir/y_test.go:1:1: abs\ngo.mod:3: unknown directive: foo\n",
			want: []string{"./x.go:12: msg one", "x.go:7: msg two", "/abs/dir/y_test.go:1: abs", "go.mod:3: unknown directive: foo"},
			pkgs: []string{"p", "p", "p", "p"},
		},
		{
			name: "test log lines and stack frames are not diagnostics",
			in:   "    calc_test.go:14: Sub(5, 3) = 8, want 2\n\t/tmp/x/strs.go:7 +0x1d\n--- FAIL: TestX (0.00s)\nok  \tp\t0.1s\n",
		},
		{
			name: "CRLF",
			in:   "a.go:1:2: bad\r\n",
			want: []string{"a.go:1: bad"},
			pkgs: []string{""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := ParseDiagnostics(tc.in)
			var got, pkgs []string
			for _, d := range ds {
				got = append(got, d.String())
				pkgs = append(pkgs, d.Package)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(pkgs, tc.pkgs) {
				t.Errorf("got %q in %q\nwant %q in %q", got, pkgs, tc.want, tc.pkgs)
			}
		})
	}
}

func TestDiagnosticKeyIgnoresLines(t *testing.T) {
	a := Diagnostic{File: "x.go", Line: 10, Message: "x redeclared in this block (see x.go:3:6)"}
	b := Diagnostic{File: "x.go", Line: 14, Message: "x redeclared in this block (see x.go:5:6)"}
	c := Diagnostic{File: "y.go", Line: 10, Message: "x redeclared in this block (see x.go:3:6)"}
	if a.key() != b.key() {
		t.Errorf("keys differ: %q %q", a.key(), b.key())
	}
	if a.key() == c.key() {
		t.Errorf("different files share key %q", a.key())
	}
}
