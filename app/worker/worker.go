package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
)

// Runner does a pipeline job's work (plan, edit, verify, publish).
type Runner interface {
	Run(ctx context.Context, j *job.Job, rt Runtime) (job.Outcome, error)
}

// Runtime is what a Runner may do to its own job while it runs.
type Runtime interface {
	Update(ctx context.Context, fn func(*job.Job) error) (*job.Job, error)
	PutArtifact(ctx context.Context, name string, data []byte) error
	Logger() *slog.Logger
	// SetTimeout sets how long the whole run may last from its start (the
	// repository's limits.job_timeout, once the runner has read it); the
	// run's context is then canceled with a *job.StopError cause — before
	// SetTimeout returns when the run is already past it.
	SetTimeout(d time.Duration)
	// Grace is the context a run stopped at a time limit saves its work
	// in: Options.PublishGrace long, and ended early only by a shutdown
	// that stops waiting for running jobs.
	Grace() (context.Context, context.CancelFunc)
}

// PermissionChecker decides whether a job's sender may trigger selfcode.
type PermissionChecker interface {
	Allowed(ctx context.Context, j *job.Job) (allowed bool, permission string, err error)
}

// Notifier posts the replies the pool itself owes on GitHub.
type Notifier interface {
	// Denied tells a sender without permission, once per issue, why nothing happens.
	Denied(ctx context.Context, j *job.Job, permission string) error
	// Control answers a control command with what was done.
	Control(ctx context.Context, j *job.Job, r ControlReply) error
}

// ControlReply is the result of a control command.
type ControlReply struct {
	Verb     string     // cancel, retry, status, help
	Target   *job.Job   // the job acted on or reported (nil when none)
	Affected []*job.Job // cancel: the jobs canceled
	Err      string     // why the command could not be done
}

// Observer is told about every finished job (metrics).
type Observer interface {
	JobFinished(j *job.Job)
}

// Options configures a Pool.
type Options struct {
	Store          *store.Store
	Runner         Runner
	Permissions    PermissionChecker
	Notifier       Notifier
	Observer       Observer
	Workers        int           // pipeline jobs at once; default 2
	ControlWorkers int           // control replies at once; default 1
	Instance       string        // lease owner name
	LeaseTTL       time.Duration // default 1m
	MaxAttempts    int           // default 3
	// Hold, when set, says why no job can run in this process (e.g. no
	// GitHub App credentials): nothing is leased, jobs stay stored and
	// queued, and the reason is logged at start.
	Hold string
	// Enabled is the kill switch; pipeline jobs are not leased while it
	// returns false. nil means always enabled.
	Enabled func() bool
	// Tick bounds how long an idle worker waits before looking again (for
	// scheduled jobs and the kill switch); default 1s.
	Tick   time.Duration
	Logger *slog.Logger

	// Promote makes scheduled jobs whose time has come runnable; it runs
	// every Tick and after every job. Default: Store.PromoteDue (the
	// overnight scheduler replaces it to run one job per repository).
	Promote func(ctx context.Context, now time.Time) error
	// Admit, when set, is asked before a permitted pipeline job starts
	// whether it may start now (e.g. the daily token budget). A non-zero
	// until returns the job to the queue, unstarted, until then.
	Admit func(ctx context.Context, j *job.Job) (until time.Time, reason string, err error)
	// Finished, when set, is called after every recorded result of a
	// pipeline job (final or back to the queue) with the job as it was
	// leased and as it ended.
	Finished func(ctx context.Context, leased, ended *job.Job)
	// OvernightMaxDuration bounds each overnight job's run; zero: unbounded.
	OvernightMaxDuration time.Duration
	// JobTimeout bounds each pipeline job's whole run (checkout to
	// publish) until its runner sets the repository's own
	// (Runtime.SetTimeout); zero: unbounded until then.
	JobTimeout time.Duration
	// PublishGrace is how long a run stopped at a time limit may still
	// take to save its work (Runtime.Grace); default DefaultPublishGrace.
	PublishGrace time.Duration
}

// DefaultPublishGrace is the default Options.PublishGrace
// (SELFCODE_PUBLISH_GRACE): enough to commit, push and open a draft.
const DefaultPublishGrace = 2 * time.Minute

// Pool runs jobs.
type Pool struct {
	o        Options
	log      *slog.Logger
	stopping chan struct{}
	runCtx   context.Context
	kill     context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	started bool
	stopped bool

	kick chan struct{} // asks maintain to promote now
}

