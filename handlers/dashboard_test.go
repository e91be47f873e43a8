package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/backup"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// dashFixture is a store holding one job of each kind the pages show.
type dashFixture struct {
	st                    *store.Store
	done, running, queued string
}

const xssTitle = `Fix <script>alert("x")</script> & "quotes"`

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dashboard", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func submit(t *testing.T, st *store.Store, issue int, title string) string {
	t.Helper()
	rc, err := st.Submit(context.Background(), store.Submission{DeliveryID: fmt.Sprintf("d-%d-%d", issue, time.Now().UnixNano()), Action: store.ActionEnqueue,
		Job: &job.Job{Kind: job.KindRun, Repo: job.Repo{Owner: "octo", Name: "demo"}, Issue: issue, IssueTitle: title,
			IssueURL: fmt.Sprintf("https://github.com/octo/demo/issues/%d", issue),
			Trigger:  job.Trigger{Source: job.SourceIssueComment, Sender: "maintainer"}}})
	if err != nil {
		t.Fatal(err)
	}
	return rc.JobID
}

func setStage(t *testing.T, st *store.Store, id, n, stat, summary string) {
	t.Helper()
	name, status := stage.Name(n), stage.Status(stat)
	now := time.Now().UTC()
	_, err := st.Update(context.Background(), id, func(j *job.Job) error {
		for i := range j.Stages {
			if j.Stages[i].Name == name {
				j.Stages[i].Status, j.Stages[i].Summary = status, summary
				if status.Done() {
					j.Stages[i].FinishedAt = now
				}
				return nil
			}
		}
		j.Stages = append(j.Stages, job.Stage{Name: name, Status: status, Summary: summary, StartedAt: now})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func lease(t *testing.T, st *store.Store, want string) {
	t.Helper()
	j, err := st.Lease(context.Background(), store.LanePipeline, "test", time.Minute)
	if err != nil || j == nil || j.ID != want {
		t.Fatalf("lease: %v %v, want %s", j, err, want)
	}
}

func newDashFixture(t *testing.T) *dashFixture {
	t.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	f := &dashFixture{st: st}

	f.done = submit(t, st, 7, xssTitle)
	lease(t, st, f.done)
	for _, s := range [][3]string{{"checkout", "pass", "main at 1a2b3c4d5e6f"}, {"plan", "pass", "Add a greeting"},
		{"edit", "pass", "2 files changed"}, {"verify", "pass", "build pass, test pass"}, {"publish", "pass", "PR #8"}} {
		setStage(t, st, f.done, s[0], "running", "")
		setStage(t, st, f.done, s[0], s[1], s[2])
	}
	for _, name := range []string{"plan.json", "verify-base.json", "verify-1.json", "diff.patch"} {
		if err := st.PutArtifact(ctx, f.done, name, readTestdata(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Update(ctx, f.done, func(j *job.Job) error {
		j.Tokens = 12345
		j.Publication.PRURL = "https://github.com/octo/demo/pull/8"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, f.done, store.Result{State: job.StateSucceeded, Outcome: job.OutcomePROpened}); err != nil {
		t.Fatal(err)
	}

	f.running = submit(t, st, 9, "Make the tests faster")
	lease(t, st, f.running)
	setStage(t, st, f.running, "checkout", "running", "")
	setStage(t, st, f.running, "checkout", "pass", "main at 0f0f0f0f0f0f")
	setStage(t, st, f.running, "plan", "running", "")

	f.queued = submit(t, st, 11, "Document the API")
	return f
}

func (f *dashFixture) serve(t *testing.T) string {
	t.Helper()
	eng, err := NewAdmin(AdminOptions{Jobs: f.st, Canceler: f.st, LivePoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestDashboardList(t *testing.T) {
	f := newDashFixture(t)
	base := f.serve(t)
	code, h, body := get(t, base+"/")
	if code != 200 {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("no content security policy: %q", h.Get("Content-Security-Policy"))
	}
	for _, want := range []string{
		`href="/jobs/` + f.done + `"`, `href="/jobs/` + f.running + `"`, `href="/jobs/` + f.queued + `"`,
		`data-state="succeeded"`, `data-state="running"`, `data-state="queued"`,
		`pr_opened`, `octo/demo`, `href="https://github.com/octo/demo/issues/7"`, `>#7</a>`,
		`<td class="num tokens">12345</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("list lacks %q", want)
		}
	}
	// Newest first.
	if strings.Index(body, f.queued) > strings.Index(body, f.done) {
		t.Error("list is not newest first")
	}

	tests := []struct {
		query      string
		code       int
		has, hasnt []string
	}{
		{"?state=running", 200, []string{f.running}, []string{f.done, f.queued}},
		{"?state=succeeded", 200, []string{f.done}, []string{f.running}},
		{"?state=failed", 200, []string{"No jobs in state failed"}, []string{f.done}},
		{"?state=bogus", 400, []string{"unknown state"}, nil},
		{"?cursor=nope", 400, []string{"invalid cursor"}, nil},
		{"?cursor=" + f.queued, 200, []string{f.running, f.done}, []string{`href="/jobs/` + f.queued}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, _, body := get(t, base+"/"+tt.query)
			if code != tt.code {
				t.Fatalf("code %d, want %d", code, tt.code)
			}
			for _, s := range tt.has {
				if !strings.Contains(body, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range tt.hasnt {
				if strings.Contains(body, s) {
					t.Errorf("has %q", s)
				}
			}
		})
	}
}

func TestDashboardJobPage(t *testing.T) {
	f := newDashFixture(t)
	base := f.serve(t)

	code, _, body := get(t, base+"/jobs/"+f.done)
	if code != 200 {
		t.Fatalf("GET job = %d\n%s", code, body)
	}
	for _, want := range []string{
		// facts
		`state-succeeded`, `pr_opened`, `12345`, `href="https://github.com/octo/demo/pull/8"`,
		// stage timeline
		`<td>checkout</td><td>pass</td>`, `main at 1a2b3c4d5e6f`, `<td>publish</td><td>pass</td>`,
		// plan
		`id="plan"`, `Add a friendly greeting to the CLI`, `<code>cmd/hello/main.go</code>`, `Risks`,
		// verification: baseline and round 1, with the failing output open
		`baseline (before the change)`, `round 1`, `<code>build</code>`, `<code>test</code>`,
		`<tr class="v-fail">`, `<tr class="v-pass">`, `--- FAIL: TestGreeting`,
		// diff
		`<span class="d-add">+	fmt.Println("hello, world")</span>`, `<span class="d-del">-	fmt.Println("hi")</span>`, `<span class="d-hunk">@@`,
		// artifacts
		`href="/api/jobs/` + f.done + `/artifacts/diff.patch"`,
	} {
		if !strings.Contains(html.UnescapeString(body), want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	if strings.Contains(body, `<script>alert`) {
		t.Error("issue title is not escaped")
	}
	if !strings.Contains(body, `Fix &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`) {
		t.Error("escaped title missing")
	}
	if strings.Contains(body, `id="cancel"`) || strings.Contains(body, `data-events=`) {
		t.Error("a finished job offers cancel or a live log")
	}

	code, _, body = get(t, base+"/jobs/"+f.running)
	if code != 200 {
		t.Fatalf("GET running job = %d", code)
	}
	for _, want := range []string{`id="cancel"`, `data-events="/jobs/` + f.running + `/events"`, `plan started`, `checkout: pass — main at 0f0f0f0f0f0f`} {
		if !strings.Contains(body, want) {
			t.Errorf("running job page lacks %q", want)
		}
	}

	if code, _, _ := get(t, base+"/jobs/01m7ym2ejcah23xz70rdb275bp"); code != 404 {
		t.Errorf("unknown job: %d, want 404", code)
	}
	for _, asset := range []string{"/static/dashboard.js", "/static/dashboard.css"} {
		if code, _, body := get(t, base+asset); code != 200 || len(body) < 100 {
			t.Errorf("%s: %d (%d bytes)", asset, code, len(body))
		}
	}
	if code, _, _ := get(t, base+"/static/job.html"); code != 404 {
		t.Errorf("templates are served as static files: %d", code)
	}
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
}

// readEvents parses an event stream into a channel until it ends.
func readEvents(r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

// waitEvent returns the first event that satisfies match, within a deadline.
func waitEvent(t *testing.T, ch <-chan sseEvent, what string, match func(sseEvent) bool) sseEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before %s", what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within 10s", what)
		}
	}
}

func logEvent(text string) func(sseEvent) bool {
	return func(ev sseEvent) bool {
		var l logLine
		return ev.name == "log" && json.Unmarshal([]byte(ev.data), &l) == nil && strings.Contains(l.Text, text)
	}
}

func TestDashboardEvents(t *testing.T) {
	f := newDashFixture(t)
	base := f.serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A job that has ended has no stream: 204 stops EventSource reconnecting.
	if code, _, _ := get(t, base+"/jobs/"+f.done+"/events"); code != http.StatusNoContent {
		t.Fatalf("events of a finished job: %d, want 204", code)
	}
	if code, _, _ := get(t, base+"/jobs/01m7ym2ejcah23xz70rdb275bp/events"); code != 404 {
		t.Fatalf("events of an unknown job: %d, want 404", code)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/jobs/"+f.running+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := readEvents(resp.Body)
	// The history first, then the status.
	waitEvent(t, events, "the creation entry", logEvent("run job created (issue_comment by maintainer)"))
	waitEvent(t, events, "the checkout result", logEvent("checkout: pass — main at 0f0f0f0f0f0f"))
	waitEvent(t, events, "the job status", func(ev sseEvent) bool { return ev.name == "job" && strings.Contains(ev.data, `"state":"running"`) })

	// New progress arrives as it is stored.
	setStage(t, f.st, f.running, "plan", "pass", "Two steps")
	waitEvent(t, events, "the plan result", logEvent("plan: pass — Two steps"))
	setStage(t, f.st, f.running, "edit", "running", "")
	ev := waitEvent(t, events, "the edit start", logEvent("edit started"))
	var l logLine
	if err := json.Unmarshal([]byte(ev.data), &l); err != nil || l.Key == "" || l.Time.IsZero() {
		t.Fatalf("log entry %s: %v", ev.data, err)
	}

	// The end closes the stream.
	if _, err := f.st.Finish(context.Background(), f.running, store.Result{State: job.StateFailed, Outcome: job.OutcomeError, Error: "model unavailable"}); err != nil {
		t.Fatal(err)
	}
	end := waitEvent(t, events, "the end", func(ev sseEvent) bool { return ev.name == "end" })
	if !strings.Contains(end.data, `"state":"failed"`) || !strings.Contains(end.data, "model unavailable") {
		t.Errorf("end event %s", end.data)
	}
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream stayed open after the end")
	}
}

// TestDashboardEventsEndOnShutdown: an open live log does not hold up the
// admin server's graceful shutdown.
func TestDashboardEventsEndOnShutdown(t *testing.T) {
	f := newDashFixture(t)
	eng, err := NewAdmin(AdminOptions{Jobs: f.st, Canceler: f.st, LivePoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/jobs/" + f.running + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readEvents(resp.Body)
	waitEvent(t, events, "the first entry", func(ev sseEvent) bool { return ev.name == "log" })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for the open stream: %v", err)
	}
}

func TestDashboardCancelGuard(t *testing.T) {
	f := newDashFixture(t)
	base := f.serve(t)
	post := func(header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/jobs/"+f.queued+"/cancel", nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"another site's form", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"origin only", map[string]string{"Origin": "https://evil.example"}, 403},
		{"same-origin page", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": base}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(tt.header); got != tt.want {
				t.Errorf("POST cancel = %d, want %d", got, tt.want)
			}
		})
	}
	j, err := f.st.Get(context.Background(), f.queued)
	if err != nil || j.State != job.StateCanceled {
		t.Fatalf("job %v %v, want canceled by the same-origin request", j, err)
	}
}

// TestBackupEndpoint takes copies while deliveries are being stored and
// checks that each copy is a consistent store holding every job stored
// before the copy started.
func TestBackupEndpoint(t *testing.T) {
	f := newDashFixture(t)
	base := f.serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	writerDone := make(chan int)
	go func() {
		n := 0
		defer func() { writerDone <- n }()
		for i := 0; i < 5000 && ctx.Err() == nil; i++ {
			_, err := f.st.Submit(ctx, store.Submission{DeliveryID: fmt.Sprintf("bk-%d", i), Action: store.ActionEnqueue,
				Job: &job.Job{Kind: job.KindRun, Repo: job.Repo{Owner: "octo", Name: "busy"}, Issue: 1000 + i, Trigger: job.Trigger{Sender: "m"}}})
			if err != nil {
				return
			}
			n++
		}
	}()
	dir := t.TempDir()
	for round := range 3 {
		before, _, err := f.st.List(ctx, store.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, fmt.Sprintf("copy-%d.db", round))
		sum, err := backup.Download(ctx, backup.SaveOptions{URL: base + "/api/backup", File: file})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("backup file mode: %v %v", st.Mode(), err)
		}
		if sum.Keys["jobs"] < len(before) {
			t.Fatalf("copy %d holds %d jobs, %d were stored before it", round, sum.Keys["jobs"], len(before))
		}
		cp, err := store.Open(store.Options{Path: file})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range before {
			if _, err := cp.Get(ctx, j.ID); err != nil {
				t.Fatalf("copy lacks job %s: %v", j.ID, err)
			}
		}
		if _, err := cp.Get(ctx, f.done); err != nil {
			t.Fatalf("copy lacks the finished job: %v", err)
		}
		if data, err := cp.Artifact(ctx, f.done, "diff.patch"); err != nil || len(data) == 0 {
			t.Fatalf("copy lacks the artifact: %v", err)
		}
		cp.Close()
	}
	cancel()
	if n := <-writerDone; n == 0 {
		t.Fatal("no job was written during the backups")
	}
}
