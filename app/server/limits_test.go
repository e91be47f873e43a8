package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/testclock"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// The limits of issue 16, each reached mid-run, end the job cleanly with
// outcome limit_reached, the limit named, and the work so far published
// (a draft pull request marked unfinished, or a comment); a retry resumes
// from it. The model's part runs the real pipeline on the scripted model
// (e2e.NullSandbox: nothing is verified); the time limits move the
// server's clock instead of waiting.

// limitsPlan has two steps; a run stopped after the first leaves the
// second.
const limitsPlan = `{"summary":"Greet the world","steps":[` +
	`{"id":"1","title":"Greet the world","files":[{"path":"greet.go","action":"modify","purpose":"say hello to the world"}],"acceptance":[]},` +
	`{"id":"2","title":"Test the greeting","files":[{"path":"greet_test.go","action":"create","purpose":"pin the greeting"}],"acceptance":[]}],` +
	`"risks":[],"questions":[]}`

// firstStep is the model's work until a limit stops it: the plan (350
// tokens, 200 of its prompt cached), the first step's edit (600 tokens)
// and a look at the result (210 tokens). A budget of 1000 tokens, or of
// a cent at $10/$1/$20 per million, refuses the call after.
func firstStep() []fakeopenai.Step {
	return []fakeopenai.Step{
		{Role: "planner", Content: limitsPlan, PromptTokens: 300, CachedTokens: 200, CompletionTokens: 50},
		{Role: "editor", PromptTokens: 500, CompletionTokens: 100, ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace",
			Arguments: jsonArg(map[string]string{"path": "greet.go", "old_str": `return "Hello"`, "new_str": `return "Hello, world"`})}}},
		{Role: "editor", PromptTokens: 200, CompletionTokens: 10, ToolCalls: []fakeopenai.ToolCall{{Name: "view",
			Arguments: jsonArg(map[string]string{"path": "greet.go"})}}},
	}
}

// modelEnv names a model per role, so that the scripted steps find their
// role.
var modelEnv = []string{"SELFCODE_LLM_MODEL_PLANNER=planner", "SELFCODE_LLM_MODEL_EDITOR=editor", "SELFCODE_LLM_MODEL_FIXER=fixer"}

// startLimited starts selfcode on the real pipeline with the scripted
// model, the settings env and the repository's files added, on a clock
// only the test moves.
func startLimited(t *testing.T, env []string, files map[string]string) (*e2e.Harness, *testclock.Clock) {
	t.Helper()
	clk := testclock.New(time.Now())
	return e2e.Start(t, e2e.Options{Sandbox: e2e.NullSandbox{}, Script: firstStep(), Env: append(append([]string(nil), modelEnv...), env...),
		GitHubOptions: withSample(files), Now: clk.Now}), clk
}

// nextDay moves clk to the start of the next day (UTC, the budgets' day):
// the daily budgets are fresh again.
func nextDay(clk *testclock.Clock) {
	y, m, d := clk.Now().UTC().Date()
	clk.Set(time.Date(y, m, d+1, 0, 0, 1, 0, time.UTC))
}

// editorResumes scripts the retry's model work — the plan's second step,
// then finish — and returns what the retry's first model call was told,
// failing the test when the retry plans again.
func editorResumes(t *testing.T, e *e2e.Harness) func() string {
	t.Helper()
	if err := e.Model.Enqueue(
		fakeopenai.Step{Role: "editor", PromptTokens: 100, CompletionTokens: 10, ToolCalls: []fakeopenai.ToolCall{{Name: "create",
			Arguments: jsonArg(map[string]string{"path": "greet_test.go", "content": "package hello\n"})}}},
		fakeopenai.Step{Role: "editor", PromptTokens: 100, CompletionTokens: 10, ToolCalls: []fakeopenai.ToolCall{{Name: "finish",
			Arguments: jsonArg(map[string]string{"summary": "greets the world, with a test"})}}},
	); err != nil {
		t.Fatal(err)
	}
	before := len(e.Model.Requests())
	return func() string {
		reqs := e.Model.Requests()[before:]
		if len(reqs) != 2 || reqs[0].Role != "editor" {
			t.Fatalf("the retry asked %d times (first %q): it must not plan again", len(reqs), reqs[0].Role)
		}
		var prompt strings.Builder
		for _, m := range reqs[0].Body.Messages {
			prompt.WriteString(string(m.Content) + "\n")
		}
		return prompt.String()
	}
}

