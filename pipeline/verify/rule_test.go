package verify

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/pipeline/testreport"
)

// goEvents builds `go test -json` output: pairs of action and test name in
// package p.
func goEvents(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString(`{"Action":"` + pairs[i] + `","Package":"p","Test":"` + pairs[i+1] + `"}` + "\n")
	}
	b.WriteString(`{"Action":"fail","Package":"p"}` + "\n")
	return b.String()
}

func result(c Command, out Outcome) CommandResult { return Result(c, "", out) }

func TestVerdictRule(t *testing.T) {
	t.Parallel()
	goTest := Command{Name: "test", Run: "go test ./...", Kind: TestCommand}
	makeTest := Command{Name: "test", Run: "make test"}
	build := Command{Name: "build", Run: "go build ./...", Kind: BuildCommand}
	pass := func(c Command, out string) CommandResult { return result(c, Outcome{Output: out}) }
	fail := func(c Command, out string) CommandResult { return result(c, Outcome{ExitCode: 1, Output: out}) }
	run := func(cs ...CommandResult) Run { return Run{Commands: cs} }
	smoke := func(name string, ok bool) CommandResult {
		c := CommandResult{Name: name, Run: name, Kind: SmokeCommand, Passed: ok}
		if !ok {
			c.ExitCode, c.Output = 1, "status 500, want 200"
		}
		return c
	}
	setupFailed := Run{Setup: []CommandResult{{Name: "setup", Run: "go mod download", ExitCode: 1,
		Output: "go: example.com/words@v1.0.0: reading https://proxy.golang.org/example.com/words/@v/v1.0.0.mod: 404 Not Found"}},
		Commands: Skip([]Command{build, goTest}, SkipSetupFailed).Commands}

	tests := []struct {
		name       string
		base, head Run
		verdict    Verdict
		reason     string // substring of a reason's Why
		next       string // substring of that reason's Next
		fixable    bool
		flaky      []string
	}{
		{
			name:    "a smoke step that passed on the base and fails on the change is a regression",
			base:    run(pass(build, ""), smoke("smoke: health", true), smoke("smoke: GET /api", true)),
			head:    run(pass(build, ""), smoke("smoke: health", false), smoke("smoke: GET /api", true)),
			verdict: Failed, fixable: true,
		},
		{
			name:    "smoke steps that pass on both sides: verified",
			base:    run(pass(build, ""), smoke("smoke: image build", true), smoke("smoke: health", true)),
			head:    run(pass(build, ""), smoke("smoke: image build", true), smoke("smoke: health", true)),
			verdict: Verified,
		},
		{
			name:    "a smoke step failing on the base as well proves nothing: unverified, with what to do",
			base:    run(pass(build, ""), smoke("smoke: health", false)),
			head:    run(pass(build, ""), smoke("smoke: health", false)),
			verdict: Unverified,
			reason:  "smoke: health fails on the base commit as well",
			next:    "make the smoke stage pass on the default branch",
		},
		{
			name:    "a smoke stage out of time: unverified, with the key to raise",
			base:    run(pass(build, ""), smoke("smoke: health", true)),
			head:    run(pass(build, ""), CommandResult{Name: "smoke: health", Run: "GET /health", Kind: SmokeCommand, TimedOut: true}),
			verdict: Unverified, fixable: true,
			reason: "smoke: health timed out",
			next:   "smoke.timeout",
		},
		{
			name:    "a smoke step the change repairs: verified",
			base:    run(pass(build, ""), smoke("smoke: health", false)),
			head:    run(pass(build, ""), smoke("smoke: health", true)),
			verdict: Verified,
		},
		{
			name:    "a fix: fail → pass, named",
			base:    run(pass(build, ""), fail(goTest, goEvents("fail", "TestBug", "pass", "TestOK"))),
			head:    run(pass(build, ""), pass(goTest, goEvents("pass", "TestBug", "pass", "TestOK"))),
			verdict: Verified,
		},
		{
			name:    "a regression hidden behind a command failing on the base too, through make",
			base:    run(fail(makeTest, goEvents("fail", "TestBug", "pass", "TestOther"))),
			head:    run(fail(makeTest, goEvents("pass", "TestBug", "fail", "TestOther"))),
			verdict: Failed, fixable: true,
		},
		{
			name:    "a pre-existing unrelated failure: verified, listed as already failing",
			base:    run(pass(build, ""), fail(goTest, goEvents("fail", "TestOld", "pass", "TestOK"))),
			head:    run(pass(build, ""), fail(goTest, goEvents("fail", "TestOld", "pass", "TestOK", "pass", "TestNew"))),
			verdict: Verified,
		},
		{
			name:    "setup failed: unverified, the module named",
			base:    setupFailed,
			head:    setupFailed,
			verdict: Unverified,
			reason:  "setup step `go mod download` failed on the base commit and on the change",
			next:    "add a `setup:` step that can fetch `example.com/words`",
		},
		{
			name:    "every command fails on both sides with the same error: unverified",
			base:    run(fail(build, "go: example.com/words@v1.0.0: missing"), fail(Command{Name: "vet", Run: "go vet ./..."}, "go: example.com/words@v1.0.0: missing")),
			head:    run(fail(build, "go: example.com/words@v1.0.0: missing"), fail(Command{Name: "vet", Run: "go vet ./..."}, "go: example.com/words@v1.0.0: missing")),
			verdict: Unverified,
			reason:  "fails on the base commit as well",
			next:    "names its tests",
		},
		{
			name:    "a missing tool: unverified",
			base:    run(result(Command{Name: "test", Run: "pytest"}, Outcome{ExitCode: 127, Output: "sh: 1: pytest: not found"})),
			head:    run(result(Command{Name: "test", Run: "pytest"}, Outcome{ExitCode: 127, Output: "sh: 1: pytest: not found"})),
			verdict: Unverified,
			reason:  "could not be started",
			next:    "setup:",
		},
		{
			name:    "no test ran and nothing was built: unverified",
			base:    run(pass(goTest, `{"Action":"skip","Package":"p"}`+"\n")),
			head:    run(pass(goTest, `{"Action":"skip","Package":"p"}`+"\n")),
			verdict: Unverified,
			reason:  "no test and no build actually ran",
		},
		{
			name:    "a build alone counts as having run",
			base:    run(pass(build, "")),
			head:    run(pass(build, "")),
			verdict: Verified,
		},
		{
			name:    "a command of unknown kind that passes is judged command by command",
			base:    run(pass(makeTest, "all good")),
			head:    run(pass(makeTest, "all good")),
			verdict: Verified,
		},
		{
			name:    "a cut output failing on both sides proves nothing",
			base:    run(fail(makeTest, goEvents("fail", "TestOld"))),
			head:    run(result(makeTest, Outcome{ExitCode: 1, Truncated: true, Output: goEvents("fail", "TestOld")})),
			verdict: Unverified,
			reason:  "too long",
			next:    "output_bytes",
		},
		{
			name:    "a cut output never turns a pass into a failure",
			base:    run(pass(goTest, goEvents("pass", "TestA"))),
			head:    run(result(goTest, Outcome{Truncated: true, Output: goEvents("pass", "TestA")})),
			verdict: Verified,
		},
		{
			name: "a flaky test is not a regression",
			base: run(pass(goTest, goEvents("pass", "TestA", "pass", "TestB"))),
			head: func() Run {
				r := run(fail(goTest, goEvents("pass", "TestA", "fail", "TestB")))
				r.Commands[0].Flaky = []testreport.ID{{Suite: "p", Name: "TestB"}}
				return r
			}(),
			verdict: Verified,
			flaky:   []string{"test: test TestB (p)"},
		},
		{
			name:    "a timeout on the change where the base passed: unverified, worth a fix round",
			base:    run(pass(goTest, goEvents("pass", "TestA"))),
			head:    run(result(goTest, Outcome{ExitCode: 124, TimedOut: true})),
			verdict: Unverified, fixable: true,
			reason: "timed out",
		},
		{
			name:    "a base that was already broken is never fixable",
			base:    run(fail(makeTest, "boom")),
			head:    run(fail(makeTest, "boom")),
			verdict: Unverified,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmp := Compare(tc.base, tc.head)
			if cmp.Verdict != tc.verdict {
				t.Fatalf("Verdict = %s, want %s (reasons %+v, regressions %q)", cmp.Verdict, tc.verdict, cmp.Reasons, cmp.Regressions)
			}
			if cmp.Fixable != (tc.fixable || tc.verdict == Failed) {
				t.Errorf("Fixable = %v", cmp.Fixable)
			}
			if tc.reason != "" && !slices.ContainsFunc(cmp.Reasons, func(r Reason) bool {
				return strings.Contains(r.Why, tc.reason) && strings.Contains(r.Next, tc.next)
			}) {
				t.Errorf("Reasons = %+v, want why %q, next %q", cmp.Reasons, tc.reason, tc.next)
			}
			if tc.verdict == Unverified && len(cmp.Reasons) == 0 {
				t.Error("unverified without a reason")
			}
			if !slices.Equal(cmp.Flaky, tc.flaky) {
				t.Errorf("Flaky = %q, want %q", cmp.Flaky, tc.flaky)
			}
		})
	}
}

