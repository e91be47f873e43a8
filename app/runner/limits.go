package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/templates"
)

// A job stopped at a limit never loses its work. The limits are the
// job's tokens (limits.max_tokens), its installation's tokens and dollars
// for the day — a budget that refuses a model call ends the pipeline with
// Output.Budget — and its time (limits.job_timeout, an overnight job's
// duration): the worker ends the run's context with a *job.StopError.
// Either way the work so far is committed to the job's branch and
// published as a draft pull request marked unfinished (or, with no change
// yet or draft_on_failure off, reported in a comment with the diff), the
// progress is kept as the job's progress.json, and `/selfcode retry` (the
// same job) resumes from it.

// progressArtifact keeps where a run stopped at a limit left its work.
const progressArtifact = "progress.json"

// progress is where a run stopped at a limit left its work: what the run
// that resumes it is told, and where the work is.
type progress struct {
	pipeline.Resume
	Stop   job.Stop `json:"stop"`
	Branch string   `json:"branch"`
	Head   string   `json:"head"` // the commit the work was saved as
	Base   string   `json:"base"` // the commit the work is measured from
}

// limitStops maps the budget that refused a model call to the job's stop.
var limitStops = map[chat.Limit]job.Stop{
	chat.LimitJobTokens:   job.StopMaxTokens,
	chat.LimitDailyTokens: job.StopDailyTokens,
	chat.LimitDailyCost:   job.StopDailyCost,
}

// budgetStop is the stop of a pipeline run a limit ended by itself: a
// budget that refused a model call, or the pipeline's own job_timeout;
// nil when none did.
func budgetStop(out *pipeline.Output) *job.StopError {
	if out.Budget != nil {
		if s, ok := limitStops[out.Budget.Limit]; ok {
			return &job.StopError{Stop: s, Detail: out.Budget.Detail}
		}
	}
	if out.StopReason == pipeline.StopTimeout {
		return &job.StopError{Stop: job.StopJobTimeout, Detail: out.StopReason}
	}
	return nil
}

// stopped passes a step's result on, unless the worker stopped the run at
// a time limit before the step could finish: then the work so far is
// saved within the grace period (Runtime.Grace), from the checkout when
// there is one.
func (x *run) stopped(ctx context.Context, client *gh.Client, w *workspace, res result, outcome job.Outcome, err error) (job.Outcome, error) {
	stop := (*job.StopError)(nil)
	if err == nil || errors.As(err, new(*job.StopError)) || !errors.As(context.Cause(ctx), &stop) {
		return outcome, err
	}
	x.log.Warn("stopped at a time limit; saving the work so far", "stop", stop.Stop, "err", err)
	gctx, cancel := x.rt.Grace()
	defer cancel()
	res.stop = stop
	if d := x.runningStage(); d != "" || res.during == "" {
		res.during = d // else no step runs: where the caller says it stopped
	}
	if w == nil {
		x.Stage(stage.Publish, stage.Skipped, "stopped before any change")
		return x.unfinishedComment(gctx, res)
	}
	return x.publish(gctx, client, w, res)
}

// runningStage is the step a run was in when it stopped: the last one
// running, else the last one that failed.
func (x *run) runningStage() stage.Name {
	x.mu.Lock()
	defer x.mu.Unlock()
	var failed stage.Name
	for _, st := range x.stages {
		switch st.Status {
		case stage.Running:
			return st.Name
		case stage.Fail:
			failed = st.Name
		}
	}
	return failed
}

// publishUnfinished publishes the work of a run stopped at a limit: pushed
// to the job's branch (never a human's: their pull request gets it on
// selfcode/pr-N) and proposed as a draft pull request marked unfinished;
// with no change yet, or draft_on_failure off, a comment reports it
// instead (with the diff). The progress is kept for `/selfcode retry`.
func (x *run) publishUnfinished(ctx context.Context, client *gh.Client, w *workspace, res result, title, sha string, changed bool) (job.Outcome, error) {
	x.markUnfinished(res)
	if !changed || w.in.PlanOnly {
		x.Stage(stage.Publish, stage.Skipped, "stopped before any change")
		return x.unfinishedComment(ctx, res)
	}
	if x.j.IsPR && humansPR(w) {
		if err := x.divert(ctx, w, "The work is unfinished, so it was not pushed to `"+w.pr.HeadRef+"`"); err != nil {
			return "", err
		}
	}
	if err := x.push(ctx, w); err != nil {
		return "", err
	}
	x.keepProgress(w, sha, res)
	if !res.draftOnFailure {
		diff, err := w.git.Diff(ctx, w.ws, w.from())
		if err != nil {
			x.log.Warn("diff of the unfinished work", "err", err)
		}
		x.mu.Lock()
		x.rep.Branch, x.rep.Diff = w.branch, diff
		x.mu.Unlock()
		x.Stage(stage.Publish, stage.Pass, "pushed "+w.branch+"; draft_on_failure is off")
		return x.unfinishedComment(ctx, res)
	}
	if _, err := x.pullRequest(ctx, w, title, false); err != nil {
		return "", err
	}
	x.completeCheck(ctx, sha, false, res.verdict)
	x.Stage(stage.Publish, stage.Pass, x.j.Publication.PRURL)
	if b, err := json.Marshal(x.report()); err == nil {
		x.Artifact("report.json", b)
	}
	return job.OutcomeLimitReached, res.stop
}

