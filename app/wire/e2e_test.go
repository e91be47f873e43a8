package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fixtures"
	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/templates"
)

const secret = "e2e-secret"

// oneLineChange is the test-only engine: it makes a fixed one-line change.
type oneLineChange struct {
	mu            sync.Mutex
	calls         int
	failVerify    bool // report verification as failed
	noDraftOnFail bool // the repository's draft_on_failure: false
	// hook, when set, runs before the change (to block, or to act while
	// the job runs).
	hook  func(ctx context.Context, call int, t runner.Task) error
	tasks []runner.Task
}

var greeting = regexp.MustCompile(`"Hello[^"]*"`)

func (e *oneLineChange) Execute(ctx context.Context, t runner.Task) (runner.Result, error) {
	e.mu.Lock()
	e.calls++
	calls, fail, noDraft, hook := e.calls, e.failVerify, e.noDraftOnFail, e.hook
	e.tasks = append(e.tasks, t)
	e.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, calls, t); err != nil {
			return runner.Result{}, err
		}
	}
	t.Stage("plan", "pass", "change the greeting")
	path := t.Dir + "/greet.go"
	b, err := os.ReadFile(path)
	if err != nil {
		return runner.Result{}, err
	}
	b = greeting.ReplaceAll(b, []byte(fmt.Sprintf(`"Hello, world (%d)"`, calls)))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return runner.Result{}, err
	}
	t.Stage("edit", "pass", "greet.go")
	t.Stage("verify", "pass", "build, test")
	return runner.Result{Verified: !fail, DraftOnFailure: !noDraft, Title: "Greet the world",
		Report: templates.Report{Summary: "Changed the greeting.", Verification: []templates.VerifyRow{{Name: "test", Command: "go test ./...", Passed: !fail, Duration: time.Second}}}}, nil
}

