package templates

import (
	"time"

	"github.com/selfcode/selfcode/pipeline/stage"
)

// richReport is a realistic finished job with every section filled.
func richReport() Report {
	verify := []VerifyRow{
		{Name: "build", Command: "go build ./...", Passed: true, Duration: 4200 * time.Millisecond},
		{Name: "vet", Command: "go vet ./...", Passed: true, Duration: 2100 * time.Millisecond},
		{Name: "test", Command: "go test ./...", Passed: true, Status: "passed", Duration: 38*time.Second + 400*time.Millisecond,
			BaseTests: &TestCount{Pass: 40, Fail: 1}, Tests: &TestCount{Pass: 43, Skip: 1}},
	}
	earlier := []VerifyRow{
		{Name: "build", Command: "go build ./...", Passed: true, Duration: 4 * time.Second},
		{Name: "test", Command: "go test ./...", Passed: false, Duration: 35 * time.Second,
			Output: "--- FAIL: TestParseDuration (0.00s)\n    parse_test.go:41: ParseDuration(\"90m\") = 0, want 1h30m0s\nFAIL\nFAIL\texample.com/clock\t0.012s"},
	}
	return Report{
		JobID:      "01jb7k3m9x2c4q8r6t0v5w1y3z",
		Repository: "acme/clock",
		Issue:      42,
		IssueTitle: "ParseDuration rejects minutes over 59",
		Summary: "`ParseDuration` now accepts minute values above 59 (for example `90m`) and normalises them.\n\n" +
			"The parser used to validate each unit against its clock range; it now only rejects negative values.",
		Plan: &Plan{
			Summary: "Relax the per-unit range check and add table tests.",
			Steps: []PlanStep{
				{ID: "relax-check", Title: "Drop the 0–59 check for minutes and seconds",
					Files:      []PlanFile{{Path: "clock/parse.go", Action: "modify", Purpose: "remove the range check"}},
					Acceptance: []string{"ParseDuration(\"90m\") returns 1h30m"}},
				{ID: "tests", Title: "Cover large units",
					Files:      []PlanFile{{Path: "clock/parse_test.go", Action: "modify", Purpose: "table cases for 90m, 3600s"}},
					Acceptance: []string{"go test ./clock passes"}},
			},
			Risks:     []string{"Callers may rely on the old rejection."},
			Questions: []string{"Should negative values stay an error?"},
		},
		FilesChanged: []FileChange{
			{Path: "clock/parse.go", Action: "modified", Added: 4, Deleted: 9},
			{Path: "clock/parse_test.go", Action: "modified", Added: 18, Deleted: 0},
		},
		Verification:   verify,
		Verdict:        "verified",
		Tests:          TestChanges{Fixed: []string{"TestParseDuration (example.com/clock)"}},
		FixAttempts:    1,
		MaxFixAttempts: 3,
		Tokens:         TokenUsage{Total: 48213, ByPhase: map[string]int{"plan": 6120, "edit": 30877, "fix": 9004, "report": 2212}},
		Cost:           Cost{Dollars: 0.1432, Known: true},
		Duration:       3*time.Minute + 12*time.Second,
		Guidance:       []string{"AGENTS.md", "pkg/clock/AGENTS.md"},
		Time: []TimeSpan{{Part: stage.PartQueue, Took: 400 * time.Millisecond}, {Part: stage.PartCheckout, Took: 1100 * time.Millisecond},
			{Part: stage.PartSandboxStart, Took: 900 * time.Millisecond}, {Part: stage.PartBaseline, Took: 41 * time.Second}, {Part: stage.PartModel, Took: 95 * time.Second},
			{Part: stage.PartVerify, Took: 45 * time.Second}},
		State:       "succeeded",
		Outcome:     "pr_opened",
		BlastRadius: []string{"cmd/clockctl", "internal/schedule"},
		Iteration:   2,
		Iterations: []Iteration{{Number: 1, Summary: "First edit broke an existing test.", Outcome: "verification_failed",
			FilesChanged: []FileChange{{Path: "clock/parse.go", Action: "modified", Added: 2, Deleted: 9}}, Verification: earlier}},
		Logs: "edit: str_replace clock/parse.go\nedit: str_replace clock/parse_test.go\nverify: test failed\nfix: str_replace clock/parse.go\nverify: all passed",
		Stages: []Stage{
			{Name: "plan", Status: "pass", Summary: "2 steps", Duration: 14 * time.Second},
			{Name: "edit", Status: "pass", Summary: "2 files", Duration: 51 * time.Second},
			{Name: "verify", Status: "pass", Summary: "3 checks", Duration: 45 * time.Second},
			{Name: "fix", Status: "pass", Summary: "1 attempt", Duration: 70 * time.Second},
			{Name: "publish", Status: "pass", Duration: 2 * time.Second},
		},
		Branch:      "selfcode/issue-42",
		PRURL:       "https://github.com/acme/clock/pull/43",
		CommandWord: "/selfcode",
	}
}

