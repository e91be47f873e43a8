package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// The step tests run each step of the job path on its own against the
// simulated GitHub (REST and git over HTTP) with real git; the pipeline
// is a function.

const owner, repoName = "Codertocat", "Hello-World"

var sample = map[string]string{
	"go.mod":   "module example.com/hello\n\ngo 1.22\n",
	"greet.go": "package hello\n\nfunc Greet() string { return \"Hello\" }\n",
}

type pipelineFunc func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error)

func (f pipelineFunc) Run(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
	return f(ctx, in)
}

// runtime is worker.Runtime over a job kept in memory.
type runtime struct {
	mu        sync.Mutex
	j         job.Job
	artifacts map[string][]byte
	timeout   time.Duration // what the runner set
}

func (r *runtime) Update(ctx context.Context, fn func(*job.Job) error) (*job.Job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := fn(&r.j); err != nil {
		return nil, err
	}
	j := r.j
	return &j, nil
}

func (r *runtime) PutArtifact(ctx context.Context, name string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.artifacts[name] = data
	return nil
}

func (r *runtime) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (r *runtime) SetTimeout(d time.Duration) { r.mu.Lock(); r.timeout = d; r.mu.Unlock() }

func (r *runtime) Grace() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

func (r *runtime) job() job.Job { r.mu.Lock(); defer r.mu.Unlock(); return r.j }

type stepEnv struct {
	t      *testing.T
	fake   *fakegithub.Server
	client *gh.Client
	r      *Runner
	pipe   pipelineFunc
}

