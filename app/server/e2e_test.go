package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fixtures"
	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

const owner, repoName = e2e.Owner, e2e.Repo

// withSample is the sample repository with files added.
func withSample(files map[string]string) e2e.GitHubOptions {
	repo := e2e.SampleFiles()
	for k, v := range files {
		repo[k] = v
	}
	return e2e.GitHubOptions{Repos: map[string]map[string]string{repoName: repo}}
}

func TestEndToEndPullRequestAndRerun(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greeting is too short", Body: "Say hello to the world.", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.Comment(repoName, issue, "writer", "/selfcode make the greeting friendlier")
	if code != http.StatusAccepted {
		t.Fatalf("delivery: %d %v", code, out)
	}
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
		t.Fatalf("job %s %s %q\n%s", j.State, j.Outcome, j.Error, e.Logs())
	}
	branch := fmt.Sprintf("selfcode/issue-%d", issue)
	greet, err := e.GitHub.FileAt(owner, repoName, branch, "greet.go")
	if err != nil || !strings.Contains(greet, "Hello, world (1)") {
		t.Fatalf("branch %s greet.go: %q %v", branch, greet, err)
	}
	log, _ := e.GitHub.Log(owner, repoName, branch)
	if len(log) == 0 || !strings.HasSuffix(log[0].AuthorName, "[bot]") {
		t.Fatalf("commit author %+v", log)
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	if len(prs) != 1 || prs[0].Head != branch || !strings.Contains(prs[0].Body, fmt.Sprintf("Closes #%d", issue)) || prs[0].Draft {
		t.Fatalf("pull requests %+v", prs)
	}
	if pc := e.ProgressComments(repoName, issue); len(pc) != 1 {
		t.Fatalf("%d progress comments", len(pc))
	}
	// Where the time went, per stage and per part inside the stages, on
	// /metrics (recorded just after the job is stored as finished).
	e.Eventually("stage and part durations on /metrics", func() bool {
		code, body := e.Admin(http.MethodGet, "/metrics", "")
		for _, want := range []string{`selfcode_stage_duration_seconds_count{stage="publish"} 1`, `selfcode_stage_duration_seconds_count{stage="fix"} 1`,
			`selfcode_stage_duration_seconds_sum{stage="sandbox_start"} 1.5`, `selfcode_stage_duration_seconds_count{stage="setup"} 1`,
			`selfcode_stage_duration_seconds_sum{stage="baseline"} 3`, `selfcode_stage_duration_seconds_sum{stage="model"} 2`} {
			if code != http.StatusOK || !strings.Contains(string(body), want) {
				return false
			}
		}
		return true
	})
	trigger := j.Trigger.CommentID
	reactions := map[string]bool{}
	for _, r := range e.GitHub.Reactions("issue_comment", trigger) {
		reactions[r.Content] = true
	}
	if !reactions["eyes"] || !reactions["rocket"] {
		t.Fatalf("reactions %v", reactions)
	}
	runs := e.GitHub.CheckRuns(owner, repoName)
	if len(runs) == 0 || runs[len(runs)-1].Name != "selfcode" || runs[len(runs)-1].Conclusion != "success" || runs[len(runs)-1].ExternalID != j.ID {
		t.Fatalf("check runs %+v", runs)
	}

	// Run the same job again: same PR updated, one progress comment, one branch.
	code, out = e.Comment(repoName, issue, "maint", "/selfcode retry")
	if code != http.StatusAccepted {
		t.Fatalf("retry delivery: %d %v", code, out)
	}
	e.Wait(out["job_id"].(string))
	e.Eventually("the retried job to succeed", func() bool {
		j2 := e.Job(j.ID)
		return j2.Attempts > 0 && j2.State == job.StateSucceeded
	})
	j2 := e.Job(j.ID)
	if j2.Outcome != job.OutcomePRUpdated {
		t.Fatalf("retried outcome %s %q", j2.Outcome, j2.Error)
	}
	if prs := e.GitHub.PullRequests(owner, repoName); len(prs) != 1 || !strings.Contains(prs[0].Body, "Changed the greeting") {
		t.Fatalf("after re-run: %d PRs", len(prs))
	}
	greet, _ = e.GitHub.FileAt(owner, repoName, branch, "greet.go")
	if !strings.Contains(greet, "Hello, world (2)") {
		t.Fatalf("re-run did not update the branch: %q", greet)
	}
	if pc := e.ProgressComments(repoName, issue); len(pc) != 1 {
		t.Fatalf("%d progress comments after re-run", len(pc))
	}
	for _, pr := range e.GitHub.PullRequests(owner, repoName) {
		if strings.HasPrefix(pr.Head, "selfcode/") && pr.Head != branch {
			t.Fatalf("second branch %s", pr.Head)
		}
	}

	// Token and key hygiene: neither appears in any request body or URL sent
	// to GitHub, in the job's logs, or in any comment or PR body.
	secrets := append(e.GitHub.IssuedTokens(), string(e.GitHub.PrivateKeyPEM()))
	var haystack strings.Builder
	for _, r := range e.GitHub.Requests() {
		haystack.WriteString(r.Method + " " + r.Path + "?" + r.Query + "\n" + string(r.Body) + "\n")
	}
	haystack.WriteString(e.Logs())
	for _, c := range e.GitHub.Comments(owner, repoName, issue) {
		haystack.WriteString(c.Body)
	}
	for _, pr := range e.GitHub.PullRequests(owner, repoName) {
		haystack.WriteString(pr.Body)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(haystack.String(), strings.TrimSpace(s)) {
			t.Fatal("a token or the private key leaked into requests, logs or reports")
		}
	}
	if len(e.GitHub.IssuedTokens()) == 0 {
		t.Fatal("no tokens issued: the hygiene scan proves nothing")
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	tests := []struct {
		sender string
		run    bool
	}{{"admin-user", true}, {"maint", true}, {"writer", true}, {"reader", false}}
	for _, tt := range tests {
		t.Run(tt.sender, func(t *testing.T) {
			issue, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "t " + tt.sender, User: tt.sender})
			code, out := e.Comment(repoName, issue, tt.sender, "/selfcode go")
			if code != http.StatusAccepted {
				t.Fatalf("%d %v", code, out)
			}
			j := e.Wait(out["job_id"].(string))
			_, err := e.GitHub.BranchSHA(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue))
			if tt.run != (err == nil) || tt.run != (j.State == job.StateSucceeded) {
				t.Fatalf("sender %s: state %s branch err %v", tt.sender, j.State, err)
			}
			if !tt.run {
				if j.State != job.StateCanceled {
					t.Fatalf("state %s", j.State)
				}
				cs := e.GitHub.Comments(owner, repoName, issue)
				replies := 0
				for _, c := range cs {
					if c.User == e.GitHub.BotLogin() {
						replies++
					}
				}
				if replies != 1 {
					t.Fatalf("%d replies to a reader", replies)
				}
				// A second command by the same reader gets no second reply.
				_, out := e.Comment(repoName, issue, tt.sender, "/selfcode again")
				e.Wait(out["job_id"].(string))
				replies = 0
				for _, c := range e.GitHub.Comments(owner, repoName, issue) {
					if c.User == e.GitHub.BotLogin() {
						replies++
					}
				}
				if replies != 1 {
					t.Fatalf("%d replies after a second try", replies)
				}
			}
		})
	}
	// A Bot sender is ignored at intake.
	p, _ := fixtures.Payload("issue_comment.created.with-installation.json")
	p = fixtures.MustSet(fixtures.MustSet(p, "comment.body", "/selfcode go"), "sender.type", "Bot")
	if code, out := e.Deliver("issue_comment", "bot-1", p); code != http.StatusOK || out["ignored"] == nil {
		t.Fatalf("bot: %d %v", code, out)
	}
}

