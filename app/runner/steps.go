package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
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
	task        Task
	cleanup     []func()
}

func (w *workspace) close() {
	for i := len(w.cleanup) - 1; i >= 0; i-- {
		w.cleanup[i]()
	}
}

// work runs the steps.
func (x *run) work(ctx context.Context, client *gh.Client) (job.Outcome, error) {
	w, outcome, err := x.checkout(ctx, client)
	if w == nil {
		return outcome, err
	}
	defer w.close()
	res, outcome, done, err := x.execute(ctx, client, w)
	if done {
		return outcome, err
	}
	return x.publish(ctx, client, w, res)
}

// checkout finds where the work starts and checks it out. It returns a
// nil workspace when the job ends here (with its outcome or error).
func (x *run) checkout(ctx context.Context, client *gh.Client) (*workspace, job.Outcome, error) {
	j := x.j
	x.stage(stage.Checkout, stage.Running, "")
	repo, err := client.Repo(ctx, j.Repo.Owner, j.Repo.Name)
	if err != nil {
		x.stage(stage.Checkout, stage.Fail, "repository not accessible")
		return nil, "", fmt.Errorf("repository %s: %w", j.Repo.FullName(), ghapp.MapError(err))
	}
	w := &workspace{repo: j.Repo, token: func(ctx context.Context) (string, error) { return client.Token(ctx) }}
	w.repo.CloneURL, w.repo.DefaultBranch = repo.CloneURL, repo.DefaultBranch
	if w.git, err = x.r.o.Git(ctx); err != nil {
		return nil, "", errs.E(errs.KindTransient, "git", err)
	}
	w.task = Task{Job: j, Logger: x.log, Stage: x.stage,
		Issue: Issue{Number: j.Issue, Title: j.IssueTitle, Body: j.IssueBody},
		Artifact: func(name string, data []byte) {
			if err := x.rt.PutArtifact(context.Background(), name, data); err != nil {
				x.log.Warn("store artifact", "name", name, "err", err)
			}
		}}
	start, outcome, done, err := x.target(ctx, client, w)
	if done {
		return nil, outcome, err
	}
	if err := x.checkOut(ctx, w, start); err != nil {
		w.close()
		return nil, "", err
	}
	x.stage(stage.Checkout, stage.Pass, fmt.Sprintf("%s at %.12s", w.branch, w.ws.BaseSHA))
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
			x.stage(stage.Checkout, stage.Fail, "could not read "+w.branch)
			return "", "", true, fmt.Errorf("read %s: %w", w.branch, err)
		}
		return start, "", false, nil
	}
	if w.pr, err = client.PullRequest(ctx, j.Repo.Owner, j.Repo.Name, j.Issue); err != nil {
		x.stage(stage.Checkout, stage.Fail, "pull request not accessible")
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
		x.stage(stage.Checkout, stage.Skipped, skip)
		return "", job.OutcomeNoChange, true, x.pub.Comment(ctx, x.rep.Summary)
	}
	w.branch, start, w.base, w.fastForward = w.pr.HeadRef, w.pr.HeadSHA, w.pr.BaseRef, true
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
		x.stage(stage.Checkout, stage.Fail, "could not check out "+start)
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
	w.task.Dir, w.task.BaseSHA, w.task.BaseRef = ws.Dir, ws.BaseSHA, w.base
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
	w.task.BaselineDir, w.task.BaselineSHA = bws.Dir, bws.BaseSHA
	if err := x.followUp(ctx, client, w.pr, &w.task); err != nil {
		return err
	}
	if j.Publication.CheckRunID != 0 {
		_ = x.pub.Check(ctx, j.Publication.HeadSHA, "in_progress", "", "selfcode is working", "Planning and editing.")
	}
	return nil
}

// execute runs the engine on the checkout. done is set when the job ends
// here: an error, a skipped repository, or a plan posted.
func (x *run) execute(ctx context.Context, client *gh.Client, w *workspace) (res Result, outcome job.Outcome, done bool, err error) {
	j := x.j
	// .selfcode.yml always comes from the default branch, never from the
	// pull request being worked on.
	repoCfg, err := w.git.ReadFileAt(ctx, w.ws, w.repo.DefaultBranch, ".selfcode.yml")
	if err != nil && !errors.Is(err, gitops.ErrNotFound) {
		return res, "", true, fmt.Errorf("read .selfcode.yml from %s: %w", w.repo.DefaultBranch, err)
	}
	w.task.RepoConfig, w.task.Comments = repoCfg, x.comments(ctx, client)
	res, err = x.r.o.Engine.Execute(ctx, w.task)
	x.mergeReport(res.Report)
	if total := res.Report.Tokens.Total; total > 0 {
		if _, uerr := x.rt.Update(context.Background(), func(jj *job.Job) error { jj.Tokens = total; return nil }); uerr != nil {
			x.log.Warn("record tokens", "err", uerr)
		}
	}
	switch {
	case err != nil:
		return res, "", true, err
	case res.Skip != "":
		x.rep.Summary = res.Skip
		if err := x.pub.Comment(ctx, res.Skip); err != nil {
			return res, "", true, err
		}
		// A skipped job ends canceled with the reason (the worker maps
		// errs.KindCanceled to state canceled).
		return res, "", true, errs.E(errs.KindCanceled, res.Skip, nil)
	case j.Kind == job.KindPlan:
		body, err := x.r.o.Templates.PlanComment(x.report())
		if err != nil {
			return res, "", true, fmt.Errorf("render plan: %w", err)
		}
		return res, job.OutcomePlanPosted, true, x.pub.Comment(ctx, body)
	}
	return res, "", false, nil
}

