package demo

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	gogh "github.com/google/go-github/v60/github"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/samplerepo"
	"github.com/selfcode/selfcode/pipeline/stage"
)

//go:embed transcript.json
var files embed.FS

// Owner and Repo name the demo repository on the simulated GitHub.
const (
	Owner      = "demo"
	Repo       = "greeter"
	Maintainer = "maintainer"
)

// Options configures Run.
type Options struct {
	Out    io.Writer
	Config *config.Config // model settings and the sandbox image
	// UseConfiguredModel talks to the configured OpenAI-compatible model
	// instead of replaying the recorded transcript.
	UseConfiguredModel bool
	// EnsureImage makes sure the sandbox image exists: when it is missing,
	// it is pulled, built with docker build or built offline, whichever
	// works on this engine, with the way and the reason and the build's
	// progress written to the writer it is given (app/image).
	EnsureImage func(ctx context.Context, out io.Writer) error
	Logger      *slog.Logger
	Timeout     time.Duration // default 15 minutes
}

// Result is what the demo produced.
type Result struct {
	JobID   string
	Outcome job.Outcome
	State   job.State
	PRTitle string
	PRBody  string
	PRURL   string
	Diff    string
}

// Run runs the demo to the end and prints the pull request it opened.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	say := func(format string, a ...any) { fmt.Fprintf(o.Out, "==> "+format+"\n", a...) }

	if o.EnsureImage != nil {
		say("checking the sandbox image %s", o.Config.SandboxImage)
		if err := o.EnsureImage(ctx, o.Out); err != nil {
			return nil, fmt.Errorf("sandbox image: %w", err)
		}
	}

	// The simulated GitHub with the sample repository and an issue.
	fake, err := fakegithub.New(fakegithub.Options{AppSlug: "selfcode-demo", AppName: "selfcode demo"})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	sample := samplerepo.Files()
	fake.AddInstallation(1, Owner)
	if err := fake.AddRepo(Owner, Repo, fakegithub.RepoOptions{DefaultBranch: "main", Files: sample}); err != nil {
		return nil, err
	}
	if err := fake.SetPermission(Owner, Repo, Maintainer, "maintain"); err != nil {
		return nil, err
	}
	issueTitle := "Greeting ends with a period instead of an exclamation mark"
	issueBody := "`Greet(\"Ada\")` returns `Hello, Ada.` but the docs (and the tests) say `Hello, Ada!`."
	issue, err := fake.AddIssue(Owner, Repo, fakegithub.Issue{Title: issueTitle, Body: issueBody, User: Maintainer})
	if err != nil {
		return nil, err
	}
	say("simulated GitHub at %s with %s/%s and issue #%d: %s", fake.URL(), Owner, Repo, issue, issueTitle)

	// The model: a recorded transcript unless one is configured.
	cfg := *o.Config
	if o.UseConfiguredModel {
		say("model: %s at %s (configured)", cfg.ModelFor("editor"), cfg.LLMBaseURL)
	} else {
		tr, err := transcript()
		if err != nil {
			return nil, err
		}
		roles := map[string]string{}
		for _, r := range []string{"planner", "editor", "fixer", "reporter"} {
			roles["demo-"+r] = r
		}
		fo, err := fakeopenai.New(fakeopenai.Options{Script: tr.Steps, Roles: roles, Logger: log})
		if err != nil {
			return nil, err
		}
		defer fo.Close()
		cfg.LLMBaseURL, cfg.LLMAPIKey = fo.URL(), "demo"
		cfg.LLMModel, cfg.LLMModelPlanner, cfg.LLMModelEditor = "demo-editor", "demo-planner", "demo-editor"
		cfg.LLMModelFixer, cfg.LLMModelReporter = "demo-fixer", "demo-reporter"
		say("model: no SELFCODE_LLM_* configured, replaying a recorded transcript through the OpenAI client (%s)", fo.URL())
	}

	// The real server on loopback, in a scratch data directory.
	dataDir, err := os.MkdirTemp("", "selfcode-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dataDir)
	secret := randomHex(16)
	cfg.DataDir, cfg.Addr, cfg.AdminAddr, cfg.WebhookSecret = dataDir, "127.0.0.1:0", "127.0.0.1:0", secret
	cfg.AppID, cfg.PrivateKey, cfg.PrivateKeyPath, cfg.GitHubAPIURL = fake.AppID(), string(fake.PrivateKeyPEM()), "", fake.URL()
	cfg.Workers, cfg.Enabled = 1, true
	// Exactly what serve builds, on the demo's configuration.
	srv, err := server.New(ctx, server.Options{Config: &cfg, Logger: log})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	defer func() { stop(); <-done }()
	say("selfcode serving on %s (admin %s)", srv.PublicAddr(), srv.AdminAddr())

	// A maintainer comments; GitHub delivers a signed webhook.
	body := "/selfcode fix the greeting so it matches the docs"
	c, err := fake.AddIssueComment(Owner, Repo, issue, Maintainer, body)
	if err != nil {
		return nil, err
	}
	payload, err := commentPayload(fake, issue, issueTitle, issueBody, c.ID, body)
	if err != nil {
		return nil, err
	}
	jobID, err := deliver(ctx, "http://"+srv.PublicAddr()+"/webhook", secret, payload)
	if err != nil {
		return nil, err
	}
	say("@%s commented %q → webhook accepted, job %s", Maintainer, body, jobID)

	// Follow the job.
	j, err := follow(ctx, srv.Store, jobID, func(s job.Stage) {
		line := fmt.Sprintf("    %-8s %s", s.Name, s.Status)
		if s.Summary != "" {
			line += ": " + s.Summary
		}
		fmt.Fprintln(o.Out, line)
	})
	if err != nil {
		return nil, err
	}
	res := &Result{JobID: j.ID, Outcome: j.Outcome, State: j.State}
	say("job %s: %s (%s) in %s, %d tokens", j.ID, j.State, j.Outcome, j.Duration().Round(time.Millisecond), j.Tokens)
	if j.Error != "" {
		fmt.Fprintf(o.Out, "    error: %s\n", j.Error)
	}
	prs := fake.PullRequests(Owner, Repo)
	if len(prs) == 0 {
		return res, errors.New("the job opened no pull request")
	}
	pr := prs[len(prs)-1]
	res.PRTitle, res.PRBody, res.PRURL = pr.Title, pr.Body, fake.HTMLURL(fmt.Sprintf("%s/%s/pull/%d", Owner, Repo, pr.Number))
	if d, err := srv.Store.Artifact(ctx, j.ID, "diff.patch"); err == nil {
		res.Diff = string(d)
	}
	rule := strings.Repeat("─", 72)
	fmt.Fprintf(o.Out, "\n%s\nPull request #%d: %s\n%s\n%s\n\n%s\n%s\nDiff\n%s\n%s\n", rule, pr.Number, pr.Title, res.PRURL, rule, pr.Body, rule, rule, res.Diff)
	return res, nil
}

