package overnight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/selfcode/selfcode/app/config"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/overnight"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/wire"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/fixtures"
	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/templates"
)

const (
	secret = "overnight-secret"
	owner  = "Codertocat"
)

// clock is the fake clock the store, intake and scheduler read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// receiver is the morning report webhook: it answers 503 to the first
// failFirst requests, then stores what it gets.
type receiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	failFirst int
	requests  int
	got       chan []byte
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst, got: make(chan []byte, 10)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests++
		fail := r.requests <= r.failFirst
		r.mu.Unlock()
		if fail || req.Header.Get("Content-Type") != "application/json" || req.Method != http.MethodPost {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		r.got <- body
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return r.requests }

// fakeEngine is the test engine: per repository it records how many of its jobs
// run at once; issues listed in hang run until their context ends.
type fakeEngine struct {
	mu      sync.Mutex
	active  map[string]int
	maxSeen map[string]int
	hang    map[string]bool // "owner/name#N"
	started chan string
	calls   int
}

func newEngine(hang ...string) *fakeEngine {
	e := &fakeEngine{active: map[string]int{}, maxSeen: map[string]int{}, hang: map[string]bool{}, started: make(chan string, 20)}
	for _, h := range hang {
		e.hang[h] = true
	}
	return e
}

func (e *fakeEngine) ran() int { e.mu.Lock(); defer e.mu.Unlock(); return e.calls }

