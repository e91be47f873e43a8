package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/pipeline/verify"
)

func TestEnvError(t *testing.T) {
	t.Parallel()
	ok := run(tests("test", "TestOld"))
	setupFailed := verify.Run{Setup: []verify.CommandResult{{Run: "npm ci", ExitCode: 1}}, Commands: []verify.CommandResult{{Name: "test", Skipped: true}}}
	cases := []struct {
		name            string
		base, withTests verify.Run
		want            string
	}{
		{"both run", ok, run(tests("test", "TestOld", "!TestNew")), ""},
		{"setup fails on the base", setupFailed, setupFailed, "setup step `npm ci` failed on the base (exit status 1)"},
		{"setup fails with the tests", ok, setupFailed, "failed on the base with the held-back tests"},
		{"nothing to run", verify.Run{}, verify.Run{}, "no verify command"},
		{"runner missing", ok, run(verify.CommandResult{Name: "test", Run: "ava", Missing: true}), "`ava` could not be started"},
	}
	for _, tc := range cases {
		if got := envError(tc.base, tc.withTests); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, err := range []error{fmt.Errorf("planner: %w", llm.ErrServer), fmt.Errorf("editor: %w", llm.ErrUnauthorized),
		fmt.Errorf("start sandbox: %w", sandbox.ErrEngineUnavailable)} {
		if !retryable(ctx, err) {
			t.Errorf("%v is not retried", err)
		}
	}
	for _, err := range []error{errors.New("planner gave no valid plan in 3 attempts"), fmt.Errorf("job_timeout reached: %w", context.DeadlineExceeded)} {
		if retryable(ctx, err) {
			t.Errorf("%v is retried: it is graded", err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if !retryable(done, errors.New("anything")) {
		t.Error("an interrupted task is graded")
	}
}

func TestTableAndSummary(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	price := 0.25
	rep := &Report{Repository: "/src/calc", LinkedIssues: "read from GitHub", Tasks: []Task{
		{Commit: commitMul, Subject: "Mul", Status: StatusResolved, Resolved: true, Verdict: "verified", Agrees: &yes,
			Fixed: []string{"TestMul"}, Tokens: 100, CostUSD: &price, Seconds: 2, EditCalls: 4, EditErrors: 1, Resumed: true},
		{Commit: "4b8bab3aaaaaaaa", Subject: "Reverse", Status: StatusUnresolved, Verdict: "verified", Agrees: &no,
			Broken: []string{"TestSub (calc)"}, FixRounds: 2, Tokens: 300, CostUSD: &price, Seconds: 3, EditCalls: 4},
		{Commit: "7e7ec04aaaaaaaa", Subject: "Add", Status: StatusError, Reason: "the pipeline failed: planner: server error", Tokens: 50, CostUSD: &price},
		{Commit: "986b0a7aaaaaaaa", Subject: "Doc", Status: StatusSkipped, Reason: "nothing to fix", CostUSD: new(float64)},
	}}
	rep.Summary = summarize(rep.Tasks, true)
	s := rep.Summary
	if s.Graded != 2 || s.Resolved != 1 || *s.ResolvedRate != 0.5 || s.Agreed != 1 || s.VerifiedUnresolved != 1 || s.ResolvedUnverified != 0 ||
		s.Errors != 1 || s.Skipped != 1 || s.FixRounds != 2 || s.Tokens != 450 || *s.EditErrorRate != 0.125 || s.CostUSD == nil || *s.CostUSD != 0.75 {
		t.Fatalf("summary %+v", s)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{short(commitMul) + "*  yes", "4b8bab3   no", "2           300", "$0.2500", "7e7ec04   error", "986b0a7   skipped",
		"4b8bab3 broke TestSub (calc)", "7e7ec04 error: the pipeline failed", "* kept from an earlier run",
		"Resolved 1 of 2 graded task(s) (50 %); 1 skipped", "1 verified but unresolved", "edit-tool errors 1 of 8 call(s) (12 %)", "cost $0.7500"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, b.String())
		}
	}
	rep.Tasks[1].CostUSD = nil
	if s := summarize(rep.Tasks, true); s.CostUSD != nil {
		t.Error("a task of unknown cost gave a known total")
	}
	if s := summarize(nil, false); s.ResolvedRate != nil || s.Agreement != nil || s.CostUSD != nil {
		t.Errorf("nothing graded: %+v", s)
	}
	b.Reset()
	(&Report{Repository: "/src/x"}).WriteTable(&b)
	if !strings.Contains(b.String(), "nothing to evaluate") {
		t.Errorf("no task: %q", b.String())
	}
}
