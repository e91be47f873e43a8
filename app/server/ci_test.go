package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fixtures"
)

// checkFailed delivers check_run.completed: the check name concluded
// conclusion on the head of selfcode's branch of pull request pr, with
// output summary. It returns the delivery's answer.
func checkFailed(t *testing.T, e *e2e.Harness, branch string, pr int, name, conclusion, summary string) (int, map[string]any) {
	t.Helper()
	head, err := e.GitHub.BranchSHA(owner, repoName, branch)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fixtures.Payload("check_run.completed.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"check_run.name": name, "check_run.conclusion": conclusion, "check_run.head_sha": head,
		"check_run.check_suite.head_branch": branch, "check_run.pull_requests": []any{map[string]any{"number": pr}},
		"check_run.output.title": name + " failed", "check_run.output.summary": summary, "check_run.output.text": "",
		"repository.name": repoName, "repository.full_name": owner + "/" + repoName, "repository.owner.login": owner,
		"sender.login": "github-actions[bot]", "sender.type": "Bot", "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	return e.Deliver("check_run", fmt.Sprintf("ci-%s-%s-%.8s", name, conclusion, head), p)
}

// A check failing on selfcode's own pull request starts one follow-up whose
// task is the failure, which pushes a fix to the same pull request; the
// same failure again stops with a comment, so does ci_fix_attempts, and so
// does a human's push; a passing check starts nothing.
func TestRedCIOnSelfcodesPR(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{GitHubOptions: withSample(map[string]string{".selfcode.yml": "limits: {ci_fix_attempts: 1}\n"})})
	_, pr := openSelfcodePR(t, e)
	branch := pr.Head
	run := func(name, summary string) *job.Job {
		t.Helper()
		code, out := checkFailed(t, e, branch, pr.Number, name, "failure", summary)
		if code != http.StatusAccepted {
			t.Fatalf("a failing %s: %d %v", name, code, out)
		}
		return e.Wait(out["job_id"].(string))
	}
	comment := func(s string) bool {
		for _, c := range e.GitHub.Comments(owner, repoName, pr.Number) {
			if c.User == e.GitHub.BotLogin() && strings.Contains(c.Body, s) {
				return true
			}
		}
		return false
	}

	before, _ := e.GitHub.BranchSHA(owner, repoName, branch)
	j := run("ci/test", "--- FAIL: TestGreet (0.01s)\n    greet_test.go:12: got \"Hello\", want \"Hello, world\"")
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePRUpdated {
		t.Fatalf("CI follow-up %s %s %q", j.State, j.Outcome, j.Error)
	}
	if in := e.Scripted.Last(); !strings.Contains(in.Instructions, `"ci/test" failed`) || !strings.Contains(in.Instructions, "want \"Hello, world\"") {
		t.Fatalf("the follow-up's task is not the failure: %q", in.Instructions)
	}
	if after, _ := e.GitHub.BranchSHA(owner, repoName, branch); after == before {
		t.Fatal("the follow-up pushed nothing to selfcode's branch")
	}
	if !comment("Fixing the failing check `ci/test`") {
		t.Error("the progress comment does not say which check failed")
	}
	for _, p := range e.GitHub.PullRequests(owner, repoName) {
		if p.Number == pr.Number && !strings.Contains(p.Body, "the failing check `ci/test`") {
			t.Errorf("the pull request's report does not say which check failed:\n%s", p.Body)
		}
	}

	// The same failure (other timings) on the fix: a comment, no job.
	if j := run("ci/test", "--- FAIL: TestGreet (0.02s)\n    greet_test.go:12: got \"Hello\", want \"Hello, world\""); j.State != job.StateCanceled || !comment("failed again the same way") {
		t.Fatalf("the same failure twice: %s %q", j.State, j.Reason)
	}
	// Another failure, past limits.ci_fix_attempts: a comment, no job.
	if j := run("ci/lint", "greet.go:3: exported function Greet should have comment"); j.State != job.StateCanceled || !comment("ci_fix_attempts") {
		t.Fatalf("past the cap: %s %q", j.State, j.Reason)
	}
	// A passing check starts nothing.
	if code, out := checkFailed(t, e, branch, pr.Number, "ci/test", "success", "ok"); code != http.StatusOK || out["ignored"] == nil {
		t.Fatalf("a passing check: %d %v", code, out)
	}
}

