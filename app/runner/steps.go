package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/app/command"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/report"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// A job's work is three steps: checkout → execute → publish. Each step
// records its stage; a step that ends the job returns done.

// workspace is what checkout prepares for the other steps: the checkout,
// the branch the work goes to and how it is pushed.
type workspace struct {
	git   *gitops.Git
	repo  job.Repo // with clone URL and default branch
	token gitops.TokenSource
	ws    *gitops.Workspace
	// branch is pushed; base is what the PR targets.
	branch, base string
	// expected is the branch's head when the job began ("" when new); a
	// push with it as the lease fails if someone moved the branch.
	expected string
	// fastForward: add commits on top and push without rewriting history
	// (a command on a PR, or someone else's commits on selfcode's branch).
	fastForward bool
	pr          gh.PullRequest // the PR a command on a PR works on
	// diverted: a change for a human's pull request that may not go to
	// their branch (unverified, or the branch is protected) goes to
	// selfcode/pr-N, proposed as a pull request into their branch; why
	// says why.
	diverted bool
	why      string
	// resume is the saved work of the job's last run, stopped at a limit,
	// that this run continues (nil: none).
	resume *progress
	// in is what the pipeline gets; the steps before execute fill it.
	in      pipeline.Input
	cleanup []func()
	// diffBase, when set, is the commit the job's change is measured from
	// when that is not where the checkout starts (a run resuming saved
	// work); see from.
	diffBase string
}

// from is the commit the job's change is measured from.
func (w *workspace) from() string {
	if w.diffBase != "" {
		return w.diffBase
	}
	return w.ws.BaseSHA
}

func (w *workspace) close() {
	for i := len(w.cleanup) - 1; i >= 0; i-- {
		w.cleanup[i]()
	}
}

// work runs the steps. A run stopped at a limit still publishes its work
// so far (limits.go).
func (x *run) work(ctx context.Context, client *gh.Client) (job.Outcome, error) {
	w, outcome, err := x.checkout(ctx, client)
	if w == nil {
		return x.stopped(ctx, client, nil, result{}, outcome, err)
	}
	defer w.close()
	res, outcome, done, err := x.execute(ctx, client, w)
	if !done {
		outcome, err = x.publish(ctx, client, w, res)
	}
	return x.stopped(ctx, client, w, res, outcome, err)
}

// checkout finds where the work starts and checks it out. It returns a
// nil workspace when the job ends here (with its outcome or error).
func (x *run) checkout(ctx context.Context, client *gh.Client) (*workspace, job.Outcome, error) {
	j := x.j
	x.Stage(stage.Checkout, stage.Running, "")
	repo, err := client.Repo(ctx, j.Repo.Owner, j.Repo.Name)
	if err != nil {
		x.Stage(stage.Checkout, stage.Fail, "repository not accessible")
		return nil, "", fmt.Errorf("repository %s: %w", j.Repo.FullName(), ghapp.MapError(err))
	}
	w := &workspace{repo: j.Repo, token: func(ctx context.Context) (string, error) { return client.Token(ctx) }}
	w.repo.CloneURL, w.repo.DefaultBranch = repo.CloneURL, repo.DefaultBranch
	if w.git, err = x.r.o.Git(ctx); err != nil {
		return nil, "", errs.E(errs.KindTransient, "git", err)
	}
	w.in = pipeline.Input{JobID: j.ID, Repository: j.Repo.FullName(), Issue: j.Issue, IssueTitle: j.IssueTitle, IssueBody: j.IssueBody, IssueAuthor: j.IssueAuthor,
		Instructions: j.Instructions, PlanOnly: j.Kind == job.KindPlan, Progress: x, Unattended: j.Overnight}
	if x.r.o.Budget != nil {
		w.in.Budget = x.r.o.Budget(j)
	}
	start, outcome, done, err := x.target(ctx, client, w)
	if done {
		return nil, outcome, err
	}
	if err := x.checkOut(ctx, w, start); err != nil {
		w.close()
		return nil, "", err
	}
	summary := fmt.Sprintf("%s at %.12s", w.branch, w.ws.BaseSHA)
	if w.resume != nil {
		if err := x.resumeFrom(ctx, w, w.resume); err != nil {
			w.close()
			return nil, "", err
		}
		summary += ", resuming the work saved at a limit"
	}
	x.Stage(stage.Checkout, stage.Pass, summary)
	if j.IsPR {
		if err := x.prBaseline(ctx, client, w); err != nil {
			w.close()
			return nil, "", err
		}
	}
	return w, "", nil
}