// publish commits the change, pushes it, opens or updates the pull
// request and completes the check run; an unverified change with
// draft_on_failure off is reported as a comment instead.
func (x *run) publish(ctx context.Context, client *gh.Client, w *workspace, res Result) (job.Outcome, error) {
	x.stage(stage.Publish, stage.Running, "")
	title := res.Title
	if title == "" {
		title = "selfcode: " + firstNonEmpty(x.j.IssueTitle, "changes for #"+strconv.Itoa(x.j.Issue))
	}
	sha, changed, err := x.commit(ctx, w, title)
	if err != nil {
		return "", err
	}
	if !changed {
		x.stage(stage.Publish, stage.Skipped, "no change to publish")
		return job.OutcomeNoChange, nil
	}
	if !res.Verified && !res.DraftOnFailure {
		body, err := x.r.o.Templates.FailureReport(x.report())
		if err != nil {
			return "", fmt.Errorf("render failure report: %w", err)
		}
		x.stage(stage.Publish, stage.Skipped, "not verified; draft_on_failure is off")
		return unverifiedOutcome(res.Verdict), x.pub.Comment(ctx, body)
	}
	if err := x.push(ctx, w); err != nil {
		return "", err
	}
	outcome, err := x.pullRequest(ctx, w, title, res.Verified)
	if err != nil {
		return "", err
	}
	if !res.Verified {
		outcome = unverifiedOutcome(res.Verdict)
	}
	x.completeCheck(ctx, sha, res.Verified, res.Verdict)
	x.stage(stage.Publish, stage.Pass, x.j.Publication.PRURL)
	if b, err := json.Marshal(x.report()); err == nil {
		_ = x.rt.PutArtifact(context.Background(), "report.json", b)
	}
	if err := x.answer(ctx, client, sha, res.Verified); err != nil {
		x.log.Warn("answer the feedback", "err", err)
	}
	return outcome, nil
}

// commit records the files changed and the diff, and commits as the bot.
func (x *run) commit(ctx context.Context, w *workspace, title string) (sha string, changed bool, err error) {
	files, err := w.git.ChangedFiles(ctx, w.ws, w.ws.BaseSHA)
	if err != nil {
		return "", false, fmt.Errorf("list changed files: %w", err)
	}
	x.mu.Lock()
	x.rep.FilesChanged = nil
	for _, f := range files {
		x.rep.FilesChanged = append(x.rep.FilesChanged, templates.FileChange{Path: f.Path, Action: f.Status, Added: f.Added, Deleted: f.Deleted, Binary: f.Binary})
	}
	x.mu.Unlock()
	if diff, err := w.git.Diff(ctx, w.ws, w.ws.BaseSHA); err == nil {
		_ = x.rt.PutArtifact(context.Background(), "diff.patch", []byte(diff))
	}
	sha, changed, err = w.git.Commit(ctx, w.ws, commitMessage(title, x.j, x.rep.Issue))
	if err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	return sha, changed, nil
}

// push pushes the branch: fast-forward only on top of someone's commits,
// else with a lease on what the branch was when the job began. A branch
// that moved meanwhile makes the job run again on its new head.
func (x *run) push(ctx context.Context, w *workspace) error {
	var err error
	if w.fastForward {
		if err = w.git.PushFastForward(ctx, w.ws, w.branch, w.token); errors.Is(err, gitops.ErrNonFastForward) {
			x.stage(stage.Publish, stage.Fail, "the branch moved while the job ran")
			return errs.E(errs.KindTransient, "the branch moved while the job ran; running again on its new head", err)
		}
	} else if err = w.git.PushSelfcodeBranch(ctx, w.ws, w.branch, w.expected, w.token); errors.Is(err, gitops.ErrLeaseRejected) {
		x.stage(stage.Publish, stage.Fail, "the branch moved while the job ran")
		return errs.E(errs.KindTransient, "the branch moved while the job ran; running again", err)
	}
	if err != nil {
		x.stage(stage.Publish, stage.Fail, "push failed")
		return fmt.Errorf("push %s: %w", w.branch, err)
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
	if x.j.IsPR {
		// A command on an existing pull request: the PR is the job's issue;
		// its title stays the one people gave it.
		if _, err := x.pub.EnsurePR(ctx, w.branch, w.base, w.pr.Title, body, false); err != nil {
			return "", err
		}
	} else {
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

// completeCheck reports the verdict on the pushed commit's check run:
// success (verified), failure (failed) or neutral (unverified).
func (x *run) completeCheck(ctx context.Context, sha string, verified bool, verdict verify.Verdict) {
	conclusion, title := "success", "Verified"
	switch {
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