// markUnfinished says in the report which limit stopped the run, where,
// and which plan steps are done and left.
func (x *run) markUnfinished(res result) {
	u := &templates.Unfinished{Limit: res.stop.Stop.Describe(), Detail: res.stop.Detail, During: string(res.during)}
	x.mu.Lock()
	defer x.mu.Unlock()
	if res.out != nil {
		done, left := (&pipeline.Resume{Plan: res.out.Plan, Changed: x.changedLocked()}).Steps()
		for _, st := range done {
			u.Done = append(u.Done, st.Title)
		}
		for _, st := range left {
			u.Left = append(u.Left, st.Title)
		}
	}
	x.rep.Unfinished, x.rep.Draft = u, true
}

// changedLocked are the paths of the files changed; x.mu held.
func (x *run) changedLocked() []string {
	out := make([]string, 0, len(x.rep.FilesChanged))
	for _, f := range x.rep.FilesChanged {
		out = append(out, f.Path)
	}
	return out
}

// unfinishedComment reports a run stopped at a limit in a comment: what
// it did, and how to resume.
func (x *run) unfinishedComment(ctx context.Context, res result) (job.Outcome, error) {
	if x.report().Unfinished == nil {
		x.markUnfinished(res)
	}
	body, err := x.r.o.Templates.Unfinished(x.report())
	if err != nil {
		return "", fmt.Errorf("render the unfinished report: %w", err)
	}
	if err := x.pub.Comment(ctx, body); err != nil {
		return "", err
	}
	return job.OutcomeLimitReached, res.stop
}

// keepProgress stores where the work stopped, for the retry that resumes
// it.
func (x *run) keepProgress(w *workspace, sha string, res result) {
	p := progress{Stop: res.stop.Stop, Branch: w.branch, Head: sha, Base: w.from()}
	p.Stopped = res.stop.Stop.Describe()
	if res.during != "" {
		p.Stopped += " during " + string(res.during)
	}
	if res.stop.Detail != "" {
		p.Stopped += " (" + res.stop.Detail + ")"
	}
	x.mu.Lock()
	p.Changed = x.changedLocked()
	x.mu.Unlock()
	if res.out != nil {
		p.Plan, p.Summary = res.out.Plan, res.out.Summary
	}
	b, err := json.Marshal(p)
	if err != nil {
		x.log.Warn("encode the progress", "err", err)
		return
	}
	x.Artifact(progressArtifact, b)
}

// resumable is the progress the job's last run kept when it stopped at a
// limit, when branch still holds that work at head (nil otherwise: the
// job starts afresh).
func (x *run) resumable(ctx context.Context, branch, head string) *progress {
	if x.j.Stop == "" || x.r.o.History == nil || head == "" {
		return nil
	}
	b, err := x.r.o.History.Artifact(ctx, x.j.ID, progressArtifact)
	if err != nil {
		return nil
	}
	var p progress
	if err := json.Unmarshal(b, &p); err != nil || p.Branch != branch || p.Head == "" {
		return nil
	}
	if p.Head != head {
		x.log.Info("not resuming the saved work: its branch moved since", "branch", branch, "saved", p.Head, "now", head)
		return nil
	}
	return &p
}

// resumeFrom makes the checkout continue the saved work p: verification
// compares with the commit the work started from, and the report counts
// the change from there.
func (x *run) resumeFrom(ctx context.Context, w *workspace, p *progress) error {
	bws, err := w.git.NewWorkspace(ctx, gitops.WorkspaceOptions{Repo: w.repo, ID: x.j.ID + "-base", Branch: "selfcode/baseline", Base: p.Base, Token: w.token})
	if err != nil {
		return fmt.Errorf("check out %.12s, where the saved work started: %w", p.Base, err)
	}
	w.cleanup = append(w.cleanup, func() { x.removeWorkspace(bws) })
	w.in.BaselineDir, w.in.BaselineSHA = bws.Dir, bws.BaseSHA
	w.diffBase = p.Base
	r := p.Resume
	w.in.Resume = &r
	return nil
}

// recordUsage puts the run's tokens and cost in the job record.
func (x *run) recordUsage(out *pipeline.Output) {
	sp := out.Spend
	u := &job.Usage{PromptTokens: sp.Usage.Prompt, CachedPromptTokens: sp.Usage.CachedPrompt, CompletionTokens: sp.Usage.Completion,
		UnpricedModels: sp.Unpriced}
	if d, known := out.Cost(); known {
		u.CostUSD = &d
	}
	if out.Tokens == 0 && sp.Usage == (chat.Usage{}) {
		return
	}
	if _, err := x.rt.Update(context.Background(), func(jj *job.Job) error { jj.Tokens, jj.Usage = out.Tokens, u; return nil }); err != nil {
		x.log.Warn("record tokens and cost", "err", err)
	}
}
