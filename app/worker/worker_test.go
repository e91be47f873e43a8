package worker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
)

type runFunc func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error)

func (f runFunc) Run(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
	return f(ctx, j, rt)
}

type perms map[string]string // sender → permission

func (p perms) Allowed(ctx context.Context, j *job.Job) (bool, string, error) {
	perm, ok := p[j.Trigger.Sender]
	if !ok {
		perm = "write"
	}
	return perm == "admin" || perm == "maintain" || perm == "write", perm, nil
}

type notes struct {
	mu      sync.Mutex
	denied  []string
	control []ControlReply
}

func (n *notes) Denied(ctx context.Context, j *job.Job, perm string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.denied = append(n.denied, j.Trigger.Sender+":"+perm)
	return nil
}

func (n *notes) Control(ctx context.Context, j *job.Job, r ControlReply) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.control = append(n.control, r)
	return nil
}

type finished chan *job.Job

func (f finished) JobFinished(j *job.Job) { f <- j }

type env struct {
	seq  int
	st   *store.Store
	pool *Pool
	done finished
	n    *notes
	path string
	// early holds finishes wait saw before their own wait asked.
	early map[string][]*job.Job
}

func setup(t *testing.T, r Runner, p perms, mod func(*Options)) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "selfcode.db")
	st, err := store.Open(store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, done: make(finished, 100), n: &notes{}, path: path}
	o := Options{Store: st, Runner: r, Permissions: p, Notifier: e.n, Observer: e.done, Workers: 2, Tick: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	if e.pool, err = New(o); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.pool.Shutdown(ctx)
		st.Close()
	})
	return e
}

func (e *env) submit(t *testing.T, issue int, sender string) string {
	t.Helper()
	e.seq++
	rc, err := e.st.Submit(context.Background(), store.Submission{
		DeliveryID: fmt.Sprintf("%s-%d", t.Name(), e.seq), Action: store.ActionEnqueue,
		Job: &job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: issue, Trigger: job.Trigger{Sender: sender, Command: "run"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rc.JobID
}

func (e *env) control(t *testing.T, issue int, verb string) string {
	t.Helper()
	rc, err := e.st.Submit(context.Background(), store.Submission{
		DeliveryID: t.Name() + verb, Action: store.ActionControl,
		Job: &job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: issue, Trigger: job.Trigger{Sender: "maint", Command: verb}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rc.JobID
}

// wait returns the next finish of job id. Finishes of other jobs that
// arrive first are kept for their own wait: two jobs may end in either
// order (a cancel command and the job it cancels).
func (e *env) wait(t *testing.T, id string) *job.Job {
	t.Helper()
	if js := e.early[id]; len(js) > 0 {
		e.early[id] = js[1:]
		return js[0]
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case j := <-e.done:
			if j.ID == id {
				return j
			}
			if e.early == nil {
				e.early = map[string][]*job.Job{}
			}
			e.early[j.ID] = append(e.early[j.ID], j)
		case <-deadline:
			t.Fatalf("job %s did not finish", id)
		}
	}
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		run     runFunc
		sender  string
		state   job.State
		outcome job.Outcome
		errText string
	}{
		{"success", func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
			return job.OutcomePROpened, nil
		}, "maint", job.StateSucceeded, job.OutcomePROpened, ""},
		{"verification failed", func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
			return job.OutcomeVerificationFailed, nil
		}, "maint", job.StateFailed, job.OutcomeVerificationFailed, ""},
		{"permanent error", func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
			return "", errs.E(errs.KindPermanent, "repository not found", nil)
		}, "maint", job.StateFailed, job.OutcomeError, "repository not found"},
		{"panic", func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
			panic("nil map")
		}, "maint", job.StateFailed, job.OutcomeError, "panic: nil map"},
		{"read permission", func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
			t.Error("runner called for a sender without permission")
			return "", nil
		}, "reader", job.StateCanceled, job.OutcomeNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, tt.run, perms{"reader": "read"}, nil)
			j := e.wait(t, e.submit(t, 1, tt.sender))
			if j.State != tt.state || j.Outcome != tt.outcome {
				t.Fatalf("state %s outcome %s, want %s %s", j.State, j.Outcome, tt.state, tt.outcome)
			}
			if tt.errText != "" && !contains(j.Error, tt.errText) {
				t.Fatalf("error %q lacks %q", j.Error, tt.errText)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}
func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestDeniedRepliesOncePerIssue(t *testing.T) {
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) { return "", nil }), perms{"reader": "read"}, nil)
	e.wait(t, e.submit(t, 1, "reader"))
	e.wait(t, e.submit(t, 1, "reader"))
	e.wait(t, e.submit(t, 2, "reader"))
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if len(e.n.denied) != 2 {
		t.Fatalf("denied replies %v, want one per issue (2)", e.n.denied)
	}
}