type env struct {
	t    *testing.T
	fake *fakegithub.Server
	srv  *server.Server
	logs *syncBuffer
	eng  *oneLineChange
	url  string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

const owner, repoName = "Codertocat", "Hello-World"

func setup(t *testing.T) *env { return setupWith(t, nil, nil) }

// setupWith starts the fake GitHub and the real server; eng nil means the
// one-line test engine; files are added to the repository.
func setupWith(t *testing.T, eng runner.Engine, files map[string]string) *env {
	t.Helper()
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	fake.AddInstallation(1, owner)
	repoFiles := map[string]string{
		"go.mod":   "module example.com/hello\n\ngo 1.22\n",
		"greet.go": "package hello\n\nfunc Greet() string { return \"Hello\" }\n",
	}
	for k, v := range files {
		repoFiles[k] = v
	}
	if err := fake.AddRepo(owner, repoName, fakegithub.RepoOptions{DefaultBranch: "main", Files: repoFiles}); err != nil {
		t.Fatal(err)
	}
	for user, role := range map[string]string{"admin-user": "admin", "maint": "maintain", "writer": "write", "reader": "read"} {
		if err := fake.SetPermission(owner, repoName, user, role); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	keyPath := dir + "/app.pem"
	os.WriteFile(keyPath, fake.PrivateKeyPEM(), 0o600)
	cfg, err := config.Load(config.LoadOptions{Environ: []string{
		"SELFCODE_WEBHOOK_SECRET=" + secret, "SELFCODE_DATA_DIR=" + dir + "/data",
		"SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0",
		fmt.Sprint("SELFCODE_APP_ID=", fake.AppID()), "SELFCODE_PRIVATE_KEY_PATH=" + keyPath,
		"SELFCODE_GITHUB_API_URL=" + fake.URL(), "SELFCODE_SHUTDOWN_TIMEOUT=5s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, fake: fake, logs: &syncBuffer{}, eng: &oneLineChange{}}
	if eng == nil {
		eng = e.eng
	}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	e.srv, err = server.New(ctx, server.Options{Config: cfg, Logger: log, Deps: GitHub(Options{
		Config: cfg, Logger: log, Engine: eng,
		GitHub: func(o *gh.Options) { o.BaseBackoff = 10 * time.Millisecond },
	})})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { e.srv.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	e.url = "http://" + e.srv.PublicAddr()
	return e
}

// comment adds a comment to the fake issue and delivers it as a signed
// issue_comment.created webhook (derived from GitHub's published payload).
func (e *env) comment(issue int, sender, body string) (int, map[string]any) {
	e.t.Helper()
	c, err := e.fake.AddIssueComment(owner, repoName, issue, sender, body)
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := fixtures.Payload("issue_comment.created.with-installation.json")
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range map[string]any{"comment.body": body, "comment.id": c.ID, "comment.user.login": sender,
		"sender.login": sender, "issue.number": issue, "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	return e.deliver("issue_comment", fmt.Sprint("d-", c.ID), p)
}

func (e *env) deliver(event, id string, body []byte) (int, map[string]any) {
	req, _ := http.NewRequest(http.MethodPost, e.url+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", fixtures.Sign([]byte(secret), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// wait polls (bounded) until the job is finished.
func (e *env) wait(id string) *job.Job {
	e.t.Helper()
	var j *job.Job
	poll.Until(e.t, "job "+id+" to finish", 60*time.Second, func() bool {
		got, err := e.srv.Store.Get(context.Background(), id)
		j = got
		return err == nil && got.State.Terminal()
	}, func() string { return "logs:\n" + e.logs.String() })
	return j
}

func (e *env) progressComments(issue int) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range e.fake.Comments(owner, repoName, issue) {
		if strings.Contains(c.Body, "<!-- selfcode:job:") {
			out = append(out, c)
		}
	}
	return out
}

func TestEndToEndPullRequestAndRerun(t *testing.T) {
	e := setup(t)
	issue, err := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greeting is too short", Body: "Say hello to the world.", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.comment(issue, "writer", "/selfcode make the greeting friendlier")
	if code != http.StatusAccepted {
		t.Fatalf("delivery: %d %v", code, out)
	}
	j := e.wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
		t.Fatalf("job %s %s %q\n%s", j.State, j.Outcome, j.Error, e.logs.String())
	}
	branch := fmt.Sprintf("selfcode/issue-%d", issue)
	greet, err := e.fake.FileAt(owner, repoName, branch, "greet.go")
	if err != nil || !strings.Contains(greet, "Hello, world (1)") {
		t.Fatalf("branch %s greet.go: %q %v", branch, greet, err)
	}
	log, _ := e.fake.Log(owner, repoName, branch)
	if len(log) == 0 || !strings.HasSuffix(log[0].AuthorName, "[bot]") {
		t.Fatalf("commit author %+v", log)
	}
	prs := e.fake.PullRequests(owner, repoName)
	if len(prs) != 1 || prs[0].Head != branch || !strings.Contains(prs[0].Body, fmt.Sprintf("Closes #%d", issue)) || prs[0].Draft {
		t.Fatalf("pull requests %+v", prs)
	}
	if pc := e.progressComments(issue); len(pc) != 1 {
		t.Fatalf("%d progress comments", len(pc))
	}
	trigger := j.Trigger.CommentID
	reactions := map[string]bool{}
	for _, r := range e.fake.Reactions("issue_comment", trigger) {
		reactions[r.Content] = true
	}
	if !reactions["eyes"] || !reactions["rocket"] {
		t.Fatalf("reactions %v", reactions)
	}
	runs := e.fake.CheckRuns(owner, repoName)
	if len(runs) == 0 || runs[len(runs)-1].Name != "selfcode" || runs[len(runs)-1].Conclusion != "success" || runs[len(runs)-1].ExternalID != j.ID {
		t.Fatalf("check runs %+v", runs)
	}

	// Run the same job again: same PR updated, one progress comment, one branch.
	code, out = e.comment(issue, "maint", "/selfcode retry")
	if code != http.StatusAccepted {
		t.Fatalf("retry delivery: %d %v", code, out)
	}
	e.wait(out["job_id"].(string))
	j2 := e.wait(j.ID)
	deadline := time.Now().Add(30 * time.Second)
	for j2.Attempts == 0 || j2.State != job.StateSucceeded {
		if time.Now().After(deadline) {
			t.Fatalf("retried job %s %s", j2.State, j2.Error)
		}
		j2 = e.wait(j.ID)
	}
	if j2.Outcome != job.OutcomePRUpdated {
		t.Fatalf("retried outcome %s %q", j2.Outcome, j2.Error)
	}
	if prs := e.fake.PullRequests(owner, repoName); len(prs) != 1 || !strings.Contains(prs[0].Body, "Changed the greeting") {
		t.Fatalf("after re-run: %d PRs", len(prs))
	}
	greet, _ = e.fake.FileAt(owner, repoName, branch, "greet.go")
	if !strings.Contains(greet, "Hello, world (2)") {
		t.Fatalf("re-run did not update the branch: %q", greet)
	}
	if pc := e.progressComments(issue); len(pc) != 1 {
		t.Fatalf("%d progress comments after re-run", len(pc))
	}
	for _, pr := range e.fake.PullRequests(owner, repoName) {
		if strings.HasPrefix(pr.Head, "selfcode/") && pr.Head != branch {
			t.Fatalf("second branch %s", pr.Head)
		}
	}

	// Token and key hygiene: neither appears in any request body or URL sent
	// to GitHub, in the job's logs, or in any comment or PR body.
	secrets := append(e.fake.IssuedTokens(), string(e.fake.PrivateKeyPEM()))
	var haystack strings.Builder
	for _, r := range e.fake.Requests() {
		haystack.WriteString(r.Method + " " + r.Path + "?" + r.Query + "\n" + string(r.Body) + "\n")
	}
	haystack.WriteString(e.logs.String())
	for _, c := range e.fake.Comments(owner, repoName, issue) {
		haystack.WriteString(c.Body)
	}
	for _, pr := range e.fake.PullRequests(owner, repoName) {
		haystack.WriteString(pr.Body)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(haystack.String(), strings.TrimSpace(s)) {
			t.Fatal("a token or the private key leaked into requests, logs or reports")
		}
	}
	if len(e.fake.IssuedTokens()) == 0 {
		t.Fatal("no tokens issued: the hygiene scan proves nothing")
	}
}

func TestPermissions(t *testing.T) {
	e := setup(t)
	tests := []struct {
		sender string
		run    bool
	}{{"admin-user", true}, {"maint", true}, {"writer", true}, {"reader", false}}
	for _, tt := range tests {
		t.Run(tt.sender, func(t *testing.T) {
			issue, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "t " + tt.sender, User: tt.sender})
			code, out := e.comment(issue, tt.sender, "/selfcode go")
			if code != http.StatusAccepted {
				t.Fatalf("%d %v", code, out)
			}
			j := e.wait(out["job_id"].(string))
			_, err := e.fake.BranchSHA(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue))
			if tt.run != (err == nil) || tt.run != (j.State == job.StateSucceeded) {
				t.Fatalf("sender %s: state %s branch err %v", tt.sender, j.State, err)
			}
			if !tt.run {
				if j.State != job.StateCanceled {
					t.Fatalf("state %s", j.State)
				}
				cs := e.fake.Comments(owner, repoName, issue)
				replies := 0
				for _, c := range cs {
					if c.User == e.fake.BotLogin() {
						replies++
					}
				}
				if replies != 1 {
					t.Fatalf("%d replies to a reader", replies)
				}
				// A second command by the same reader gets no second reply.
				_, out := e.comment(issue, tt.sender, "/selfcode again")
				e.wait(out["job_id"].(string))
				replies = 0
				for _, c := range e.fake.Comments(owner, repoName, issue) {
					if c.User == e.fake.BotLogin() {
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
	if code, out := e.deliver("issue_comment", "bot-1", p); code != http.StatusOK || out["ignored"] == nil {
		t.Fatalf("bot: %d %v", code, out)
	}
}

func TestTransientFailuresAndMissingRepository(t *testing.T) {
	e := setup(t)
	issue, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "flaky GitHub", User: "writer"})
	e.fake.InjectFault(fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/pulls", Status: 502, Times: 2})
	e.fake.InjectFault(fakegithub.Fault{Method: "GET", PathPattern: "/repos/*/*", Status: 403, Times: 1,
		Headers: map[string]string{"Retry-After": "1"}, Body: `{"message":"You have exceeded a secondary rate limit."}`})
	_, out := e.comment(issue, "writer", "/selfcode go")
	j := e.wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
		t.Fatalf("job %s %s %q", j.State, j.Outcome, j.Error)
	}
	if n := len(e.fake.PullRequests(owner, repoName)); n != 1 {
		t.Fatalf("%d PRs after injected 502s", n)
	}

	// A repository the app cannot see: the job fails with a clear reason.
	e.fake.InjectFault(fakegithub.Fault{Method: "GET", PathPattern: "/repos/" + owner + "/" + repoName, Status: 404})
	issue2, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "gone", User: "writer"})
	_, out = e.comment(issue2, "writer", "/selfcode go")
	j = e.wait(out["job_id"].(string))
	if j.State != job.StateFailed || !strings.Contains(j.Error, "not found or not accessible") {
		t.Fatalf("job %s %q", j.State, j.Error)
	}
}

func TestVerificationFailedDraftOrReport(t *testing.T) {
	e := setup(t)
	e.eng.failVerify = true
	issue, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "draft please", User: "writer"})
	_, out := e.comment(issue, "writer", "/selfcode go")
	j := e.wait(out["job_id"].(string))
	if j.State != job.StateFailed || j.Outcome != job.OutcomeVerificationFailed {
		t.Fatalf("job %s %s %q", j.State, j.Outcome, j.Error)
	}
	prs := e.fake.PullRequests(owner, repoName)
	if len(prs) != 1 || !prs[0].Draft {
		t.Fatalf("want one draft PR, got %+v", prs)
	}
	reacted := map[string]bool{}
	for _, r := range e.fake.Reactions("issue_comment", j.Trigger.CommentID) {
		reacted[r.Content] = true
	}
	if !reacted["confused"] || reacted["rocket"] {
		t.Fatalf("reactions %v", reacted)
	}
	runs := e.fake.CheckRuns(owner, repoName)
	if runs[len(runs)-1].Conclusion != "failure" {
		t.Fatalf("check run %+v", runs[len(runs)-1])
	}

	// draft_on_failure: false → no PR, the failure report as a comment.
	e.eng.mu.Lock()
	e.eng.noDraftOnFail = true
	e.eng.mu.Unlock()
	issue2, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "no draft", User: "writer"})
	_, out = e.comment(issue2, "writer", "/selfcode go")
	j = e.wait(out["job_id"].(string))
	if j.Outcome != job.OutcomeVerificationFailed || len(e.fake.PullRequests(owner, repoName)) != 1 {
		t.Fatalf("job %s, %d PRs", j.Outcome, len(e.fake.PullRequests(owner, repoName)))
	}
	found := false
	for _, c := range e.fake.Comments(owner, repoName, issue2) {
		if c.User == e.fake.BotLogin() && !strings.Contains(c.Body, "<!-- selfcode:job:") && strings.Contains(c.Body, "go test ./...") {
			found = true
		}
	}
	if !found {
		t.Fatal("no failure report comment")
	}
}

func TestCheckRunRerequestedRetriesTheJob(t *testing.T) {
	e := setup(t)
	issue, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "rerun", User: "writer"})
	_, out := e.comment(issue, "writer", "/selfcode go")
	j := e.wait(out["job_id"].(string))
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
	code, out := e.deliver("check_run", "rerun-1", p)
	if code != http.StatusAccepted {
		t.Fatalf("rerequested: %d %v", code, out)
	}
	e.wait(out["job_id"].(string))
	poll.Until(t, "the re-run to push again", 30*time.Second, func() bool {
		greet, _ := e.fake.FileAt(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue), "greet.go")
		return strings.Contains(greet, "Hello, world (2)")
	}, func() string { return e.logs.String() })
	if j = e.wait(j.ID); j.State != job.StateSucceeded || j.Outcome != job.OutcomePRUpdated {
		t.Fatalf("re-run %s %s", j.State, j.Outcome)
	}
	if n := len(e.fake.PullRequests(owner, repoName)); n != 1 {
		t.Fatalf("%d PRs after Re-run", n)
	}
}