// retryResumes comments `/selfcode retry` on issue, whose job j stopped at
// a limit with its work on the draft pr, and checks that the same job
// resumes from the saved work and ends with the outcome want (a retry that
// errors does not pass): its run is told which limit stopped the last one
// (told returns what the retry's run was told, and is returned), its
// commit goes on top of the saved one, and the pull request is no longer
// marked unfinished. It returns the retried job.
func retryResumes(t *testing.T, e *e2e.Harness, issue int, j *job.Job, pr fakegithub.PullRequest, want job.Outcome, told func() string) (*job.Job, string) {
	t.Helper()
	limit := j.Stop
	saved, err := e.GitHub.BranchSHA(owner, repoName, pr.Head)
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.Comment(repoName, issue, "maint", "/selfcode retry")
	if code != http.StatusAccepted {
		t.Fatalf("retry: %d %v", code, out)
	}
	e.Wait(out["job_id"].(string))
	e.Eventually("the retried job to end", func() bool { j := e.Job(j.ID); return j.Attempts > 0 && j.State.Terminal() })
	j = e.Job(j.ID)
	if j.Outcome != want || j.Stop != "" {
		t.Fatalf("retried job %s %s (want %s) stop %q %q\n%s", j.State, j.Outcome, want, j.Stop, j.Error, e.Logs())
	}
	said := told()
	if !strings.Contains(said, limit.Describe()) {
		t.Errorf("the retry was not told that the last run stopped at %s:\n%s", limit.Describe(), said)
	}
	// The branch went on from the saved work: its commit is the parent of
	// the retry's.
	log, _ := e.GitHub.Log(owner, repoName, pr.Head)
	if len(log) < 2 || log[1].SHA != saved {
		t.Fatalf("the retry's commit is not on top of the saved work %s: %+v", saved, log)
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	if len(prs) != 1 || strings.Contains(prs[0].Body, "**Unfinished:**") {
		t.Fatalf("after the retry: %+v", prs)
	}
	return j, said
}

// runIssue opens an issue, comments the command on it and waits for the
// job's end.
func runIssue(t *testing.T, e *e2e.Harness) (int, *job.Job) {
	t.Helper()
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greet the world", Body: "Say hello to the world.", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.Comment(repoName, issue, "writer", "/selfcode")
	if code != http.StatusAccepted {
		t.Fatalf("delivery: %d %v", code, out)
	}
	return issue, e.Wait(out["job_id"].(string))
}

// assertStopped checks a job that stopped at limit with its work on a
// draft pull request marked unfinished.
func assertStopped(t *testing.T, e *e2e.Harness, issue int, j *job.Job, limit job.Stop, during string) fakegithub.PullRequest {
	t.Helper()
	if j.State != job.StateFailed || j.Outcome != job.OutcomeLimitReached || j.Stop != limit || !strings.Contains(j.Error, limit.Describe()) {
		t.Fatalf("job %s %s stop %q error %q\n%s", j.State, j.Outcome, j.Stop, j.Error, e.Logs())
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	if len(prs) != 1 || !prs[0].Draft || prs[0].Head != fmt.Sprintf("selfcode/issue-%d", issue) {
		t.Fatalf("pull requests %+v", prs)
	}
	for _, want := range []string{"**Unfinished:** selfcode stopped at " + limit.Describe(), "during " + during, "`/selfcode retry`"} {
		if !strings.Contains(prs[0].Body, want) {
			t.Errorf("the draft's body lacks %q:\n%s", want, prs[0].Body)
		}
	}
	if pc := e.ProgressComments(repoName, issue); len(pc) != 1 || !strings.Contains(pc[0].Body, "stopped at a limit") {
		t.Errorf("progress comments %+v", pc)
	}
	runs := e.GitHub.CheckRuns(owner, repoName)
	if len(runs) == 0 || runs[len(runs)-1].Conclusion != "neutral" {
		t.Errorf("check runs %+v", runs)
	}
	return prs[0]
}

// TestTokenLimitMidRunAndRetryResumes: the job's limits.max_tokens stops
// the run in the middle of its edits; the first step's change is a draft
// pull request; `/selfcode retry` carries on from the branch, with the
// plan and progress in the editor's prompt and no new plan.
func TestTokenLimitMidRunAndRetryResumes(t *testing.T) {
	t.Parallel()
	e, _ := startLimited(t, nil, map[string]string{".selfcode.yml": "limits: {max_tokens: 1000}\n"})
	issue, j := runIssue(t, e)
	pr := assertStopped(t, e, issue, j, job.StopMaxTokens, "edit")
	for _, want := range []string{"1160 of 1000 tokens used", "Done: Greet the world.", "Left: Test the greeting."} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("the draft's body lacks %q:\n%s", want, pr.Body)
		}
	}
	if n := len(e.Model.Requests()); n != 3 {
		t.Fatalf("%d model calls; the budget should refuse the fourth", n)
	}
	branch := pr.Head
	if g, _ := e.GitHub.FileAt(owner, repoName, branch, "greet.go"); !strings.Contains(g, "Hello, world") {
		t.Fatalf("the work so far is not on %s: %q", branch, g)
	}
	// The job record: tokens by kind, a cost unknown (no price for these
	// models), never zero.
	code, body := e.Admin(http.MethodGet, "/api/jobs/"+j.ID, "")
	var rec struct {
		Stop  string `json:"stop"`
		Usage struct {
			Prompt    int      `json:"prompt_tokens"`
			Cached    int      `json:"cached_prompt_tokens"`
			Completed int      `json:"completion_tokens"`
			Cost      *float64 `json:"cost_usd"`
			Unpriced  []string `json:"unpriced_models"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &rec); code != http.StatusOK || err != nil {
		t.Fatalf("GET job: %d %v %s", code, err, body)
	}
	if rec.Stop != "max_tokens" || rec.Usage.Prompt != 1000 || rec.Usage.Cached != 200 || rec.Usage.Completed != 160 ||
		rec.Usage.Cost != nil || strings.Join(rec.Usage.Unpriced, ",") != "planner,editor" {
		t.Fatalf("job record %s", body)
	}

	// Retry: the same job resumes from the saved work.
	_, prompt := retryResumes(t, e, issue, j, pr, job.OutcomeUnverified, editorResumes(t, e))
	for _, want := range []string{
		"continues an earlier run that stopped at the job's token limit (limits.max_tokens)",
		"Files changed so far: greet.go", "Steps done:\n- 1. Greet the world", "Steps left:\n- 2. Test the greeting",
		"create greet_test.go: pin the greeting", // the previous plan
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the retry's editor prompt lacks %q:\n%s", want, prompt)
		}
	}
	if g, _ := e.GitHub.FileAt(owner, repoName, branch, "greet.go"); !strings.Contains(g, "Hello, world") {
		t.Fatalf("greet.go lost the saved work: %q", g)
	}
	if _, err := e.GitHub.FileAt(owner, repoName, branch, "greet_test.go"); err != nil {
		t.Fatalf("the rest of the work is not on %s: %v", branch, err)
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	for _, f := range []string{"`greet.go`", "`greet_test.go`"} {
		if !strings.Contains(prs[0].Body, f) {
			t.Errorf("the report does not count %s from the default branch:\n%s", f, prs[0].Body)
		}
	}
}

// TestDailyTokenBudgetMidRun: the installation's daily tokens, counted per
// call as they are spent (another job's use of the day included), stop a
// running job at its next call; the next day a retry resumes it.
func TestDailyTokenBudgetMidRun(t *testing.T) {
	t.Parallel()
	e, clk := startLimited(t, []string{"SELFCODE_DAILY_TOKEN_BUDGET=1200"}, nil)
	day := clk.Now().UTC().Format(time.DateOnly)
	// Another job of the installation used 100 tokens today.
	if _, err := e.Server.Store.AddUsage(context.Background(), e2e.InstallationID, day, store.DayUsage{Tokens: 100}); err != nil {
		t.Fatal(err)
	}
	issue, j := runIssue(t, e)
	pr := assertStopped(t, e, issue, j, job.StopDailyTokens, "edit")
	if !strings.Contains(pr.Body, "1260 of 1200 tokens on "+day) {
		t.Errorf("the draft does not say how much was used:\n%s", pr.Body)
	}
	if n := len(e.Model.Requests()); n != 3 {
		t.Fatalf("%d model calls", n)
	}
	if u, _ := e.Server.Store.Usage(context.Background(), e2e.InstallationID, day); u.Tokens != 1260 {
		t.Fatalf("the day counts %d tokens, want 1260", u.Tokens)
	}
	nextDay(clk)
	retryResumes(t, e, issue, j, pr, job.OutcomeUnverified, editorResumes(t, e))
}

// TestDailyCostBudgetMidRun: the installation's dollars for the day, from
// the price table (configured prices; cached prompt tokens at their own
// price), stop a running job; its cost is in the job record and /metrics.
// The next day a retry resumes it.
func TestDailyCostBudgetMidRun(t *testing.T) {
	t.Parallel()
	e, clk := startLimited(t, []string{"SELFCODE_DAILY_COST_BUDGET=0.01",
		"SELFCODE_MODEL_PRICES=planner=10,1,20; editor=10,1,20; fixer=10,1,20; reporter=1,1,1"}, nil)
	issue, j := runIssue(t, e)
	pr := assertStopped(t, e, issue, j, job.StopDailyCost, "edit")
	// planner (100×10 + 200×1 + 50×20)/1e6 = $0.0022, editor $0.007, editor
	// $0.0022: $0.0114.
	const want = 0.0114
	if !strings.Contains(pr.Body, "$0.01 of $0.01") || !strings.Contains(pr.Body, "- Cost: $0.01") {
		t.Errorf("the draft does not say what was spent:\n%s", pr.Body)
	}
	if j.Usage == nil || j.Usage.CostUSD == nil || math.Abs(*j.Usage.CostUSD-want) > 1e-9 {
		t.Fatalf("job usage %+v", j.Usage)
	}
	day := clk.Now().UTC().Format(time.DateOnly)
	if u, _ := e.Server.Store.Usage(context.Background(), e2e.InstallationID, day); math.Abs(u.Dollars()-want) > 1e-9 {
		t.Fatalf("the day counts $%v, want $%v", u.Dollars(), want)
	}
	e.Eventually("the cost on /metrics", func() bool {
		_, body := e.Admin(http.MethodGet, "/metrics", "")
		return strings.Contains(string(body), `selfcode_model_cost_dollars_total{model="editor"} 0.0092`) &&
			strings.Contains(string(body), "selfcode_job_cost_dollars_count 1")
	})
	nextDay(clk)
	retryResumes(t, e, issue, j, pr, job.OutcomeUnverified, editorResumes(t, e))
}

// timedOut runs a /selfcode job whose first request method path hangs
// (until its client gives up), and moves the server's clock past the
// default job_timeout (45m) once the request arrived.
func timedOut(t *testing.T, method, path string, verdict verify.Verdict) (*e2e.Harness, int, *job.Job) {
	t.Helper()
	clk := testclock.New(time.Now())
	e := e2e.Start(t, e2e.Options{Now: clk.Now})
	e.Scripted.SetVerdict(verdict)
	arrived := make(chan struct{})
	var once sync.Once
	e.GitHub.InjectFault(fakegithub.Fault{Method: method, PathPattern: path, Times: 1, Delay: time.Hour,
		Reached: func(string, string) { once.Do(func() { close(arrived) }) }})
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greet the world", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	_, out := e.Comment(repoName, issue, "writer", "/selfcode")
	<-arrived
	clk.Add(46 * time.Minute)
	return e, issue, e.Wait(out["job_id"].(string))
}

// TestTimeoutDuringCheckout: job_timeout covers the checkout: a fetch that
// hangs is cut off at the limit, and the issue is told that the job
// stopped before it changed anything.
func TestTimeoutDuringCheckout(t *testing.T) {
	t.Parallel()
	e, issue, j := timedOut(t, http.MethodGet, "/"+owner+"/"+repoName+".git/info/refs", verify.Verified)
	if j.State != job.StateFailed || j.Outcome != job.OutcomeLimitReached || j.Stop != job.StopJobTimeout {
		t.Fatalf("job %s %s stop %q %q", j.State, j.Outcome, j.Stop, j.Error)
	}
	stoppedInCheckout(t, e, issue)
}

// stoppedInCheckout checks that the job on issue stopped at job_timeout
// during its checkout, before the pipeline ran, and that the issue is told
// so.
func stoppedInCheckout(t *testing.T, e *e2e.Harness, issue int) {
	t.Helper()
	if e.Scripted.Calls() != 0 || len(e.GitHub.PullRequests(owner, repoName)) != 0 {
		t.Fatalf("the pipeline ran (%d) or a pull request was opened", e.Scripted.Calls())
	}
	cs := e.Comments(repoName, issue, "selfcode stopped at a limit")
	var report string
	for _, c := range cs {
		if !strings.Contains(c, "<!-- selfcode:job:") {
			report = c
		}
	}
	for _, want := range []string{"the job's time limit (limits.job_timeout) during checkout", "Nothing was changed yet", "`/selfcode retry`"} {
		if !strings.Contains(report, want) {
			t.Errorf("the comment lacks %q:\n%s", want, report)
		}
	}
}

// TestRepositoryTimeoutAppliesOnceRead: a repository's own
// limits.job_timeout is read from the repository, so its checkout runs
// under the server's default (45m): a checkout that takes 20 minutes is
// not cut at the repository's 10, and the job stops the moment the
// setting is read — counted from the job's start — before anything else
// starts (docs/operations.md, limits).
func TestRepositoryTimeoutAppliesOnceRead(t *testing.T) {
	t.Parallel()
	clk := testclock.New(time.Now())
	e := e2e.Start(t, e2e.Options{Now: clk.Now, GitHubOptions: withSample(map[string]string{".selfcode.yml": "limits: {job_timeout: 10m}\n"})})
	e.GitHub.InjectFault(fakegithub.Fault{Method: http.MethodGet, PathPattern: "/" + owner + "/" + repoName + ".git/info/refs", Times: 1,
		Reached: func(string, string) { clk.Add(20 * time.Minute) }})
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greet the world", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	_, out := e.Comment(repoName, issue, "writer", "/selfcode")
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateFailed || j.Outcome != job.OutcomeLimitReached || j.Stop != job.StopJobTimeout || !strings.Contains(j.Error, "the job ran 10m0s") {
		t.Fatalf("job %s %s stop %q %q", j.State, j.Outcome, j.Stop, j.Error)
	}
	for _, st := range j.Stages {
		if st.Name == stage.Checkout && st.Status != stage.Pass {
			t.Fatalf("the checkout was cut at the repository's limit: %s %q", st.Status, st.Summary)
		}
	}
	stoppedInCheckout(t, e, issue)
}

// TestTimeoutDuringPublish: job_timeout reached while the pull request is
// being opened; publishing gets its grace period and the (verified) work
// becomes a draft marked unfinished, not lost; a retry resumes from it.
func TestTimeoutDuringPublish(t *testing.T) {
	t.Parallel()
	e, issue, j := timedOut(t, http.MethodPost, "/repos/"+owner+"/"+repoName+"/pulls", verify.Verified)
	pr := assertStopped(t, e, issue, j, job.StopJobTimeout, "publish")
	if g, _ := e.GitHub.FileAt(owner, repoName, pr.Head, "greet.go"); !strings.Contains(g, "Hello, world (1)") {
		t.Fatalf("the work is not on %s: %q", pr.Head, g)
	}
	retryResumes(t, e, issue, j, pr, job.OutcomePRUpdated, func() string {
		r := e.Scripted.Last().Resume
		if r == nil {
			t.Fatal("the retry's run was given no saved work to resume")
		}
		if r.Plan == nil || len(r.Changed) != 1 || r.Changed[0] != "greet.go" {
			t.Errorf("the retry's run was told plan %v, changed %v", r.Plan, r.Changed)
		}
		return r.Stopped
	})
}
