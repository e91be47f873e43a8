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
		counts      Counts
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
			notes:    []string{"test: ran on the base only (the package did not build): TestBad in example.com/broken/bad"},
			counts:   Counts{Regression: 2},
			verified: false,
			regressions: []string{
				"build: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"build: bad/bad.go:6: undefined: ok.Missing",
				"build: bad/bad.go:6: undefined: undefinedThing",
				"test: package example.com/broken/bad",
				"test: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"test: bad/bad.go:6: undefined: ok.Missing",
				"test: bad/bad.go:6: undefined: undefinedThing",
			},
		},
		{
			name:     "the same compile errors on base and head are pre-existing, old and new Go output alike",
			base:     runFixture(t, build("broken-build.txt", 1), test("broken.jsonl", 1)),
			head:     runFixture(t, build("broken-build.txt", 1), test("broken-text.jsonl", 1)),
			verified: true,
			classes:  []Class{ClassPreExisting, ClassPreExisting},
			counts:   Counts{PreExisting: 2},
			preExisting: []string{
				"build: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"build: bad/bad.go:6: undefined: ok.Missing",
				"build: bad/bad.go:6: undefined: undefinedThing",
				"test: package example.com/broken/bad",
				"test: bad/bad.go:9: cannot use 42 (untyped int constant) as string value in return statement",
				"test: bad/bad.go:6: undefined: ok.Missing",
				"test: bad/bad.go:6: undefined: undefinedThing",
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
				"test: package example.com/broken/bad",
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
			name:        "a failing command without details: same on both is pre-existing",
			base:        runFixture(t, step{name: "make", run: "make test", exit: 2}),
			head:        runFixture(t, step{name: "make", run: "make test", exit: 1}),
			verified:    true,
			classes:     []Class{ClassPreExisting},
			preExisting: []string{"make: command failed with exit status 1"},
			counts:      Counts{PreExisting: 1},
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
			name:        "a timeout only on head: the unfinished test and the timeout are regressions",
			base:        runFixture(t, test("brokenbase.jsonl", 0)),
			head:        runFixture(t, step{name: "test", run: "go test ./...", file: "hang.jsonl", exit: 1, timedOut: true}),
			classes:     []Class{ClassRegression},
			regressions: []string{"test: test TestHangs/inner (example.com/hang)", "test: command timed out"},
			notes:       []string{"ran on the base only"},
			counts:      Counts{Regression: 1},
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
			name:     "no head commands is not verified",
			base:     runFixture(t, build("", 0)),
			head:     Run{},
			verified: false,
			notes:    []string{"build: ran on the base only"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmp := Compare(tc.base, tc.head)
			if cmp.Verified != tc.verified {
				t.Errorf("Verified = %v, want %v", cmp.Verified, tc.verified)
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
	if cmp := Compare(base, head); !cmp.Verified || len(cmp.PreExisting) != 1 {
		t.Errorf("a diagnostic moved by an edit was not pre-existing: %+v", cmp)
	}
	head.Commands[0].Diagnostics = ParseDiagnostics("x.go:14:2: unreachable code\ny.go:3:1: self-assignment of x to x\n")
	if cmp := Compare(base, head); cmp.Verified || len(cmp.Regressions) != 1 {
		t.Errorf("a new diagnostic was not a regression: %+v", cmp)
	}
}