// newStepEnv starts the simulated GitHub with the sample repository (plus
// files) and a runner whose pipeline calls pipe.
func newStepEnv(t *testing.T, files map[string]string, pipe pipelineFunc) *stepEnv {
	t.Helper()
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	fake.AddInstallation(1, owner)
	all := map[string]string{}
	for k, v := range sample {
		all[k] = v
	}
	for k, v := range files {
		all[k] = v
	}
	if err := fake.AddRepo(owner, repoName, fakegithub.RepoOptions{DefaultBranch: "main", Files: all}); err != nil {
		t.Fatal(err)
	}
	factory, err := gh.New(gh.Options{AppID: fake.AppID(), PrivateKeyPEM: fake.PrivateKeyPEM(), BaseURL: fake.URL(), BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	client, err := factory.Installation(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := templates.New(templates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	git, err := gitops.New(gitops.Options{Dir: t.TempDir(), Identity: gitops.Identity{Name: fake.BotLogin(), Email: "bot@users.noreply.github.com"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &stepEnv{t: t, fake: fake, client: client, pipe: pipe}
	e.r, err = New(Options{Clients: factory, Templates: tm, Git: func(context.Context) (*gitops.Git, error) { return git, nil },
		Pipeline: pipelineFunc(func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) { return e.pipe(ctx, in) })})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// issueJob is a /selfcode command on a new issue.
func (e *stepEnv) issueJob(kind job.Kind) *job.Job {
	e.t.Helper()
	n, err := e.fake.AddIssue(owner, repoName, fakegithub.Issue{Title: "Greeting is too short", Body: "Say more.", User: "writer"})
	if err != nil {
		e.t.Fatal(err)
	}
	return &job.Job{ID: "01job" + strings.Repeat("x", n), Kind: kind, Repo: job.Repo{Owner: owner, Name: repoName}, Issue: n,
		IssueTitle: "Greeting is too short", InstallationID: 1, Instructions: "say hello to the world",
		Trigger: job.Trigger{Source: job.SourceIssueComment, Sender: "writer"}}
}

// prJob is a command on pull request n.
func (e *stepEnv) prJob(n int) *job.Job {
	return &job.Job{ID: "01pr" + strings.Repeat("y", n), Kind: job.KindRun, Repo: job.Repo{Owner: owner, Name: repoName}, Issue: n, IsPR: true,
		InstallationID: 1, Instructions: "tweak it", Trigger: job.Trigger{Source: job.SourceIssueComment, Sender: "maint"}}
}

func (e *stepEnv) begin(j *job.Job) (*run, *runtime) {
	rt := &runtime{j: *j, artifacts: map[string][]byte{}}
	return e.r.begin(j, rt, e.client), rt
}

// checkedOut begins j's run and checks it out; the workspace is removed
// when the test ends.
func (e *stepEnv) checkedOut(j *job.Job) (*run, *runtime, *workspace) {
	e.t.Helper()
	x, rt := e.begin(j)
	w, _, err := x.checkout(context.Background(), e.client)
	if err != nil || w == nil {
		e.t.Fatalf("checkout: %v", err)
	}
	e.t.Cleanup(w.close)
	return x, rt, w
}

// executed is checkedOut followed by a run of the pipeline that does not
// end the job.
func (e *stepEnv) executed(j *job.Job) (*run, *runtime, *workspace, result) {
	e.t.Helper()
	x, rt, w := e.checkedOut(j)
	res, _, done, err := x.execute(context.Background(), e.client, w)
	if done || err != nil {
		e.t.Fatalf("execute: done %v, %v", done, err)
	}
	return x, rt, w, res
}

func stageOf(j job.Job, name stage.Name) job.Stage {
	for _, s := range j.Stages {
		if s.Name == name {
			return s
		}
	}
	return job.Stage{}
}

// An issue job rebuilds selfcode/issue-N from the default branch; when a
// person pushed to that branch, their commits are kept and the push
// becomes fast-forward.
func TestCheckout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		humanCommit bool
	}{{"new branch from main", false}, {"someone else's commits on the branch", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newStepEnv(t, nil, nil)
			j := e.issueJob(job.KindRun)
			human := ""
			if tt.humanCommit {
				sha, err := e.fake.CommitFiles(owner, repoName, "selfcode/issue-1", "by hand", map[string]string{"HUMAN.md": "mine\n"})
				if err != nil {
					t.Fatal(err)
				}
				human = sha
			}
			_, rt, w := e.checkedOut(j)
			if w.branch != "selfcode/issue-1" || w.base != "main" || w.expected != human || w.fastForward != tt.humanCommit {
				t.Fatalf("workspace: branch %s base %s expected %q fast-forward %v", w.branch, w.base, w.expected, w.fastForward)
			}
			_, err := os.Stat(filepath.Join(w.in.Dir, "HUMAN.md"))
			if tt.humanCommit != (err == nil) {
				t.Fatalf("HUMAN.md in the checkout: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(w.in.Dir, "greet.go")); err != nil || !strings.Contains(string(b), "Hello") {
				t.Fatalf("greet.go: %q %v", b, err)
			}
			if w.in.JobID != j.ID || w.in.Issue != j.Issue || w.in.BaseSHA == "" || w.in.Progress == nil {
				t.Fatalf("pipeline input %+v", w.in)
			}
			// The pipeline's copies go to the workspace, beside the checkout.
			if w.in.Scratch == "" || filepath.Dir(w.in.Dir) != w.in.Scratch {
				t.Fatalf("scratch space %q for the checkout %q", w.in.Scratch, w.in.Dir)
			}
			if s := stageOf(rt.job(), stage.Checkout); s.Status != stage.Pass {
				t.Fatalf("checkout stage %+v", s)
			}
		})
	}
}

// A command on a closed pull request or one from a fork ends at checkout
// with a reply and no change.
func TestCheckoutRefusesClosedAndForkPRs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		pr    fakegithub.PullRequest
		close bool
		reply string
	}{
		{"closed", fakegithub.PullRequest{Title: "Feature", Head: "feature", Base: "main", User: "writer"}, true, "is closed"},
		{"fork", fakegithub.PullRequest{Title: "Fork", Head: "feature", HeadOwner: "someone", Base: "main", User: "someone"}, false, "comes from a fork"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newStepEnv(t, nil, nil)
			headOwner := owner
			if tt.pr.HeadOwner != "" {
				headOwner = tt.pr.HeadOwner
				if err := e.fake.AddRepo(headOwner, repoName, fakegithub.RepoOptions{ForkOf: owner + "/" + repoName}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.fake.CommitFiles(headOwner, repoName, "feature", "work", map[string]string{"NOTES.md": "x\n"}); err != nil {
				t.Fatal(err)
			}
			pr, err := e.fake.AddPullRequest(owner, repoName, tt.pr)
			if err != nil {
				t.Fatal(err)
			}
			if tt.close {
				if err := e.fake.SetPullRequestState(owner, repoName, pr.Number, "closed"); err != nil {
					t.Fatal(err)
				}
			}
			x, rt := e.begin(e.prJob(pr.Number))
			w, outcome, err := x.checkout(context.Background(), e.client)
			if w != nil || err != nil || outcome != job.OutcomeNoChange {
				t.Fatalf("checkout: workspace %v outcome %s err %v", w != nil, outcome, err)
			}
			if s := stageOf(rt.job(), stage.Checkout); s.Status != stage.Skipped {
				t.Fatalf("checkout stage %+v", s)
			}
			found := false
			for _, c := range e.fake.Comments(owner, repoName, pr.Number) {
				found = found || strings.Contains(c.Body, tt.reply)
			}
			if !found {
				t.Fatalf("no reply saying the PR %s", tt.reply)
			}
		})
	}
}

// verifiedChange edits greet.go and reports the verdict given.
func verifiedChange(v verify.Verdict) pipelineFunc {
	return func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		in.Progress.Stage(stage.Plan, stage.Pass, "greet")
		if err := os.WriteFile(filepath.Join(in.Dir, "greet.go"), []byte("package hello\n\nfunc Greet() string { return \"Hello, world\" }\n"), 0o644); err != nil {
			return nil, err
		}
		passed := v == verify.Verified
		return &pipeline.Output{Plan: &pipeline.Plan{Summary: "Greet the world"}, Summary: "Changed the greeting.", Verdict: v, Verified: passed,
			Tokens: 7, Verify: []pipeline.VerifyResult{{Run: verify.Run{Passed: passed,
				Commands: []verify.CommandResult{{Name: "test", Run: "go test ./...", Passed: passed}}}}},
			Comparison: &verify.Comparison{Verdict: v, Verified: passed}}, nil
	}
}

// execute hands the pipeline the job and the repository's configuration
// from the default branch, fills the report once from its output, and ends
// the job itself when there is nothing to publish.
func TestExecute(t *testing.T) {
	t.Parallel()
	tooWide := func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		return &pipeline.Output{Skipped: "The plan touches too much."}, nil
	}
	plan := func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		if !in.PlanOnly {
			return nil, errors.New("not a plan-only run")
		}
		return &pipeline.Output{Plan: &pipeline.Plan{Summary: "Edit greet.go", Steps: []pipeline.PlanStep{{ID: "1", Title: "edit greet.go"}}}}, nil
	}
	broken := func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		return nil, errs.E(errs.KindTransient, "the model is down", nil)
	}
	tests := []struct {
		name     string
		config   string
		kind     job.Kind
		pipe     pipelineFunc
		done     bool
		outcome  job.Outcome
		errKind  errs.Kind
		reply    string
		verified bool
	}{
		{"verified change", "", job.KindRun, verifiedChange(verify.Verified), false, "", errs.KindUnknown, "", true},
		{"disabled repository", "enabled: false\n", job.KindRun, verifiedChange(verify.Verified), true, "", errs.KindCanceled, "disabled for this repository", false},
		{"invalid configuration", "verify: 3\n", job.KindRun, verifiedChange(verify.Verified), true, "", errs.KindPermanent, "", false},
		{"plan too wide", "", job.KindRun, tooWide, true, "", errs.KindCanceled, "touches too much", false},
		{"plan command", "", job.KindPlan, plan, true, job.OutcomePlanPosted, errs.KindUnknown, "Edit greet.go", false},
		{"pipeline error", "", job.KindRun, broken, true, "", errs.KindTransient, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			if tt.config != "" {
				files[".selfcode.yml"] = tt.config
			}
			e := newStepEnv(t, files, tt.pipe)
			j := e.issueJob(tt.kind)
			x, rt, w := e.checkedOut(j)
			res, outcome, done, err := x.execute(context.Background(), e.client, w)
			if done != tt.done || outcome != tt.outcome || errs.KindOf(err) != tt.errKind || (err == nil) != (tt.errKind == errs.KindUnknown) {
				t.Fatalf("done %v outcome %q err %v (kind %v)", done, outcome, err, errs.KindOf(err))
			}
			if tt.reply != "" {
				found := false
				for _, c := range e.fake.Comments(owner, repoName, j.Issue) {
					found = found || strings.Contains(c.Body, tt.reply)
				}
				if !found {
					t.Fatalf("no reply containing %q", tt.reply)
				}
			}
			if !tt.verified {
				return
			}
			rep := x.report()
			if !res.verified || res.title != "Greet the world" || rep.Summary != "Changed the greeting." || rep.Verdict != string(verify.Verified) ||
				len(rep.Verification) != 1 || rep.JobID != j.ID || rep.Issue != j.Issue {
				t.Fatalf("result %+v report %+v", res, rep)
			}
			if rt.job().Tokens != 7 {
				t.Fatalf("tokens recorded: %d", rt.job().Tokens)
			}
		})
	}
}