// target decides where the work starts (returned) and goes. An issue job
// rebuilds its selfcode/issue-N branch from the default branch
// (force-with-lease on what the branch was when the job began), unless
// someone else pushed to that branch: then it adds commits on top like a
// follow-up (see checkOut). A command on a pull request always adds commits
// on top of its head and pushes fast-forward only, so nobody's history is
// rewritten. done is set when the job ends here.
func (x *run) target(ctx context.Context, client *gh.Client, w *workspace) (start string, outcome job.Outcome, done bool, err error) {
	j := x.j
	w.branch, start, w.base = "selfcode/issue-"+strconv.Itoa(j.Issue), w.repo.DefaultBranch, w.repo.DefaultBranch
	if !j.IsPR {
		if w.expected, err = w.git.RemoteBranchSHA(ctx, w.repo, w.branch, w.token); err != nil {
			x.Stage(stage.Checkout, stage.Fail, "could not read "+w.branch)
			return "", "", true, fmt.Errorf("read %s: %w", w.branch, err)
		}
		if w.resume = x.resumable(ctx, w.branch, w.expected); w.resume != nil {
			start = w.resume.Head // a retry of a run stopped at a limit goes on from its work
		}
		return start, "", false, nil
	}
	if w.pr, err = client.PullRequest(ctx, j.Repo.Owner, j.Repo.Name, j.Issue); err != nil {
		x.Stage(stage.Checkout, stage.Fail, "pull request not accessible")
		return "", "", true, fmt.Errorf("pull request #%d: %w", j.Issue, ghapp.MapError(err))
	}
	skip := ""
	switch {
	case w.pr.FromFork():
		skip = "pull request from a fork"
		x.rep.Summary = "This pull request comes from a fork; selfcode only pushes to branches of this repository."
	case w.pr.State != "open":
		skip = "pull request is closed"
		x.rep.Summary = "This pull request is closed; selfcode does not change closed pull requests."
	}
	if skip != "" {
		x.Stage(stage.Checkout, stage.Skipped, skip)
		return "", job.OutcomeNoChange, true, x.pub.Comment(ctx, x.rep.Summary)
	}
	w.branch, start, w.base, w.fastForward = w.pr.HeadRef, w.pr.HeadSHA, w.pr.BaseRef, true
	if p := x.resumable(ctx, w.pr.HeadRef, w.pr.HeadSHA); p != nil {
		r := p.Resume // selfcode's pull request holds the saved work at its head
		w.in.Resume = &r
	}
	if strings.HasPrefix(w.pr.HeadRef, "selfcode/") {
		if _, err := x.rt.Update(ctx, func(jj *job.Job) error { jj.Publication.Branch = w.branch; return nil }); err == nil {
			j.Publication.Branch = w.branch
			x.rep.Issue = originalIssue(j)
		}
	}
	if err := x.pub.Check(ctx, w.pr.HeadSHA, "queued", "", "selfcode is queued", "Waiting for a worker."); err != nil {
		x.log.Warn("create queued check run", "err", err)
	}
	return start, "", false, nil
}

// checkOut creates the workspace at start; when someone else pushed to
// selfcode's issue branch, it starts from their commits instead and the
// push becomes fast-forward.
func (x *run) checkOut(ctx context.Context, w *workspace, start string) error {
	j := x.j
	ws, err := w.git.NewWorkspace(ctx, gitops.WorkspaceOptions{Repo: w.repo, ID: j.ID, Branch: w.branch, Base: start, Token: w.token})
	if err != nil {
		x.Stage(stage.Checkout, stage.Fail, "could not check out "+start)
		return fmt.Errorf("check out %s: %w", start, err)
	}
	if !j.IsPR && w.expected != "" {
		authors, err := w.git.Authors(ctx, ws, ws.BaseSHA, w.expected)
		if err != nil {
			x.removeWorkspace(ws)
			return err
		}
		if foreign(authors, w.git.Identity().Email) {
			// Someone else pushed to selfcode's branch: keep their commits.
			x.removeWorkspace(ws)
			if ws, err = w.git.NewWorkspace(ctx, gitops.WorkspaceOptions{Repo: w.repo, ID: j.ID, Branch: w.branch, Base: w.expected, Token: w.token}); err != nil {
				return fmt.Errorf("check out %s: %w", w.branch, err)
			}
			w.fastForward = true
		}
	}
	w.ws = ws
	w.cleanup = append(w.cleanup, func() { x.removeWorkspace(ws) })
	w.in.Dir, w.in.BaseSHA = ws.Dir, ws.BaseSHA
	// The base as it was, from the workspace's objects, whatever the model
	// has edited since: a base failing with a kept setup is verified again.
	w.in.Pristine = func(ctx context.Context, dst string) error { return w.git.Export(ctx, ws, dst) }
	w.in.Scratch = ws.Scratch()
	return nil
}

