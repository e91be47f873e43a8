package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/app/worker"
	"github.com/selfcode/selfcode/internal/browsertest"
	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// The dashboard in a real browser: headless Chromium (Debian's package)
// driven with chromedp against a real store and worker pool. Screenshots go
// to testdata/screenshots (git-ignored).
//
// Without Chromium the test skips, unless CI or SELFCODE_REQUIRE_BROWSER=1 is
// set: then a missing browser is a failure (`make chromium` installs it).

var screenshots = filepath.Join("testdata", "screenshots")

// scriptedRunner is the pipeline as the pool sees it. Issue 7 finishes at
// once with a pull request and the artifacts a pipeline leaves; issue 13
// fails; issue 9 runs until canceled, recording each stage the test sends.
type scriptedRunner struct {
	started chan string
	stages  chan [3]string
}

func (r *scriptedRunner) Run(ctx context.Context, j *job.Job, rt worker.Runtime) (job.Outcome, error) {
	stage := func(n, st, summary string) error {
		name, status := stage.Name(n), stage.Status(st)
		now := time.Now().UTC()
		_, err := rt.Update(ctx, func(j *job.Job) error {
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
		return err
	}
	switch j.Issue {
	case 7:
		for _, s := range [][3]string{{"checkout", "pass", "main at 1a2b3c4d5e6f"}, {"plan", "pass", "Add a friendly greeting"},
			{"edit", "pass", "2 files changed"}, {"verify", "pass", "build pass, test pass"}, {"publish", "pass", "PR #8 opened"}} {
			if err := stage(s[0], "running", ""); err != nil {
				return "", err
			}
			if err := stage(s[0], s[1], s[2]); err != nil {
				return "", err
			}
		}
		for _, name := range []string{"plan.json", "verify-base.json", "verify-1.json", "diff.patch"} {
			data, err := os.ReadFile(filepath.Join("testdata", "dashboard", name))
			if err != nil {
				return "", err
			}
			if err := rt.PutArtifact(ctx, name, data); err != nil {
				return "", err
			}
		}
		_, err := rt.Update(ctx, func(j *job.Job) error {
			j.Tokens = 48210
			j.Publication.PRURL = "https://github.com/octo/demo/pull/8"
			return nil
		})
		return job.OutcomePROpened, err
	case 13:
		_ = stage("checkout", "fail", "repository not accessible")
		return "", errors.New("repository octo/demo: not accessible")
	}
	if err := stage("checkout", "running", ""); err != nil {
		return "", err
	}
	r.started <- j.ID
	for {
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case s := <-r.stages:
			if err := stage(s[0], s[1], s[2]); err != nil {
				return "", err
			}
		}
	}
}

type allowAll struct{}

func (allowAll) Allowed(context.Context, *job.Job) (bool, string, error) { return true, "admin", nil }

type quietNotifier struct{}

func (quietNotifier) Denied(context.Context, *job.Job, string) error { return nil }
func (quietNotifier) Control(context.Context, *job.Job, worker.ControlReply) error {
	return nil
}

func waitState(t *testing.T, st *store.Store, id string, want job.State) *job.Job {
	t.Helper()
	var j *job.Job
	poll.Until(t, fmt.Sprintf("job %s to be %s", id, want), 15*time.Second, func() bool {
		got, err := st.Get(context.Background(), id)
		j = got
		return err == nil && got.State == want
	})
	return j
}

func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	br := browsertest.New(t)

	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runner := &scriptedRunner{started: make(chan string, 1), stages: make(chan [3]string)}
	pool, err := worker.New(worker.Options{Store: st, Runner: runner, Permissions: allowAll{}, Notifier: quietNotifier{},
		Workers: 2, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	poolCtx, stopPool := context.WithCancel(context.Background())
	if err := pool.Start(poolCtx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = pool.Shutdown(sctx)
		stopPool()
	}()
	eng, err := NewAdmin(AdminOptions{Jobs: st, Canceler: st, LivePoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	base := srv.URL

	done := submit(t, st, 7, "Greet the world")
	waitState(t, st, done, job.StateSucceeded)
	failed := submit(t, st, 13, "Fix the build")
	waitState(t, st, failed, job.StateFailed)
	live := submit(t, st, 9, xssTitle)
	select {
	case id := <-runner.started:
		if id != live {
			t.Fatalf("started %s, want %s", id, live)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the live job did not start")
	}

	// 1. The list renders every job with its facts.
	br.Do("open the job list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#jobs tbody tr[data-job]`)))
	if n := browsertest.Eval[int](br, `document.querySelectorAll('#jobs tbody tr[data-job]').length`); n != 3 {
		t.Fatalf("list shows %d jobs, want 3", n)
	}
	row := browsertest.Eval[string](br, fmt.Sprintf(`document.querySelector('tr[data-job=%q]').innerText`, done))
	for _, want := range []string{"succeeded", "pr_opened", "octo/demo", "#7", "48210"} {
		if !strings.Contains(row, want) {
			t.Errorf("row of the finished job %q lacks %q", row, want)
		}
	}
	if href := browsertest.Eval[string](br, fmt.Sprintf(`document.querySelector('tr[data-job=%q] td.issue a').href`, done)); href != "https://github.com/octo/demo/issues/7" {
		t.Errorf("issue link %q", href)
	}
	for id, state := range map[string]string{failed: "failed", live: "running"} {
		if got := browsertest.Eval[string](br, fmt.Sprintf(`document.querySelector('tr[data-job=%q]').dataset.state`, id)); got != state {
			t.Errorf("row %s state %q, want %q", id, got, state)
		}
	}
	br.Screenshot(screenshots, "01-job-list.png")

	// 2. The running job's log grows as stages are stored.
	br.Do("open the running job", chromedp.Navigate(base+"/jobs/"+live), chromedp.WaitVisible(chromedp.CSS(`#log li`)))
	if title := browsertest.Eval[string](br, `document.querySelector('p.title').textContent`); title != xssTitle {
		t.Errorf("title shown as %q, want the text %q", title, xssTitle)
	}
	before := browsertest.Eval[int](br, `document.querySelectorAll('#log li').length`)
	for i, s := range [][3]string{{"checkout", "pass", "main at 0f0f0f0f0f0f"}, {"plan", "running", ""}, {"plan", "pass", "Three steps"}, {"edit", "running", ""}} {
		select {
		case runner.stages <- s:
		case <-time.After(15 * time.Second):
			t.Fatal("the runner does not take stages")
		}
		want := s[0] + " started"
		if s[1] != "running" {
			want = s[0] + ": " + s[1]
		}
		br.WaitJS(fmt.Sprintf("log entry %q", want), fmt.Sprintf(
			`document.querySelectorAll('#log li').length >= %d && [...document.querySelectorAll('#log li')].some(li => li.textContent.includes(%q))`,
			before+i+1, want))
	}
	after := browsertest.Eval[int](br, `document.querySelectorAll('#log li').length`)
	if after < before+4 {
		t.Fatalf("log grew from %d to %d entries, want at least %d", before, after, before+4)
	}
	br.WaitJS("the timeline row of edit", `[...document.querySelectorAll('#stages tbody tr')].some(tr => tr.textContent.startsWith('editrunning'))`)
	br.Screenshot(screenshots, "02-job-running.png")

	// 3. Cancel stops it; the page follows without a reload.
	br.Do("click cancel", chromedp.Click(chromedp.ID("cancel")))
	br.WaitJS("the end of the live log", `document.body.dataset.ended === "true"`)
	if got := browsertest.Eval[string](br, `document.querySelector('#state').textContent`); got != "canceled" {
		t.Errorf("state shown %q, want canceled", got)
	}
	if browsertest.Eval[bool](br, `document.getElementById('cancel') !== null`) {
		t.Error("the cancel button is still there")
	}
	if !browsertest.Eval[bool](br, `[...document.querySelectorAll('#log li')].some(li => li.textContent.includes('finished: canceled'))`) {
		t.Error("the log does not show the end")
	}
	br.Screenshot(screenshots, "03-job-canceled.png")
	if j := waitState(t, st, live, job.StateCanceled); j.Reason == "" {
		t.Errorf("canceled job has no reason: %+v", j)
	}

	// 4. A finished job shows its plan, verification and diff.
	br.Do("open the finished job", chromedp.Navigate(base+"/jobs/"+done), chromedp.WaitVisible(chromedp.ID("diff")))
	for js, what := range map[string]string{
		`document.querySelector('#plan').textContent.includes('Add a friendly greeting to the CLI')`:                       "plan summary",
		`document.querySelectorAll('#verify table.verify').length === 2`:                                                   "two verification rounds",
		`document.querySelector('#verify').textContent.includes('--- FAIL: TestGreeting')`:                                 "the baseline failure output",
		`document.querySelectorAll('#diff .d-add').length === 1 && document.querySelectorAll('#diff .d-del').length === 1`: "diff lines",
		`document.querySelectorAll('#stages tbody tr').length === 5`:                                                       "five stages",
		`document.querySelector('#pr a').href === 'https://github.com/octo/demo/pull/8'`:                                   "the pull request link",
	} {
		if !browsertest.Eval[bool](br, js) {
			t.Errorf("finished job page lacks %s", what)
		}
	}
	br.Screenshot(screenshots, "04-job-finished.png")

	// The browser only ever talked to the test server, and no script failed.
	u, _ := url.Parse(base)
	br.CheckOnly(u.Host)
}
