package worker

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/internal/testclock"
)

func TestRunnerSkipEndsCanceledWithTheReason(t *testing.T) {
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		return "", errs.E(errs.KindCanceled, "selfcode is disabled for this repository", nil)
	}), nil, nil)
	j := e.wait(t, e.submit(t, 1, "maint"))
	if j.State != job.StateCanceled || !strings.Contains(j.Reason, "disabled for this repository") {
		t.Fatalf("state %s reason %q", j.State, j.Reason)
	}
}

func TestOvernightJobStoppedAtItsLimit(t *testing.T) {
	var mu sync.Mutex
	var ended []*job.Job
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		<-ctx.Done() // a job that would run for ever
		return "", ctx.Err()
	}), nil, func(o *Options) {
		o.OvernightMaxDuration = 200 * time.Millisecond
		o.Finished = func(ctx context.Context, leased, end *job.Job) {
			mu.Lock()
			ended = append(ended, end)
			mu.Unlock()
		}
	})
	rc, err := e.st.Submit(context.Background(), store.Submission{DeliveryID: "n1", Action: store.ActionEnqueue,
		Job: &job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 3, Overnight: true, Trigger: job.Trigger{Sender: "maint", Command: "run"}}})
	if err != nil {
		t.Fatal(err)
	}
	j := e.wait(t, rc.JobID)
	if j.State != job.StateFailed || j.Outcome != job.OutcomeError || !strings.Contains(j.Error, "SELFCODE_OVERNIGHT_MAX_DURATION") {
		t.Fatalf("state %s outcome %s error %q", j.State, j.Outcome, j.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ended) != 1 || ended[0].ID != j.ID || !ended[0].State.Terminal() {
		t.Fatalf("Finished hook saw %+v", ended)
	}
}

func TestAdmitDefersWithoutStarting(t *testing.T) {
	var mu sync.Mutex
	ran := 0
	until := time.Now().Add(time.Hour)
	admit := true
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		mu.Lock()
		ran++
		mu.Unlock()
		return job.OutcomeNoChange, nil
	}), nil, func(o *Options) {
		o.Admit = func(ctx context.Context, j *job.Job) (time.Time, string, error) {
			mu.Lock()
			defer mu.Unlock()
			if admit {
				return time.Time{}, "", nil
			}
			return until, "daily token budget used up", nil
		}
	})
	mu.Lock()
	admit = false
	mu.Unlock()
	id := e.submit(t, 1, "maint")
	var j *job.Job
	poll.Until(t, "the job to be deferred", 10*time.Second, func() bool {
		j, _ = e.st.Get(context.Background(), id)
		return j.State == job.StateQueued && j.ScheduledFor.Equal(until.UTC())
	})
	if j.Attempts != 0 || j.Reason != "daily token budget used up" {
		t.Fatalf("deferred job %+v", j)
	}
	mu.Lock()
	if ran != 0 {
		t.Fatalf("deferred job ran %d times", ran)
	}
	admit = true
	mu.Unlock()
	// Its time comes: it runs.
	if ids, err := e.st.PromoteDue(context.Background(), until.Add(time.Second)); err != nil || len(ids) != 1 {
		t.Fatalf("promote %v %v", ids, err)
	}
	if j := e.wait(t, id); j.State != job.StateSucceeded || j.Attempts != 1 {
		t.Fatalf("state %s attempts %d", j.State, j.Attempts)
	}
}

func TestPromoteHookRunsEveryTick(t *testing.T) {
	calls := make(chan time.Time, 100)
	setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		return job.OutcomeNoChange, nil
	}), nil, func(o *Options) {
		o.Promote = func(ctx context.Context, now time.Time) error {
			select {
			case calls <- now:
			default:
			}
			return nil
		}
	})
	timeout := time.After(10 * time.Second)
	for i := 0; i < 3; i++ {
		select {
		case <-calls:
		case <-timeout:
			t.Fatalf("Promote called %d times", i)
		}
	}
}

// TestTimeLimitsStopTheRun: the whole run is bounded by the default job
// timeout until the runner sets the repository's, and an overnight job by
// its own limit too, whichever comes first; the run's context ends with a
// *job.StopError naming it, the runner still has Grace to save its work,
// and the job ends limit_reached with that stop.
func TestTimeLimitsStopTheRun(t *testing.T) {
	tests := []struct {
		name       string
		overnight  bool
		setTimeout time.Duration // what the runner sets (0: nothing)
		advance    time.Duration
		want       job.Stop
		detail     string
	}{
		{"the default before the runner knows the repository's", false, 0, time.Hour, job.StopJobTimeout, "the job ran 1h0m0s"},
		{"the repository's job_timeout, shorter", false, 10 * time.Minute, 10 * time.Minute, job.StopJobTimeout, "the job ran 10m0s"},
		{"the repository's job_timeout, longer", false, 3 * time.Hour, 3 * time.Hour, job.StopJobTimeout, "the job ran 3h0m0s"},
		{"the overnight limit comes first", true, 2 * time.Hour, 30 * time.Minute, job.StopOvertime, "SELFCODE_OVERNIGHT_MAX_DURATION 30m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testclock.New(time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC))
			st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db"), Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			var savedErr error
			r := runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
				if tt.setTimeout > 0 {
					rt.SetTimeout(tt.setTimeout)
				}
				close(started)
				<-ctx.Done()
				stop := (*job.StopError)(nil)
				if !errors.As(context.Cause(ctx), &stop) {
					return "", ctx.Err()
				}
				gctx, cancel := rt.Grace()
				defer cancel()
				savedErr = rt.PutArtifact(gctx, "work.txt", []byte("saved"))
				return job.OutcomeLimitReached, stop
			})
			pool, err := New(Options{Store: st, Runner: r, Permissions: perms{}, Notifier: &notes{}, Tick: 5 * time.Millisecond,
				JobTimeout: time.Hour, OvernightMaxDuration: 30 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := pool.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				pool.Shutdown(ctx)
				st.Close()
			})
			rc, err := st.Submit(context.Background(), store.Submission{DeliveryID: "d", Action: store.ActionEnqueue,
				Job: &job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 1, Overnight: tt.overnight, Trigger: job.Trigger{Sender: "maint", Command: "run"}}})
			if err != nil {
				t.Fatal(err)
			}
			<-started
			clk.Add(tt.advance)
			var j *job.Job
			poll.Until(t, "the job to stop", 10*time.Second, func() bool {
				j, _ = st.Get(context.Background(), rc.JobID)
				return j.State.Terminal()
			})
			if j.State != job.StateFailed || j.Outcome != job.OutcomeLimitReached || j.Stop != tt.want || !strings.Contains(j.Error, tt.want.Describe()) ||
				!strings.Contains(j.Error, tt.detail) {
				t.Fatalf("state %s outcome %s stop %s error %q", j.State, j.Outcome, j.Stop, j.Error)
			}
			if b, err := st.Artifact(context.Background(), rc.JobID, "work.txt"); err != nil || string(b) != "saved" || savedErr != nil {
				t.Fatalf("work not saved in the grace period: %q %v %v", b, err, savedErr)
			}
		})
	}
}
