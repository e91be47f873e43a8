package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/localrun"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// DefaultLimit is how many commits are evaluated when no limit is given.
const DefaultLimit = 20

// Status is how a task ended.
type Status string

// Task statuses.
const (
	// StatusResolved and StatusUnresolved are graded tasks.
	StatusResolved   Status = "resolved"
	StatusUnresolved Status = "unresolved"
	// StatusSkipped: the held-back tests do not fail on the base, so there
	// is nothing for the model to fix.
	StatusSkipped Status = "skipped"
	// StatusEnvError: the base's environment cannot run (setup fails, no
	// verify command, a test runner missing): not the model's failure.
	StatusEnvError Status = "env_error"
	// StatusError: the evaluation itself failed (sandbox, model API,
	// interrupted); run again next time.
	StatusError Status = "error"
)

// VerdictNone is selfcode's verdict on a job that ended before
// verification: the model changed nothing, or the job stopped first.
const VerdictNone = "none"

// Task is one commit evaluated.
type Task struct {
	Commit  string `json:"commit"`
	Base    string `json:"base"`
	Subject string `json:"subject"`
	Status  Status `json:"status"`
	// Resolved: a held-back test went from failing on the base to passing
	// and nothing that passed on the base fails.
	Resolved bool   `json:"resolved"`
	Reason   string `json:"reason,omitempty"` // why skipped, an environment error, an error, or how the pipeline stopped
	// Verdict is selfcode's own: verified, failed, unverified or none.
	Verdict string `json:"verdict,omitempty"`
	// Agrees: the verdict was "verified" exactly when the task is
	// resolved. Graded tasks only.
	Agrees   *bool    `json:"agrees,omitempty"`
	HeldBack []string `json:"held_back"`
	Fixed    []string `json:"fixed_tests,omitempty"`
	Broken   []string `json:"broken_tests,omitempty"`
	// FixRounds, Tokens, Usage, edit calls and Seconds are the pipeline
	// run's (none for skipped tasks and environment errors).
	FixRounds  int              `json:"fix_rounds"`
	Tokens     int              `json:"tokens"`
	Usage      map[string]Usage `json:"usage,omitempty"`
	CostUSD    *float64         `json:"cost_usd"` // null: unknown (no price table, or a model without a price)
	EditCalls  int              `json:"edit_calls"`
	EditErrors int              `json:"edit_errors"`
	Seconds    float64          `json:"seconds"`
	// TotalSeconds adds the checkout and the checks of the base and the
	// result.
	TotalSeconds float64       `json:"total_seconds"`
	StopReason   string        `json:"stop_reason,omitempty"`
	Changed      []string      `json:"changed,omitempty"`
	LinkedIssues []LinkedIssue `json:"linked_issues,omitempty"`
	// Resumed: kept from an earlier run (not run again).
	Resumed bool `json:"resumed,omitempty"`
}

// Graded reports whether the task was graded.
func (t Task) Graded() bool { return t.Status == StatusResolved || t.Status == StatusUnresolved }

// Options configures Run.
type Options struct {
	RepoDir string
	Limit   int  // commits to evaluate; 0: DefaultLimit
	Fresh   bool // run tasks an earlier run finished again
	Workers int  // tasks at once; default 1
	// Repository names the repository's warm sandbox caches and
	// baselines; default the checkout's own (localrun.CacheName), as
	// `selfcode run` uses.
	Repository string
	// Model is the model client; Models the model name of each role (for
	// the record, the results' key and prices).
	Model  chat.Model
	Models map[chat.Role]string
	// Pipeline builds the pipeline around a model, as `selfcode run` does
	// (server.Pipeline); each task gets its own, around a meter of Model.
	Pipeline func(chat.Model) (*pipeline.Pipeline, error)
	// StoreDir keeps finished tasks ("" keeps none); Fingerprint is what
	// besides the repository, the commit and Models decides a result
	// (endpoint, sandbox image, prompts).
	StoreDir    string
	Fingerprint string
	// Issues reads linked issues; when nil, IssuesNote says why not.
	Issues     IssueSource
	IssuesNote string
	// Pricer prices usage; nil: costs are unknown.
	Pricer Pricer
	// Progress receives a line as each task starts and finishes; nil
	// discards.
	Progress io.Writer
	Logger   *slog.Logger
}

// Report is an evaluation's result.
type Report struct {
	Repository string            `json:"repository"`
	Head       string            `json:"head"`
	Models     map[string]string `json:"models"`
	// LinkedIssues says how the issues commits link to were read.
	LinkedIssues string  `json:"linked_issues"`
	Tasks        []Task  `json:"tasks"`
	Summary      Summary `json:"summary"`
}

