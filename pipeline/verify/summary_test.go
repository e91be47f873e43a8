package verify

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// summaryCase builds a base (mix: three failing tests) and a head with new
// compile errors, two new failing tests, a fixed test and a failing make
// target, as a fixer would see after a bad edit.
func summaryCase(t *testing.T) (Comparison, Run) {
	t.Helper()
	base := runFixture(t,
		step{name: "build", run: "go build ./..."},
		step{name: "test", run: "go test ./...", file: "mix.jsonl", exit: 1},
		step{name: "lint", run: "make lint"},
	)
	head := runFixture(t,
		step{name: "build", run: "go build ./...", file: "broken-build.txt", exit: 1},
		step{name: "test", run: "go test ./...", file: "mixhead.jsonl", exit: 1},
		step{name: "lint", run: "make lint", exit: 2},
	)
	head.Commands[2].Output = "\x1b[31mERROR\x1b[0m lint failed at /work/src/pkg/x.go:3:1\nFAIL\tpkg\t0.123s\n"
	return Compare(base, head), head
}

func TestSummarize(t *testing.T) {
	cmp, head := summaryCase(t)
	sum := Summarize(cmp, head, SummaryOptions{WorkDir: "/work/src/"})
	if len(sum) > DefaultSummaryTokens*charsPerToken {
		t.Errorf("summary of %d bytes exceeds the default budget", len(sum))
	}
	// Sections in order of importance.
	order := []string{
		"Verification failed:",
		"Regressions:",
		"- build: 3 new compiler or vet errors",
		"- test: test TestNew (example.com/mix/calc)",
		"- test: test TestShout (example.com/mix/strs)",
		"- lint: command failed with exit status 2",
		"Compiler and vet errors:",
		"bad/bad.go:6: undefined: undefinedThing",
		"bad/bad.go:9: cannot use 42",
		"Failing test output:",
		"calc_test.go:37: Add(1, 1) = 2, want 3",
		`strs_test.go:11: Shout = "HI?"`,
		"Command output:",
		"ERROR lint failed at pkg/x.go:3:1",
		"Also failing on the base, not your concern:",
		"TestFirstPanics",
	}
	pos := 0
	for _, s := range order {
		i := strings.Index(sum[pos:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", s, sum)
		}
		pos += i + len(s)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`/work/src`),
		regexp.MustCompile(`/tmp/`),
		regexp.MustCompile(`\(\d+\.\d+s\)`),
		regexp.MustCompile(`\t\d+\.\d+s`),
		regexp.MustCompile("\x1b"),
		regexp.MustCompile(`Cut to fit`),
		regexp.MustCompile(`TestSub`), // fixed: not the fixer's concern
	} {
		if bad.MatchString(sum) {
			t.Errorf("summary matches %v:\n%s", bad, sum)
		}
	}
	// Compiler errors appear once even though build and go test both
	// report them.
	section := sum[strings.Index(sum, "Compiler and vet errors:"):strings.Index(sum, "Failing test output:")]
	if n := strings.Count(section, "undefined: undefinedThing"); n != 1 {
		t.Errorf("compiler error listed %d times:\n%s", n, section)
	}
}

func TestSummarizeBudget(t *testing.T) {
	cmp, head := summaryCase(t)
	full := Summarize(cmp, head, SummaryOptions{MaxTokens: 100000})
	for _, tokens := range []int{50, 120, 200} {
		if tokens*charsPerToken >= len(full) {
			t.Fatalf("budget %d fits the whole %d-byte summary; the case tests nothing", tokens, len(full))
		}
		t.Run(fmt.Sprint(tokens), func(t *testing.T) {
			sum := Summarize(cmp, head, SummaryOptions{MaxTokens: tokens})
			if len(sum) > tokens*charsPerToken {
				t.Errorf("%d bytes for a budget of %d:\n%s", len(sum), tokens*charsPerToken, sum)
			}
			if tokens >= 120 {
				if !strings.Contains(sum, "TestShout") || !strings.Contains(sum, "Cut to fit the budget") {
					t.Errorf("regressions or the cut note missing:\n%s", sum)
				}
				if strings.Contains(sum, "Also failing on the base") {
					t.Errorf("pre-existing list kept while more important parts were cut:\n%s", sum)
				}
			}
		})
	}
	// A budget a little short of the whole summary shortens only the
	// pre-existing list.
	sum := Summarize(cmp, head, SummaryOptions{MaxTokens: (len(full) - 10) / charsPerToken})
	if !strings.Contains(sum, "Shortened: the pre-existing failures list.") || strings.Contains(sum, "Left out") ||
		!strings.Contains(sum, "ERROR lint failed") || !strings.Contains(sum, `Shout = "HI?"`) {
		t.Errorf("want only the pre-existing list shortened:\n%s", sum)
	}
}

func TestSummarizePanicOutput(t *testing.T) {
	base := runFixture(t, step{name: "test", run: "go test ./...", file: "brokenbase.jsonl"})
	head := runFixture(t, step{name: "test", run: "go test ./...", file: "mix.jsonl", exit: 1})
	sum := Summarize(Compare(base, head), head, SummaryOptions{TestLines: 40})
	for _, want := range []string{"panic: runtime error: index out of range", "example.com/mix/strs.First(...)", "\tstrs.go:7", "\tstrs_test.go:16\n"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	for _, bad := range []string{"/usr/local/go", "testing.tRunner", "+0x", "/tmp/"} {
		if strings.Contains(sum, bad) {
			t.Errorf("summary has %q:\n%s", bad, sum)
		}
	}
}

func TestSummarizeVerified(t *testing.T) {
	run := runFixture(t, step{name: "test", run: "go test ./...", file: "mix.jsonl", exit: 1})
	sum := Summarize(Compare(run, run), run, SummaryOptions{})
	if !strings.HasPrefix(sum, "No regressions") || !strings.Contains(sum, "Also failing on the base, not your concern:") {
		t.Errorf("summary:\n%s", sum)
	}
	pass := runFixture(t, step{name: "build", run: "go build ./..."})
	if sum := Summarize(Compare(pass, pass), pass, SummaryOptions{}); sum != "Verification passed.\n" {
		t.Errorf("summary = %q", sum)
	}
}

func TestCleanerLine(t *testing.T) {
	c := newCleaner("/work/src", Run{})
	tests := []struct{ in, want string }{
		{"/work/src/pkg/x.go:12:3: undefined: y", "pkg/x.go:12:3: undefined: y"},
		{"\t/work/src/pkg/x_test.go:16 +0x1a", "\tpkg/x_test.go:16"},
		{"see /home/me/work/src/a.go", "see /home/me/work/src/a.go"},
		{"--- FAIL: TestX/sub (0.01s)", "--- FAIL: TestX/sub"},
		{"--- FAIL: TestSlow (1m30s)", "--- FAIL: TestSlow"},
		{"ok  \texample.com/p\t0.123s", "ok  \texample.com/p"},
		{"FAIL\texample.com/p\t2.006s", "FAIL\texample.com/p"},
		{"ok  \texample.com/p\t0.5s\tcoverage: 80.0% of statements", "ok  \texample.com/p\tcoverage: 80.0% of statements"},
		{"\x1b[1;31mFAIL\x1b[0m", "FAIL"},
		{"/tmp/go-build123/b001/x.test: exit status 2", "x.test: exit status 2"},
		{"panic: test timed out after 2s", "panic: test timed out after 2s"},
	}
	for _, tc := range tests {
		if got := c.line(tc.in); got != tc.want {
			t.Errorf("line(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
