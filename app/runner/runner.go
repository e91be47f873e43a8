package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/app/worker"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// Pipeline does the work on a checkout: plan, edit, verify, fix
// (*pipeline.Pipeline; tests pass a scripted one).
type Pipeline interface {
	Run(ctx context.Context, in pipeline.Input) (*pipeline.Output, error)
}

// Options configures a Runner.
type Options struct {
	Clients     ghapp.Clients
	Templates   *templates.Renderer
	Pipeline    Pipeline
	Git         func(ctx context.Context) (*gitops.Git, error)
	CommandWord string
	Logger      *slog.Logger
	Now         func() time.Time
	// History reads earlier jobs and their artifacts (the store): the plan
	// and report of the job that opened a pull request, and the iterations
	// shown in its body, and the progress a run stopped at a limit kept
	// for its retry. May be nil.
	History History
	// Budget, when set, gives each job its share of its installation's
	// daily token and cost budgets (budget.Budget.Job).
	Budget func(j *job.Job) pipeline.Budget
	// CIApps are the slugs of the apps whose failing checks `fix-ci`
	// reads (SELFCODE_CI_APPS); nil: github-actions alone.
	CIApps []string
}

// History is the read side of the job store the runner needs.
type History interface {
	List(ctx context.Context, o store.ListOptions) ([]*job.Job, string, error)
	Artifact(ctx context.Context, id, name string) ([]byte, error)
}

// Runner implements worker.Runner.
type Runner struct{ o Options }