func TestSetupHint(t *testing.T) {
	t.Parallel()
	tests := []struct{ out, want string }{
		{"go: example.com/words@v1.0.0: reading https://proxy.golang.org/example.com/words/@v/v1.0.0.mod: 404 Not Found\n", "`example.com/words`"},
		{"go: downloading example.com/words v1.0.0\ngo: example.com/words@v1.0.0: unrecognized import path \"example.com/words\"", "`example.com/words`"},
		{"main.go:4:2: missing go.sum entry for module providing package github.com/x/y (imported by m)", "`github.com/x/y`"},
		{"npm ERR! code E404\nnpm ERR! 404 Not Found - GET http://10.0.0.1:4873/left-padx - Not found\n", "npm package `left-padx`"},
		{"npm ERR! 404 Not Found - GET http://registry/@scope%2fpkg - Not found\n", "npm package `@scope/pkg`"},
		{"npm ERR! code ENOTFOUND\n", "could not reach the npm registry"},
		{"ERROR: Could not find a version that satisfies the requirement requestz (from versions: none)\nERROR: No matching distribution found for requestz\n", "Python package `requestz`"},
		{"something else went wrong", "fix the failing step"},
	}
	for _, tc := range tests {
		if got := SetupHint(tc.out); !strings.Contains(got, tc.want) {
			t.Errorf("SetupHint(%q) = %q, want %q in it", tc.out, got, tc.want)
		}
	}
}