func TestTransientFailuresAndMissingRepository(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "flaky GitHub", User: "writer"})
	e.GitHub.InjectFault(fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/pulls", Status: 502, Times: 2})
	e.GitHub.InjectFault(fakegithub.Fault{Method: "GET", PathPattern: "/repos/*/*", Status: 403, Times: 1,
		Headers: map[string]string{"Retry-After": "1"}, Body: `{"message":"You have exceeded a secondary rate limit."}`})
	_, out := e.Comment(repoName, issue, "writer", "/selfcode go")
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
		t.Fatalf("job %s %s %q", j.State, j.Outcome, j.Error)
	}
	if n := len(e.GitHub.PullRequests(owner, repoName)); n != 1 {
		t.Fatalf("%d PRs after injected 502s", n)
	}

	// A repository the app cannot see: the job fails with a clear reason.
	e.GitHub.InjectFault(fakegithub.Fault{Method: "GET", PathPattern: "/repos/" + owner + "/" + repoName, Status: 404})
	issue2, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "gone", User: "writer"})
	_, out = e.Comment(repoName, issue2, "writer", "/selfcode go")
	j = e.Wait(out["job_id"].(string))
	if j.State != job.StateFailed || !strings.Contains(j.Error, "not found or not accessible") {
		t.Fatalf("job %s %q", j.State, j.Error)
	}
}