// Causes a run context is canceled with (and a *job.StopError at a time
// limit).
var (
	errCanceled  = errors.New("job canceled")
	errShutdown  = errors.New("server shutting down")
	errDeferring = errors.New("job deferred")
)

// New checks opts and builds a Pool; Start runs it.
func New(opts Options) (*Pool, error) {
	if opts.Store == nil || (opts.Hold == "" && (opts.Runner == nil || opts.Permissions == nil || opts.Notifier == nil)) {
		return nil, errs.E(errs.KindInvalid, "worker pool needs a store, runner, permission checker and notifier", nil)
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.ControlWorkers <= 0 {
		opts.ControlWorkers = 1
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = time.Minute
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 3
	}
	if opts.Tick <= 0 {
		opts.Tick = time.Second
	}
	if opts.Instance == "" {
		opts.Instance = "selfcode"
	}
	if opts.PublishGrace <= 0 {
		opts.PublishGrace = DefaultPublishGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Enabled == nil {
		opts.Enabled = func() bool { return true }
	}
	if opts.Promote == nil {
		st := opts.Store
		opts.Promote = func(ctx context.Context, now time.Time) error {
			_, err := st.PromoteDue(ctx, now)
			return err
		}
	}
	runCtx, kill := context.WithCancel(context.Background())
	return &Pool{
		o: opts, log: opts.Logger, stopping: make(chan struct{}),
		runCtx: runCtx, kill: kill, running: map[string]context.CancelCauseFunc{},
		kick: make(chan struct{}, 1),
	}, nil
}

// Start returns jobs left leased by a dead process to the queue, then starts
// the workers and the scheduler.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errs.E(errs.KindConflict, "worker pool already started", nil)
	}
	p.started = true
	p.mu.Unlock()
	if p.o.Hold != "" {
		p.log.Warn("jobs are stored but not run", "reason", p.o.Hold)
	}
	p.o.Store.OnCancel(p.interrupt)
	rec, err := p.o.Store.RecoverLeases(ctx, p.o.MaxAttempts)
	if err != nil {
		return fmt.Errorf("recover leased jobs: %w", err)
	}
	for _, id := range rec.Requeued {
		p.log.Info("job returned to the queue after a restart", "job_id", id)
	}
	for _, id := range rec.Failed {
		p.log.Warn("job failed: too many attempts", "job_id", id)
	}
	for i := 0; i < p.o.Workers; i++ {
		p.wg.Add(1)
		go p.loop(store.LanePipeline, fmt.Sprintf("%s/w%d", p.o.Instance, i))
	}
	for i := 0; i < p.o.ControlWorkers; i++ {
		p.wg.Add(1)
		go p.loop(store.LaneControl, fmt.Sprintf("%s/c%d", p.o.Instance, i))
	}
	p.wg.Add(1)
	go p.maintain()
	return nil
}

// Shutdown stops leasing, lets running jobs finish until ctx is done, then
// interrupts them. Interrupted jobs keep their lease so that the next start
// runs them again.
func (p *Pool) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	close(p.stopping)
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		p.kill()
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	for _, c := range p.running {
		c(errShutdown)
	}
	p.mu.Unlock()
	p.kill()
	<-done
	return fmt.Errorf("shutdown: running jobs interrupted: %w", ctx.Err())
}

func (p *Pool) interrupt(id string) {
	p.mu.Lock()
	c := p.running[id]
	p.mu.Unlock()
	if c != nil {
		c(errCanceled)
	}
}

// Running lists the ids of jobs this pool is running now.
func (p *Pool) Running() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.running))
	for id := range p.running {
		out = append(out, id)
	}
	return out
}

func (p *Pool) isStopping() bool {
	select {
	case <-p.stopping:
		return true
	default:
		return false
	}
}

func (p *Pool) loop(lane store.Lane, owner string) {
	defer p.wg.Done()
	tick := time.NewTicker(p.o.Tick)
	defer tick.Stop()
	for !p.isStopping() {
		wake := p.o.Store.Wait()
		var j *job.Job
		if p.o.Hold == "" && (lane == store.LaneControl || p.o.Enabled()) {
			var err error
			j, err = p.o.Store.Lease(p.runCtx, lane, owner, p.o.LeaseTTL)
			if err != nil {
				p.log.Error("lease a job", "err", err)
			}
		}
		if j == nil {
			select {
			case <-wake:
			case <-tick.C:
			case <-p.stopping:
			}
			continue
		}
		p.execute(owner, j)
	}
}

