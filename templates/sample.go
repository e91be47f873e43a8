package templates

import (
	"time"

	"github.com/selfcode/selfcode/pipeline/stage"
)

// sampleReport fills every field a template may read, so that New can check
// that each entry renders (and an override naming a missing field fails early).
func sampleReport() Report {
	rows := []VerifyRow{
		{Name: "build", Command: "go build ./...", Passed: true, Duration: 1200 * time.Millisecond},
		{Name: "test", Command: "go test ./...", Passed: false, Status: "failed", Duration: 9 * time.Second, Baseline: "also failed on base", Output: "--- FAIL: TestX\nFAIL",
			BaseTests: &TestCount{Pass: 3, Fail: 1}, Tests: &TestCount{Pass: 3, Fail: 1, Skip: 1}},
	}
	files := []FileChange{{Path: "main.go", Action: "modified", Added: 3, Deleted: 1}, {Path: "logo.png", Action: "added", Binary: true}}
	return Report{
		JobID: "01j0000000000000000000000a", Repository: "octo/sample", Issue: 1, IssueTitle: "Sample",
		Summary: "Sample summary.",
		Plan: &Plan{Summary: "Plan.", Steps: []PlanStep{{ID: "s1", Title: "Step", Files: []PlanFile{{Path: "main.go", Action: "modify", Purpose: "why"}},
			Acceptance: []string{"it works"}}}, Risks: []string{"risk"}, Questions: []string{"question?"}},
		FilesChanged: files, Verification: rows, FixAttempts: 1, MaxFixAttempts: 3,
		Tokens:   TokenUsage{Total: 1000, ByPhase: map[string]int{"plan": 400, "edit": 600}},
		Duration: time.Minute, Time: []TimeSpan{{Part: stage.PartQueue, Took: 300 * time.Millisecond}, {Part: stage.PartSandboxStart, Took: 2 * time.Second}, {Part: stage.PartModel, Took: 40 * time.Second}},
		State: "running", Outcome: "pr_opened", Draft: true,
		Verdict: "unverified", Reasons: []Reason{{Why: "setup failed", Next: "add a setup step"}}, Regressions: []string{"test: test TestY (p)"},
		Tests: TestChanges{Fixed: []string{"TestA (p)"}, NewlyFailing: []TestFailure{{Name: "TestY (p)", Output: "want 1, got 2"}},
			StillFailing: []string{"TestX (p)"}, Flaky: []string{"TestZ (p)"}},
		BlastRadius: []string{"cmd/app"},
		Iterations:  []Iteration{{Number: 1, Summary: "first", Outcome: "verification_failed", FilesChanged: files, Verification: rows}},
		Logs:        "log line", Stages: []Stage{{Name: stage.Plan, Status: stage.Pass, Summary: "ok", Duration: time.Second}, {Name: stage.Edit, Status: stage.Fail}},
		Branch: "selfcode/issue-1", PRURL: "https://github.com/octo/sample/pull/2", Error: "boom", CommandWord: "/selfcode",
		Cost:       Cost{Dollars: 0.0123, Known: true, Unpriced: []string{"local-model"}},
		Unfinished: &Unfinished{Limit: "the job's token limit (limits.max_tokens)", Detail: "2850 of 2500 tokens used", During: "edit", Done: []string{"Step"}, Left: []string{"Test"}},
		Diff:       "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-a\n+b\n",
	}
}

func sampleStatus() StatusView {
	return StatusView{CommandWord: "/selfcode", Found: true, JobID: "01j0000000000000000000000a", State: "queued",
		Outcome: "", Attempts: 2, Stages: []Stage{{Name: stage.Plan, Status: stage.Pass}}, PRURL: "https://github.com/octo/sample/pull/2",
		Error: "boom", QueuedBehind: 1, UpdatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}
