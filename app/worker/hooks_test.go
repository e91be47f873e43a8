package worker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/poll"
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
