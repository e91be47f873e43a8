package overnight_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/overnight"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/testclock"
)

const owner = e2e.Owner

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

// newEngine is the scripted pipeline: each run takes long enough for
// several scheduler ticks, so that a second job of the same repository
// would overlap if it were started; issues listed in hang ("owner/name#N")
// run until their context ends.
func newEngine(hang ...string) *e2e.Scripted {
	e := e2e.NewScripted()
	e.SetWork(300 * time.Millisecond)
	for _, h := range hang {
		e.Hang(h)
	}
	return e
}

// harness is the end-to-end harness on the fake clock.
type harness struct {
	*e2e.Harness
	clk *testclock.Clock
}

// Tuesday 01:00 UTC; the window opens at 02:00 and lasts 6 hours.
var (
	t0          = time.Date(2026, 3, 10, 1, 0, 0, 0, time.UTC)
	windowStart = time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
)

// newHarness starts a server with two repositories, alpha and beta (files
// per repository; nil: the sample Go module in both).
func newHarness(t *testing.T, eng runner.Pipeline, extraEnv []string, files map[string]map[string]string, script ...fakeopenai.Step) *harness {
	t.Helper()
	clk := testclock.New(t0)
	h := e2e.Start(t, e2e.Options{
		GitHubOptions: e2e.GitHubOptions{Repos: map[string]map[string]string{"alpha": files["alpha"], "beta": files["beta"]},
			Users: map[string]string{"maint": "maintain"}},
		Pipeline: eng, Script: script, Now: clk.Now,
		Env: append([]string{"SELFCODE_WORKERS=3", "SELFCODE_OVERNIGHT_SCHEDULE=0 2 * * *", "SELFCODE_OVERNIGHT_WINDOW=6h"}, extraEnv...),
	})
	return &harness{Harness: h, clk: clk}
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
	t.Parallel()
	eng := newEngine(owner + "/beta#1")
	recv := newReceiver(t, 2) // the first two deliveries fail: retried with backoff
	h := newHarness(t, eng, []string{"SELFCODE_OVERNIGHT_MAX_DURATION=1h", "SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL},
		nil, fakeopenai.Step{Role: "reporter", Content: reporterSays})

	a1 := h.Issue("alpha", "Greeting is too short", "selfcode:overnight")
	a2 := h.Issue("alpha", "Greeting lacks a name", "selfcode:overnight")
	b1 := h.Issue("beta", "Slow greeting", "selfcode:overnight")
	ids := map[string]string{
		"alpha#1": h.Label("labeled", "alpha", a1, "selfcode:overnight", "Greeting is too short"),
		"alpha#2": h.Label("labeled", "alpha", a2, "selfcode:overnight", "Greeting lacks a name"),
		"beta#1":  h.Label("labeled", "beta", b1, "selfcode:overnight", "Slow greeting"),
	}
	for k, id := range ids {
		if j := h.Job(id); j.State != job.StateScheduled || !j.ScheduledFor.Equal(windowStart) {
			t.Fatalf("%s: %s scheduled for %v, want scheduled for %v", k, j.State, j.ScheduledFor, windowStart)
		}
	}

	// The window opens. The alpha jobs finish; beta#1 runs until the
	// clock passes its one-hour limit, which only the test moves.
	h.clk.Set(windowStart.Add(time.Second))
	for _, k := range []string{"alpha#1", "alpha#2"} {
		h.Eventually(k+" to finish", func() bool { return h.Job(ids[k]).State.Terminal() })
	}
	h.Eventually("beta#1 to start", func() bool { return h.Job(ids["beta#1"]).State == job.StateRunning })
	if h.Job(ids["beta#1"]).State.Terminal() {
		t.Fatal("beta#1 ended before its limit")
	}
	h.clk.Set(windowStart.Add(time.Hour + 2*time.Second))
	h.Eventually("beta#1 to be stopped at its limit", func() bool { return h.Job(ids["beta#1"]).State.Terminal() })
	maxAlpha, maxBeta := eng.MaxConcurrent(owner+"/alpha"), eng.MaxConcurrent(owner+"/beta")
	if maxAlpha != 1 || maxBeta != 1 {
		t.Fatalf("jobs of one repository ran at once: alpha %d, beta %d", maxAlpha, maxBeta)
	}
	for _, k := range []string{"alpha#1", "alpha#2"} {
		if j := h.Job(ids[k]); j.State != job.StateSucceeded || j.Outcome != job.OutcomePROpened {
			t.Fatalf("%s: %s %s %s", k, j.State, j.Outcome, j.Error)
		}
	}
	prs := h.GitHub.PullRequests(owner, "alpha")
	if len(prs) != 2 || !strings.Contains(prs[0].Body, "## Blast radius") || !strings.Contains(prs[0].Body, "example.com/hello/cmd") {
		t.Fatalf("pull requests %+v: want two, whose bodies list the blast radius", prs)
	}
	bj := h.Job(ids["beta#1"])
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
		h.Eventually("outcome comment on "+c.repo, func() bool { return len(h.Comments(c.repo, c.issue, "selfcode overnight run")) == 1 })
		if got := h.Comments(c.repo, c.issue, "selfcode overnight run")[0]; !strings.Contains(got, c.want) {
			t.Fatalf("%s#%d outcome comment: %s", c.repo, c.issue, got)
		}
		h.Eventually("label swap on "+c.repo, func() bool {
			ls := h.GitHub.Labels(owner, c.repo, c.issue)
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
		t.Fatalf("no report\n%s", h.Logs())
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
	h.Eventually("report delivery recorded", func() bool {
		_, raw := h.Admin(http.MethodGet, "/api/reports", "")
		return bytes.Contains(raw, []byte(`"delivered":true`))
	})
	code, raw := h.Admin(http.MethodGet, "/api/reports", "")
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
	if code, raw := h.Admin(http.MethodGet, "/api/reports/"+list.Reports[0].ID, ""); code != 200 || !bytes.Contains(raw, []byte(reporterSays)) {
		t.Fatalf("GET /api/reports/{id}: %d %s", code, raw)
	}
	if code, _ := h.Admin(http.MethodGet, "/api/reports/nope", ""); code != http.StatusNotFound {
		t.Fatalf("unknown report: %d", code)
	}
}

func TestRestartKillSwitchAndMovingOn(t *testing.T) {
	t.Parallel()
	eng := newEngine()
	recv := newReceiver(t, 0)
	// The reporter model fails: the plain narrative is used.
	h := newHarness(t, eng, []string{"SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL}, nil,
		fakeopenai.Step{Role: "reporter", Status: 400, Message: "model unavailable"})
	a1 := h.Issue("alpha", "Greeting is too short", "selfcode:overnight")
	id := h.Label("labeled", "alpha", a1, "selfcode:overnight", "Greeting is too short")

	// A restart before the window keeps the job scheduled.
	h.Stop()
	h.StartServer()
	if j := h.Job(id); j.State != job.StateScheduled || !j.ScheduledFor.Equal(windowStart) {
		t.Fatalf("after restart: %s for %v", j.State, j.ScheduledFor)
	}

	// Kill switch on: the window opens, nothing runs.
	if code, raw := h.Admin(http.MethodPost, "/api/enabled", `{"enabled": false}`); code != 200 || !bytes.Contains(raw, []byte(`false`)) {
		t.Fatalf("POST /api/enabled: %d %s", code, raw)
	}
	h.clk.Set(windowStart.Add(time.Second))
	h.Eventually("the job to be promoted", func() bool { return h.Job(id).State == job.StateQueued })
	// An immediate job waits too.
	b1 := h.Issue("beta", "Now please")
	now := h.Label("labeled", "beta", b1, "selfcode", "Now please")
	if err := h.Server.Overnight.CloseDue(context.Background()); err != nil { // the window is not over: no effect
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		h.Server.Store.Wake() // workers look again; the switch keeps them idle
		if h.Job(id).State != job.StateQueued || h.Job(now).State != job.StateQueued {
			t.Fatalf("jobs ran with the kill switch on: %s, %s", h.Job(id).State, h.Job(now).State)
		}
	}

	// The window ends with the overnight job still waiting: it moves on and
	// the report says so.
	h.clk.Set(windowStart.Add(6*time.Hour + time.Second))
	var body []byte
	select {
	case body = <-recv.got:
	case <-time.After(60 * time.Second):
		t.Fatalf("no report\n%s", h.Logs())
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
	if j := h.Job(id); j.State != job.StateScheduled || !j.ScheduledFor.Equal(nextWindow) {
		t.Fatalf("moved job: %s for %v", j.State, j.ScheduledFor)
	}
	if n := eng.Calls(); n != 0 {
		t.Fatalf("engine ran %d times with the kill switch on", n)
	}

	// Lifting the switch runs the stored immediate job at once; the
	// overnight job runs in its new window.
	if code, _ := h.Admin(http.MethodPost, "/api/enabled", `{"enabled": true}`); code != 200 {
		t.Fatal("could not lift the kill switch")
	}
	h.Eventually("the stored job to run", func() bool { return h.Job(now).State == job.StateSucceeded })
	if h.Job(id).State != job.StateScheduled {
		t.Fatalf("overnight job ran outside its window: %s", h.Job(id).State)
	}
	h.clk.Set(nextWindow.Add(time.Second))
	h.Eventually("the moved job to run", func() bool { return h.Job(id).State == job.StateSucceeded })
	if code, _ := h.Admin(http.MethodPost, "/api/enabled", `{"on": 1}`); code != http.StatusBadRequest {
		t.Fatalf("bad body accepted: %d", code)
	}
}

func TestUnlabelBeforeTheWindowCancelsAndSendsNothing(t *testing.T) {
	t.Parallel()
	eng := newEngine()
	recv := newReceiver(t, 0)
	h := newHarness(t, eng, []string{"SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL}, nil)
	a1 := h.Issue("alpha", "Greeting is too short", "selfcode:overnight")
	id := h.Label("labeled", "alpha", a1, "selfcode:overnight", "Greeting is too short")
	if got := h.Label("unlabeled", "alpha", a1, "selfcode:overnight", "Greeting is too short"); got != id {
		t.Fatalf("unlabel answered job %q, want %q", got, id)
	}
	if j := h.Job(id); j.State != job.StateCanceled {
		t.Fatalf("after unlabel: %s", j.State)
	}
	h.clk.Set(windowStart.Add(6*time.Hour + time.Second))
	if err := h.Server.Overnight.CloseDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reps, err := h.Server.Store.ListReports(context.Background(), 10); err != nil || len(reps) != 0 || recv.count() != 0 {
		t.Fatalf("a window without jobs reported: %d stored, %d sent (%v)", len(reps), recv.count(), err)
	}
	if eng.Calls() != 0 {
		t.Fatal("a canceled job ran")
	}
}

func TestDailyBudgetDefersWithOneComment(t *testing.T) {
	t.Parallel()
	eng := newEngine()
	h := newHarness(t, eng, []string{"SELFCODE_DAILY_TOKEN_BUDGET=1000"}, nil)
	ctx := context.Background()
	if _, err := h.Server.Store.AddUsage(ctx, 1, t0.Format(time.DateOnly), store.DayUsage{Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	b1 := h.Issue("beta", "Now please")
	id := h.Label("labeled", "beta", b1, "selfcode", "Now please")
	midnight := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	h.Eventually("the job to be deferred", func() bool {
		j := h.Job(id)
		return j.State == job.StateQueued && j.ScheduledFor.Equal(midnight)
	})
	// Asked again the same day (a new trigger supersedes it): still one comment.
	id2 := h.Label("labeled", "beta", b1, "selfcode", "Now please")
	h.Eventually("the second job to be deferred", func() bool { return h.Job(id2).ScheduledFor.Equal(midnight) })
	if n := len(h.Comments("beta", b1, "daily model-token budget")); n != 1 {
		t.Fatalf("%d budget comments, want 1", n)
	}
	if eng.Calls() != 0 {
		t.Fatal("a job ran over budget")
	}
	// The next day it runs.
	h.clk.Set(midnight.Add(time.Second))
	h.Eventually("the deferred job to run", func() bool { return h.Job(id2).State == job.StateSucceeded })
}