// richFailure is richReport after verification kept failing.
func richFailure() Report {
	r := richReport()
	r.State, r.Outcome, r.Draft = "failed", "verification_failed", true
	r.Verdict, r.Regressions = "failed", []string{"test: test TestParseDuration/90m (example.com/clock)"}
	r.Tests = TestChanges{NewlyFailing: []TestFailure{{Name: "TestParseDuration/90m (example.com/clock)", Output: "parse_test.go:41: got 0, want 1h30m0s"}},
		StillFailing: []string{"TestLegacy (example.com/clock)"}, Flaky: []string{"TestClockSkew (example.com/clock)"}}
	r.FixAttempts = 3
	r.Verification = []VerifyRow{
		{Name: "build", Command: "go build ./...", Passed: true, Duration: 4 * time.Second},
		{Name: "test", Command: "go test ./...", Passed: false, Duration: 36 * time.Second, Baseline: "passed on base",
			Output: "--- FAIL: TestParseDuration/90m (0.00s)\n    parse_test.go:41: got 0, want 1h30m0s\nFAIL"},
	}
	r.Stages[3] = Stage{Name: "fix", Status: "fail", Summary: "3 attempts, test still fails", Duration: 4 * time.Minute}
	r.Stages[4] = Stage{Name: "publish", Status: "pass", Summary: "draft PR"}
	return r
}

// richUnverified is richReport when nothing could show the change works.
func richUnverified() Report {
	r := richReport()
	r.State, r.Outcome, r.Draft, r.FixAttempts = "failed", "unverified", true, 0
	r.Verdict, r.Tests = "unverified", TestChanges{}
	r.Reasons = []Reason{
		{Why: "setup step `go mod download` failed on the base commit and on the change (exit status 1)", Next: "add a `setup:` step that can fetch `example.com/words`"},
		{Why: "`make lint` timed out after 10m0s", Next: "give it a longer `timeout:` in `verify:`"},
	}
	r.Verification = []VerifyRow{
		{Name: "setup: go mod download", Command: "go mod download", Status: "failed", Duration: 3 * time.Second,
			Output: "go: example.com/words@v1.0.0: unrecognized import path \"example.com/words\""},
		{Name: "build", Command: "go build ./...", Status: "not run"},
		{Name: "test", Command: "go test ./...", Status: "not run"},
	}
	return r
}

// richUnfinished is richReport stopped at a limit while it edited, one of
// its two steps done, priced only in part.
func richUnfinished() Report {
	r := richReport()
	r.State, r.Outcome, r.Draft, r.FixAttempts = "failed", "limit_reached", true, 0
	r.Verdict, r.Tests, r.Verification, r.Iterations, r.Iteration = "", TestChanges{}, nil, nil, 0
	r.Branch = "selfcode/issue-42"
	r.FilesChanged = r.FilesChanged[:1]
	r.Cost = Cost{Dollars: 0.02, Unpriced: []string{"local-llama"}}
	r.Error = "stopped at the installation's daily cost budget (SELFCODE_DAILY_COST_BUDGET): $5.00 of $5.00 on 2025-06-01"
	r.Unfinished = &Unfinished{Limit: "the installation's daily cost budget (SELFCODE_DAILY_COST_BUDGET)", Detail: "$5.00 of $5.00 on 2025-06-01",
		During: "edit", Done: []string{"Drop the 0–59 check for minutes and seconds"}, Left: []string{"Cover large units"}}
	r.Diff = "diff --git a/clock/parse.go b/clock/parse.go\n--- a/clock/parse.go\n+++ b/clock/parse.go\n@@ -10,3 +10,1 @@\n-\tif m > 59 {\n-\t\treturn 0, errRange\n-\t}\n+\t// any minute count\n"
	r.Stages = []Stage{
		{Name: "plan", Status: "pass", Summary: "2 steps", Duration: 14 * time.Second},
		{Name: "edit", Status: "fail", Summary: "token budget exhausted (daily_cost)", Duration: 2 * time.Minute},
		{Name: "publish", Status: "pass", Summary: "draft PR"},
	}
	return r
}

// richError is a job that stopped with an error in the edit stage.
func richError() Report {
	r := richReport()
	r.State, r.Outcome = "failed", "error"
	r.Error = "edit: model endpoint: 503 Service Unavailable (after 5 retries)"
	r.Stages = []Stage{
		{Name: "plan", Status: "pass", Summary: "2 steps", Duration: 14 * time.Second},
		{Name: "edit", Status: "fail", Summary: "model unavailable", Duration: 2 * time.Minute},
		{Name: "verify", Status: "pending"},
		{Name: "publish", Status: "pending"},
	}
	r.PRURL = ""
	return r
}

// richRunning is the progress comment's data midway.
func richRunning() Report {
	r := richReport()
	r.State, r.Outcome, r.PRURL = "running", "", ""
	r.Stages = []Stage{
		{Name: "plan", Status: "pass", Summary: "2 steps", Duration: 14 * time.Second},
		{Name: "edit", Status: "running"},
		{Name: "verify", Status: "pending"},
		{Name: "publish", Status: "pending"},
	}
	return r
}

// minimalReport is the least a caller can pass.
func minimalReport() Report {
	return Report{JobID: "01jb7k3m9x2c4q8r6t0v5w1y3z", Repository: "acme/clock", CommandWord: "/selfcode"}
}

func richStatus() StatusView {
	return StatusView{CommandWord: "/selfcode", Found: true, JobID: "01jb7k3m9x2c4q8r6t0v5w1y3z", State: "running", Attempts: 2,
		Stages: richRunning().Stages, UpdatedAt: time.Date(2025, 6, 1, 2, 14, 0, 0, time.UTC)}
}