// New builds a Runner.
func New(o Options) (*Runner, error) {
	if o.Clients == nil || o.Templates == nil || o.Pipeline == nil || o.Git == nil {
		return nil, errs.E(errs.KindInvalid, "runner needs GitHub clients, templates, a pipeline and git", nil)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CommandWord == "" {
		o.CommandWord = "/selfcode"
	}
	if o.CIApps == nil {
		o.CIApps = []string{"github-actions"}
	}
	return &Runner{o: o}, nil
}

// LazyGit returns a Git factory that resolves the App's bot identity on first
// use (it needs the GitHub API) and caches the result.
func LazyGit(identity func(ctx context.Context) (gitops.Identity, error), opts gitops.Options) func(context.Context) (*gitops.Git, error) {
	var mu sync.Mutex
	var g *gitops.Git
	return func(ctx context.Context) (*gitops.Git, error) {
		mu.Lock()
		defer mu.Unlock()
		if g != nil {
			return g, nil
		}
		id, err := identity(ctx)
		if err != nil {
			return nil, fmt.Errorf("resolve the app's commit identity: %w", err)
		}
		o := opts
		o.Identity = id
		ng, err := gitops.New(o)
		if err != nil {
			return nil, err
		}
		g = ng
		return g, nil
	}
}

// run is one job's state while it runs.
type run struct {
	r      *Runner
	j      *job.Job
	rt     worker.Runtime
	pub    *publisher
	log    *slog.Logger
	start  time.Time
	stages []templates.Stage
	rep    templates.Report
	// recorded are the stages as the job record has them (with their
	// times); pipe is where the time went inside the pipeline.
	recorded []job.Stage
	pipe     map[stage.Part]time.Duration
	mu       sync.Mutex
}

var stageOrder = []stage.Name{stage.Checkout, stage.Plan, stage.Edit, stage.Verify, stage.Fix, stage.Publish}

// Run does the job; see the package comment.
func (r *Runner) Run(ctx context.Context, j *job.Job, rt worker.Runtime) (job.Outcome, error) {
	client, err := r.o.Clients.Installation(ctx, j.InstallationID)
	if err != nil {
		return "", ghapp.MapError(err)
	}
	x := r.begin(j, rt, client)
	if err := x.pub.React(ctx, gh.ReactionEyes); err != nil {
		x.log.Warn("add eyes reaction", "err", err)
	}
	if err := x.progress(ctx); err != nil {
		return "", fmt.Errorf("post progress comment: %w", err)
	}
	outcome, err := x.work(ctx, client)
	x.finish(outcome, err)
	return outcome, err
}

// begin sets up a job's run: its publisher, its report's header and its
// stages, all pending.
func (r *Runner) begin(j *job.Job, rt worker.Runtime, client *gh.Client) *run {
	log := rt.Logger()
	x := &run{r: r, j: j, rt: rt, log: log, start: r.o.Now(),
		pub: &publisher{c: client, j: j, tm: r.o.Templates, sv: rt, log: log}}
	x.rep = templates.Report{JobID: j.ID, Repository: j.Repo.FullName(), Issue: originalIssue(j), IssueTitle: j.IssueTitle,
		CommandWord: r.o.CommandWord, State: string(job.StateRunning), FailedCheck: j.Trigger.Check}
	for _, name := range stageOrder {
		if j.Kind == job.KindPlan && name != stage.Checkout && name != stage.Plan {
			continue
		}
		x.stages = append(x.stages, templates.Stage{Name: name, Status: stage.Pending})
	}
	return x
}

// originalIssue is the issue a job resolves: for a command on a selfcode
// pull request, the issue its branch was made for.
func originalIssue(j *job.Job) int {
	if b := j.Publication.Branch; strings.HasPrefix(b, "selfcode/issue-") {
		if n, err := strconv.Atoi(strings.TrimPrefix(b, "selfcode/issue-")); err == nil {
			return n
		}
	}
	if j.IsPR {
		return 0
	}
	return j.Issue
}

// Stage records a stage's status in the job and, when the stage ends, in
// the progress comment. The run is the pipeline's Progress: every stage
// update, the pipeline's and the runner's own, goes through here.
func (x *run) Stage(name stage.Name, status stage.Status, summary string) {
	now := x.r.o.Now().UTC()
	x.mu.Lock()
	found := false
	for i := range x.stages {
		if x.stages[i].Name == name {
			x.stages[i].Status, x.stages[i].Summary = status, summary
			found = true
		}
	}
	if !found {
		x.stages = append(x.stages, templates.Stage{Name: name, Status: status, Summary: summary})
	}
	x.mu.Unlock()
	finished := time.Time{}
	if status != stage.Running {
		finished = now
	}
	updated, err := x.rt.Update(context.Background(), func(j *job.Job) error {
		for i := range j.Stages {
			if j.Stages[i].Name == name {
				j.Stages[i].Status, j.Stages[i].Summary, j.Stages[i].FinishedAt = status, summary, finished
				return nil
			}
		}
		// A stage first heard of when it already ended (skipped, or passed
		// at once) starts and ends now.
		j.Stages = append(j.Stages, job.Stage{Name: name, Status: status, Summary: summary, StartedAt: now, FinishedAt: finished})
		return nil
	})
	if err != nil {
		x.log.Warn("record stage", "stage", name, "err", err)
	} else {
		x.mu.Lock()
		x.recorded = updated.Stages
		x.mu.Unlock()
	}
	if status != stage.Running {
		if err := x.progress(context.Background()); err != nil {
			x.log.Warn("update progress comment", "stage", name, "err", err)
		}
	}
}

// Artifact stores a file of the job (plan, diff, report) in the store.
func (x *run) Artifact(name string, data []byte) {
	if err := x.rt.PutArtifact(context.Background(), name, data); err != nil {
		x.log.Warn("store artifact", "name", name, "err", err)
	}
}

func (x *run) report() templates.Report {
	x.mu.Lock()
	defer x.mu.Unlock()
	rep := x.rep
	rep.Stages = append([]templates.Stage(nil), x.stages...)
	rep.Duration = x.r.o.Now().Sub(x.start)
	for _, sp := range x.timesLocked(x.recorded) {
		rep.Time = append(rep.Time, templates.TimeSpan{Part: sp.Part, Took: time.Duration(sp.Seconds * float64(time.Second))})
	}
	return rep
}

// timesLocked is where the job's time went: its queue wait, each ended
// stage of stages (from its recorded start to its end) and the pipeline's
// finer parts. Called with x.mu held.
func (x *run) timesLocked(stages []job.Stage) []stage.Span {
	took := map[stage.Part]time.Duration{}
	if due := queuedSince(x.j); !due.IsZero() && !x.j.StartedAt.Before(due) {
		took[stage.PartQueue] = x.j.StartedAt.Sub(due)
	}
	for _, st := range stages {
		if !st.StartedAt.IsZero() && !st.FinishedAt.Before(st.StartedAt) && st.Status != stage.Skipped {
			took[stage.Part(st.Name)] = st.FinishedAt.Sub(st.StartedAt)
		}
	}
	maps.Copy(took, x.pipe)
	return stage.Spans(took)
}

// queuedSince is when a job became due: created, or scheduled for later.
func queuedSince(j *job.Job) time.Time {
	if j.ScheduledFor.After(j.CreatedAt) {
		return j.ScheduledFor
	}
	return j.CreatedAt
}

func (x *run) progress(ctx context.Context) error {
	return x.pub.Progress(ctx, x.report())
}

// foreign reports whether any commit author is not selfcode.
func foreign(authors []string, self string) bool {
	for _, a := range authors {
		if !strings.EqualFold(a, self) {
			return true
		}
	}
	return false
}

// finish writes the final progress comment and reaction. It uses a fresh
// context: the job's may be canceled.
func (x *run) finish(outcome job.Outcome, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x.mu.Lock()
	switch {
	case errors.As(err, new(*job.StopError)):
		x.rep.State, x.rep.Outcome, x.rep.Error = string(job.StateFailed), string(job.OutcomeLimitReached), err.Error()
	case err != nil && errs.KindOf(err) == errs.KindCanceled:
		x.rep.State, x.rep.Error = string(job.StateCanceled), "canceled"
	case err != nil:
		x.rep.State, x.rep.Outcome, x.rep.Error = string(job.StateFailed), string(job.OutcomeError), err.Error()
	default:
		x.rep.State, x.rep.Outcome = string(job.StateSucceeded), string(outcome)
		if outcome == job.OutcomeVerificationFailed || outcome == job.OutcomeUnverified {
			x.rep.State = string(job.StateFailed)
		}
	}
	for i := range x.stages {
		if x.stages[i].Status == stage.Running {
			x.stages[i].Status = stage.Fail
		}
	}
	x.mu.Unlock()
	if _, err := x.rt.Update(ctx, func(j *job.Job) error {
		x.mu.Lock()
		defer x.mu.Unlock()
		j.Time = x.timesLocked(j.Stages)
		return nil
	}); err != nil {
		x.log.Warn("record where the time went", "err", err)
	}
	if err := x.progress(ctx); err != nil {
		x.log.Warn("final progress comment", "err", err)
	}
	reaction := gh.ReactionRocket
	if err != nil || outcome == job.OutcomeVerificationFailed || outcome == job.OutcomeUnverified || outcome == job.OutcomeError {
		reaction = gh.ReactionConfused
	}
	if errs.KindOf(err) == errs.KindCanceled {
		return
	}
	if rerr := x.pub.React(ctx, reaction); rerr != nil {
		x.log.Warn("final reaction", "err", rerr)
	}
}

func commitMessage(title string, j *job.Job, issue int) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(strings.Split(title, "\n")[0]))
	b.WriteString("\n\n")
	if j.Instructions != "" {
		b.WriteString("Requested by @" + j.Trigger.Sender + ":\n")
		for _, l := range strings.Split(strings.TrimSpace(j.Instructions), "\n") {
			b.WriteString("> " + l + "\n")
		}
		b.WriteString("\n")
	}
	if issue != 0 {
		fmt.Fprintf(&b, "Refs #%d\n", issue)
	}
	fmt.Fprintf(&b, "Selfcode-Job: %s\n", j.ID)
	return b.String()
}