// Run evaluates the repository's candidate commits, newest first, up to
// Workers at once, skipping those an earlier run finished (unless Fresh),
// and keeps each as it finishes. Bad usage is an errs.KindInvalid error.
// When ctx ends, the tasks not run are errors and the report is returned
// with ctx's error.
func Run(ctx context.Context, o Options) (*Report, error) { return evaluate(ctx, o, nil) }

// taskRunner evaluates one candidate.
type taskRunner func(context.Context, Candidate) Task

// evaluate is Run; a runTask that is not nil evaluates each task instead of
// the pipeline (tests of the scheduling alone), and then no model or
// pipeline is needed.
func evaluate(ctx context.Context, o Options, runTask taskRunner) (*Report, error) {
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	if o.Limit < 0 {
		return nil, errs.E(errs.KindInvalid, "--limit must be at least 1", nil)
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if runTask == nil && (o.Model == nil || o.Pipeline == nil) {
		return nil, errors.New("eval needs a model and a pipeline")
	}
	top, head, err := Repository(ctx, o.RepoDir)
	if err != nil {
		return nil, err
	}
	cands, err := Candidates(ctx, top, o.Limit)
	if err != nil {
		return nil, err
	}
	if o.Repository == "" {
		o.Repository = localrun.CacheName(top)
	}
	e := &evaluator{o: o, top: top, store: store{dir: o.StoreDir}, total: len(cands), runTask: runTask}
	if runTask == nil {
		if e.checker, err = o.Pipeline(o.Model); err != nil {
			return nil, err
		}
		e.runTask = e.run
	}
	rep := &Report{Repository: top, Head: head, Models: map[string]string{}, LinkedIssues: "read through the repository's GitHub remote"}
	for r, m := range o.Models {
		rep.Models[string(r)] = m
	}
	if o.Issues == nil {
		rep.LinkedIssues = "not read: " + cmp.Or(o.IssuesNote, "no issue source") + "; each task is its commit message only"
	}
	var todo []int
	rep.Tasks, todo = e.resume(cands)
	e.header(len(cands), len(cands)-len(todo))
	e.runAll(ctx, cands, todo, rep.Tasks)
	for i := range rep.Tasks {
		rep.Tasks[i].CostUSD = cost(o.Pricer, rep.Tasks[i].Usage)
	}
	rep.Summary = summarize(rep.Tasks, o.Pricer != nil)
	return rep, ctx.Err()
}

// resume returns a task per candidate — kept from an earlier run unless
// Fresh, otherwise an error until it runs — and the candidates to run.
func (e *evaluator) resume(cands []Candidate) ([]Task, []int) {
	tasks := make([]Task, len(cands))
	var todo []int
	for i, c := range cands {
		tasks[i] = Task{Commit: c.Commit, Base: c.Base, HeldBack: paths(c.Tests), Status: StatusError,
			Reason: "not run: the evaluation was interrupted"}
		if !e.o.Fresh {
			if t, ok, err := e.store.load(e.key(c)); err != nil {
				e.o.Logger.Warn("eval: read a kept result", "commit", c.Commit, "err", err)
			} else if ok {
				t.Resumed = true
				tasks[i] = t
				continue
			}
		}
		todo = append(todo, i)
	}
	return tasks, todo
}

// runAll runs the candidates todo names, Workers at once, into tasks,
// keeping each that finished as it does; it stops handing out work when
// ctx ends.
func (e *evaluator) runAll(ctx context.Context, cands []Candidate, todo []int, tasks []Task) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(e.o.Workers, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				e.started(ctx, cands[i])
				t := e.runTask(ctx, cands[i])
				tasks[i] = t
				if ctx.Err() == nil && kept(t.Status) {
					if err := e.store.save(e.key(cands[i]), t); err != nil {
						e.o.Logger.Warn("eval: keep a result", "commit", t.Commit, "err", err)
					}
				}
				e.finished(t)
			}
		}()
	}
	for _, i := range todo {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
}