// publish pushes the change and opens a pull request whose draft state and
// check run follow the verdict; an unverified change with
// draft_on_failure off is a comment instead; no change publishes nothing.
func TestPublish(t *testing.T) {
	t.Parallel()
	noChange := func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		return &pipeline.Output{Summary: "Nothing to do.", Verdict: verify.Verified, Verified: true}, nil
	}
	tests := []struct {
		name       string
		config     string
		pipe       pipelineFunc
		outcome    job.Outcome
		prs        int
		draft      bool
		conclusion string
	}{
		{"verified", "", verifiedChange(verify.Verified), job.OutcomePROpened, 1, false, "success"},
		{"failed", "", verifiedChange(verify.Failed), job.OutcomeVerificationFailed, 1, true, "failure"},
		{"unverified", "", verifiedChange(verify.Unverified), job.OutcomeUnverified, 1, true, "neutral"},
		{"failed, no drafts", "draft_on_failure: false\n", verifiedChange(verify.Failed), job.OutcomeVerificationFailed, 0, false, ""},
		{"no change", "", noChange, job.OutcomeNoChange, 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			if tt.config != "" {
				files[".selfcode.yml"] = tt.config
			}
			e := newStepEnv(t, files, tt.pipe)
			j := e.issueJob(job.KindRun)
			x, rt, w, res := e.executed(j)
			outcome, err := x.publish(context.Background(), e.client, w, res)
			if err != nil || outcome != tt.outcome {
				t.Fatalf("publish: %s %v", outcome, err)
			}
			prs := e.fake.PullRequests(owner, repoName)
			if len(prs) != tt.prs || (tt.prs == 1 && (prs[0].Draft != tt.draft || prs[0].Head != "selfcode/issue-1" || !strings.Contains(prs[0].Body, "Closes #1"))) {
				t.Fatalf("pull requests %+v", prs)
			}
			_, err = e.fake.BranchSHA(owner, repoName, "selfcode/issue-1")
			if (tt.prs == 1) != (err == nil) {
				t.Fatalf("branch pushed: %v, want %v", err == nil, tt.prs == 1)
			}
			if tt.conclusion != "" {
				runs := e.fake.CheckRuns(owner, repoName)
				if len(runs) == 0 || runs[len(runs)-1].Conclusion != tt.conclusion {
					t.Fatalf("check runs %+v", runs)
				}
				if rt.artifacts["report.json"] == nil || rt.artifacts["diff.patch"] == nil {
					t.Fatal("report.json or diff.patch not stored")
				}
			}
			if tt.name == "failed, no drafts" {
				found := false
				for _, c := range e.fake.Comments(owner, repoName, j.Issue) {
					found = found || strings.Contains(c.Body, "go test ./...")
				}
				if !found {
					t.Fatal("no failure report comment")
				}
			}
		})
	}
}