func TestTransientErrorRetries(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return "", errs.E(errs.KindTransient, "502 from GitHub", nil)
		}
		return job.OutcomePRUpdated, nil
	}), nil, nil)
	j := e.wait(t, e.submit(t, 1, "maint"))
	if j.State != job.StateSucceeded || j.Attempts != 2 {
		t.Fatalf("state %s attempts %d", j.State, j.Attempts)
	}
}

func TestCancelRunningJob(t *testing.T) {
	started := make(chan string, 1)
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		started <- j.ID
		<-ctx.Done()
		return "", ctx.Err()
	}), nil, nil)
	id := e.submit(t, 1, "maint")
	<-started
	if _, err := e.st.Cancel(context.Background(), id, "operator"); err != nil {
		t.Fatal(err)
	}
	j := e.wait(t, id)
	if j.State != job.StateCanceled || j.Reason != "operator" {
		t.Fatalf("state %s reason %q", j.State, j.Reason)
	}
}

func TestKillSwitch(t *testing.T) {
	var mu sync.Mutex
	enabled := false
	asked := make(chan struct{}, 100)
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		return job.OutcomeNoChange, nil
	}), nil, func(o *Options) {
		o.Enabled = func() bool {
			select {
			case asked <- struct{}{}:
			default:
			}
			mu.Lock()
			defer mu.Unlock()
			return enabled
		}
	})
	id := e.submit(t, 1, "maint")
	for len(asked) > 0 { // looks from before the job was stored
		<-asked
	}
	// The pool looks at the queue several times with the job stored and
	// the switch off: each time it must leave the job alone. Waiting on the
	// pool's own question, not on a sleep: with more looks than workers,
	// some worker looked twice, so its first look's decision (lease or
	// not) is done, and a pool that ignored the switch has taken the job.
	for i := 0; i < 2*e.pool.o.Workers+1; i++ {
		e.st.Wake()
		select {
		case <-asked:
		case <-time.After(30 * time.Second):
			t.Fatal("the pool never asked whether it is enabled")
		}
	}
	if j, _ := e.st.Get(context.Background(), id); j.State != job.StateQueued {
		t.Fatalf("job %s while disabled", j.State)
	}
	select {
	case j := <-e.done:
		t.Fatalf("job %s finished while disabled", j.ID)
	default:
	}
	mu.Lock()
	enabled = true
	mu.Unlock()
	e.st.Wake()
	if j := e.wait(t, id); j.State != job.StateSucceeded {
		t.Fatalf("state %s", j.State)
	}
}

func TestShutdownLeavesJobForRestart(t *testing.T) {
	started := make(chan struct{}, 1)
	block := runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	path := filepath.Join(t.TempDir(), "selfcode.db")
	st, err := store.Open(store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(Options{Store: st, Runner: block, Permissions: perms{}, Notifier: &notes{}, Tick: 20 * time.Millisecond})
	p.Start(context.Background())
	rc, _ := st.Submit(context.Background(), store.Submission{DeliveryID: "x", Action: store.ActionEnqueue,
		Job: &job.Job{Repo: job.Repo{Owner: "o", Name: "r"}, Issue: 1, Trigger: job.Trigger{Sender: "m"}}})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); err == nil {
		t.Fatal("shutdown should report interrupted jobs")
	}
	st.Close()

	done := make(finished, 1)
	st2, err := store.Open(store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	p2, _ := New(Options{Store: st2, Observer: done, Permissions: perms{}, Notifier: &notes{}, Tick: 20 * time.Millisecond,
		Runner: runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
			return job.OutcomePROpened, nil
		})})
	p2.Start(context.Background())
	defer p2.Shutdown(context.Background())
	select {
	case j := <-done:
		if j.ID != rc.JobID || j.State != job.StateSucceeded || j.Attempts != 2 {
			t.Fatalf("after restart: %s %s attempts %d", j.ID, j.State, j.Attempts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("interrupted job did not run after restart")
	}
}

func TestControlCommands(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	e := setup(t, runFunc(func(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "", errors.New("model said no")
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}), nil, nil)
	id := e.submit(t, 9, "maint")
	<-started
	e.wait(t, e.control(t, 9, "status"))
	e.wait(t, e.control(t, 9, "cancel"))
	if j := e.wait(t, id); j.State != job.StateCanceled {
		t.Fatalf("cancel command left job %s", j.State)
	}
	e.wait(t, e.control(t, 9, "retry"))
	<-started
	close(release)
	if j := e.wait(t, id); j.State != job.StateFailed || j.Attempts != 1 {
		t.Fatalf("retried job %s attempts %d", j.State, j.Attempts)
	}
	e.wait(t, e.control(t, 9, "help"))
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	verbs := ""
	for _, r := range e.n.control {
		verbs += r.Verb + ","
	}
	if verbs != "status,cancel,retry,help," {
		t.Fatalf("replies %s", verbs)
	}
	if e.n.control[0].Target == nil || e.n.control[0].Target.ID != id || len(e.n.control[1].Affected) != 1 {
		t.Fatalf("status/cancel replies %+v", e.n.control[:2])
	}
}