// Repository returns the top folder of the git checkout at dir and its
// HEAD commit; an errs.KindInvalid error when dir is not a checkout with
// a commit.
func Repository(ctx context.Context, dir string) (top, head string, err error) {
	top, err = gitLine(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil || top == "" {
		return "", "", errs.E(errs.KindInvalid, fmt.Sprintf("--repo %s is not a git checkout", dir), err)
	}
	head, err = gitLine(ctx, top, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", "", errs.E(errs.KindInvalid, fmt.Sprintf("%s has no commit yet", top), err)
	}
	return top, head, nil
}

// evaluator runs tasks.
type evaluator struct {
	o       Options
	top     string
	checker *pipeline.Pipeline // runs the checks; its model is never called
	store   store
	runTask taskRunner // e.run, unless a test replaced it

	mu      sync.Mutex // guards the counts and the progress output
	total   int
	done    int
	running int
}

func (e *evaluator) key(c Candidate) string {
	models := map[string]string{}
	for r, m := range e.o.Models {
		models[string(r)] = m
	}
	return taskKey(e.top, c.Commit, models, e.o.Fingerprint)
}

// run evaluates one commit: checkout → check the base → the pipeline →
// check the result → grade.
func (e *evaluator) run(ctx context.Context, c Candidate) Task {
	began := time.Now()
	t := e.task(ctx, c)
	t.TotalSeconds = time.Since(began).Seconds()
	return t
}

func (e *evaluator) task(ctx context.Context, c Candidate) Task {
	t := Task{Commit: c.Commit, Base: c.Base, HeldBack: paths(c.Tests)}
	end := func(s Status, why string) Task { t.Status, t.Reason = s, why; return t }
	msg, err := message(ctx, e.top, c.Commit)
	if err != nil {
		return end(StatusError, err.Error())
	}
	t.Subject = firstLine(msg)
	text, linked := describe(ctx, msg, e.o.Issues, e.o.IssuesNote)
	t.LinkedIssues = linked

	ws, err := newWorkspace(ctx, e.top, c)
	if err != nil {
		return end(StatusError, err.Error())
	}
	defer ws.remove()
	cfg, err := localrun.ReadConfig(ws.dir)
	if err != nil {
		return end(StatusEnvError, "the base's .selfcode.yml: "+err.Error())
	}
	base, withTests, err := e.checkBase(ctx, c, ws, cfg)
	if err != nil {
		return end(StatusError, err.Error())
	}
	if why := envError(base, withTests); why != "" {
		return end(StatusEnvError, why)
	}
	if !testsFailOnBase(base, withTests) {
		return end(StatusSkipped, "the held-back tests do not fail on the base: nothing to fix")
	}
	files, err := readHeldBack(ctx, e.top, c)
	if err != nil {
		return end(StatusError, err.Error())
	}

	out, usage, err := e.attempt(ctx, c, ws, cfg, text)
	t.Usage = usage
	if out != nil {
		t.fill(out)
	}
	if err != nil && (out == nil || retryable(ctx, err)) {
		return end(StatusError, "the pipeline failed: "+err.Error())
	}
	if err != nil {
		t.Reason = "the pipeline stopped: " + err.Error()
	}
	result, err := e.checkResult(ctx, c, ws, cfg, out, withTests)
	if err != nil {
		return end(StatusError, err.Error())
	}
	g := grade(base, withTests, result, files)
	t.Fixed, t.Broken, t.Resolved = g.Fixed, g.Broken, g.Resolved
	t.Status = StatusUnresolved
	if g.Resolved {
		t.Status = StatusResolved
	}
	agrees := (t.Verdict == string(verify.Verified)) == t.Resolved
	t.Agrees = &agrees
	return t
}

// checkBase verifies the base as it is (the job's own baseline, kept in
// the baseline cache where the job finds it) and with the held-back tests
// applied (kept under a key of its own, as the tree is the commit's
// doing).
func (e *evaluator) checkBase(ctx context.Context, c Candidate, ws *workspace, cfg *repoconfig.Config) (verify.Run, verify.Run, error) {
	base, err := e.checker.Check(ctx, pipeline.CheckInput{JobID: jobID(c, "base"), Repository: e.o.Repository,
		Dir: ws.dir, Config: cfg, Key: c.Base})
	if err != nil {
		return verify.Run{}, verify.Run{}, fmt.Errorf("check the base: %w", err)
	}
	withTests, err := e.checker.Check(ctx, pipeline.CheckInput{JobID: jobID(c, "tests"), Repository: e.o.Repository,
		Dir: ws.withTests, Config: cfg, Key: withTestsKey(c.Commit, paths(c.Tests))})
	if err != nil {
		return verify.Run{}, verify.Run{}, fmt.Errorf("check the base with the held-back tests: %w", err)
	}
	return base.Run, withTests.Run, nil
}

// attempt runs the pipeline on the base as `selfcode run` does, with the
// commit's task, metering each model's usage.
func (e *evaluator) attempt(ctx context.Context, c Candidate, ws *workspace, cfg *repoconfig.Config, task string) (*pipeline.Output, map[string]Usage, error) {
	meter := newUsageMeter(e.o.Model, e.o.Models)
	p, err := e.o.Pipeline(meter)
	if err != nil {
		return nil, nil, err
	}
	out, err := p.Run(ctx, localrun.Input(localrun.Job{ID: jobID(c, "run"), Repository: e.o.Repository, Task: task,
		Dir: ws.dir, BaseSHA: c.Base, Config: cfg, Logger: e.o.Logger, Scratch: ws.root}))
	return out, meter.snapshot(), err
}

// checkResult applies the held-back tests to what the model left and runs
// the verify commands again. A model that changed nothing left the base:
// its result is the base's with the tests.
func (e *evaluator) checkResult(ctx context.Context, c Candidate, ws *workspace, cfg *repoconfig.Config, out *pipeline.Output, withTests verify.Run) (verify.Run, error) {
	if out == nil || len(out.Changed) == 0 {
		return withTests, nil
	}
	if err := applyTests(ctx, e.top, c, ws.dir); err != nil {
		return verify.Run{}, err
	}
	res, err := e.checker.Check(ctx, pipeline.CheckInput{JobID: jobID(c, "result"), Repository: e.o.Repository, Dir: ws.dir, Config: cfg})
	if err != nil {
		return verify.Run{}, fmt.Errorf("check the result with the held-back tests: %w", err)
	}
	return res.Run, nil
}

// fill records what the pipeline did.
func (t *Task) fill(out *pipeline.Output) {
	t.Verdict = string(out.Verdict)
	if t.Verdict == "" {
		t.Verdict = VerdictNone
	}
	t.FixRounds, t.Tokens, t.Seconds = out.FixAttempts, out.Tokens, out.Duration.Seconds()
	t.StopReason, t.Changed = out.StopReason, out.Changed
	for _, m := range out.Transcript {
		if m.Role == chat.ToolRole {
			t.EditCalls++
			if strings.HasPrefix(m.Content, "ERROR:") {
				t.EditErrors++
			}
		}
	}
}

// envError says why the base cannot be evaluated, or "".
func envError(base, withTests verify.Run) string {
	for _, side := range []struct {
		run   verify.Run
		where string
	}{{base, "on the base"}, {withTests, "on the base with the held-back tests"}} {
		if s, failed := side.run.SetupFailed(); failed {
			return fmt.Sprintf("setup step `%s` failed %s (exit status %d)", s.Run, side.where, s.ExitCode)
		}
	}
	if len(withTests.Commands) == 0 {
		return "no verify command was configured or could be inferred"
	}
	for _, c := range withTests.Commands {
		switch {
		case c.Missing:
			return fmt.Sprintf("`%s` could not be started in the sandbox (a command it runs is not installed)", c.Run)
		case c.Error != "":
			return fmt.Sprintf("`%s` could not be run: %s", c.Run, c.Error)
		}
	}
	return ""
}

// testsFailOnBase reports whether applying the held-back tests makes
// something fail on the base that did not — by the truth rule's own
// comparison: a test, a suite that no longer builds, a command that no
// longer finishes. A new compiler or vet complaint alone is not a failing
// test: such a task would have nothing a fix could make pass.
func testsFailOnBase(base, withTests verify.Run) bool {
	for _, c := range verify.Compare(base, withTests).Commands {
		for _, f := range c.Regressions {
			if f.Kind != verify.KindDiagnostic {
				return true
			}
		}
	}
	return false
}

// retryable reports a pipeline error that was not the pipeline's or the
// model's doing — the model API or the sandbox failing, or the evaluation
// interrupted — so the task is not graded but run again next time.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	for _, target := range []error{llm.ErrRateLimited, llm.ErrServer, llm.ErrUnauthorized, llm.ErrTimeout, llm.ErrConnection,
		llm.ErrUnknownRole, sandbox.ErrEngineUnavailable, sandbox.ErrImageNotFound, sandbox.ErrContainerGone,
		sandbox.ErrNetworkNotDropped, sandbox.ErrEngineWarning, sandbox.ErrInvalid} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// withTestsKey keys the base with a commit's held-back tests applied in
// the baseline cache: the tree follows from the commit and the held-back
// paths (which files the test-file classifier held back, in any order).
func withTestsKey(commit string, heldBack []string) string {
	sorted := slices.Sorted(slices.Values(heldBack))
	return sha256Hex("selfcode-eval-base-with-tests\x00" + commit + "\x00" + strings.Join(sorted, "\x00"))
}

// jobID names a task's sandbox containers and its pipeline run.
func jobID(c Candidate, what string) string { return "eval-" + short(c.Commit) + "-" + what }

func paths(cs []Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return out
}