func TestVerificationFailedDraftOrReport(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	e.Scripted.SetVerdict(verify.Failed)
	issue, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "draft please", User: "writer"})
	_, out := e.Comment(repoName, issue, "writer", "/selfcode go")
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateFailed || j.Outcome != job.OutcomeVerificationFailed {
		t.Fatalf("job %s %s %q", j.State, j.Outcome, j.Error)
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	if len(prs) != 1 || !prs[0].Draft {
		t.Fatalf("want one draft PR, got %+v", prs)
	}
	reacted := map[string]bool{}
	for _, r := range e.GitHub.Reactions("issue_comment", j.Trigger.CommentID) {
		reacted[r.Content] = true
	}
	if !reacted["confused"] || reacted["rocket"] {
		t.Fatalf("reactions %v", reacted)
	}
	runs := e.GitHub.CheckRuns(owner, repoName)
	if runs[len(runs)-1].Conclusion != "failure" {
		t.Fatalf("check run %+v", runs[len(runs)-1])
	}

	// draft_on_failure: false → no PR, the failure report as a comment.
	if _, err := e.GitHub.CommitFiles(owner, repoName, "main", "no drafts", map[string]string{".selfcode.yml": "draft_on_failure: false\n"}); err != nil {
		t.Fatal(err)
	}
	issue2, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "no draft", User: "writer"})
	_, out = e.Comment(repoName, issue2, "writer", "/selfcode go")
	j = e.Wait(out["job_id"].(string))
	if j.Outcome != job.OutcomeVerificationFailed || len(e.GitHub.PullRequests(owner, repoName)) != 1 {
		t.Fatalf("job %s, %d PRs", j.Outcome, len(e.GitHub.PullRequests(owner, repoName)))
	}
	found := false
	for _, c := range e.GitHub.Comments(owner, repoName, issue2) {
		if c.User == e.GitHub.BotLogin() && !strings.Contains(c.Body, "<!-- selfcode:job:") && strings.Contains(c.Body, "go test ./...") {
			found = true
		}
	}
	if !found {
		t.Fatal("no failure report comment")
	}
}

func TestCheckRunRerequestedRetriesTheJob(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "rerun", User: "writer"})
	_, out := e.Comment(repoName, issue, "writer", "/selfcode go")
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateSucceeded {
		t.Fatalf("first run %s %q", j.State, j.Error)
	}
	p, err := fixtures.Payload("check_run.rerequested.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"check_run.name": "selfcode", "check_run.external_id": j.ID,
		"repository.name": repoName, "repository.full_name": owner + "/" + repoName, "repository.owner.login": owner,
		"sender.login": "writer", "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	code, out := e.Deliver("check_run", "rerun-1", p)
	if code != http.StatusAccepted {
		t.Fatalf("rerequested: %d %v", code, out)
	}
	e.Wait(out["job_id"].(string))
	poll.Until(t, "the re-run to push again", 30*time.Second, func() bool {
		greet, _ := e.GitHub.FileAt(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue), "greet.go")
		return strings.Contains(greet, "Hello, world (2)")
	}, func() string { return e.Logs() })
	if j = e.Wait(j.ID); j.State != job.StateSucceeded || j.Outcome != job.OutcomePRUpdated {
		t.Fatalf("re-run %s %s", j.State, j.Outcome)
	}
	if n := len(e.GitHub.PullRequests(owner, repoName)); n != 1 {
		t.Fatalf("%d PRs after Re-run", n)
	}
}

func TestPlanCommandPostsThePlan(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, _ := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "plan it", User: "writer"})
	e.Scripted.SetHook(func(ctx context.Context, call int, in pipeline.Input) error {
		if !in.PlanOnly {
			return errors.New("a plan command ran as a change")
		}
		return nil
	})
	_, out := e.Comment(repoName, issue, "writer", "/selfcode plan how would you do it?")
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePlanPosted {
		t.Fatalf("plan job %s %s %q", j.State, j.Outcome, j.Error)
	}
	if len(e.GitHub.PullRequests(owner, repoName)) != 0 {
		t.Fatal("a plan command opened a pull request")
	}
	if _, err := e.GitHub.BranchSHA(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue)); err == nil {
		t.Fatal("a plan command pushed a branch")
	}
	plans := 0
	for _, c := range e.GitHub.Comments(owner, repoName, issue) {
		if c.User == e.GitHub.BotLogin() && !strings.Contains(c.Body, "<!-- selfcode:job:") {
			plans++
		}
	}
	if plans != 1 {
		t.Fatalf("%d plan comments", plans)
	}
}

