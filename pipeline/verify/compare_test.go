package verify

import (
	"github.com/selfcode/selfcode/pipeline/testreport"

	"slices"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	const calc, strs = "example.com/mix/calc", "example.com/mix/strs"
	build := func(file string, exit int) step {
		return step{name: "build", run: "go build ./...", file: file, exit: exit}
	}
	test := func(file string, exit int) step {
		return step{name: "test", run: "go test ./...", file: file, exit: exit}
	}
	tests := []struct {
		name        string
		base, head  Run
		verified    bool
		classes     []Class // per head command
		regressions []string
		preExisting []string
		fixed       []string
		notes       []string // substrings expected in Notes
		reasons     []string // substrings expected in Reasons' Why
		counts      Counts
		verdict     Verdict // default: Verified when verified, else Failed
	}{
		{
			name:        "pre-existing failing tests are not blamed",
			base:        runFixture(t, build("", 0), test("mix.jsonl", 1)),
			head:        runFixture(t, build("", 0), test("mix.jsonl", 1)),
			verified:    true,
			classes:     []Class{ClassPass, ClassPreExisting},
			preExisting: []string{"test: test TestSub (" + calc + ")", "test: test TestTable/wrong (" + calc + ")", "test: test TestFirstPanics (" + strs + ")"},
			counts:      Counts{Pass: 1, PreExisting: 1},
		},
		{
			name:        "passed to failed is a regression, failed to passed a fix, a new failing test a regression",
			base:        runFixture(t, test("mix.jsonl", 1)),
			head:        runFixture(t, test("mixhead.jsonl", 1)),
			classes:     []Class{ClassRegression},
			regressions: []string{"test: test TestNew (" + calc + ")", "test: test TestShout (" + strs + ")"},
			preExisting: []string{"test: test TestTable/wrong (" + calc + ")", "test: test TestFirstPanics (" + strs + ")"},
			fixed:       []string{"test: test TestSub (" + calc + ")"},
			counts:      Counts{Regression: 1},
		},
		{
			name:     "compile error only on head is a regression",
			base:     runFixture(t, build("", 0), test("brokenbase.jsonl", 0)),
			head:     runFixture(t, build("broken-build.txt", 1), test("broken.jsonl", 1)),
			classes:  []Class{ClassRegression, ClassRegression},
			notes:    []string{"test: ran on the base only (it no longer builds or loads): TestBad in example.com/broken/bad"},
			counts:   Counts{Regression: 2},
			verified: false,
			regressions: []string{
				"build: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"build: bad/bad.go:6: undefined: ok.Missing",
				"build: bad/bad.go:6: undefined: undefinedThing",
				"test: example.com/broken/bad does not build or load",
				"test: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"test: bad/bad.go:6: undefined: ok.Missing",
				"test: bad/bad.go:6: undefined: undefinedThing",
			},
		},
		{
			name:    "the same compile errors on base and head: go test's tests are known, go build's are not",
			base:    runFixture(t, build("broken-build.txt", 1), test("broken.jsonl", 1)),
			head:    runFixture(t, build("broken-build.txt", 1), test("broken-text.jsonl", 1)),
			verdict: Unverified,
			classes: []Class{ClassUnknown, ClassPreExisting},
			counts:  Counts{PreExisting: 1, Unknown: 1},
			reasons: []string{"`go build ./...` fails on the base commit as well and its output names no tests"},
			preExisting: []string{
				"test: example.com/broken/bad does not build or load",
				"test: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"test: bad/bad.go:6: undefined: ok.Missing",
				"test: bad/bad.go:6: undefined: undefinedThing",
			},
		},
		{
			name:    "a new compile error behind a build failing on the base too is still a regression",
			base:    runFixture(t, step{name: "vet", run: "go vet ./...", file: "broken-vet.txt", exit: 1}),
			head:    runFixture(t, step{name: "vet", run: "go vet ./...", file: "broken-build.txt", exit: 1}),
			classes: []Class{ClassRegression},
			counts:  Counts{Regression: 1},
			regressions: []string{
				"vet: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"vet: bad/bad.go:6: undefined: ok.Missing",
			},
		},
		{
			name:     "compile errors fixed on head",
			base:     runFixture(t, build("broken-build.txt", 1), test("broken.jsonl", 1)),
			head:     runFixture(t, build("", 0), test("brokenbase.jsonl", 0)),
			verified: true,
			classes:  []Class{ClassFixed, ClassFixed},
			counts:   Counts{Fixed: 2},
			fixed: []string{
				"build: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"build: bad/bad.go:6: undefined: ok.Missing",
				"build: bad/bad.go:6: undefined: undefinedThing",
				"test: example.com/broken/bad does not build or load",
				"test: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"test: bad/bad.go:6: undefined: ok.Missing",
				"test: bad/bad.go:6: undefined: undefinedThing",
			},
		},
		{
			name:        "a command only the head has counts fully",
			base:        runFixture(t, build("", 0)),
			head:        runFixture(t, build("", 0), step{name: "vet", run: "go vet ./...", file: "broken-vet.txt", exit: 1}),
			classes:     []Class{ClassPass, ClassRegression},
			regressions: []string{"vet: bad/bad.go:6: undefined: undefinedThing"},
			counts:      Counts{Pass: 1, Regression: 1},
		},
		{
			name:    "a failing command without details on both sides proves nothing",
			base:    runFixture(t, step{name: "make", run: "make test", exit: 2}),
			head:    runFixture(t, step{name: "make", run: "make test", exit: 1}),
			verdict: Unverified,
			classes: []Class{ClassUnknown},
			reasons: []string{"`make test` fails on the base commit as well and its output names no tests"},
			counts:  Counts{Unknown: 1},
		},
		{
			name:        "a failing command without details only on head",
			base:        runFixture(t, step{name: "make", run: "make test"}),
			head:        runFixture(t, step{name: "make", run: "make test", exit: 2}),
			classes:     []Class{ClassRegression},
			regressions: []string{"make: command failed with exit status 2"},
			counts:      Counts{Regression: 1},
		},
		{
			name:    "a timeout on the head is unverified (and worth a fix round)",
			base:    runFixture(t, test("brokenbase.jsonl", 0)),
			head:    runFixture(t, step{name: "test", run: "go test ./...", file: "hang.jsonl", exit: 1, timedOut: true}),
			verdict: Unverified,
			classes: []Class{ClassUnknown},
			reasons: []string{"`go test ./...` timed out"},
			counts:  Counts{Unknown: 1},
		},
		{
			name:        "a base command that could not run excuses nothing",
			base:        Run{Commands: []CommandResult{{Name: "test", Run: "go test ./...", Error: "container gone"}}},
			head:        runFixture(t, test("mix.jsonl", 1)),
			classes:     []Class{ClassRegression},
			regressions: []string{"test: test TestSub (" + calc + ")", "test: test TestTable/wrong (" + calc + ")", "test: test TestFirstPanics (" + strs + ")"},
			notes:       []string{"base result is unavailable"},
			counts:      Counts{Regression: 1},
		},
		{
			name:    "no head commands is not verified",
			base:    runFixture(t, build("", 0)),
			head:    Run{},
			verdict: Unverified,
			reasons: []string{"no verify command"},
			notes:   []string{"build: ran on the base only"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmp := Compare(tc.base, tc.head)
			want := tc.verdict
			switch {
			case want != "":
			case tc.verified:
				want = Verified
			default:
				want = Failed
			}
			if cmp.Verdict != want || cmp.Verified != (want == Verified) {
				t.Errorf("Verdict = %s (verified %v), want %s; reasons %+v", cmp.Verdict, cmp.Verified, want, cmp.Reasons)
			}
			if want == Failed && !cmp.Fixable {
				t.Error("a failed change is not fixable")
			}
			for _, r := range tc.reasons {
				if !slices.ContainsFunc(cmp.Reasons, func(got Reason) bool { return strings.Contains(got.Why, r) && got.Next != "" }) {
					t.Errorf("Reasons = %+v, want one saying %q with a next step", cmp.Reasons, r)
				}
			}
			if len(tc.reasons) == 0 && len(cmp.Reasons) > 0 && want != Failed {
				t.Errorf("unexpected Reasons %+v", cmp.Reasons)
			}
			var classes []Class
			for _, c := range cmp.Commands {
				classes = append(classes, c.Class)
			}
			if !slices.Equal(classes, tc.classes) {
				t.Errorf("classes = %v, want %v", classes, tc.classes)
			}
			sameSet(t, "Regressions", cmp.Regressions, tc.regressions)
			sameSet(t, "PreExisting", cmp.PreExisting, tc.preExisting)
			sameSet(t, "Fixed", cmp.Fixed, tc.fixed)
			for _, n := range tc.notes {
				if !slices.ContainsFunc(cmp.Notes, func(s string) bool { return strings.Contains(s, n) }) {
					t.Errorf("Notes = %q, want one containing %q", cmp.Notes, n)
				}
			}
			if cmp.Counts != tc.counts {
				t.Errorf("Counts = %+v, want %+v", cmp.Counts, tc.counts)
			}
		})
	}
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s = %q\nwant %q", what, got, want)
	}
}

