package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/testclock"
)

func open(t *testing.T) (*Store, *testclock.Clock, string) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "selfcode.db")
	s, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk, path
}

func runJob(issue int, instr string) *job.Job {
	return &job.Job{
		Kind: job.KindRun, Repo: job.Repo{Owner: "Codertocat", Name: "Hello-World"}, Issue: issue,
		Instructions: instr, Trigger: job.Trigger{Source: job.SourceIssueComment, Sender: "octocat", Command: "run"},
	}
}

func submit(t *testing.T, s *Store, delivery string, j *job.Job) Receipt {
	t.Helper()
	rc, err := s.Submit(context.Background(), Submission{DeliveryID: delivery, Event: "issue_comment", Action: ActionEnqueue, Job: j})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func mustGet(t *testing.T, s *Store, id string) *job.Job {
	t.Helper()
	j, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func take(t *testing.T, s *Store, lane Lane) *job.Job {
	t.Helper()
	j, err := s.Lease(context.Background(), lane, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestDuplicateDeliveryStoresOneJob(t *testing.T) {
	s, _, _ := open(t)
	a := submit(t, s, "d-1", runJob(1, "fix it"))
	b := submit(t, s, "d-1", runJob(1, "fix it"))
	if a.Duplicate || !b.Duplicate || b.JobID != a.JobID {
		t.Fatalf("first %+v second %+v", a, b)
	}
	jobs, _, _ := s.List(context.Background(), ListOptions{})
	if len(jobs) != 1 {
		t.Fatalf("stored %d jobs, want 1", len(jobs))
	}
	ign, err := s.Submit(context.Background(), Submission{DeliveryID: "d-2", Action: ActionIgnore, Reason: "edited"})
	if err != nil || ign.Ignored != "edited" {
		t.Fatalf("ignore: %+v %v", ign, err)
	}
	again, _ := s.Submit(context.Background(), Submission{DeliveryID: "d-2", Action: ActionIgnore, Reason: "edited"})
	if !again.Duplicate {
		t.Fatal("ignored delivery id not recorded")
	}
}

func TestSingleFlight(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *Store)
	}{
		{"second command while queued supersedes the first", func(t *testing.T, s *Store) {
			a := submit(t, s, "d1", runJob(7, "first"))
			b := submit(t, s, "d2", runJob(7, "second"))
			if b.Superseded != a.JobID {
				t.Fatalf("superseded %q, want %q", b.Superseded, a.JobID)
			}
			old := mustGet(t, s, a.JobID)
			if old.State != job.StateSuperseded || old.SupersededBy != b.JobID {
				t.Fatalf("old job %s by %q", old.State, old.SupersededBy)
			}
			got := take(t, s, LanePipeline)
			if got == nil || got.ID != b.JobID || got.Instructions != "second" {
				t.Fatalf("leased %+v", got)
			}
			if take(t, s, LanePipeline) != nil {
				t.Fatal("superseded job still runnable")
			}
		}},
		{"command while running waits behind it", func(t *testing.T, s *Store) {
			a := submit(t, s, "d1", runJob(7, "first"))
			if take(t, s, LanePipeline).ID != a.JobID {
				t.Fatal("lease order")
			}
			b := submit(t, s, "d2", runJob(7, "second"))
			if b.Superseded != "" || b.Status != "queued" {
				t.Fatalf("receipt %+v", b)
			}
			if take(t, s, LanePipeline) != nil {
				t.Fatal("waiting job leased while its issue runs")
			}
			c := submit(t, s, "d3", runJob(7, "third"))
			if c.Superseded != b.JobID {
				t.Fatalf("third should supersede the waiting second: %+v", c)
			}
			if _, err := s.Finish(context.Background(), a.JobID, Result{State: job.StateSucceeded, Outcome: job.OutcomePROpened}); err != nil {
				t.Fatal(err)
			}
			got := take(t, s, LanePipeline)
			if got == nil || got.ID != c.JobID {
				t.Fatalf("after finish leased %+v, want %s", got, c.JobID)
			}
		}},
		{"different issues run in parallel", func(t *testing.T, s *Store) {
			submit(t, s, "d1", runJob(1, "a"))
			submit(t, s, "d2", runJob(2, "b"))
			first, second := take(t, s, LanePipeline), take(t, s, LanePipeline)
			if first == nil || second == nil {
				t.Fatal("both issues should be runnable")
			}
		}},
		{"control jobs do not take the slot", func(t *testing.T, s *Store) {
			a := submit(t, s, "d1", runJob(3, "a"))
			ctl := runJob(3, "")
			ctl.Trigger.Command = "status"
			rc, err := s.Submit(context.Background(), Submission{DeliveryID: "d2", Action: ActionControl, Job: ctl})
			if err != nil || rc.Superseded != "" {
				t.Fatalf("control %+v %v", rc, err)
			}
			if mustGet(t, s, a.JobID).State != job.StateQueued {
				t.Fatal("control job disturbed the pipeline job")
			}
			if c := take(t, s, LaneControl); c == nil || c.Kind != job.KindControl {
				t.Fatalf("control lane gave %+v", c)
			}
			if p := take(t, s, LanePipeline); p == nil || p.ID != a.JobID {
				t.Fatalf("pipeline lane gave %+v", p)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := open(t)
			tt.run(t, s)
		})
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	var interrupted []string
	s.OnCancel(func(id string) { interrupted = append(interrupted, id) })
	a := submit(t, s, "d1", runJob(1, "a"))
	j, err := s.Cancel(ctx, a.JobID, "asked")
	if err != nil || j.State != job.StateCanceled || len(interrupted) != 0 {
		t.Fatalf("cancel queued: %+v %v interrupted %v", j, err, interrupted)
	}
	if take(t, s, LanePipeline) != nil {
		t.Fatal("canceled job leased")
	}
	if _, err := s.Cancel(ctx, a.JobID, "again"); !errs.Is(err, errs.KindConflict) {
		t.Fatalf("cancel of canceled job: %v", err)
	}
	b := submit(t, s, "d2", runJob(1, "b"))
	take(t, s, LanePipeline)
	j, err = s.Cancel(ctx, b.JobID, "stop")
	if err != nil || !j.CancelRequested || j.State != job.StateRunning || len(interrupted) != 1 || interrupted[0] != b.JobID {
		t.Fatalf("cancel running: %+v %v interrupted %v", j, err, interrupted)
	}
	if _, err := s.Cancel(ctx, "01jxxxxxxxxxxxxxxxxxxxxxxx", "x"); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	// CancelIssue takes both the running and the waiting job.
	c := submit(t, s, "d3", runJob(1, "c"))
	got, err := s.CancelIssue(ctx, job.IssueKey("codertocat/hello-world", 1), "cancel command")
	if err != nil || len(got) != 2 || len(interrupted) != 2 || interrupted[1] != b.JobID {
		t.Fatalf("CancelIssue: %d jobs, %v, interrupted %v", len(got), err, interrupted)
	}
	if mustGet(t, s, c.JobID).State != job.StateCanceled {
		t.Fatal("waiting job not canceled")
	}
}

func TestRecoverLeases(t *testing.T) {
	ctx := context.Background()
	clk := testclock.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "selfcode.db")
	s, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a := submit(t, s, "d1", runJob(1, "a"))
	for attempt := 1; attempt <= 3; attempt++ {
		got := take(t, s, LanePipeline)
		if got == nil || got.Attempts != attempt {
			t.Fatalf("attempt %d: leased %+v", attempt, got)
		}
		// The process dies: reopen the file as a new process would.
		s.Close()
		if s, err = Open(Options{Path: path, Now: clk.Now}); err != nil {
			t.Fatal(err)
		}
		rec, err := s.RecoverLeases(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if attempt < 3 && (len(rec.Requeued) != 1 || rec.Requeued[0] != a.JobID) {
			t.Fatalf("attempt %d: %+v", attempt, rec)
		}
		if attempt == 3 && len(rec.Failed) != 1 {
			t.Fatalf("third death should fail the job: %+v", rec)
		}
	}
	j := mustGet(t, s, a.JobID)
	if j.State != job.StateFailed || j.Error == "" {
		t.Fatalf("job %s %q", j.State, j.Error)
	}
	if act, _ := s.Active(ctx, j.Key()); act != nil {
		t.Fatal("failed job still holds its issue")
	}
	s.Close()
}

func TestRetryIsTheSameJob(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	a := submit(t, s, "d1", runJob(4, "a"))
	take(t, s, LanePipeline)
	if _, err := s.Retry(ctx, a.JobID, job.Trigger{Sender: "x", Command: "retry"}); !errs.Is(err, errs.KindConflict) {
		t.Fatalf("retry of running job: %v", err)
	}
	if _, err := s.Update(ctx, a.JobID, func(j *job.Job) error { j.Publication.ProgressCommentID = 99; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, a.JobID, Result{State: job.StateFailed, Outcome: job.OutcomeError, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Retry(ctx, a.JobID, job.Trigger{Sender: "maintainer", Command: "retry"})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != a.JobID || j.State != job.StateQueued || j.Publication.ProgressCommentID != 99 || j.Trigger.Command != "run" || j.Error != "" {
		t.Fatalf("retried job %+v", j)
	}
	if got := take(t, s, LanePipeline); got == nil || got.ID != a.JobID || got.Attempts != 1 {
		t.Fatalf("leased %+v", got)
	}
}

func TestScheduledAndOvernightCancel(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := open(t)
	j := runJob(5, "")
	j.Overnight = true
	j.ScheduledFor = clk.Now().Add(time.Hour)
	rc := submit(t, s, "d1", j)
	if rc.Status != "scheduled" {
		t.Fatalf("status %q", rc.Status)
	}
	if take(t, s, LanePipeline) != nil {
		t.Fatal("scheduled job leased early")
	}
	if ids, _ := s.PromoteDue(ctx, clk.Now()); len(ids) != 0 {
		t.Fatalf("promoted early: %v", ids)
	}
	next, _ := s.NextScheduled(ctx)
	if !next.Equal(j.ScheduledFor) {
		t.Fatalf("next %v want %v", next, j.ScheduledFor)
	}
	clk.Add(2 * time.Hour)
	if ids, _ := s.PromoteDue(ctx, clk.Now()); len(ids) != 1 {
		t.Fatalf("promoted %v", ids)
	}
	if got := take(t, s, LanePipeline); got == nil || got.ID != rc.JobID {
		t.Fatalf("leased %+v", got)
	}

	k := runJob(6, "")
	k.Overnight = true
	k.ScheduledFor = clk.Now().Add(time.Hour)
	rk := submit(t, s, "d2", k)
	c, err := s.Submit(ctx, Submission{DeliveryID: "d3", Action: ActionCancelOvernight, Key: job.IssueKey("Codertocat/Hello-World", 6)})
	if err != nil || c.JobID != rk.JobID || c.Status != "canceled" {
		t.Fatalf("unlabel: %+v %v", c, err)
	}
	clk.Add(2 * time.Hour)
	if ids, _ := s.PromoteDue(ctx, clk.Now()); len(ids) != 0 {
		t.Fatalf("canceled job promoted: %v", ids)
	}
	none, _ := s.Submit(ctx, Submission{DeliveryID: "d4", Action: ActionCancelOvernight, Key: "x/y#1"})
	if none.Ignored == "" {
		t.Fatalf("unlabel without job: %+v", none)
	}
}

func TestListPagination(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := open(t)
	var ids []string
	for i := 0; i < 25; i++ {
		clk.Add(time.Millisecond)
		ids = append(ids, submit(t, s, fmt.Sprint("d", i), runJob(100+i, "x")).JobID)
	}
	take(t, s, LanePipeline) // ids[0] running
	var seen []string
	cursor := ""
	for page := 0; page < 10; page++ {
		jobs, next, err := s.List(ctx, ListOptions{Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			seen = append(seen, j.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(seen) != 25 {
		t.Fatalf("paged %d jobs", len(seen))
	}
	for i := range seen {
		if seen[i] != ids[len(ids)-1-i] {
			t.Fatalf("order at %d: %s want %s", i, seen[i], ids[len(ids)-1-i])
		}
	}
	running, _, _ := s.List(ctx, ListOptions{State: job.StateRunning})
	if len(running) != 1 || running[0].ID != ids[0] {
		t.Fatalf("state filter: %d", len(running))
	}
	st, _ := s.Stats(ctx)
	if st.ByState[job.StateQueued] != 24 || st.ByState[job.StateRunning] != 1 || st.Queued != 24 || st.Leased != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConcurrentSubmitsGroupAndDedupe(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	var wg sync.WaitGroup
	const clients, each = 20, 25
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				// Every delivery is sent twice; issue numbers are unique per delivery.
				n := c*each + i
				for r := 0; r < 2; r++ {
					if _, err := s.Submit(ctx, Submission{DeliveryID: fmt.Sprint("dl-", n), Action: ActionEnqueue, Job: runJob(n+1, "x")}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}(c)
	}
	wg.Wait()
	st, _ := s.Stats(ctx)
	if st.ByState[job.StateQueued] != clients*each || st.Deliveries != clients*each {
		t.Fatalf("stats %+v", st)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s, _, _ := open(t)
	s.Close()
	_, err := s.Submit(context.Background(), Submission{DeliveryID: "x", Action: ActionEnqueue, Job: runJob(1, "")})
	if !errs.Is(err, errs.KindUnavailable) {
		t.Fatalf("submit on closed store: %v", err)
	}
	if s.Ping() == nil {
		t.Fatal("ping on closed store")
	}
}

func TestPruneDeliveries(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := open(t)
	submit(t, s, "old", runJob(1, ""))
	clk.Add(8 * 24 * time.Hour)
	submit(t, s, "new", runJob(2, ""))
	n, err := s.PruneDeliveries(ctx, clk.Now().Add(-7*24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d %v", n, err)
	}
	if ok, _ := s.HasDelivery(ctx, "old"); ok {
		t.Fatal("old delivery kept")
	}
	if ok, _ := s.HasDelivery(ctx, "new"); !ok {
		t.Fatal("new delivery pruned")
	}
}

func TestArtifactsAndNotices(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	a := submit(t, s, "d1", runJob(1, ""))
	if err := s.PutArtifact(ctx, a.JobID, "plan.json", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	names, _ := s.Artifacts(ctx, a.JobID)
	if names["plan.json"] != 2 {
		t.Fatalf("artifacts %v", names)
	}
	if _, err := s.Artifact(ctx, a.JobID, "nope"); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("missing artifact: %v", err)
	}
	first, _ := s.MarkNotice(ctx, "a/b#1", "denied")
	second, _ := s.MarkNotice(ctx, "a/b#1", "denied")
	if !first || second {
		t.Fatalf("notice first=%v second=%v", first, second)
	}
}

func TestFeedbackConsumedOnce(t *testing.T) {
	s, _, _ := open(t)
	j := runJob(1, "use fmt.Sprintf")
	j.Trigger.CommentID = 77
	first := submit(t, s, "d1", j)
	// A different delivery of the same comment (not a redelivery) starts nothing.
	again := submit(t, s, "d2", j)
	if first.JobID == "" || again.JobID != "" || again.Ignored == "" {
		t.Fatalf("first %+v again %+v", first, again)
	}
}

func TestCancelIssueInterruptsRunningJob(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	var interrupted []string
	s.OnCancel(func(id string) { interrupted = append(interrupted, id) })
	a := submit(t, s, "d1", runJob(2, "a"))
	take(t, s, LanePipeline)
	b := submit(t, s, "d2", runJob(2, "b"))
	rc, err := s.Submit(ctx, Submission{DeliveryID: "d3", Action: ActionCancelIssue, Key: job.IssueKey("codertocat/hello-world", 2), Reason: "the pull request was closed"})
	if err != nil || rc.Status != "canceled" {
		t.Fatalf("receipt %+v %v", rc, err)
	}
	if len(interrupted) != 1 || interrupted[0] != a.JobID {
		t.Fatalf("interrupted %v, want the running job %s", interrupted, a.JobID)
	}
	if j := mustGet(t, s, b.JobID); j.State != job.StateCanceled {
		t.Fatalf("waiting job %s", j.State)
	}
}

func TestInstallationRecordedWithItsDelivery(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	in := &Installation{ID: 42, Account: "octo", Repositories: []string{"octo/a"}}
	if _, err := s.Submit(ctx, Submission{DeliveryID: "i1", Action: ActionIgnore, Reason: "installation created recorded", Installation: in}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetInstallation(ctx, 42)
	if err != nil || got.Account != "octo" || got.UpdatedAt.IsZero() {
		t.Fatalf("installation %+v %v", got, err)
	}
	if _, err := s.Submit(ctx, Submission{DeliveryID: "i2", Action: ActionIgnore, Reason: "deleted", Installation: in, InstallationDeleted: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetInstallation(ctx, 42); !errs.Is(err, errs.KindNotFound) {
		t.Fatalf("deleted installation still there: %v", err)
	}
	// A redelivery of the creation is a duplicate and does not bring it back.
	if rc, _ := s.Submit(ctx, Submission{DeliveryID: "i1", Action: ActionIgnore, Installation: in}); !rc.Duplicate {
		t.Fatal("redelivery not a duplicate")
	}
	if _, err := s.GetInstallation(ctx, 42); !errs.Is(err, errs.KindNotFound) {
		t.Fatal("a redelivery re-applied the installation")
	}
}

// A job stopped at a limit keeps its stop through the retry that resumes
// it, and through that run's returns to the queue, until a run ends.
func TestStopLastsUntilARunEnds(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	a := submit(t, s, "d1", runJob(5, ""))
	take(t, s, LanePipeline)
	if _, err := s.Finish(ctx, a.JobID, Result{State: job.StateFailed, Outcome: job.OutcomeLimitReached, Stop: job.StopDailyCost}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retry(ctx, a.JobID, job.Trigger{Sender: "maintainer", Command: "retry"}); err != nil {
		t.Fatal(err)
	}
	for i, r := range []Result{{State: job.StateQueued, Error: "the branch moved"}, {State: job.StateSucceeded, Outcome: job.OutcomePRUpdated}} {
		got := take(t, s, LanePipeline)
		if got == nil || got.Stop != job.StopDailyCost {
			t.Fatalf("lease %d: %+v", i, got)
		}
		if _, err := s.Finish(ctx, a.JobID, r); err != nil {
			t.Fatal(err)
		}
	}
	if j := mustGet(t, s, a.JobID); j.Stop != "" {
		t.Fatalf("stop %q after a run that ended", j.Stop)
	}
}