// maintain promotes scheduled jobs whose time has come and forgets delivery
// ids older than the redelivery window.
func (p *Pool) maintain() {
	defer p.wg.Done()
	tick := time.NewTicker(p.o.Tick)
	defer tick.Stop()
	lastPrune := time.Time{}
	for {
		now := p.o.Store.Now()
		if err := p.o.Promote(p.runCtx, now); err != nil {
			p.log.Error("promote scheduled jobs", "err", err)
		}
		if now.Sub(lastPrune) > time.Hour {
			if n, err := p.o.Store.PruneDeliveries(p.runCtx, now.Add(-8*24*time.Hour)); err != nil {
				p.log.Error("prune delivery ids", "err", err)
			} else if n > 0 {
				p.log.Info("pruned delivery ids", "count", n)
			}
			lastPrune = now
		}
		select {
		case <-tick.C:
		case <-p.kick:
		case <-p.stopping:
			return
		}
	}
}

// Kick asks the scheduler loop to promote due jobs now rather than at the
// next tick (the pool kicks itself after every job).
func (p *Pool) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// limits are the time limits of one run, read off the store's clock, so a
// test that moves a fake clock decides when they are reached.
type limits struct {
	mu       sync.Mutex
	start    time.Time
	timeout  time.Duration // job_timeout from start; 0: none
	overtime time.Time     // an overnight job's deadline; zero: none
	detail   string        // overtime's setting, for the stop's detail
	// now and stop, when set, let setTimeout stop a run at once.
	now  func() time.Time
	stop context.CancelCauseFunc
}

// setTimeout replaces the run's job_timeout (counted from its start). A
// run already past the new one — a repository's limit shorter than its
// checkout took — is stopped before setTimeout returns, so that nothing
// more starts.
func (l *limits) setTimeout(d time.Duration) {
	l.mu.Lock()
	l.timeout = d
	l.mu.Unlock()
	if l.now == nil || l.stop == nil {
		return
	}
	if stop := l.reached(l.now()); stop != nil {
		l.stop(stop)
	}
}

// reached is the limit now is at or past, or nil.
func (l *limits) reached(now time.Time) *job.StopError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.overtime.IsZero() && !now.Before(l.overtime) {
		return &job.StopError{Stop: job.StopOvertime, Detail: l.detail}
	}
	if l.timeout > 0 && !now.Before(l.start.Add(l.timeout)) {
		return &job.StopError{Stop: job.StopJobTimeout, Detail: fmt.Sprintf("the job ran %s", l.timeout)}
	}
	return nil
}

// watchLimits cancels a run with its *job.StopError once the store's clock
// reaches one of its limits, looking every Tick, until ctx ends.
func (p *Pool) watchLimits(ctx context.Context, l *limits, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(p.o.Tick)
	defer tick.Stop()
	for {
		if stop := l.reached(p.o.Store.Now()); stop != nil {
			cancel(stop)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *Pool) execute(owner string, j *job.Job) {
	log := p.log.With("job_id", j.ID, "repo", j.Repo.FullName(), "issue", j.Issue, "installation_id", j.InstallationID)
	ctx, cancel := context.WithCancelCause(p.runCtx)
	defer cancel(nil)
	lim := &limits{start: p.o.Store.Now(), timeout: p.o.JobTimeout, now: p.o.Store.Now, stop: cancel}
	if j.Overnight && p.o.OvernightMaxDuration > 0 {
		lim.overtime = lim.start.Add(p.o.OvernightMaxDuration)
		lim.detail = fmt.Sprintf("SELFCODE_OVERNIGHT_MAX_DURATION %s", p.o.OvernightMaxDuration)
	}
	if j.Kind != job.KindControl {
		go p.watchLimits(ctx, lim, cancel)
	}
	p.mu.Lock()
	p.running[j.ID] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.running, j.ID)
		p.mu.Unlock()
	}()
	// A cancel that arrived between lease and registration.
	if cur, err := p.o.Store.Get(ctx, j.ID); err == nil && cur.CancelRequested {
		cancel(errCanceled)
	}

	hbDone := make(chan struct{})
	// Beats until the run returns, through the grace a run stopped at a
	// limit has to save its work.
	go p.heartbeat(p.runCtx, j.ID, owner, hbDone, log)
	defer close(hbDone)

	log.Info("job started", "kind", j.Kind, "attempt", j.Attempts)
	res := p.run(ctx, j, log, lim)
	var stop *job.StopError
	switch cause := context.Cause(ctx); {
	case errors.Is(res.err, errDeferring):
		return
	case errors.Is(cause, errShutdown):
		log.Warn("job interrupted by shutdown; it runs again after restart")
		return
	case errors.As(cause, &stop) && res.State != job.StateSucceeded && res.Stop == "":
		// Stopped at a time limit, and the runner did not save the work.
		res.Result = store.Result{State: job.StateFailed, Outcome: job.OutcomeError, Stop: stop.Stop, Error: stop.Error()}
		if res.Error != "" && res.Error != stop.Error() {
			res.Result.Error += "; " + res.Error
		}
	case errors.Is(cause, errCanceled):
		res.Result = store.Result{State: job.StateCanceled, Reason: "canceled on request"}
		if cur, err := p.o.Store.Get(context.Background(), j.ID); err == nil && cur.Reason != "" {
			res.Result.Reason = cur.Reason
		}
	}
	fin, err := p.o.Store.Finish(context.Background(), j.ID, res.Result)
	if err != nil {
		log.Error("record job result", "err", err)
		return
	}
	p.Kick()
	if p.o.Finished != nil && j.Kind != job.KindControl {
		p.o.Finished(context.Background(), j, fin)
	}
	log.Info("job finished", "state", fin.State, "outcome", fin.Outcome, "duration_ms", fin.Duration().Milliseconds(), "error", fin.Error)
	if p.o.Observer != nil && fin.State.Terminal() {
		p.o.Observer.JobFinished(fin)
	}
}