func TestCompareSkippedNotes(t *testing.T) {
	ev := func(action, test string) string {
		return `{"Action":"` + action + `","Package":"p","Test":"` + test + `"}` + "\n"
	}
	base := Run{Commands: []CommandResult{{Name: "test", Run: "go test ./..."}}}
	head := Run{Commands: []CommandResult{{Name: "test", Run: "go test ./..."}}}
	base.Commands[0].Tests, _ = testreport.ParseGoJSON(ev("fail", "TestA") + ev("pass", "TestB") + ev("pass", "TestC"))
	head.Commands[0].Tests, _ = testreport.ParseGoJSON(ev("skip", "TestA") + ev("skip", "TestB") + ev("fail", "TestC"))
	cmp := Compare(base, head)
	for _, want := range []string{"test TestA (p) failed on the base and is skipped now", "test TestB (p) passed on the base and is skipped now"} {
		if !slices.ContainsFunc(cmp.Notes, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("Notes = %q, want %q", cmp.Notes, want)
		}
	}
	if len(cmp.Fixed) != 0 {
		t.Errorf("a failing test that became skipped counted as fixed: %q", cmp.Fixed)
	}
	sameSet(t, "Regressions", cmp.Regressions, []string{"test: test TestC (p)"})
}

func TestCompareShiftedLinesArePreExisting(t *testing.T) {
	base := runFixture(t, step{name: "vet", run: "go vet ./..."})
	head := runFixture(t, step{name: "vet", run: "go vet ./..."})
	base.Commands[0].Passed, head.Commands[0].Passed = false, false
	base.Commands[0].Diagnostics = ParseDiagnostics("x.go:10:2: unreachable code\n")
	head.Commands[0].Diagnostics = ParseDiagnostics("x.go:14:2: unreachable code\n")
	if cmp := Compare(base, head); len(cmp.Regressions) != 0 || cmp.Verdict != Unverified {
		t.Errorf("a diagnostic moved by an edit counted as new (or a command failing on both sides was judged): %+v", cmp)
	}
	head.Commands[0].Diagnostics = ParseDiagnostics("x.go:14:2: unreachable code\ny.go:3:1: self-assignment of x to x\n")
	if cmp := Compare(base, head); cmp.Verified || len(cmp.Regressions) != 1 {
		t.Errorf("a new diagnostic was not a regression: %+v", cmp)
	}
}