// A branch that moved while the job ran is not overwritten: the push
// fails as transient so the job runs again on the new head.
func TestPushRefusesABranchThatMoved(t *testing.T) {
	t.Parallel()
	e := newStepEnv(t, nil, verifiedChange(verify.Verified))
	x, _, w, res := e.executed(e.issueJob(job.KindRun))
	if _, err := e.fake.CommitFiles(owner, repoName, "selfcode/issue-1", "meanwhile", map[string]string{"LATE.md": "late\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.publish(context.Background(), e.client, w, res); errs.KindOf(err) != errs.KindTransient {
		t.Fatalf("push over a moved branch: %v", err)
	}
	if f, err := e.fake.FileAt(owner, repoName, "selfcode/issue-1", "LATE.md"); err != nil || f != "late\n" {
		t.Fatalf("the other commit was lost: %q %v", f, err)
	}
}

// The commit message quotes the request and names the issue and the job.
func TestCommitMessage(t *testing.T) {
	t.Parallel()
	j := &job.Job{ID: "01abc", Instructions: "make it\nfriendlier", Trigger: job.Trigger{Sender: "writer"}}
	got := commitMessage("Greet the world\nmore", j, 7)
	want := "Greet the world\n\nRequested by @writer:\n> make it\n> friendlier\n\nRefs #7\nSelfcode-Job: 01abc\n"
	if got != want {
		t.Fatalf("commit message:\n%q\nwant\n%q", got, want)
	}
}

// A stage records when it started and ended, also one first heard of when
// it already ended (what /metrics' stage durations are made of); a stage
// running again has no end until it ends again.
func TestStageTimes(t *testing.T) {
	t.Parallel()
	e := newStepEnv(t, nil, nil)
	clock := time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
	e.r.o.Now = func() time.Time { return clock }
	x, rt := e.begin(e.issueJob(job.KindRun))
	x.Stage(stage.Plan, stage.Running, "")
	clock = clock.Add(3 * time.Second)
	x.Stage(stage.Plan, stage.Pass, "planned")
	x.Stage(stage.Fix, stage.Skipped, "not needed")
	plan, fix := stageOf(rt.job(), stage.Plan), stageOf(rt.job(), stage.Fix)
	if got := plan.FinishedAt.Sub(plan.StartedAt); got != 3*time.Second {
		t.Fatalf("plan took %s, want 3s: %+v", got, plan)
	}
	if fix.StartedAt.IsZero() || !fix.FinishedAt.Equal(fix.StartedAt) {
		t.Fatalf("a stage skipped at once: %+v", fix)
	}
	x.Stage(stage.Plan, stage.Running, "again")
	if p := stageOf(rt.job(), stage.Plan); !p.FinishedAt.IsZero() {
		t.Fatalf("a running stage has an end: %+v", p)
	}
}

// Where a job's time went — queue wait, stages, and the pipeline's finer
// parts — is in the job record and in the pull request's body.
func TestWhereTheTimeWent(t *testing.T) {
	t.Parallel()
	pipe := func(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
		out, err := verifiedChange(verify.Verified)(ctx, in)
		if out != nil {
			out.Took = map[stage.Part]time.Duration{stage.PartSandboxStart: 1500 * time.Millisecond, stage.PartModel: 4 * time.Second}
		}
		return out, err
	}
	e := newStepEnv(t, nil, pipe)
	j := e.issueJob(job.KindRun)
	j.StartedAt = time.Now()
	j.CreatedAt = j.StartedAt.Add(-2 * time.Second)
	x, rt := e.begin(j)
	if _, err := x.work(context.Background(), e.client); err != nil {
		t.Fatal(err)
	}
	x.finish(job.OutcomePROpened, nil)
	took := map[stage.Part]float64{}
	for _, sp := range rt.job().Time {
		took[sp.Part] = sp.Seconds
	}
	if took[stage.PartQueue] != 2 || took[stage.PartSandboxStart] != 1.5 || took[stage.PartModel] != 4 {
		t.Errorf("job time %+v", rt.job().Time)
	}
	for _, p := range []stage.Part{stage.PartCheckout, stage.PartPublish} {
		if _, ok := took[p]; !ok {
			t.Errorf("no %s time in %+v", p, rt.job().Time)
		}
	}
	prs := e.fake.PullRequests(owner, repoName)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "queue 2.0s · checkout ") || !strings.Contains(prs[0].Body, "sandbox start 1.5s · model 4.0s") {
		t.Fatalf("the pull request does not say where the time went:\n%v", prs)
	}
}