// Someone else's push to selfcode's branch pauses the CI follow-ups.
func TestRedCIAfterAHumansPush(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	_, pr := openSelfcodePR(t, e)
	if _, err := e.GitHub.CommitFiles(owner, repoName, pr.Head, "my own touch", map[string]string{"NOTES.md": "mine\n"}); err != nil {
		t.Fatal(err)
	}
	calls := e.Scripted.Calls()
	code, out := checkFailed(t, e, pr.Head, pr.Number, "ci/test", "failure", "FAIL")
	if code != http.StatusAccepted {
		t.Fatalf("%d %v", code, out)
	}
	if j := e.Wait(out["job_id"].(string)); j.State != job.StateCanceled || e.Scripted.Calls() != calls {
		t.Fatalf("after a human's push: %s, %d pipeline runs", j.State, e.Scripted.Calls()-calls)
	}
	found := false
	for _, c := range e.GitHub.Comments(owner, repoName, pr.Number) {
		found = found || strings.Contains(c.Body, "someone else pushed")
	}
	if !found {
		t.Fatal("no comment saying why the follow-up did not run")
	}
}

// On a human's pull request, failing checks are fixed only when asked:
// `/selfcode fix-ci` makes their output the task; with none failing it
// says so and changes nothing.
func TestFixCIOnAHumansPR(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	head, err := e.GitHub.CommitFiles(owner, repoName, "feature", "feature work", map[string]string{"NOTES.md": "work\n"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := e.GitHub.AddPullRequest(owner, repoName, fakegithub.PullRequest{Title: "Feature", Head: "feature", Base: "main", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	calls := e.Scripted.Calls()
	_, out := prComment(t, e, pr.Number, "writer", "/selfcode fix-ci", "open")
	if j := e.Wait(out["job_id"].(string)); j.State != job.StateCanceled || e.Scripted.Calls() != calls {
		t.Fatalf("fix-ci with nothing failing: %s, %d runs", j.State, e.Scripted.Calls()-calls)
	}
	e.GitHub.AddCheckRun(fakegithub.CheckRun{Owner: owner, Repo: repoName, Name: "ci/lint", HeadSHA: head, Conclusion: "failure",
		Title: "1 problem", Summary: "greet.go:3: exported function Greet should have comment"})
	e.GitHub.AddCheckRun(fakegithub.CheckRun{Owner: owner, Repo: repoName, Name: "ci/test", HeadSHA: head, Conclusion: "success", Title: "ok"})
	_, out = prComment(t, e, pr.Number, "writer", "/selfcode fix-ci keep it short", "open")
	if j := e.Wait(out["job_id"].(string)); j.State == job.StateCanceled {
		t.Fatalf("fix-ci with a failing check: %s %q", j.State, j.Reason)
	}
	in := e.Scripted.Last()
	for _, want := range []string{`"ci/lint" failure`, "should have comment", "keep it short"} {
		if !strings.Contains(in.Instructions, want) {
			t.Errorf("the task lacks %q:\n%s", want, in.Instructions)
		}
	}
	if strings.Contains(in.Instructions, "ci/test") {
		t.Errorf("a passing check is in the task:\n%s", in.Instructions)
	}
}

// A failing GitHub Actions job's log, cut to the failing step, is part of
// the follow-up's task.
func TestRedCIReadsTheActionsLog(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	_, pr := openSelfcodePR(t, e)
	head, err := e.GitHub.BranchSHA(owner, repoName, pr.Head)
	if err != nil {
		t.Fatal(err)
	}
	const jobID = 987654
	e.GitHub.SetJobLog(jobID, "2026-11-25T10:00:00.0000000Z ##[group]Run go vet ./...\n"+
		"2026-11-25T10:00:01.0000000Z greet.go:3:2: unreachable code\n"+
		"2026-11-25T10:00:01.1000000Z ##[error]Process completed with exit code 1.\n")
	p, err := fixtures.Payload("check_run.completed.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"check_run.id": jobID, "check_run.name": "vet", "check_run.conclusion": "failure", "check_run.head_sha": head,
		"check_run.app.slug": "github-actions", "check_run.app.name": "GitHub Actions",
		"check_run.check_suite.head_branch": pr.Head, "check_run.pull_requests": []any{map[string]any{"number": pr.Number}},
		"check_run.output.title": "", "check_run.output.summary": "", "check_run.output.text": "",
		"repository.name": repoName, "repository.full_name": owner + "/" + repoName, "repository.owner.login": owner,
		"sender.login": "github-actions[bot]", "sender.type": "Bot", "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	code, out := e.Deliver("check_run", "actions-vet", p)
	if code != http.StatusAccepted {
		t.Fatalf("%d %v", code, out)
	}
	if j := e.Wait(out["job_id"].(string)); j.State != job.StateSucceeded {
		t.Fatalf("follow-up %s %q", j.State, j.Error)
	}
	if in := e.Scripted.Last(); !strings.Contains(in.Instructions, "greet.go:3:2: unreachable code") || !strings.Contains(in.Instructions, "##[group]Run go vet") {
		t.Fatalf("the task lacks the failing step's log:\n%s", in.Instructions)
	}
}