func (x *run) removeWorkspace(ws *gitops.Workspace) {
	if err := ws.Remove(); err != nil {
		x.log.Warn("remove workspace", "err", err)
	}
}

// prBaseline checks out the pull request's base, which a command on a PR
// is verified against, and gathers the review feedback.
func (x *run) prBaseline(ctx context.Context, client *gh.Client, w *workspace) error {
	j := x.j
	bws, err := w.git.NewWorkspace(ctx, gitops.WorkspaceOptions{Repo: w.repo, ID: j.ID + "-base", Branch: "selfcode/baseline", Base: w.pr.BaseSHA, Token: w.token})
	if err != nil {
		return fmt.Errorf("check out the pull request's base %s: %w", w.pr.BaseRef, err)
	}
	w.cleanup = append(w.cleanup, func() { x.removeWorkspace(bws) })
	w.in.BaselineDir, w.in.BaselineSHA = bws.Dir, bws.BaseSHA
	if err := x.followUp(ctx, client, w.pr, &w.in); err != nil {
		return err
	}
	if j.Publication.CheckRunID != 0 {
		_ = x.pub.Check(ctx, j.Publication.HeadSHA, "in_progress", "", "selfcode is working", "Planning and editing.")
	}
	return nil
}

// result is what execute hands to publish.
type result struct {
	title    string // pull request title; "" means one from the issue
	verified bool
	verdict  verify.Verdict
	// draftOnFailure is the repository's draft_on_failure (default true).
	draftOnFailure bool
	// out is the pipeline's output (nil when it did not run).
	out *pipeline.Output
	// stop, when set, is the limit the run stopped at: what is published
	// is its work so far; during is the step it stopped in.
	stop   *job.StopError
	during stage.Name
}

// execute runs the pipeline on the checkout and fills the job's report
// from its output. done is set when the job ends here: an error, a
// repository with selfcode disabled, a plan too wide, or a plan posted.
func (x *run) execute(ctx context.Context, client *gh.Client, w *workspace) (res result, outcome job.Outcome, done bool, err error) {
	res.draftOnFailure = true
	cfg, err := x.repoConfig(ctx, w)
	if err != nil {
		return res, "", true, err
	}
	// The repository's job_timeout bounds the whole job from its start;
	// until now (the checkout) the server's default did. Already past it,
	// the job stops here, before anything else starts, and the limit ran
	// out during the checkout.
	x.rt.SetTimeout(cfg.Limits.JobTimeout)
	if err := ctx.Err(); err != nil {
		res.during = stage.Checkout
		return res, "", true, err
	}
	res.draftOnFailure = cfg.DraftOnFailure
	if !cfg.Enabled {
		return res, "", true, x.skip(ctx, "selfcode is disabled for this repository (`enabled: false` in .selfcode.yml).")
	}
	if x.j.Trigger.Command == string(command.VerbFixCI) {
		if !x.j.IsPR {
			return res, "", true, x.skip(ctx, "`fix-ci` works on a pull request: comment it there.")
		}
		task, output, err := x.failingChecks(ctx, client, w)
		if err != nil {
			return res, "", true, err
		}
		if task == "" {
			return res, "", true, x.skip(ctx, "No check has failed on the head of this pull request: nothing to fix.")
		}
		w.in.Instructions = strings.TrimSpace(task + "\n\n" + w.in.Instructions)
		w.in.CIOutput = output
	}
	if x.j.Trigger.Source == job.SourceCI {
		reason, err := x.ciStop(ctx, w, cfg)
		if err != nil {
			return res, "", true, err
		}
		if reason != "" {
			return res, "", true, x.skip(ctx, reason)
		}
		w.in.CIOutput = x.ciOutput(ctx, client)
	}
	w.in.Config = cfg
	x.issueContext(ctx, client, &w.in)
	out, err := x.r.o.Pipeline.Run(ctx, w.in)
	if out == nil {
		return res, "", true, err
	}
	x.mu.Lock()
	report.Fill(&x.rep, out, cfg)
	x.pipe = out.Took
	x.mu.Unlock()
	x.recordUsage(out)
	res = result{title: prTitle(out, x.j), verified: out.Verified, verdict: out.Verdict, draftOnFailure: cfg.DraftOnFailure, out: out}
	if res.stop = budgetStop(out); res.stop != nil {
		res.during = x.runningStage()
	}
	switch {
	case res.stop != nil && w.in.PlanOnly:
		outcome, err := x.unfinishedComment(ctx, res)
		return res, outcome, true, err
	case res.stop != nil:
		// Stopped at a limit: publish the work so far.
	case err != nil:
		return res, "", true, err
	case out.Skipped != "":
		// A plan too wide even after asking for a narrower one.
		return res, "", true, x.skip(ctx, out.Skipped)
	case w.in.PlanOnly:
		body, err := x.r.o.Templates.PlanComment(x.report())
		if err != nil {
			return res, "", true, fmt.Errorf("render plan: %w", err)
		}
		return res, job.OutcomePlanPosted, true, x.pub.Comment(ctx, body)
	}
	return res, "", false, nil
}