func (p *Pool) heartbeat(ctx context.Context, id, owner string, done <-chan struct{}, log *slog.Logger) {
	t := time.NewTicker(p.o.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.o.Store.Heartbeat(context.Background(), id, owner, p.o.LeaseTTL); err != nil {
				log.Error("heartbeat", "err", err)
			}
		}
	}
}

// runResult is how a run ended; err is errDeferring when the job went back
// to the queue unstarted (nothing left to record).
type runResult struct {
	store.Result
	err error
}

// run does the job and maps how it ended to a stored result. Panics become
// failures.
func (p *Pool) run(ctx context.Context, j *job.Job, log *slog.Logger, lim *limits) (res runResult) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("job panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res = runResult{Result: store.Result{State: job.StateFailed, Outcome: job.OutcomeError, Error: fmt.Sprintf("internal error: panic: %v", r)}}
		}
	}()
	allowed, perm, err := p.o.Permissions.Allowed(ctx, j)
	if err != nil {
		return runResult{Result: p.failure(j, fmt.Errorf("check permission of %s: %w", j.Trigger.Sender, err))}
	}
	if !allowed {
		if first, merr := p.o.Store.MarkNotice(ctx, j.Key(), "permission-denied"); merr == nil && first {
			if nerr := p.o.Notifier.Denied(ctx, j, perm); nerr != nil {
				log.Error("reply to sender without permission", "err", nerr)
			}
		}
		return runResult{Result: store.Result{State: job.StateCanceled, Reason: fmt.Sprintf("sender %s has %s permission; admin, maintain or write is needed", j.Trigger.Sender, perm)}}
	}
	if j.Kind == job.KindControl {
		return runResult{Result: p.control(ctx, j, log)}
	}
	if p.o.Admit != nil && ctx.Err() == nil { // a job canceled meanwhile is not deferred
		until, reason, err := p.o.Admit(ctx, j)
		if err != nil {
			return runResult{Result: p.failure(j, fmt.Errorf("admit job: %w", err))}
		}
		if !until.IsZero() {
			if _, err := p.o.Store.Defer(context.Background(), j.ID, until, reason); err != nil {
				return runResult{Result: p.failure(j, fmt.Errorf("defer job: %w", err))}
			}
			log.Info("job deferred", "until", until, "reason", reason)
			return runResult{err: errDeferring}
		}
	}
	return runResult{Result: p.pipeline(ctx, j, log, lim)}
}

// pipeline runs a pipeline job through the Runner and maps how it ended.
func (p *Pool) pipeline(ctx context.Context, j *job.Job, log *slog.Logger, lim *limits) store.Result {
	rt := &runtime{store: p.o.Store, id: j.ID, log: log, limits: lim,
		grace: func() (context.Context, context.CancelFunc) { return context.WithTimeout(p.runCtx, p.o.PublishGrace) }}
	outcome, err := p.o.Runner.Run(ctx, j, rt)
	if stop := (*job.StopError)(nil); errors.As(err, &stop) {
		// Stopped at a limit; the runner saved the work so far.
		return store.Result{State: job.StateFailed, Outcome: job.OutcomeLimitReached, Stop: stop.Stop, Error: stop.Error()}
	}
	if err != nil {
		if context.Cause(ctx) != nil {
			return store.Result{State: job.StateFailed, Outcome: job.OutcomeError, Error: err.Error()}
		}
		if errs.Is(err, errs.KindCanceled) {
			// The runner decided not to do the job (e.g. `enabled: false`
			// or a plan too wide) and told the issue why.
			return store.Result{State: job.StateCanceled, Reason: err.Error()}
		}
		return p.failure(j, err)
	}
	switch outcome {
	case job.OutcomeVerificationFailed, job.OutcomeUnverified, job.OutcomeError, job.OutcomeLimitReached:
		return store.Result{State: job.StateFailed, Outcome: outcome}
	}
	return store.Result{State: job.StateSucceeded, Outcome: outcome}
}

