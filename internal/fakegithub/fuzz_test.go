package fakegithub

import (
	"strings"
	"testing"
)

func FuzzParseJWT(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIiwiaWF0IjoxLCJleHAiOjJ9.c2ln")
	f.Add("a.b.c")
	f.Add("..")
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjEsImlhdCI6MS41LCJleHAiOiIyIn0.")
	f.Fuzz(func(t *testing.T, tok string) {
		j, err := parseJWT(tok)
		if err == nil && j == nil {
			t.Fatal("nil JWT without error")
		}
	})
}

func FuzzRouting(f *testing.F) {
	f.Add("/repos/o/r/issues/1/comments")
	f.Add("/o/r.git/info/refs")
	f.Add("/repos/o/r/git/ref/heads/a%2Fb")
	f.Add("/repos/o/r/issues/1/labels/good%20first%20issue")
	f.Add("/%zz/r.git/x")
	pattern := strings.Split("repos/{owner}/{repo}/git/ref/{ref...}", "/")
	f.Fuzz(func(t *testing.T, p string) {
		if o, n, _, ok := splitGitPath(p); ok && (o == "" || n == "") {
			t.Fatalf("empty owner or repo from %q", p)
		}
		if vals, ok := matchRoute(pattern, strings.Split(strings.Trim(p, "/"), "/")); ok && (vals["owner"] == "" || vals["repo"] == "") {
			t.Fatalf("empty wildcard from %q: %v", p, vals)
		}
	})
}
