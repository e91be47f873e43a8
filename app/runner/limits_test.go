package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// stoppedPipeline edits greet.go (when edit is set), then stops at the
// installation's daily cost budget, as a budget that refused the next
// model call ends the real pipeline.
func stoppedPipeline(edit bool) pipelineFunc {
	return func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		plan := &pipeline.Plan{Summary: "Greet", Steps: []pipeline.PlanStep{
			{ID: "1", Title: "Greet the world", Files: []pipeline.PlanFile{{Path: "greet.go", Action: "modify"}}},
			{ID: "2", Title: "Test it", Files: []pipeline.PlanFile{{Path: "greet_test.go", Action: "create"}}}}}
		in.Progress.Stage(stage.Plan, stage.Pass, "2 steps")
		if edit {
			if err := os.WriteFile(filepath.Join(in.Dir, "greet.go"), []byte("package hello\n\nfunc Greet() string { return \"Hello, world\" }\n"), 0o644); err != nil {
				return nil, err
			}
		}
		in.Progress.Stage(stage.Edit, stage.Fail, "token budget exhausted")
		be := &chat.BudgetError{Limit: chat.LimitDailyCost, Detail: "$5.00 of $5.00 on 2026-05-04"}
		return &pipeline.Output{Plan: plan, Budget: be, StopReason: be.Error(), Tokens: 100,
			Spend: pipeline.Spend{Usage: chat.Usage{Prompt: 90, Completion: 10, Total: 100}, Cost: 0.5}}, nil
	}
}

// TestUnfinishedWithoutPullRequest: a run stopped at a limit reports its
// work in a comment when a pull request is not wanted (draft_on_failure
// off: the branch is pushed and the diff shown) or there is no change yet
// (nothing pushed); either way the job ends limit_reached with the stop.
func TestUnfinishedWithoutPullRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		files    map[string]string
		edit     bool
		comment  []string
		branch   bool
		progress bool
		timeout  time.Duration // the job_timeout the runner gives the worker
	}{
		{"draft_on_failure off", map[string]string{".selfcode.yml": "draft_on_failure: false\nlimits: {job_timeout: 20m}\n"}, true,
			[]string{"No pull request was opened", "branch `selfcode/issue-1`", "```diff", `+func Greet() string { return "Hello, world" }`, "Left: Test it."},
			true, true, 20 * time.Minute},
		{"nothing changed yet", nil, false, []string{"Nothing was changed yet", "during edit", "`/selfcode retry`"}, false, false, 45 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newStepEnv(t, tt.files, stoppedPipeline(tt.edit))
			j := e.issueJob(job.KindRun)
			x, rt := e.begin(j)
			outcome, err := x.work(context.Background(), e.client)
			var stop *job.StopError
			if outcome != job.OutcomeLimitReached || !errors.As(err, &stop) || stop.Stop != job.StopDailyCost {
				t.Fatalf("outcome %s, err %v", outcome, err)
			}
			if prs := e.fake.PullRequests(owner, repoName); len(prs) != 0 {
				t.Fatalf("pull requests %+v", prs)
			}
			var body string
			for _, c := range e.fake.Comments(owner, repoName, j.Issue) {
				if strings.Contains(c.Body, "selfcode stopped at a limit") {
					body = c.Body
				}
			}
			for _, w := range append(tt.comment, "the installation's daily cost budget (SELFCODE_DAILY_COST_BUDGET)") {
				if !strings.Contains(body, w) {
					t.Errorf("the comment lacks %q:\n%s", w, body)
				}
			}
			if _, err := e.fake.BranchSHA(owner, repoName, "selfcode/issue-1"); (err == nil) != tt.branch {
				t.Errorf("branch pushed: %v, want %v", err == nil, tt.branch)
			}
			rt.mu.Lock()
			raw, kept := rt.artifacts[progressArtifact]
			rt.mu.Unlock()
			if kept != tt.progress {
				t.Fatalf("progress kept: %v", kept)
			}
			if kept {
				var p progress
				if err := json.Unmarshal(raw, &p); err != nil || p.Branch != "selfcode/issue-1" || p.Head == "" || p.Base == "" ||
					strings.Join(p.Changed, ",") != "greet.go" || p.Plan == nil || !strings.Contains(p.Stopped, "during edit") {
					t.Fatalf("progress %s %v", raw, err)
				}
			}
			rt.mu.Lock()
			timeout := rt.timeout
			rt.mu.Unlock()
			if timeout != tt.timeout {
				t.Errorf("job_timeout given to the worker: %v, want %v", timeout, tt.timeout)
			}
			if u := rt.job().Usage; u == nil || u.CostUSD == nil || *u.CostUSD != 0.5 || u.PromptTokens != 90 {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}