// repoConfig reads .selfcode.yml from the default branch, never from the
// pull request being worked on; absent means the defaults.
func (x *run) repoConfig(ctx context.Context, w *workspace) (*repoconfig.Config, error) {
	b, err := w.git.ReadFileAt(ctx, w.ws, w.repo.DefaultBranch, ".selfcode.yml")
	switch {
	case errors.Is(err, gitops.ErrNotFound):
		return repoconfig.Default(), nil
	case err != nil:
		return nil, fmt.Errorf("read .selfcode.yml from %s: %w", w.repo.DefaultBranch, err)
	}
	cfg, err := repoconfig.Parse(b)
	if err != nil {
		return nil, errs.E(errs.KindPermanent, ".selfcode.yml on the default branch is invalid", err)
	}
	return cfg, nil
}

// skip ends the job without a change: the reason is the summary and a
// reply on the issue, and the job ends canceled (the worker maps
// errs.KindCanceled to state canceled).
func (x *run) skip(ctx context.Context, reason string) error {
	x.mu.Lock()
	x.rep.Summary = reason
	x.mu.Unlock()
	if err := x.pub.Comment(ctx, reason); err != nil {
		return err
	}
	return errs.E(errs.KindCanceled, reason, nil)
}

// prTitle is the pull request title: the plan's summary when it is short,
// else the issue's title.
func prTitle(out *pipeline.Output, j *job.Job) string {
	if out.Plan != nil {
		s := strings.TrimSpace(strings.SplitN(out.Plan.Summary, "\n", 2)[0])
		if s != "" && len(s) <= 72 {
			return s
		}
	}
	if t := strings.TrimSpace(j.IssueTitle); t != "" {
		return "Fix #" + strconv.Itoa(j.Issue) + ": " + t
	}
	return ""
}

// publish commits the change, pushes it, opens or updates the pull
// request and completes the check run; an unverified change with
// draft_on_failure off is reported as a comment instead.
func (x *run) publish(ctx context.Context, client *gh.Client, w *workspace, res result) (job.Outcome, error) {
	x.Stage(stage.Publish, stage.Running, "")
	title := res.title
	if title == "" {
		title = "selfcode: " + firstNonEmpty(x.j.IssueTitle, "changes for #"+strconv.Itoa(x.j.Issue))
	}
	sha, changed, err := x.commit(ctx, w, title)
	if err != nil {
		return "", err
	}
	if res.stop != nil {
		return x.publishUnfinished(ctx, client, w, res, title, sha, changed)
	}
	if !changed {
		x.Stage(stage.Publish, stage.Skipped, "no change to publish")
		return job.OutcomeNoChange, nil
	}
	if !res.verified && !res.draftOnFailure {
		body, err := x.r.o.Templates.FailureReport(x.report())
		if err != nil {
			return "", fmt.Errorf("render failure report: %w", err)
		}
		x.Stage(stage.Publish, stage.Skipped, "not verified; draft_on_failure is off")
		return unverifiedOutcome(res.verdict), x.pub.Comment(ctx, body)
	}
	if x.j.IsPR && humansPR(w) {
		why := ""
		if !res.verified {
			why = "The change is not verified, so it was not pushed to `" + w.pr.HeadRef + "`"
		} else if protected, err := client.BranchProtected(ctx, x.j.Repo.Owner, x.j.Repo.Name, w.pr.HeadRef); err != nil {
			return "", ghapp.MapError(err)
		} else if protected {
			why = "`" + w.pr.HeadRef + "` is a protected branch, so selfcode did not push to it"
		}
		if why != "" {
			if err := x.divert(ctx, w, why); err != nil {
				return "", err
			}
		}
	}
	if err := x.push(ctx, w); err != nil {
		return "", err
	}
	outcome, err := x.pullRequest(ctx, w, title, res.verified)
	if err != nil {
		return "", err
	}
	if !res.verified {
		outcome = unverifiedOutcome(res.verdict)
	}
	x.completeCheck(ctx, sha, res.verified, res.verdict)
	x.Stage(stage.Publish, stage.Pass, x.j.Publication.PRURL)
	if b, err := json.Marshal(x.report()); err == nil {
		_ = x.rt.PutArtifact(context.Background(), "report.json", b)
	}
	if err := x.answer(ctx, client, sha, res.verified); err != nil {
		x.log.Warn("answer the feedback", "err", err)
	}
	return outcome, nil
}