func TestPlanCommandPostsThePlan(t *testing.T) {
	e := setup(t)
	issue, _ := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "plan it", User: "writer"})
	e.eng.mu.Lock()
	e.eng.hook = func(ctx context.Context, call int, tk runner.Task) error {
		if tk.Job.Kind != job.KindPlan {
			return fmt.Errorf("kind %s", tk.Job.Kind)
		}
		return nil
	}
	e.eng.mu.Unlock()
	_, out := e.comment(issue, "writer", "/selfcode plan how would you do it?")
	j := e.wait(out["job_id"].(string))
	if j.State != job.StateSucceeded || j.Outcome != job.OutcomePlanPosted {
		t.Fatalf("plan job %s %s %q", j.State, j.Outcome, j.Error)
	}
	if len(e.fake.PullRequests(owner, repoName)) != 0 {
		t.Fatal("a plan command opened a pull request")
	}
	if _, err := e.fake.BranchSHA(owner, repoName, fmt.Sprintf("selfcode/issue-%d", issue)); err == nil {
		t.Fatal("a plan command pushed a branch")
	}
	plans := 0
	for _, c := range e.fake.Comments(owner, repoName, issue) {
		if c.User == e.fake.BotLogin() && !strings.Contains(c.Body, "<!-- selfcode:job:") {
			plans++
		}
	}
	if plans != 1 {
		t.Fatalf("%d plan comments", plans)
	}
}