// unverifiedOutcome is the outcome of a change that is not verified.
func unverifiedOutcome(v verify.Verdict) job.Outcome {
	if v == verify.Unverified {
		return job.OutcomeUnverified
	}
	return job.OutcomeVerificationFailed
}

func checkSummary(rep templates.Report) string {
	var b strings.Builder
	if u := rep.Unfinished; u != nil {
		fmt.Fprintf(&b, "Unfinished: selfcode stopped at %s. This is the work so far; comment `%s retry` to resume it.\n\n", u.Limit, rep.CommandWord)
	}
	switch rep.Verdict {
	case string(verify.Verified):
		b.WriteString("Verified: the repository's own checks ran on this change and nothing that passed on the base commit fails now.\n\n")
	case string(verify.Failed):
		b.WriteString("Verification failed: this change breaks something that passed on the base commit.\n\n")
	case string(verify.Unverified):
		b.WriteString("Unverified: this change could not be verified")
		if len(rep.Reasons) > 0 {
			b.WriteString(": " + rep.Reasons[0].Why + ".")
			if rep.Reasons[0].Next != "" {
				b.WriteString(" To verify it, " + rep.Reasons[0].Next + ".")
			}
		} else {
			b.WriteString(".")
		}
		b.WriteString("\n\n")
	}
	if rep.Summary != "" {
		b.WriteString(rep.Summary + "\n\n")
	}
	for _, v := range rep.Verification {
		mark := "✅"
		if !v.Passed {
			mark = "❌"
		}
		fmt.Fprintf(&b, "- %s `%s` (%s)\n", mark, v.Name, v.Duration.Round(time.Millisecond))
	}
	if len(rep.FilesChanged) > 0 {
		fmt.Fprintf(&b, "\n%d file(s) changed.\n", len(rep.FilesChanged))
	}
	return b.String()
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}