// commit records the files changed and the diff, and commits as the bot.
// changed is set when the branch differs from where the change is
// measured from (a commit made now, or by an earlier attempt to publish).
func (x *run) commit(ctx context.Context, w *workspace, title string) (sha string, changed bool, err error) {
	files, err := w.git.ChangedFiles(ctx, w.ws, w.from())
	if err != nil {
		return "", false, fmt.Errorf("list changed files: %w", err)
	}
	if err := offLimits(files, w.in.Config); err != nil {
		x.Stage(stage.Publish, stage.Fail, "not committed: the change touches an off-limits path")
		return "", false, err
	}
	x.mu.Lock()
	x.rep.FilesChanged = nil
	for _, f := range files {
		x.rep.FilesChanged = append(x.rep.FilesChanged, templates.FileChange{Path: f.Path, Action: f.Status, Added: f.Added, Deleted: f.Deleted, Binary: f.Binary})
	}
	x.mu.Unlock()
	if diff, err := w.git.Diff(ctx, w.ws, w.from()); err == nil {
		// Kept with any credential-looking value removed: the work stays
		// even when the push is refused for one, the value does not.
		_ = x.rt.PutArtifact(context.Background(), "diff.patch", []byte(w.git.RedactSecrets(ctx, diff)))
	}
	sha, changed, err = w.git.Commit(ctx, w.ws, commitMessage(title, x.j, x.rep.Issue))
	if err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	return sha, changed || sha != w.from(), nil
}

// push pushes the branch: fast-forward only on top of someone's commits,
// else with a lease on what the branch was when the job began. A branch
// that moved meanwhile makes the job run again on its new head.
func (x *run) push(ctx context.Context, w *workspace) error {
	var err error
	if w.fastForward {
		if err = w.git.PushFastForward(ctx, w.ws, w.branch, w.token); errors.Is(err, gitops.ErrNonFastForward) {
			x.Stage(stage.Publish, stage.Fail, "the branch moved while the job ran")
			return errs.E(errs.KindTransient, "the branch moved while the job ran; running again on its new head", err)
		}
	} else if err = w.git.PushSelfcodeBranch(ctx, w.ws, w.branch, w.expected, w.token); errors.Is(err, gitops.ErrLeaseRejected) {
		x.Stage(stage.Publish, stage.Fail, "the branch moved while the job ran")
		return errs.E(errs.KindTransient, "the branch moved while the job ran; running again", err)
	}
	var secrets *gitops.SecretsError
	if errors.As(err, &secrets) {
		x.Stage(stage.Publish, stage.Fail, "not pushed: credential-looking text at "+secrets.Findings[0].String())
		return errs.E(errs.KindPermanent, "", fmt.Errorf("%w. Nothing was pushed; the change is kept, its flagged values removed, "+
			"as the job's diff.patch artifact. Take the credential out (read it from the environment or a secret store) and run the job again", err))
	}
	if err != nil {
		x.Stage(stage.Publish, stage.Fail, "push failed")
		return fmt.Errorf("push %s: %w", w.branch, err)
	}
	// The branch is there now: publishing again (after a time limit cut
	// the first attempt short) leases on what was pushed.
	if sha, err := w.git.HeadSHA(ctx, w.ws); err == nil {
		w.expected = sha
	}
	return nil
}

