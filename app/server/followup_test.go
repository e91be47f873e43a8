package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/fixtures"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/prompts"
)

// openSelfcodePR runs a first job on a new issue and returns the issue and
// the pull request it opened.
func openSelfcodePR(t *testing.T, e *e2e.Harness) (issue int, pr fakegithub.PullRequest) {
	t.Helper()
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greeting is too short", Body: "Say hello to the world.", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	_, out := e.Comment(repoName, issue, "writer", "/selfcode make the greeting friendlier")
	if j := e.Wait(out["job_id"].(string)); j.Outcome != job.OutcomePROpened {
		t.Fatalf("first job %s %s %q", j.State, j.Outcome, j.Error)
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("%d PRs", len(prs))
	}
	return issue, prs[0]
}

// prComment delivers a command in a pull request's conversation (derived
// fixture: issue_comment on a pull request).
func prComment(t *testing.T, e *e2e.Harness, pr int, sender, body string, state string) (int, map[string]any) {
	t.Helper()
	c, err := e.GitHub.AddIssueComment(owner, repoName, pr, sender, body)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fixtures.Derived("issue_comment.created.on-pull-request.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"comment.body": body, "comment.id": c.ID, "comment.user.login": sender,
		"sender.login": sender, "issue.number": pr, "issue.state": state, "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	return e.Deliver("issue_comment", fmt.Sprint("prc-", c.ID), p)
}

func TestFollowUpOnSelfcodePR(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, pr := openSelfcodePR(t, e)
	code, out := prComment(t, e, pr.Number, "maint", "/selfcode rename the helper", "open")
	if code != http.StatusAccepted {
		t.Fatalf("%d %v", code, out)
	}
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePRUpdated {
		t.Fatalf("follow-up %s %s %q\n%s", j.State, j.Outcome, j.Error, e.Logs())
	}
	branch := fmt.Sprintf("selfcode/issue-%d", issue)
	log, _ := e.GitHub.Log(owner, repoName, branch)
	if len(log) != 3 || !strings.HasSuffix(log[0].AuthorName, "[bot]") || !strings.HasSuffix(log[1].AuthorName, "[bot]") {
		t.Fatalf("want the base plus two bot commits on %s, got %+v", branch, log)
	}
	prs := e.GitHub.PullRequests(owner, repoName)
	if len(prs) != 1 {
		t.Fatalf("%d PRs", len(prs))
	}
	body := prs[0].Body
	if !strings.Contains(body, "Iteration 1") || !strings.Contains(body, "iteration 2") || !strings.Contains(body, fmt.Sprintf("Closes #%d", issue)) {
		t.Fatalf("PR body does not show iterations 1 and 2:\n%s", body)
	}
	if n := len(e.BotComments(repoName, pr.Number)); n != 1 {
		t.Fatalf("%d bot comments on the PR, want one reply", n)
	}
	// The follow-up saw the original issue and the reviewer's request.
	last := e.Scripted.Last()
	if last.Issue != issue || !strings.Contains(last.Feedback, "rename the helper") || !strings.Contains(last.Feedback, "diff --git") {
		t.Fatalf("follow-up task: issue %d feedback:\n%s", last.Issue, last.Feedback)
	}
	// Redelivering the same comment under a new delivery id starts nothing.
	c := e.GitHub.Comments(owner, repoName, pr.Number)
	p, _ := fixtures.Derived("issue_comment.created.on-pull-request.json")
	for k, v := range map[string]any{"comment.body": "/selfcode rename the helper", "comment.id": c[0].ID, "sender.login": "maint", "issue.number": pr.Number, "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	if code, out := e.Deliver("issue_comment", "another-delivery", p); code != http.StatusOK || out["ignored"] == nil {
		t.Fatalf("feedback consumed twice: %d %v", code, out)
	}
}

func TestReviewWithThreeComments(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	_, pr := openSelfcodePR(t, e)
	const reviewID = 4242
	for i, body := range []string{"rename Greet to Hello", "add a doc comment", "handle an empty name"} {
		if _, err := e.GitHub.AddReviewComment(owner, repoName, fakegithub.ReviewComment{PullNumber: pr.Number, ReviewID: reviewID,
			User: "maint", Body: body, Path: "greet.go", Line: 3, DiffHunk: fmt.Sprintf("@@ -1,3 +1,3 @@ hunk %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := fixtures.Payload("pull_request_review.submitted.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"review.body": "/selfcode please address these", "review.id": reviewID, "review.user.login": "maint",
		"sender.login": "maint", "pull_request.number": pr.Number, "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	code, out := e.Deliver("pull_request_review", "review-1", p)
	if code != http.StatusAccepted {
		t.Fatalf("%d %v", code, out)
	}
	j := e.Wait(out["job_id"].(string))
	if j.Outcome != job.OutcomePRUpdated {
		t.Fatalf("review job %s %s %q", j.State, j.Outcome, j.Error)
	}
	last := e.Scripted.Last()
	for _, want := range []string{"rename Greet to Hello", "add a doc comment", "handle an empty name", "3 comment(s)"} {
		if !strings.Contains(last.Feedback, want) {
			t.Fatalf("the job did not see %q:\n%s", want, last.Feedback)
		}
	}
	jobs, _, _ := e.Server.Store.List(context.Background(), storeListPR(pr.Number))
	if len(jobs) != 1 {
		t.Fatalf("%d jobs for the review", len(jobs))
	}
	if n := len(e.BotComments(repoName, pr.Number)); n != 2 {
		t.Fatalf("%d bot comments on the PR, want the progress comment and the answer", n)
	}
}

func TestHumanCommitDuringFollowUpIsKept(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	issue, pr := openSelfcodePR(t, e)
	branch := fmt.Sprintf("selfcode/issue-%d", issue)
	var human string
	e.Scripted.SetHook(func(ctx context.Context, call int, in pipeline.Input) error {
		if call == 2 { // the follow-up's first attempt: a human pushes meanwhile
			sha, err := e.GitHub.CommitFiles(owner, repoName, branch, "human fix", map[string]string{"HUMAN.md": "by hand\n"})
			human = sha
			return err
		}
		return nil
	})
	_, out := prComment(t, e, pr.Number, "maint", "/selfcode tweak it", "open")
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Attempts != 2 {
		t.Fatalf("job %s attempts %d %q", j.State, j.Attempts, j.Error)
	}
	log, _ := e.GitHub.Log(owner, repoName, branch)
	found := false
	for _, c := range log {
		found = found || c.SHA == human
	}
	if !found || !strings.HasSuffix(log[0].AuthorName, "[bot]") {
		t.Fatalf("human commit %s not kept under the bot's commit: %+v", human, log)
	}
	if f, err := e.GitHub.FileAt(owner, repoName, branch, "HUMAN.md"); err != nil || f != "by hand\n" {
		t.Fatalf("HUMAN.md: %q %v", f, err)
	}
}

func TestClosingThePRCancelsTheFollowUp(t *testing.T) {
	t.Parallel()
	e := e2e.Start(t, e2e.Options{})
	_, pr := openSelfcodePR(t, e)
	started := make(chan struct{}, 1)
	e.Scripted.SetHook(func(ctx context.Context, call int, in pipeline.Input) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	_, out := prComment(t, e, pr.Number, "maint", "/selfcode keep going", "open")
	id := out["job_id"].(string)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("follow-up did not start")
	}
	if err := e.GitHub.SetPullRequestState(owner, repoName, pr.Number, "closed"); err != nil {
		t.Fatal(err)
	}
	p, _ := fixtures.Payload("pull_request.closed.json")
	p = fixtures.MustSet(fixtures.MustSet(p, "number", pr.Number), "pull_request.number", pr.Number)
	if code, out := e.Deliver("pull_request", "closed-1", p); code != http.StatusAccepted || out["status"] != "canceled" {
		t.Fatalf("close: %d %v", code, out)
	}
	j := e.Wait(id)
	if j.State != job.StateCanceled { // the pipeline runs until canceled: Wait returning at all shows it was
		t.Fatalf("job %s", j.State)
	}
	// A later command on the closed PR gets a reply, not a job.
	e.Scripted.SetHook(nil)
	calls := e.Scripted.Calls()
	before := len(e.BotComments(repoName, pr.Number))
	_, out = prComment(t, e, pr.Number, "maint", "/selfcode again", "closed")
	e.Wait(out["job_id"].(string))
	if len(e.BotComments(repoName, pr.Number)) != before+1 || e.Scripted.Calls() != calls {
		t.Fatal("a command on a closed PR must get one reply and run nothing")
	}
}

// TestReviewCommentReachesTheModel runs the real pipeline (scripted model,
// real sandbox) for a review comment and checks what the model was told and
// where the answer went.
func TestReviewCommentReachesTheModel(t *testing.T) {
	t.Parallel()
	fake, p := scriptedPipeline(t, []fakeopenai.Step{
		{Role: "planner", Content: `{"summary":"Use fmt.Sprintf","steps":[{"id":"1","title":"Sprintf","files":[{"path":"greet.go","action":"modify","purpose":"format"}],"acceptance":[]}],"risks":[],"questions":[]}`},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: jsonArg(map[string]string{"path": "greet.go", "old_str": `return "Hello"`, "new_str": `return fmt.Sprintf("%s", "Hello")`})}}},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: jsonArg(map[string]string{"summary": "uses fmt.Sprintf"})}}},
	})
	e := e2e.Start(t, e2e.Options{Pipeline: p, GitHubOptions: withSample(map[string]string{".selfcode.yml": "verify:\n  - {name: check, run: \"grep -q Sprintf greet.go\"}\n"})})

	// A person's pull request on the same repository.
	if _, err := e.GitHub.CommitFiles(owner, repoName, "feature", "feature work", map[string]string{"NOTES.md": "notes\n"}); err != nil {
		t.Fatal(err)
	}
	pr, err := e.GitHub.AddPullRequest(owner, repoName, fakegithub.PullRequest{Title: "Feature", Head: "feature", Base: "main", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	hunk := "@@ -1,3 +1,3 @@\n package hello\n \n-func Greet() string { return \"Hello\" }"
	rc, err := e.GitHub.AddReviewComment(owner, repoName, fakegithub.ReviewComment{PullNumber: pr.Number, User: "maint",
		Body: "/selfcode use fmt.Sprintf here", Path: "greet.go", Line: 3, DiffHunk: hunk})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := fixtures.Payload("pull_request_review_comment.created.json")
	for k, v := range map[string]any{"comment.body": rc.Body, "comment.id": rc.ID, "comment.path": "greet.go", "comment.line": 3,
		"comment.start_line": nil, "comment.diff_hunk": hunk, "comment.user.login": "maint", "sender.login": "maint",
		"pull_request.number": pr.Number, "installation.id": 1} {
		payload = fixtures.MustSet(payload, k, v)
	}
	code, out := e.Deliver("pull_request_review_comment", "rc-1", payload)
	if code != http.StatusAccepted {
		t.Fatalf("%d %v", code, out)
	}
	j := e.Wait(out["job_id"].(string))
	// Verified against the PR's base, where the check fails: the change fixes it.
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePRUpdated {
		t.Fatalf("job %s %s %q\n%s", j.State, j.Outcome, j.Error, e.Logs())
	}
	first := string(fake.RequestsFor("planner")[0].Raw)
	for _, want := range []string{"greet.go, line 3", "@@ -1,3 +1,3 @@", "use fmt.Sprintf here"} {
		if !strings.Contains(first, strings.ReplaceAll(want, `"`, `\"`)) {
			t.Fatalf("the model's first message lacks %q:\n%s", want, first)
		}
	}
	var reply *fakegithub.ReviewComment
	for _, c := range e.GitHub.ReviewComments(owner, repoName, pr.Number) {
		if c.InReplyTo == rc.ID && c.User == e.GitHub.BotLogin() {
			c := c
			reply = &c
		}
	}
	if reply == nil {
		t.Fatal("no reply in the review thread")
	}
	// The human's branch got a commit on top, never a force push.
	log, _ := e.GitHub.Log(owner, repoName, "feature")
	if len(log) < 3 || log[1].Subject != "feature work" || !strings.HasSuffix(log[0].AuthorName, "[bot]") {
		t.Fatalf("feature branch history %+v", log)
	}
	if g, _ := e.GitHub.FileAt(owner, repoName, "feature", "greet.go"); !strings.Contains(g, "Sprintf") {
		t.Fatalf("greet.go on feature: %q", g)
	}
}

// scriptedPipeline is the real pipeline with a scripted model and the real
// sandbox.
func scriptedPipeline(t *testing.T, script []fakeopenai.Step) (*fakeopenai.Server, *pipeline.Pipeline) {
	t.Helper()
	return modelPipeline(t, dockertest.Manager(t), nil, script)
}

// modelPipeline is the real pipeline on sb with a scripted model and the
// baseline cache baselines (nil: none).
func modelPipeline(t testing.TB, sb *sandbox.Manager, baselines *verify.Cache, script []fakeopenai.Step) (*fakeopenai.Server, *pipeline.Pipeline) {
	t.Helper()
	fake, err := fakeopenai.New(fakeopenai.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	client, err := llm.New(llm.Options{BaseURL: fake.URL(), APIKey: "k", MaxRetries: -1,
		Models: map[chat.Role]string{chat.RolePlanner: "planner", chat.RoleEditor: "editor", chat.RoleFixer: "fixer"}})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Options{Model: client, Prompts: ps, Sandbox: sandbox.Backend{Manager: sb}, Baseline: baselines})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p
}

func jsonArg(v any) string { b, _ := json.Marshal(v); return string(b) }

// A follow-up is verified against the pull request's base: a check the PR
// itself broke is a regression, not a failure "already there" on its head.
func TestFollowUpVerifiesAgainstThePRBase(t *testing.T) {
	t.Parallel()
	_, p := scriptedPipeline(t, []fakeopenai.Step{
		{Role: "planner", Content: `{"summary":"Shout","steps":[{"id":"1","title":"Shout","files":[{"path":"greet.go","action":"modify","purpose":"shout"}],"acceptance":[]}],"risks":[],"questions":[]}`},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "str_replace", Arguments: jsonArg(map[string]string{"path": "greet.go", "old_str": `return "Hello"`, "new_str": `return "HELLO"`})}}},
		{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: jsonArg(map[string]string{"summary": "shouts"})}}},
	})
	e := e2e.Start(t, e2e.Options{Pipeline: p, GitHubOptions: withSample(map[string]string{
		".selfcode.yml": "verify:\n  - {name: notes, run: \"! grep -q broken NOTES.md\"}\nlimits: {max_fix_attempts: 0}\n",
	})})
	// The PR breaks the notes check; main passes it.
	featureHead, err := e.GitHub.CommitFiles(owner, repoName, "feature", "feature work", map[string]string{"NOTES.md": "broken\n"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := e.GitHub.AddPullRequest(owner, repoName, fakegithub.PullRequest{Title: "Feature", Body: "The author's own words.", Head: "feature", Base: "main", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	_, out := prComment(t, e, pr.Number, "maint", "/selfcode shout", "open")
	j := e.Wait(out["job_id"].(string))
	if j.Outcome != job.OutcomeVerificationFailed {
		t.Fatalf("outcome %s (%s %q): a failure introduced by the PR was excused as pre-existing", j.Outcome, j.State, j.Error)
	}
	base, err := e.Server.Store.Artifact(context.Background(), j.ID, "verify-base.json")
	if err != nil || !strings.Contains(string(base), `"passed": true`) {
		t.Fatalf("baseline should be main's passing run: %s %v", base, err)
	}
	// Someone else's pull request: the failing change is not on their
	// branch, their description is theirs, and a draft into their branch
	// holds it.
	if head, _ := e.GitHub.BranchSHA(owner, repoName, "feature"); head != featureHead {
		t.Errorf("the failing change was pushed to the author's branch")
	}
	var draft *fakegithub.PullRequest
	for _, p := range e.GitHub.PullRequests(owner, repoName) {
		if p.Number == pr.Number && p.Body != pr.Body {
			t.Errorf("the author's description was replaced:\n%s", p.Body)
		}
		if p.Head == fmt.Sprintf("selfcode/pr-%d", pr.Number) {
			p := p
			draft = &p
		}
	}
	if draft == nil || !draft.Draft || draft.Base != "feature" {
		t.Errorf("no draft selfcode/pr-%d into feature: %+v", pr.Number, draft)
	}
}

func storeListPR(n int) store.ListOptions {
	return store.ListOptions{Key: job.IssueKey(owner+"/"+repoName, n)}
}