func (e *fakeEngine) Execute(ctx context.Context, t runner.Task) (runner.Result, error) {
	repo := t.Job.Repo.FullName()
	key := fmt.Sprintf("%s#%d", repo, t.Job.Issue)
	e.mu.Lock()
	e.calls++
	e.active[repo]++
	if e.active[repo] > e.maxSeen[repo] {
		e.maxSeen[repo] = e.active[repo]
	}
	hang := e.hang[key]
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.active[repo]--; e.mu.Unlock() }()
	e.started <- key
	t.Stage("plan", "pass", "change the greeting")
	t.Artifact("plan.json", []byte(`{"summary":"Change the greeting","steps":[{"id":"1","title":"edit","files":[{"path":"greet.go","action":"modify","purpose":"greet"}],"acceptance":[]}],"risks":[],"questions":[]}`))
	if hang {
		<-ctx.Done()
		return runner.Result{}, ctx.Err()
	}
	// Simulated work: long enough for several scheduler ticks, so that a
	// second job of the same repository would overlap if it were started.
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return runner.Result{}, ctx.Err()
	}
	path := filepath.Join(t.Dir, "greet.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return runner.Result{}, err
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"Hello"`), []byte(`"Hello, world"`), 1), 0o644); err != nil {
		return runner.Result{}, err
	}
	t.Stage("edit", "pass", "greet.go")
	t.Stage("verify", "pass", "build, test")
	t.Stage("fix", "skipped", "not needed")
	return runner.Result{Verified: true, DraftOnFailure: true, Title: "Greet the world",
		Report: templates.Report{Summary: "Changed the greeting.", BlastRadius: []string{"example.com/hello/cmd"},
			Verification: []templates.VerifyRow{{Name: "test", Command: "go test ./...", Passed: true, Duration: time.Second}}}}, nil
}

type harness struct {
	t      *testing.T
	gh     *fakegithub.Server
	model  *fakeopenai.Server
	clk    *clock
	eng    runner.Engine
	env    []string
	srv    *server.Server
	cancel context.CancelFunc
	done   chan struct{}
	logs   *bytes.Buffer
	logMu  *sync.Mutex
	seq    int
}

// Tuesday 01:00 UTC; the window opens at 02:00 and lasts 6 hours.
var (
	t0          = time.Date(2026, 3, 10, 1, 0, 0, 0, time.UTC)
	windowStart = time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
)

// newHarness starts a server with two repositories, alpha and beta (files
// per repository; nil: a small Go module in both).
func newHarness(t *testing.T, eng runner.Engine, extraEnv []string, files map[string]map[string]string, script ...fakeopenai.Step) *harness {
	t.Helper()
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	fake.AddInstallation(1, owner)
	for _, name := range []string{"alpha", "beta"} {
		fs := files[name]
		if fs == nil {
			fs = map[string]string{
				"go.mod":   "module example.com/hello\n\ngo 1.22\n",
				"greet.go": "package hello\n\nfunc Greet() string { return \"Hello\" }\n",
			}
		}
		if err := fake.AddRepo(owner, name, fakegithub.RepoOptions{DefaultBranch: "main", Files: fs}); err != nil {
			t.Fatal(err)
		}
		if err := fake.SetPermission(owner, name, "maint", "maintain"); err != nil {
			t.Fatal(err)
		}
	}
	model, err := fakeopenai.New(fakeopenai.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyPath, fake.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, gh: fake, model: model, clk: &clock{t: t0}, eng: eng, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	h.env = append([]string{
		"SELFCODE_WEBHOOK_SECRET=" + secret, "SELFCODE_DATA_DIR=" + filepath.Join(dir, "data"),
		"SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0",
		fmt.Sprint("SELFCODE_APP_ID=", fake.AppID()), "SELFCODE_PRIVATE_KEY_PATH=" + keyPath,
		"SELFCODE_GITHUB_API_URL=" + fake.URL(), "SELFCODE_SHUTDOWN_TIMEOUT=5s",
		"SELFCODE_LLM_BASE_URL=" + model.URL(), "SELFCODE_LLM_API_KEY=k", "SELFCODE_LLM_MODEL_REPORTER=reporter",
		"SELFCODE_WORKERS=3", "SELFCODE_OVERNIGHT_SCHEDULE=0 2 * * *", "SELFCODE_OVERNIGHT_WINDOW=6h",
	}, extraEnv...)
	h.start()
	t.Cleanup(h.stop)
	return h
}

type logWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (h *harness) logText() string { h.logMu.Lock(); defer h.logMu.Unlock(); return h.logs.String() }

// start runs a server on the harness's data directory (again after stop:
// a restart).
func (h *harness) start() {
	h.t.Helper()
	cfg, err := config.Load(config.LoadOptions{Environ: h.env})
	if err != nil {
		h.t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(logWriter{h.logMu, h.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	h.srv, err = server.New(ctx, server.Options{Config: cfg, Logger: log, Now: h.clk.Now, Tick: 20 * time.Millisecond,
		ReportBackoff: 10 * time.Millisecond,
		Deps: wire.GitHub(wire.Options{Config: cfg, Logger: log, Engine: h.eng,
			GitHub: func(o *gh.Options) { o.BaseBackoff = 10 * time.Millisecond }})})
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	h.cancel, h.done = cancel, make(chan struct{})
	go func() { h.srv.Run(ctx); close(h.done) }()
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// issue adds an issue carrying the label, as GitHub has it once labelled.
func (h *harness) issue(repo, title string, labels ...string) int {
	h.t.Helper()
	n, err := h.gh.AddIssue(owner, repo, fakegithub.Issue{Title: title, Body: "Please fix.", User: "maint", Labels: labels})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// label delivers issues.labeled / issues.unlabeled (derived from GitHub's
// published payload) and returns the job id of the answer.
func (h *harness) label(action, repo string, issue int, label, title string) string {
	h.t.Helper()
	p, err := fixtures.Payload("issues.labeled.json")
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range map[string]any{"action": action, "label.name": label, "issue.number": issue, "issue.title": title,
		"repository.name": repo, "repository.full_name": owner + "/" + repo, "repository.owner.login": owner,
		"sender.login": "maint", "installation.id": 1} {
		p = fixtures.MustSet(p, k, v)
	}
	h.seq++
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.srv.PublicAddr()+"/webhook", bytes.NewReader(p))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d", h.t.Name(), h.seq))
	req.Header.Set("X-Hub-Signature-256", fixtures.Sign([]byte(secret), p))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
	}
	raw, _ := io.ReadAll(resp.Body)
	json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusAccepted {
		h.t.Fatalf("%s %s on %s#%d: %d %s", action, label, repo, issue, resp.StatusCode, raw)
	}
	return out.JobID
}

func (h *harness) job(id string) *job.Job {
	h.t.Helper()
	j, err := h.srv.Store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// eventually polls (bounded) until cond holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	poll.Until(h.t, what, 60*time.Second, cond, func() string { return "logs:\n" + h.logText() })
}

func (h *harness) admin(method, path, body string) (int, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(method, "http://"+h.srv.AdminAddr()+path, strings.NewReader(body))
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

func (h *harness) comments(repo string, issue int, contains string) []string {
	var out []string
	for _, c := range h.gh.Comments(owner, repo, issue) {
		if strings.Contains(c.Body, contains) {
			out = append(out, c.Body)
		}
	}
	return out
}

func hasLabel(labels []string, l string) bool {
	for _, x := range labels {
		if x == l {
			return true
		}
	}
	return false
}

// validate checks a report against testdata/morning_report.schema.json.
func validate(t *testing.T, body []byte) overnight.MorningReport {
	t.Helper()
	schemaFile, err := os.Open(filepath.Join("testdata", "morning_report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer schemaFile.Close()
	doc, err := jsonschema.UnmarshalJSON(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("morning_report.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("morning_report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("report does not match the schema: %v\n%s", err, body)
	}
	var rep overnight.MorningReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func runFor(t *testing.T, rep overnight.MorningReport, repo string, issue int) overnight.Run {
	t.Helper()
	for _, r := range rep.Runs {
		if r.Repository == owner+"/"+repo && r.Issue == issue {
			return r
		}
	}
	t.Fatalf("no run for %s#%d in %+v", repo, issue, rep.Runs)
	return overnight.Run{}
}

const reporterSays = "Three issues were worked on overnight across two repositories. Two pull requests are ready for review. One job hit the time limit and was stopped."

func TestWindowRunsOnePerRepositoryAndReports(t *testing.T) {
	eng := newEngine(owner + "/beta#1")
	recv := newReceiver(t, 2) // the first two deliveries fail: retried with backoff
	h := newHarness(t, eng, []string{"SELFCODE_OVERNIGHT_MAX_DURATION=1h", "SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL},
		nil, fakeopenai.Step{Role: "reporter", Content: reporterSays})

	a1 := h.issue("alpha", "Greeting is too short", "selfcode:overnight")
	a2 := h.issue("alpha", "Greeting lacks a name", "selfcode:overnight")
	b1 := h.issue("beta", "Slow greeting", "selfcode:overnight")
	ids := map[string]string{
		"alpha#1": h.label("labeled", "alpha", a1, "selfcode:overnight", "Greeting is too short"),
		"alpha#2": h.label("labeled", "alpha", a2, "selfcode:overnight", "Greeting lacks a name"),
		"beta#1":  h.label("labeled", "beta", b1, "selfcode:overnight", "Slow greeting"),
	}
	for k, id := range ids {
		if j := h.job(id); j.State != job.StateScheduled || !j.ScheduledFor.Equal(windowStart) {
			t.Fatalf("%s: %s scheduled for %v, want scheduled for %v", k, j.State, j.ScheduledFor, windowStart)
		}
	}

	// The window opens. The alpha jobs finish; beta#1 runs until the
	// clock passes its one-hour limit, which only the test moves.
	h.clk.Set(windowStart.Add(time.Second))
	for _, k := range []string{"alpha#1", "alpha#2"} {
		h.eventually(k+" to finish", func() bool { return h.job(ids[k]).State.Terminal() })
	}
	h.eventually("beta#1 to start", func() bool { return h.job(ids["beta#1"]).State == job.StateRunning })
	if h.job(ids["beta#1"]).State.Terminal() {
		t.Fatal("beta#1 ended before its limit")
	}
	h.clk.Set(windowStart.Add(time.Hour + 2*time.Second))
	h.eventually("beta#1 to be stopped at its limit", func() bool { return h.job(ids["beta#1"]).State.Terminal() })
	eng.mu.Lock()
	maxAlpha, maxBeta := eng.maxSeen[owner+"/alpha"], eng.maxSeen[owner+"/beta"]
	eng.mu.Unlock()
	if maxAlpha != 1 || maxBeta != 1 {
		t.Fatalf("jobs of one repository ran at once: alpha %d, beta %d", maxAlpha, maxBeta)
	}
	for _, k := range []string{"alpha#1", "alpha#2"} {
		if j := h.job(ids[k]); j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
			t.Fatalf("%s: %s %s %s", k, j.State, j.Outcome, j.Error)
		}
	}
	prs := h.gh.PullRequests(owner, "alpha")
	if len(prs) != 2 || !strings.Contains(prs[0].Body, "## Blast radius") || !strings.Contains(prs[0].Body, "example.com/hello/cmd") {
		t.Fatalf("pull requests %+v: want two, whose bodies list the blast radius", prs)
	}
	bj := h.job(ids["beta#1"])
	if bj.State != job.StateFailed || !strings.Contains(bj.Error, "SELFCODE_OVERNIGHT_MAX_DURATION") {
		t.Fatalf("beta#1 was not stopped at its limit: %s %q", bj.State, bj.Error)
	}

	// Each issue is told its outcome, and its label swapped.
	for _, c := range []struct {
		repo  string
		issue int
		want  string
		label string
	}{{"alpha", a1, "PASS", "selfcode:done"}, {"alpha", a2, "PASS", "selfcode:done"}, {"beta", b1, "FAIL", "selfcode:failed"}} {
		h.eventually("outcome comment on "+c.repo, func() bool { return len(h.comments(c.repo, c.issue, "selfcode overnight run")) == 1 })
		if got := h.comments(c.repo, c.issue, "selfcode overnight run")[0]; !strings.Contains(got, c.want) {
			t.Fatalf("%s#%d outcome comment: %s", c.repo, c.issue, got)
		}
		h.eventually("label swap on "+c.repo, func() bool {
			ls := h.gh.Labels(owner, c.repo, c.issue)
			return hasLabel(ls, c.label) && !hasLabel(ls, "selfcode:overnight")
		})
	}
	if recv.count() != 0 {
		t.Fatal("report sent before the window ended")
	}

	// The window ends: one report, delivered after two failed attempts.
	h.clk.Set(windowStart.Add(6*time.Hour + time.Second))
	var body []byte
	select {
	case body = <-recv.got:
	case <-time.After(60 * time.Second):
		t.Fatalf("no report\n%s", h.logText())
	}
	rep := validate(t, body)
	if rep.RunDate != "2026-03-10T02:00:00Z" || rep.Narrative != reporterSays || len(rep.Runs) != 3 {
		t.Fatalf("report %+v", rep)
	}
	ra := runFor(t, rep, "alpha", a1)
	if ra.Outcome != "PASS" || ra.BranchName != fmt.Sprintf("selfcode/issue-%d", a1) || !strings.Contains(ra.PRURL, "/pull/") ||
		len(ra.TargetFiles) != 1 || ra.TargetFiles[0] != "greet.go" || len(ra.Steps) != 5 || ra.Steps[0].Status != "pass" ||
		!strings.Contains(ra.DeficiencyAddressed, "Greeting is too short") || !strings.Contains(ra.NextSuggestedTarget, ra.PRURL) {
		t.Fatalf("alpha run %+v", ra)
	}
	rb := runFor(t, rep, "beta", b1)
	if rb.Outcome != "FAIL" || !strings.Contains(rb.Narrative, "time limit") || !strings.Contains(rb.NextSuggestedTarget, "SELFCODE_OVERNIGHT_MAX_DURATION") {
		t.Fatalf("beta run %+v", rb)
	}

	// Stored and visible through the admin API, with its delivery attempts.
	h.eventually("report delivery recorded", func() bool {
		_, raw := h.admin(http.MethodGet, "/api/reports", "")
		return bytes.Contains(raw, []byte(`"delivered":true`))
	})
	code, raw := h.admin(http.MethodGet, "/api/reports", "")
	var list struct {
		Reports []struct {
			ID       string          `json:"id"`
			Attempts int             `json:"attempts"`
			Payload  json.RawMessage `json:"payload"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || code != 200 || len(list.Reports) != 1 || list.Reports[0].Attempts != 3 {
		t.Fatalf("GET /api/reports: %d %s", code, raw)
	}
	validate(t, list.Reports[0].Payload)
	if code, raw := h.admin(http.MethodGet, "/api/reports/"+list.Reports[0].ID, ""); code != 200 || !bytes.Contains(raw, []byte(reporterSays)) {
		t.Fatalf("GET /api/reports/{id}: %d %s", code, raw)
	}
	if code, _ := h.admin(http.MethodGet, "/api/reports/nope", ""); code != http.StatusNotFound {
		t.Fatalf("unknown report: %d", code)
	}
}