// pressButton delivers check_run.requested_action: sender pressed the
// button identifier on selfcode's check run of job id on pull request pr.
func pressButton(t *testing.T, e *e2e.Harness, id string, pr int, sender, identifier string) string {
	t.Helper()
	p, err := fixtures.Payload("check_run.requested_action.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"check_run.name": "selfcode", "check_run.external_id": id, "requested_action.identifier": identifier,
		"check_run.pull_requests": []any{map[string]any{"number": pr}}, "repository.name": repoName, "repository.full_name": owner + "/" + repoName,
		"repository.owner.login": owner, "sender.login": sender, "sender.type": "User", "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	code, out := e.Deliver("check_run", fmt.Sprintf("press-%s-%s-%s", identifier, sender, id), p)
	if code != http.StatusAccepted {
		t.Fatalf("%s pressed %s: %d %v", sender, identifier, code, out)
	}
	return out["job_id"].(string)
}

// selfcode's check run has a Retry button once its job ended and a Cancel
// button while it waits or runs; both work for a writer and are refused
// for a reader.
func TestCheckRunButtons(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, pr := openSelfcodePR(t, e)
	last, err := e.Server.Store.Last(context.Background(), job.IssueKey(owner+"/"+repoName, issue))
	if err != nil || last == nil {
		t.Fatalf("the issue's job: %v", err)
	}
	first := e.Wait(last.ID)
	buttons := func(jobID string) []string {
		var ids []string
		for _, c := range e.GitHub.CheckRuns(owner, repoName) {
			if c.ExternalID == jobID {
				ids = ids[:0]
				for _, a := range c.Actions {
					ids = append(ids, a.Identifier)
				}
			}
		}
		return ids
	}
	if got := buttons(first.ID); len(got) != 1 || got[0] != "retry" {
		t.Fatalf("buttons of a finished job's check run: %q, want retry", got)
	}

	// A reader's Retry is refused: the job is not run again.
	e.Wait(pressButton(t, e, first.ID, pr.Number, "reader", "retry"))
	if j := e.Job(first.ID); !j.FinishedAt.Equal(first.FinishedAt) || j.State != job.StateSucceeded {
		t.Fatalf("a reader's Retry ran the job: %s, finished %s (was %s)", j.State, j.FinishedAt, first.FinishedAt)
	}
	// A writer's Retry runs it again, as the same job.
	e.Wait(pressButton(t, e, first.ID, pr.Number, "writer", "retry"))
	poll.Until(t, "the retried job to run again", 30*time.Second, func() bool {
		j := e.Job(first.ID)
		return j.State == job.StateSucceeded && j.Outcome == job.OutcomePRUpdated
	}, func() string { return e.Logs() })

	// A follow-up on the PR that hangs shows Cancel; a reader cannot press
	// it, a writer can.
	e.Scripted.Hang(fmt.Sprintf("%s/%s#%d", owner, repoName, pr.Number))
	_, out := prComment(t, e, pr.Number, "writer", "/selfcode take longer", "open")
	hung := out["job_id"].(string)
	e.Eventually("the follow-up's check run to offer Cancel", func() bool {
		got := buttons(hung)
		return len(got) == 1 && got[0] == "cancel" && e.Job(hung).State == job.StateRunning
	})
	e.Wait(pressButton(t, e, hung, pr.Number, "reader", "cancel"))
	if j := e.Job(hung); j.State != job.StateRunning {
		t.Fatalf("a reader's Cancel stopped the job: %s", j.State)
	}
	e.Wait(pressButton(t, e, hung, pr.Number, "writer", "cancel"))
	if j := e.Wait(hung); j.State != job.StateCanceled {
		t.Fatalf("after a writer's Cancel: %s %q", j.State, j.Error)
	}
}

// On GitHub Enterprise Server in private mode (anonymous reads refused) a
// job still resolves the bot it commits as.
func TestPrivateModeJob(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{GitHubOptions: e2e.GitHubOptions{PrivateMode: true}})
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greeting", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	_, out := e.Comment(repoName, issue, "writer", "/selfcode greet")
	if j := e.Wait(out["job_id"].(string)); j.Outcome != job.OutcomePROpened {
		t.Fatalf("job in private mode: %s %s %q", j.State, j.Outcome, j.Error)
	}
	log, _ := e.GitHub.Log(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue))
	if len(log) == 0 || log[0].AuthorEmail != e.GitHub.BotEmail() {
		t.Fatalf("commit author %+v, want the bot %s", log, e.GitHub.BotEmail())
	}
}