func transcript() (*fakeopenai.Transcript, error) {
	b, err := files.ReadFile("transcript.json")
	if err != nil {
		return nil, err
	}
	return fakeopenai.LoadTranscript(bytes.NewReader(b))
}

// commentPayload builds the issue_comment.created delivery GitHub would send.
func commentPayload(fake *fakegithub.Server, issue int, title, body string, commentID int64, comment string) ([]byte, error) {
	repoURL := fake.HTMLURL(Owner + "/" + Repo)
	ev := gogh.IssueCommentEvent{
		Action: gogh.String("created"),
		Issue: &gogh.Issue{Number: gogh.Int(issue), Title: gogh.String(title), Body: gogh.String(body),
			HTMLURL: gogh.String(fmt.Sprintf("%s/issues/%d", repoURL, issue)), User: &gogh.User{Login: gogh.String(Maintainer), Type: gogh.String("User")}},
		Comment: &gogh.IssueComment{ID: gogh.Int64(commentID), Body: gogh.String(comment),
			User: &gogh.User{Login: gogh.String(Maintainer), Type: gogh.String("User")}},
		Repo: &gogh.Repository{Name: gogh.String(Repo), FullName: gogh.String(Owner + "/" + Repo), DefaultBranch: gogh.String("main"),
			Owner: &gogh.User{Login: gogh.String(Owner)}, HTMLURL: gogh.String(repoURL), CloneURL: gogh.String(fake.GitURL(Owner, Repo))},
		Sender:       &gogh.User{Login: gogh.String(Maintainer), Type: gogh.String("User")},
		Installation: &gogh.Installation{ID: gogh.Int64(1)},
	}
	return json.Marshal(ev)
}

func deliver(ctx context.Context, url, secret string, payload []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(payload)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", randomHex(16))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("User-Agent", "GitHub-Hookshot/selfcode-demo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("deliver webhook: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		JobID string `json:"job_id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &out) != nil || out.JobID == "" {
		return "", fmt.Errorf("webhook answered %s: %s", resp.Status, raw)
	}
	return out.JobID, nil
}

// follow reports stage changes until the job is finished.
func follow(ctx context.Context, st *store.Store, id string, onStage func(job.Stage)) (*job.Job, error) {
	seen := map[stage.Name]stage.Status{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		j, err := st.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, s := range j.Stages {
			if seen[s.Name] != s.Status {
				seen[s.Name] = s.Status
				onStage(s)
			}
		}
		if j.State.Terminal() {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("job %s still %s: %w", id, j.State, ctx.Err())
		case <-tick.C:
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
