package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/fixtures"
	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/pipeline"
)

// Owner owns every sample repository; Secret signs every delivery;
// InstallationID is the App's installation on Owner.
const (
	Owner          = "Codertocat"
	Secret         = "e2e-secret"
	InstallationID = 1
	// Repo is the default sample repository's name.
	Repo = "Hello-World"
)

// SampleFiles is the default sample repository: a tiny Go module.
func SampleFiles() map[string]string {
	return map[string]string{
		"go.mod":   "module example.com/hello\n\ngo 1.22\n",
		"greet.go": "package hello\n\nfunc Greet() string { return \"Hello\" }\n",
	}
}

// Users are the default people and their permission on every repository.
var defaultUsers = map[string]string{"admin-user": "admin", "maint": "maintain", "writer": "write", "reader": "read"}

// GitHubOptions configures GitHub.
type GitHubOptions struct {
	// Repos maps a repository name to its files; nil: Repo with
	// SampleFiles. A nil file map also means SampleFiles.
	Repos map[string]map[string]string
	// Users maps a login to its role on every repository; nil: admin-user,
	// maint, writer and reader.
	Users map[string]string
	// PrivateMode refuses anonymous reads, as GitHub Enterprise Server in
	// private mode does.
	PrivateMode bool
}

// GitHub starts the simulated GitHub with the App installed on Owner and
// the repositories and people asked for; it is closed when the test ends.
func GitHub(t testing.TB, o GitHubOptions) *fakegithub.Server {
	t.Helper()
	fake, err := fakegithub.New(fakegithub.Options{PrivateMode: o.PrivateMode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	fake.AddInstallation(InstallationID, Owner)
	repos, users := o.Repos, o.Users
	if repos == nil {
		repos = map[string]map[string]string{Repo: nil}
	}
	if users == nil {
		users = defaultUsers
	}
	for name, files := range repos {
		if files == nil {
			files = SampleFiles()
		}
		if err := fake.AddRepo(Owner, name, fakegithub.RepoOptions{DefaultBranch: "main", Files: files}); err != nil {
			t.Fatal(err)
		}
		for user, role := range users {
			if err := fake.SetPermission(Owner, name, user, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fake
}

// Env is the configuration of a server (or the binary) talking to fake: the
// App's id and key (written under dir), the API URL, the webhook secret,
// a data directory under dir and loopback listeners on free ports.
func Env(t testing.TB, fake *fakegithub.Server, dir string) []string {
	t.Helper()
	key := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(key, fake.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"SELFCODE_WEBHOOK_SECRET=" + Secret, "SELFCODE_DATA_DIR=" + filepath.Join(dir, "data"),
		"SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0",
		fmt.Sprint("SELFCODE_APP_ID=", fake.AppID()), "SELFCODE_PRIVATE_KEY_PATH=" + key,
		"SELFCODE_GITHUB_API_URL=" + fake.URL(), "SELFCODE_SHUTDOWN_TIMEOUT=5s",
	}
}

// Deliver posts a webhook to url signed with secret and returns the status
// and the decoded answer.
func Deliver(url string, secret []byte, event, id string, body []byte) (int, map[string]any, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", fixtures.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out, nil
}

// CommentPayload is an issue_comment.created delivery derived from
// GitHub's published payload.
func CommentPayload(repo string, issue int, commentID int64, sender, body string) []byte {
	p, err := fixtures.Payload("issue_comment.created.with-installation.json")
	if err != nil {
		panic(err) // the fixtures are embedded: a missing one is a build defect
	}
	for k, v := range map[string]any{"comment.body": body, "comment.id": commentID, "comment.user.login": sender,
		"sender.login": sender, "issue.number": issue, "installation.id": InstallationID,
		"repository.name": repo, "repository.full_name": Owner + "/" + repo, "repository.owner.login": Owner} {
		p = fixtures.MustSet(p, k, v)
	}
	return p
}

// LabelPayload is an issues.labeled or issues.unlabeled delivery derived
// from GitHub's published payload.
func LabelPayload(action, repo string, issue int, label, title, sender string) []byte {
	p, err := fixtures.Payload("issues.labeled.json")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]any{"action": action, "label.name": label, "issue.number": issue, "issue.title": title,
		"repository.name": repo, "repository.full_name": Owner + "/" + repo, "repository.owner.login": Owner,
		"sender.login": sender, "installation.id": InstallationID} {
		p = fixtures.MustSet(p, k, v)
	}
	return p
}

// Options configures Start.
type Options struct {
	GitHubOptions
	// Pipeline does the jobs' work; nil: a new Scripted (Harness.Scripted),
	// unless Sandbox is set.
	Pipeline runner.Pipeline
	// Sandbox, when set, makes the jobs run the real pipeline (prompts,
	// the scripted model through the real OpenAI client, the budgets) on
	// this sandbox backend (NullSandbox: no Docker, nothing verified).
	Sandbox pipeline.Sandbox
	// Script is the model's script (the morning report's narrative, or a
	// real pipeline's plan and edits).
	Script []fakeopenai.Step
	// Env adds configuration (SELFCODE_*=…).
	Env []string
	// Now is the server's clock; nil: time.Now.
	Now func() time.Time
	// Tick is how often workers and the scheduler look for work; default
	// 20ms.
	Tick time.Duration
	// SandboxManager is a sandbox manager the server's reaper watches
	// (the scripted pipeline starts containers on it); nil: none.
	SandboxManager *sandbox.Manager
	// ReapInterval is how often the server reaps sandboxes; default 20ms
	// when SandboxManager is set.
	ReapInterval time.Duration
}

// Harness is a running selfcode between the simulated GitHub and model.
type Harness struct {
	t        testing.TB
	o        Options
	GitHub   *fakegithub.Server
	Model    *fakeopenai.Server
	Scripted *Scripted // the pipeline, when Options.Pipeline was nil
	Server   *server.Server
	// DataDir is the server's SELFCODE_DATA_DIR (its git mirrors and
	// workspaces are under git/).
	DataDir string
	env     []string
	logs    syncBuffer
	cancel  context.CancelFunc
	done    chan struct{}
	seq     int
}

// Start starts the fakes and the server; everything stops when the test
// ends.
func Start(t testing.TB, o Options) *Harness {
	t.Helper()
	h := &Harness{t: t, o: o, GitHub: GitHub(t, o.GitHubOptions)}
	model, err := fakeopenai.New(fakeopenai.Options{Script: o.Script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	h.Model = model
	if o.Pipeline == nil && o.Sandbox == nil {
		h.Scripted = NewScripted()
		h.o.Pipeline = h.Scripted
	}
	if h.o.Tick == 0 {
		h.o.Tick = 20 * time.Millisecond
	}
	if h.o.ReapInterval == 0 {
		h.o.ReapInterval = 20 * time.Millisecond
	}
	dir := t.TempDir()
	h.DataDir = filepath.Join(dir, "data")
	h.env = append(Env(t, h.GitHub, dir),
		"SELFCODE_LLM_BASE_URL="+model.URL(), "SELFCODE_LLM_API_KEY=k", "SELFCODE_LLM_MODEL_REPORTER=reporter")
	h.env = append(h.env, o.Env...)
	h.StartServer()
	t.Cleanup(h.Stop)
	return h
}

// StartServer runs a server on the harness's data directory (again after
// Stop: a restart).
func (h *Harness) StartServer() {
	h.t.Helper()
	cfg, err := config.Load(config.LoadOptions{Environ: h.env})
	if err != nil {
		h.t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(&h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	h.Server, err = server.New(ctx, server.Options{Config: cfg, Logger: log, Now: h.o.Now, Tick: h.o.Tick,
		ReportBackoff: 10 * time.Millisecond, Pipeline: h.o.Pipeline, Sandbox: h.o.Sandbox, SandboxManager: h.o.SandboxManager, ReapInterval: h.o.ReapInterval,
		GitHub: func(o *gh.Options) { o.BaseBackoff = 10 * time.Millisecond }})
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	h.cancel, h.done = cancel, make(chan struct{})
	go func() { h.Server.Run(ctx); close(h.done) }()
}

// Stop shuts the server down (the fakes keep running).
func (h *Harness) Stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// Logs is everything the server logged.
func (h *Harness) Logs() string { return h.logs.String() }

// URL is the webhook endpoint.
func (h *Harness) URL() string { return "http://" + h.Server.PublicAddr() + "/webhook" }

// Deliver posts a signed webhook to the server.
func (h *Harness) Deliver(event, id string, body []byte) (int, map[string]any) {
	h.t.Helper()
	code, out, err := Deliver(h.URL(), []byte(Secret), event, id, body)
	if err != nil {
		h.t.Fatal(err)
	}
	return code, out
}

// Comment adds a comment to the issue (or pull request) on the simulated
// GitHub and delivers it as issue_comment.created.
func (h *Harness) Comment(repo string, issue int, sender, body string) (int, map[string]any) {
	h.t.Helper()
	c, err := h.GitHub.AddIssueComment(Owner, repo, issue, sender, body)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.Deliver("issue_comment", fmt.Sprint("d-", c.ID), CommentPayload(repo, issue, c.ID, sender, body))
}

// Label delivers issues.labeled / issues.unlabeled by maint and returns the
// job id of the answer (failing the test unless it is 202 Accepted).
func (h *Harness) Label(action, repo string, issue int, label, title string) string {
	h.t.Helper()
	h.seq++
	code, out := h.Deliver("issues", fmt.Sprintf("%s-%d", h.t.Name(), h.seq), LabelPayload(action, repo, issue, label, title, "maint"))
	id, _ := out["job_id"].(string)
	if code != http.StatusAccepted {
		h.t.Fatalf("%s %s on %s#%d: %d %v", action, label, repo, issue, code, out)
	}
	return id
}

// Issue adds an issue by maint carrying labels, as GitHub has it.
func (h *Harness) Issue(repo, title string, labels ...string) int {
	h.t.Helper()
	n, err := h.GitHub.AddIssue(Owner, repo, fakegithub.Issue{Title: title, Body: "Please fix.", User: "maint", Labels: labels})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// Job reads a job from the store.
func (h *Harness) Job(id string) *job.Job {
	h.t.Helper()
	j, err := h.Server.Store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// Wait waits (bounded) until the job is finished.
func (h *Harness) Wait(id string) *job.Job {
	h.t.Helper()
	h.Eventually("job "+id+" to finish", func() bool {
		j, err := h.Server.Store.Get(context.Background(), id)
		return err == nil && j.State.Terminal()
	})
	return h.Job(id)
}

// Eventually waits (bounded) until cond holds, showing the logs if not.
func (h *Harness) Eventually(what string, cond func() bool) {
	h.t.Helper()
	poll.Until(h.t, what, 60*time.Second, cond, func() string { return "logs:\n" + h.Logs() })
}

// Admin calls the admin API.
func (h *Harness) Admin(method, path, body string) (int, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(method, "http://"+h.Server.AdminAddr()+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// Comments are the bodies of the comments on an issue that contain s.
func (h *Harness) Comments(repo string, issue int, s string) []string {
	var out []string
	for _, c := range h.GitHub.Comments(Owner, repo, issue) {
		if strings.Contains(c.Body, s) {
			out = append(out, c.Body)
		}
	}
	return out
}

// BotComments are the App's comments on an issue or pull request.
func (h *Harness) BotComments(repo string, number int) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range h.GitHub.Comments(Owner, repo, number) {
		if c.User == h.GitHub.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

// ProgressComments are the jobs' progress comments on an issue.
func (h *Harness) ProgressComments(repo string, issue int) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range h.GitHub.Comments(Owner, repo, issue) {
		if strings.Contains(c.Body, "<!-- selfcode:job:") {
			out = append(out, c)
		}
	}
	return out
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