// On a pull request selfcode did not open, its description stays the
// author's: the report is selfcode's own comment. A verified change is
// pushed to their branch; an unverified one never is — it goes to
// selfcode/pr-N as a draft pull request into their branch, linked in the
// comment.
func TestPublishOnAHumansPR(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		verdict   verify.Verdict
		protected bool
		theirs    bool // their branch gets the change
	}{
		{"verified", verify.Verified, false, true},
		{"failed", verify.Failed, false, false},
		{"unverified", verify.Unverified, false, false},
		{"verified, their branch protected", verify.Verified, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newStepEnv(t, nil, verifiedChange(tt.verdict))
			before, err := e.fake.CommitFiles(owner, repoName, "feature", "their work", map[string]string{"NOTES.md": "theirs\n"})
			if err != nil {
				t.Fatal(err)
			}
			pr, err := e.fake.AddPullRequest(owner, repoName, fakegithub.PullRequest{Title: "Their feature", Body: "Their description.", Head: "feature", Base: "main", User: "writer"})
			if err != nil {
				t.Fatal(err)
			}
			if tt.protected {
				if err := e.fake.ProtectBranch(owner, repoName, "feature"); err != nil {
					t.Fatal(err)
				}
			}
			x, _, w, res := e.executed(e.prJob(pr.Number))
			if _, err := x.publish(context.Background(), e.client, w, res); err != nil {
				t.Fatal(err)
			}
			after, _ := e.fake.BranchSHA(owner, repoName, "feature")
			if moved := after != before; moved != tt.theirs {
				t.Errorf("their branch moved: %v, want %v", moved, tt.theirs)
			}
			var theirPR *fakegithub.PullRequest
			var drafts []fakegithub.PullRequest
			for _, p := range e.fake.PullRequests(owner, repoName) {
				if p.Number == pr.Number {
					p := p
					theirPR = &p
				} else {
					drafts = append(drafts, p)
				}
			}
			if theirPR == nil || theirPR.Body != "Their description." || theirPR.Title != "Their feature" {
				t.Fatalf("their pull request was changed: %+v", theirPR)
			}
			report := ""
			for _, c := range e.fake.Comments(owner, repoName, pr.Number) {
				if strings.Contains(c.Body, "<!-- selfcode:report:") {
					report = c.Body
				}
			}
			if report == "" || !strings.Contains(report, "go test ./...") {
				t.Fatalf("no report comment on their pull request: %q", report)
			}
			if tt.theirs {
				if len(drafts) != 0 {
					t.Errorf("a verified change also opened %+v", drafts)
				}
				// A retry's report edits the same comment.
				if err := x.pub.Report(context.Background(), "Second report."); err != nil {
					t.Fatal(err)
				}
				var reports []string
				for _, c := range e.fake.Comments(owner, repoName, pr.Number) {
					if strings.Contains(c.Body, "<!-- selfcode:report:") {
						reports = append(reports, c.Body)
					}
				}
				if len(reports) != 1 || !strings.Contains(reports[0], "Second report.") {
					t.Errorf("report comments %q, want the one edited in place", reports)
				}
				return
			}
			if len(drafts) != 1 || drafts[0].Draft != (tt.verdict != verify.Verified) || drafts[0].Head != fmt.Sprintf("selfcode/pr-%d", pr.Number) || drafts[0].Base != "feature" {
				t.Fatalf("want one pull request selfcode/pr-%d → feature (a draft unless verified), got %+v", pr.Number, drafts)
			}
			if tt.protected && !strings.Contains(report, "protected branch") {
				t.Errorf("the comment does not say why:\n%s", report)
			}
			if !strings.Contains(report, fmt.Sprintf("#%d", drafts[0].Number)) {
				t.Errorf("the comment does not link the draft:\n%s", report)
			}
		})
	}
}