func TestRestartKillSwitchAndMovingOn(t *testing.T) {
	eng := newEngine()
	recv := newReceiver(t, 0)
	// The reporter model fails: the plain narrative is used.
	h := newHarness(t, eng, []string{"SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL}, nil,
		fakeopenai.Step{Role: "reporter", Status: 400, Message: "model unavailable"})
	a1 := h.issue("alpha", "Greeting is too short", "selfcode:overnight")
	id := h.label("labeled", "alpha", a1, "selfcode:overnight", "Greeting is too short")

	// A restart before the window keeps the job scheduled.
	h.stop()
	h.start()
	if j := h.job(id); j.State != job.StateScheduled || !j.ScheduledFor.Equal(windowStart) {
		t.Fatalf("after restart: %s for %v", j.State, j.ScheduledFor)
	}

	// Kill switch on: the window opens, nothing runs.
	if code, raw := h.admin(http.MethodPost, "/api/enabled", `{"enabled": false}`); code != 200 || !bytes.Contains(raw, []byte(`false`)) {
		t.Fatalf("POST /api/enabled: %d %s", code, raw)
	}
	h.clk.Set(windowStart.Add(time.Second))
	h.eventually("the job to be promoted", func() bool { return h.job(id).State == job.StateQueued })
	// An immediate job waits too.
	b1 := h.issue("beta", "Now please")
	now := h.label("labeled", "beta", b1, "selfcode", "Now please")
	if err := h.srv.Overnight.CloseDue(context.Background()); err != nil { // the window is not over: no effect
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		h.srv.Store.Wake() // workers look again; the switch keeps them idle
		if h.job(id).State != job.StateQueued || h.job(now).State != job.StateQueued {
			t.Fatalf("jobs ran with the kill switch on: %s, %s", h.job(id).State, h.job(now).State)
		}
	}

	// The window ends with the overnight job still waiting: it moves on and
	// the report says so.
	h.clk.Set(windowStart.Add(6*time.Hour + time.Second))
	var body []byte
	select {
	case body = <-recv.got:
	case <-time.After(60 * time.Second):
		t.Fatalf("no report\n%s", h.logText())
	}
	rep := validate(t, body)
	r := runFor(t, rep, "alpha", a1)
	nextWindow := windowStart.Add(24 * time.Hour)
	if r.Outcome != "SKIPPED" || !strings.Contains(r.Narrative, "moved to the window of 2026-03-11 02:00") || r.Steps[0].Status != "skipped" {
		t.Fatalf("moved run %+v", r)
	}
	if !strings.Contains(rep.Narrative, "moved to the next window") || strings.Count(rep.Narrative, ". ") < 1 {
		t.Fatalf("fallback narrative %q", rep.Narrative)
	}
	if j := h.job(id); j.State != job.StateScheduled || !j.ScheduledFor.Equal(nextWindow) {
		t.Fatalf("moved job: %s for %v", j.State, j.ScheduledFor)
	}
	if n := eng.ran(); n != 0 {
		t.Fatalf("engine ran %d times with the kill switch on", n)
	}

	// Lifting the switch runs the stored immediate job at once; the
	// overnight job runs in its new window.
	if code, _ := h.admin(http.MethodPost, "/api/enabled", `{"enabled": true}`); code != 200 {
		t.Fatal("could not lift the kill switch")
	}
	h.eventually("the stored job to run", func() bool { return h.job(now).State == job.StateSucceeded })
	if h.job(id).State != job.StateScheduled {
		t.Fatalf("overnight job ran outside its window: %s", h.job(id).State)
	}
	h.clk.Set(nextWindow.Add(time.Second))
	h.eventually("the moved job to run", func() bool { return h.job(id).State == job.StateSucceeded })
	if code, _ := h.admin(http.MethodPost, "/api/enabled", `{"on": 1}`); code != http.StatusBadRequest {
		t.Fatalf("bad body accepted: %d", code)
	}
}

func TestUnlabelBeforeTheWindowCancelsAndSendsNothing(t *testing.T) {
	eng := newEngine()
	recv := newReceiver(t, 0)
	h := newHarness(t, eng, []string{"SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL}, nil)
	a1 := h.issue("alpha", "Greeting is too short", "selfcode:overnight")
	id := h.label("labeled", "alpha", a1, "selfcode:overnight", "Greeting is too short")
	if got := h.label("unlabeled", "alpha", a1, "selfcode:overnight", "Greeting is too short"); got != id {
		t.Fatalf("unlabel answered job %q, want %q", got, id)
	}
	if j := h.job(id); j.State != job.StateCanceled {
		t.Fatalf("after unlabel: %s", j.State)
	}
	h.clk.Set(windowStart.Add(6*time.Hour + time.Second))
	if err := h.srv.Overnight.CloseDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reps, err := h.srv.Store.ListReports(context.Background(), 10); err != nil || len(reps) != 0 || recv.count() != 0 {
		t.Fatalf("a window without jobs reported: %d stored, %d sent (%v)", len(reps), recv.count(), err)
	}
	if eng.ran() != 0 {
		t.Fatal("a canceled job ran")
	}
}

func TestDailyBudgetDefersWithOneComment(t *testing.T) {
	eng := newEngine()
	h := newHarness(t, eng, []string{"SELFCODE_DAILY_TOKEN_BUDGET=1000"}, nil)
	ctx := context.Background()
	if _, err := h.srv.Store.AddUsage(ctx, 1, t0.Format(time.DateOnly), 1000); err != nil {
		t.Fatal(err)
	}
	b1 := h.issue("beta", "Now please")
	id := h.label("labeled", "beta", b1, "selfcode", "Now please")
	midnight := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	h.eventually("the job to be deferred", func() bool {
		j := h.job(id)
		return j.State == job.StateQueued && j.ScheduledFor.Equal(midnight)
	})
	// Asked again the same day (a new trigger supersedes it): still one comment.
	id2 := h.label("labeled", "beta", b1, "selfcode", "Now please")
	h.eventually("the second job to be deferred", func() bool { return h.job(id2).ScheduledFor.Equal(midnight) })
	if n := len(h.comments("beta", b1, "daily model-token budget")); n != 1 {
		t.Fatalf("%d budget comments, want 1", n)
	}
	if eng.ran() != 0 {
		t.Fatal("a job ran over budget")
	}
	// The next day it runs.
	h.clk.Set(midnight.Add(time.Second))
	h.eventually("the deferred job to run", func() bool { return h.job(id2).State == job.StateSucceeded })
}