// failure maps a run error to a result: transient errors go back to the
// queue until the attempt limit, everything else fails the job.
func (p *Pool) failure(j *job.Job, err error) store.Result {
	if errs.Retryable(err) && j.Attempts < p.o.MaxAttempts {
		return store.Result{State: job.StateQueued, Error: err.Error()}
	}
	return store.Result{State: job.StateFailed, Outcome: job.OutcomeError, Error: err.Error()}
}

func (p *Pool) control(ctx context.Context, j *job.Job, log *slog.Logger) store.Result {
	r := ControlReply{Verb: j.Trigger.Command}
	key := j.Key()
	switch j.Trigger.Command {
	case "cancel":
		if j.TargetJobID != "" {
			// The Cancel button of one job's check run: that job.
			target, err := p.o.Store.Cancel(ctx, j.TargetJobID, fmt.Sprintf("canceled by %s", j.Trigger.Sender))
			switch {
			case err == nil:
				r.Affected = []*job.Job{target}
			case errs.Is(err, errs.KindConflict) || errs.Is(err, errs.KindNotFound):
				r.Err = err.Error()
			default:
				return p.failure(j, err)
			}
			break
		}
		jobs, err := p.o.Store.CancelIssue(ctx, key, fmt.Sprintf("canceled by %s", j.Trigger.Sender))
		if err != nil {
			return p.failure(j, err)
		}
		r.Affected = jobs
		if len(jobs) == 0 {
			r.Err = "there is no queued, scheduled or running job for this issue"
		}
	case "retry":
		id := j.TargetJobID
		if id == "" {
			last, err := p.o.Store.Last(ctx, key)
			if err != nil {
				return p.failure(j, err)
			}
			if last != nil {
				id = last.ID
			}
		}
		if id == "" {
			r.Err = "there is no earlier job for this issue to retry"
			break
		}
		t := j.Trigger
		t.Command = "retry"
		target, err := p.o.Store.Retry(ctx, id, t)
		r.Target = target
		if err != nil {
			if !errs.Is(err, errs.KindConflict) && !errs.Is(err, errs.KindNotFound) {
				return p.failure(j, err)
			}
			r.Err = err.Error()
		}
	case "status":
		act, err := p.o.Store.Active(ctx, key)
		if err != nil {
			return p.failure(j, err)
		}
		if act == nil {
			if act, err = p.o.Store.Last(ctx, key); err != nil {
				return p.failure(j, err)
			}
		}
		r.Target = act
	case "help":
	case "closed":
		r.Err = "this pull request is closed; selfcode does not change closed pull requests"
	default:
		return store.Result{State: job.StateFailed, Outcome: job.OutcomeError, Error: "unknown control command " + j.Trigger.Command}
	}
	if r.Target != nil {
		_, _ = p.o.Store.Update(ctx, j.ID, func(cj *job.Job) error { cj.TargetJobID = r.Target.ID; return nil })
	}
	if err := p.o.Notifier.Control(ctx, j, r); err != nil {
		log.Error("reply to control command", "err", err)
		return p.failure(j, fmt.Errorf("reply to %s: %w", r.Verb, err))
	}
	return store.Result{State: job.StateSucceeded, Reason: r.Err}
}

type runtime struct {
	store  *store.Store
	id     string
	log    *slog.Logger
	limits *limits
	grace  func() (context.Context, context.CancelFunc)
}

func (r *runtime) SetTimeout(d time.Duration) { r.limits.setTimeout(d) }

func (r *runtime) Grace() (context.Context, context.CancelFunc) { return r.grace() }

func (r *runtime) Update(ctx context.Context, fn func(*job.Job) error) (*job.Job, error) {
	return r.store.Update(ctx, r.id, fn)
}

func (r *runtime) PutArtifact(ctx context.Context, name string, data []byte) error {
	return r.store.PutArtifact(ctx, r.id, name, data)
}

func (r *runtime) Logger() *slog.Logger { return r.log }