// flakyRunner answers the reruns of one test: it fails the first fails
// times, then passes.
type flakyRunner struct {
	fails int
	runs  []string
}

func (f *flakyRunner) Exec(_ context.Context, c Command) (Outcome, error) {
	f.runs = append(f.runs, c.Run)
	if len(f.runs) <= f.fails {
		return Outcome{ExitCode: 1, Output: goEvents("fail", "TestB")}, nil
	}
	return Outcome{Output: `{"Action":"pass","Package":"p","Test":"TestB"}` + "\n" + `{"Action":"pass","Package":"p"}` + "\n"}, nil
}

func TestRerunRegressions(t *testing.T) {
	t.Parallel()
	goTest := Command{Name: "test", Run: "go test ./...", Kind: TestCommand, Runner: "go"}
	base := Run{Commands: []CommandResult{Result(goTest, "", Outcome{Output: goEvents("pass", "TestA", "pass", "TestB")})}}
	for _, tc := range []struct {
		name      string
		fails     int
		wantFlaky bool
		wantRuns  int
	}{
		{"passes on the first rerun", 0, true, 1},
		{"passes on the second rerun", 1, true, 2},
		{"fails every time: a regression", 5, false, Reruns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := Run{Commands: []CommandResult{Result(goTest, "", Outcome{ExitCode: 1, Output: goEvents("pass", "TestA", "fail", "TestB")})}}
			r := &flakyRunner{fails: tc.fails}
			n, err := RerunRegressions(context.Background(), r, []Command{goTest}, &head, Compare(base, head))
			if err != nil {
				t.Fatal(err)
			}
			if (n == 1) != tc.wantFlaky || len(r.runs) != tc.wantRuns {
				t.Fatalf("flaky %d after %d runs %q", n, len(r.runs), r.runs)
			}
			if want := "go test -json -count=1 -run '^TestB$' 'p'"; r.runs[0] != want {
				t.Errorf("rerun = %q, want %q", r.runs[0], want)
			}
			cmp := Compare(base, head)
			if tc.wantFlaky != (cmp.Verdict == Verified && len(cmp.Flaky) == 1) {
				t.Errorf("after reruns: %+v", cmp)
			}
		})
	}
}

func TestRerunCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		runner string
		id     testreport.ID
		want   string
	}{
		{"go", testreport.ID{Suite: "example.com/m/p", Name: "TestX/with space"}, `go test -json -count=1 -run '^TestX$/^with space$' 'example.com/m/p'`},
		{"go", testreport.ID{Suite: "-bad", Name: "TestX"}, ""},
		{"pytest", testreport.ID{Suite: "tests/test_a.py", Name: "TestC::test_it[it's]"}, `"$p" -m pytest -rA -p no:cacheprovider 'tests/test_a.py::TestC::test_it[it'\''s]'`},
		{"", testreport.ID{Suite: "x", Name: "y"}, ""},
		{"unittest", testreport.ID{Suite: "tests.test_a.TestC", Name: "test_it"}, `"$p" -m unittest -v 'tests.test_a.TestC.test_it'`},
		{"jest", testreport.ID{Suite: "src/a.test.js", Name: "add › adds (1+1)"}, `jest --ci --json --outputFile=/tmp/selfcode-reports/rerun.json 'src/a.test.js' -t '^add adds \(1\+1\)$'`},
		{"mocha", testreport.ID{Suite: "test/a.js", Name: "add adds"}, `mocha --reporter json --reporter-option output=/tmp/selfcode-reports/rerun.json 'test/a.js' --grep '^add adds$'`},
		{"node-test", testreport.ID{Suite: "", Name: "add/adds"}, ""},
		{"jest", testreport.ID{Suite: "", Name: "adds"}, ""},
	}
	for _, tc := range tests {
		got, ok := RerunCommand(Command{Name: "test", Runner: tc.runner}, CommandResult{}, tc.id)
		if ok != (tc.want != "") || !strings.HasSuffix(got.Run, tc.want) {
			t.Errorf("RerunCommand(%s, %v) = %q, %v; want …%q", tc.runner, tc.id, got.Run, ok, tc.want)
		}
	}
	// A pytest test named by its JUnit classname: every split into a file
	// and classes is tried, and the rerun reports in JUnit again.
	res := CommandResult{Tests: testreport.New(testreport.FormatJUnit)}
	got, ok := RerunCommand(Command{Name: "test", Runner: "pytest"}, res, testreport.ID{Suite: "tests.test_a.TestC", Name: "test_it"})
	for _, want := range []string{`'tests/test_a/TestC.py::test_it' 'tests/test_a.py::TestC::test_it' 'tests.py::test_a::TestC::test_it'`, "--junitxml=/tmp/selfcode-reports/rerun.xml"} {
		if !ok || !strings.Contains(got.Run, want) || len(got.Reports) != 1 {
			t.Errorf("junit rerun %q (reports %v) lacks %q", got.Run, got.Reports, want)
		}
	}
}

// A command whose base run ended in a way the change's did not (out of
// memory there, an ordinary failure here) is not "fixed" while it still
// fails: the report would claim a repair that did not happen.
func TestStillFailingCommandIsNotFixed(t *testing.T) {
	t.Parallel()
	goTest := Command{Name: "test", Run: "go test ./...", Kind: TestCommand}
	out := goEvents("fail", "TestA")
	base := Run{Commands: []CommandResult{result(goTest, Outcome{ExitCode: 137, Output: out, OOMKilled: true})}}
	head := Run{Commands: []CommandResult{result(goTest, Outcome{ExitCode: 1, Output: out})}}
	cmp := Compare(base, head)
	if len(cmp.Fixed) != 0 {
		t.Errorf("Fixed = %q, want nothing: the command still fails", cmp.Fixed)
	}
	if len(cmp.PreExisting) == 0 || len(cmp.Regressions) != 0 {
		t.Errorf("PreExisting = %q, Regressions = %q", cmp.PreExisting, cmp.Regressions)
	}
}
