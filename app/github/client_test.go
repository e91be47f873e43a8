package github

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/fakegithub"
)

func TestRepoIssueAndComments(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	ctx := ctxT(t)

	r, err := c.Repo(ctx, "octo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if r.FullName != "octo/hello" || r.DefaultBranch != "main" || r.CloneURL != e.fake.GitURL("octo", "hello") || r.Fork || r.Private {
		t.Fatalf("Repo = %+v", r)
	}
	if err := e.fake.AddRepo("mallory", "hello", fakegithub.RepoOptions{ForkOf: "octo/hello"}); err != nil {
		t.Fatal(err)
	}

	n, err := e.fake.AddIssue("octo", "hello", fakegithub.Issue{Title: "Crash", Body: "on start", User: "alice", Labels: []string{"bug"}})
	if err != nil {
		t.Fatal(err)
	}
	is, err := c.Issue(ctx, "octo", "hello", n)
	if err != nil {
		t.Fatal(err)
	}
	if is.Title != "Crash" || is.Body != "on start" || is.State != "open" || is.User != "alice" || is.IsPullRequest || fmt.Sprint(is.Labels) != "[bug]" {
		t.Fatalf("Issue = %+v", is)
	}

	for i := range 105 { // more than one page
		if _, err := e.fake.AddIssueComment("octo", "hello", n, "alice", fmt.Sprint("c", i)); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := c.CreateIssueComment(ctx, "octo", "hello", n, "<!-- selfcode:job:1 -->\nqueued")
	if err != nil {
		t.Fatal(err)
	}
	if cm.User != e.fake.BotLogin() || cm.UserType != "Bot" {
		t.Fatalf("comment author %q (%s)", cm.User, cm.UserType)
	}
	up, err := c.UpdateIssueComment(ctx, "octo", "hello", cm.ID, "<!-- selfcode:job:1 -->\nrunning")
	if err != nil || up.ID != cm.ID || !strings.HasSuffix(up.Body, "running") {
		t.Fatalf("UpdateIssueComment = %+v, %v", up, err)
	}
	all, err := c.ListIssueComments(ctx, "octo", "hello", n)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 106 || all[0].Body != "c0" || all[105].ID != cm.ID {
		t.Fatalf("ListIssueComments: %d comments", len(all))
	}

	human := all[0]
	for range 2 { // a repeated reaction is fine
		if err := c.ReactToIssueComment(ctx, "octo", "hello", human.ID, ReactionEyes); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.fake.Reactions(fakegithub.SubjectIssueComment, human.ID); len(got) != 1 || got[0].Content != "eyes" {
		t.Fatalf("reactions %+v", got)
	}

	for _, l := range []string{"selfcode:overnight", "good first issue"} {
		if err := c.AddLabels(ctx, "octo", "hello", n, l); err != nil {
			t.Fatalf("AddLabels %q: %v", l, err)
		}
	}
	if err := c.RemoveLabel(ctx, "octo", "hello", n, "selfcode:overnight"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLabel(ctx, "octo", "hello", n, "good first issue"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLabel(ctx, "octo", "hello", n, "absent"); !IsNotFound(err) {
		t.Fatalf("removing an absent label: %v", err)
	}
	if got := e.fake.Labels("octo", "hello", n); fmt.Sprint(got) != "[bug]" {
		t.Fatalf("labels %v", got)
	}
}

func TestPullRequestsChecksAndReviews(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	ctx := ctxT(t)
	sha, err := e.fake.CommitFiles("octo", "hello", "selfcode/issue-1", "Fix crash", map[string]string{"fix.go": "package main\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.BranchSHA(ctx, "octo", "hello", "selfcode/issue-1"); err != nil || got != sha {
		t.Fatalf("BranchSHA = %q, %v; want %q", got, err, sha)
	}
	if _, err := c.BranchSHA(ctx, "octo", "hello", "nope"); !IsNotFound(err) {
		t.Fatalf("missing branch: %v", err)
	}

	none, err := c.ListPullRequestsByHead(ctx, "octo", "hello", "octo", "selfcode/issue-1", "")
	if err != nil || len(none) != 0 {
		t.Fatalf("before create: %v %v", none, err)
	}
	pr, err := c.CreatePullRequest(ctx, "octo", "hello", NewPullRequest{Title: "Fix crash", Body: "Closes #1", Head: "selfcode/issue-1", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Draft || pr.HeadSHA != sha || pr.HeadRef != "selfcode/issue-1" || pr.BaseRef != "main" || pr.FromFork() || pr.State != "open" {
		t.Fatalf("CreatePullRequest = %+v", pr)
	}
	_, err = c.CreatePullRequest(ctx, "octo", "hello", NewPullRequest{Title: "again", Head: "selfcode/issue-1", Base: "main"})
	var ge *Error
	if !IsValidation(err) || !errors.As(err, &ge) || !strings.Contains(ge.Message, "A pull request already exists for octo:selfcode/issue-1") {
		t.Fatalf("duplicate PR: %v", err)
	}
	found, err := c.ListPullRequestsByHead(ctx, "octo", "hello", "octo", "selfcode/issue-1", "open")
	if err != nil || len(found) != 1 || found[0].Number != pr.Number {
		t.Fatalf("ListPullRequestsByHead = %+v, %v", found, err)
	}
	up, err := c.UpdatePullRequest(ctx, "octo", "hello", pr.Number, PullRequestUpdate{Title: ptr("Fix the crash"), Body: ptr("new body")})
	if err != nil || up.Title != "Fix the crash" || up.Body != "new body" || !up.Draft {
		t.Fatalf("UpdatePullRequest = %+v, %v", up, err)
	}
	got, err := c.PullRequest(ctx, "octo", "hello", pr.Number)
	if err != nil || got.Title != "Fix the crash" {
		t.Fatalf("PullRequest = %+v, %v", got, err)
	}
	diff, err := c.PullRequestDiff(ctx, "octo", "hello", pr.Number)
	if err != nil || !strings.Contains(diff, "+++ b/fix.go") {
		t.Fatalf("PullRequestDiff = %q, %v", diff, err)
	}
	if is, err := c.Issue(ctx, "octo", "hello", pr.Number); err != nil || !is.IsPullRequest {
		t.Fatalf("PR as issue: %+v %v", is, err)
	}

	cr, err := c.CreateCheckRun(ctx, "octo", "hello", CheckRunOptions{Name: "selfcode", HeadSHA: sha, Status: "in_progress", ExternalID: "job-1", Summary: "planning"})
	if err != nil || cr.Status != "in_progress" || cr.HeadSHA != sha {
		t.Fatalf("CreateCheckRun = %+v, %v", cr, err)
	}
	done, err := c.UpdateCheckRun(ctx, "octo", "hello", cr.ID, CheckRunOptions{Name: "selfcode", Conclusion: "success", Title: "Verified", Summary: "all passed"})
	if err != nil || done.Status != "completed" || done.Conclusion != "success" {
		t.Fatalf("UpdateCheckRun = %+v, %v", done, err)
	}
	if runs := e.fake.CheckRuns("octo", "hello"); len(runs) != 1 || runs[0].Summary != "all passed" || runs[0].ExternalID != "job-1" {
		t.Fatalf("check runs %+v", runs)
	}
	if _, err := c.CreateCheckRun(ctx, "octo", "hello", CheckRunOptions{Name: "selfcode", HeadSHA: strings.Repeat("0", 40)}); !IsValidation(err) {
		t.Fatalf("check run on unknown sha: %v", err)
	}

	rc, err := e.fake.AddReviewComment("octo", "hello", fakegithub.ReviewComment{PullNumber: pr.Number, ReviewID: 77, User: "alice", Body: "/selfcode rename this", Path: "fix.go", Line: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ReactToReviewComment(ctx, "octo", "hello", rc.ID, ReactionEyes); err != nil {
		t.Fatal(err)
	}
	reply, err := c.ReplyToReviewComment(ctx, "octo", "hello", pr.Number, rc.ID, "on it")
	if err != nil || reply.InReplyTo != rc.ID || reply.User != e.fake.BotLogin() || reply.Path != "fix.go" {
		t.Fatalf("ReplyToReviewComment = %+v, %v", reply, err)
	}
	list, err := c.ListReviewComments(ctx, "octo", "hello", pr.Number, 77)
	if err != nil || len(list) != 1 || list[0].ID != rc.ID || list[0].Body != "/selfcode rename this" {
		t.Fatalf("ListReviewComments = %+v, %v", list, err)
	}
}

func TestForkPullRequest(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	if err := e.fake.AddRepo("mallory", "hello", fakegithub.RepoOptions{ForkOf: "octo/hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fake.CommitFiles("mallory", "hello", "patch", "Patch", map[string]string{"x.txt": "x\n"}); err != nil {
		t.Fatal(err)
	}
	added, err := e.fake.AddPullRequest("octo", "hello", fakegithub.PullRequest{Title: "From fork", Head: "mallory:patch", User: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.PullRequest(ctxT(t), "octo", "hello", added.Number)
	if err != nil || !pr.FromFork() || pr.HeadRepo != "mallory/hello" || pr.BaseRepo != "octo/hello" {
		t.Fatalf("fork PR = %+v, %v", pr, err)
	}
	if d, err := c.PullRequestDiff(ctxT(t), "octo", "hello", pr.Number); err != nil || !strings.Contains(d, "x.txt") {
		t.Fatalf("fork diff %q %v", d, err)
	}
}

func TestTokenWorksForGit(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	tok, err := c.Token(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	url := strings.Replace(e.fake.GitURL("octo", "hello"), "://", "://x-access-token:"+tok+"@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "clone", "-q", url, filepath.Join(dir, "w"))
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "w", "main.go")); err != nil {
		t.Fatal(err)
	}
}

func TestManifestConversion(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	want := e.fake.AddManifestCode("abc123", fakegithub.ManifestApp{WebhookSecret: "whsec"})
	// selfcode setup has no app credentials yet.
	f, err := New(Options{BaseURL: e.fake.URL(), Sleep: e.sleeps.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Installation(ctxT(t), instID); err == nil {
		t.Fatal("Installation without credentials succeeded")
	}
	got, err := f.CreateFromManifest(ctxT(t), "abc123")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != e.fake.AppID() || got.Slug != want.Slug || got.WebhookSecret != "whsec" || got.PEM != string(e.fake.PrivateKeyPEM()) || got.ClientSecret == "" {
		t.Fatalf("CreateFromManifest = %+v", got)
	}
	for _, s := range []string{got.String(), fmt.Sprint(got), fmt.Sprintf("%v", got)} {
		if strings.Contains(s, "whsec") || strings.Contains(s, "PRIVATE KEY") || strings.Contains(s, got.ClientSecret) {
			t.Fatalf("secrets in %q", s)
		}
	}
	if _, err := f.CreateFromManifest(ctxT(t), "abc123"); !IsNotFound(err) {
		t.Fatalf("reused code: %v", err)
	}
	// The credentials work against the fake.
	f2, err := New(Options{AppID: got.ID, PrivateKeyPEM: []byte(got.PEM), BaseURL: e.fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := f2.App(ctxT(t)); err != nil || id.Slug != want.Slug {
		t.Fatalf("App with converted credentials: %+v %v", id, err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"relative URL", Options{BaseURL: "api.github.com"}},
		{"bad key", Options{AppID: 1, PrivateKeyPEM: []byte("not a key"), BaseURL: "http://127.0.0.1:1/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
	f, err := New(Options{BaseURL: "https://ghe.example.com/api/v3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.anon.BaseURL.String(); got != "https://ghe.example.com/api/v3/" {
		t.Fatalf("BaseURL %q", got)
	}
}