// pullRequest renders the body and opens or updates the pull request.
func (x *run) pullRequest(ctx context.Context, w *workspace, title string, verified bool) (job.Outcome, error) {
	iterations := x.iterations(ctx, w.branch)
	x.mu.Lock()
	x.rep.Branch, x.rep.Draft = w.branch, !verified
	x.rep.Iterations = iterations
	x.mu.Unlock()
	body, err := x.r.o.Templates.PRBody(x.report())
	if err != nil {
		return "", fmt.Errorf("render pull request body: %w", err)
	}
	outcome := job.OutcomePRUpdated
	switch {
	case x.j.IsPR && humansPR(w) && !w.diverted:
		// A verified change on a human's pull request: their description
		// stays theirs; the report is selfcode's own comment.
		if err := x.pub.Report(ctx, body); err != nil {
			return "", err
		}
		x.mu.Lock()
		x.rep.PRURL = w.pr.HTMLURL
		x.mu.Unlock()
		return outcome, nil
	case x.j.IsPR && !w.diverted:
		// A command on selfcode's own pull request: the PR is the job's
		// issue; its title stays the one people gave it.
		if _, err := x.pub.EnsurePR(ctx, w.branch, w.base, w.pr.Title, body, false); err != nil {
			return "", err
		}
	case w.diverted:
		// A change that may not go to a human's branch: proposed into it from
		// selfcode/pr-N, said in selfcode's comment on their PR.
		title = "selfcode: " + firstNonEmpty(w.pr.Title, "changes for #"+strconv.Itoa(x.j.Issue))
		pr, err := x.pub.EnsurePR(ctx, w.branch, w.base, title, body, !verified)
		if err != nil {
			return "", err
		}
		if pr.Created {
			outcome = job.OutcomePROpened
		}
		kind := "pull request"
		if !verified {
			kind = "draft pull request"
		}
		note := fmt.Sprintf("%s: it is proposed as %s #%d (%s) into this branch instead.\n\n%s", w.why, kind, pr.Number, pr.URL, body)
		if err := x.pub.Report(ctx, note); err != nil {
			return "", err
		}
	default:
		pr, err := x.pub.EnsurePR(ctx, w.branch, w.base, title, body, !verified)
		if err != nil {
			return "", err
		}
		if pr.Created {
			outcome = job.OutcomePROpened
		}
	}
	x.mu.Lock()
	x.rep.PRURL = x.j.Publication.PRURL
	x.mu.Unlock()
	return outcome, nil
}

// humansPR reports whether the pull request a command on a PR works on is
// someone else's, not one selfcode opened.
func humansPR(w *workspace) bool { return !strings.HasPrefix(w.pr.HeadRef, "selfcode/") }

// divert sends the change to selfcode/pr-N instead of a human's branch,
// for the reason why.
func (x *run) divert(ctx context.Context, w *workspace, why string) error {
	branch := "selfcode/pr-" + strconv.Itoa(x.j.Issue)
	expected, err := w.git.RemoteBranchSHA(ctx, w.repo, branch, w.token)
	if err != nil {
		return fmt.Errorf("read %s: %w", branch, err)
	}
	w.base, w.branch, w.expected, w.fastForward, w.diverted, w.why = w.pr.HeadRef, branch, expected, false, true, why
	return nil
}

// completeCheck reports the verdict on the pushed commit's check run:
// success (verified), failure (failed) or neutral (unverified).
func (x *run) completeCheck(ctx context.Context, sha string, verified bool, verdict verify.Verdict) {
	conclusion, title := "success", "Verified"
	switch {
	case x.report().Unfinished != nil:
		conclusion, title = "neutral", "Unfinished: stopped at a limit"
	case verified:
	case verdict == verify.Unverified:
		conclusion, title = "neutral", "Unverified"
	default:
		conclusion, title = "failure", "Verification failed"
	}
	if err := x.pub.Check(ctx, sha, "in_progress", "", "selfcode is publishing", "Pushed "+sha[:12]+"."); err != nil {
		x.log.Warn("check run", "err", err)
	} else if err := x.pub.Check(ctx, sha, "completed", conclusion, title, checkSummary(x.report())); err != nil {
		x.log.Warn("complete check run", "err", err)
	}
}
