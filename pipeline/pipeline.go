package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/guidance"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/repomap"
	"github.com/selfcode/selfcode/pipeline/smoke"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/tools"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/prompts"
)

// Sandbox starts the container a job's commands run in.
type Sandbox interface {
	Start(ctx context.Context, spec SandboxSpec) (Session, error)
	// ImageID tells the image a SandboxSpec's Image names ("": the
	// sandbox's default) apart from any other, a rebuilt image included:
	// the baseline cache keys by it, and keeps nothing for a sandbox that
	// cannot say (an error, or "").
	ImageID(ctx context.Context, image string) (string, error)
}

// SandboxSpec describes a job's container.
type SandboxSpec struct {
	JobID        string
	Image        string // empty: the server's default image
	Deadline     time.Time
	SetupNetwork bool
	// Cache names the repository whose own warm caches (build, modules,
	// packages) the sandbox may mount; never another repository's.
	Cache string
}

// Session is one job's running container.
type Session interface {
	// CopyTree copies the whole checkout in; CopyFiles only what changed.
	CopyTree(ctx context.Context, dir string) error
	CopyFiles(ctx context.Context, dir string, changed, deleted []string) error
	// Setup runs a setup command (the only kind that may have network).
	Setup(ctx context.Context, run string, timeout time.Duration) (verify.Outcome, error)
	// DropNetwork removes the setup network before anything model-written
	// is copied in.
	DropNetwork(ctx context.Context) error
	// Exec runs a verification command (never with network).
	Exec(ctx context.Context, c verify.Command) (verify.Outcome, error)
	Close(ctx context.Context) error
}

// SetupCache is a Session that keeps what setup added to the work tree in
// the repository's cache, by a key naming the manifests and steps, and
// restores it into a later job instead of running setup again.
type SetupCache interface {
	// RestoreSetup, called after CopyTree and before setup, restores what
	// setup made for key and reports whether there was any.
	RestoreSetup(ctx context.Context, key string) (bool, error)
	// SaveSetup keeps what setup added since RestoreSetup under key.
	SaveSetup(ctx context.Context, key string) error
	// ForgetSetup removes what was kept under key.
	ForgetSetup(ctx context.Context, key string) error
}

// Progress receives stage updates and artifacts (the publisher).
type Progress interface {
	Stage(name stage.Name, status stage.Status, summary string)
	Artifact(name string, data []byte)
}

// Observer receives counters for /metrics; every method may be a no-op.
type Observer interface {
	Edit(tool, result string)
	Verify(class string, n int)
	Tokens(phase string, n int)
	// Cost is told each call's price in dollars, or that its model has
	// no price (priced false).
	Cost(model string, dollars float64, priced bool)
}

// Options configures a Pipeline.
type Options struct {
	Model    chat.Model
	Sandbox  Sandbox
	Prompts  *prompts.Set
	Baseline *verify.Cache // may be nil: the baseline runs every time
	Observer Observer      // may be nil
	Logger   *slog.Logger
	Now      func() time.Time
	// PromptBudget bounds each edit call's messages, in characters (about
	// four per token); older tool results are shortened to fit. Default 96k.
	PromptBudget int
	// RepoMapTokens is the repository map budget of the editor (the
	// planner gets twice as much). Default 2000.
	RepoMapTokens int
	// MaxPlanAttempts bounds planner retries on invalid replies. Default 3.
	MaxPlanAttempts int
	// Prices prices each model call (nil: every cost is unknown).
	Prices Pricer
	// Smoke runs the smoke stage of repositories that configure one
	// (build their image, probe a shadow container); nil skips it, and
	// the report says so.
	Smoke smoke.Engine
	// SmokeOff, when set, is why the operator turned the smoke stage off
	// for every repository.
	SmokeOff string
}

// Pipeline runs jobs.
type Pipeline struct{ o Options }

// New builds a Pipeline.
func New(o Options) (*Pipeline, error) {
	if o.Model == nil || o.Prompts == nil {
		return nil, errors.New("pipeline needs a model and prompts")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PromptBudget <= 0 {
		o.PromptBudget = 96_000
	}
	if o.RepoMapTokens <= 0 {
		o.RepoMapTokens = 2000
	}
	if o.MaxPlanAttempts <= 0 {
		o.MaxPlanAttempts = 3
	}
	return &Pipeline{o: o}, nil
}

// Comment is a human comment on the issue.
type Comment struct {
	Author string
	Body   string
	// Standing is whose words these are: a maintainer's (write access)
	// or a third party's.
	Standing Standing
}

// Standing is where the author of a text on GitHub stands with the
// repository, which says whether the text may carry instructions.
type Standing string

// Standings.
const (
	// Maintainer: write access or more (admin, maintain, write); their
	// comments may refine the task.
	Maintainer Standing = "maintainer"
	// ThirdParty: anyone else; their text is information, never
	// instructions.
	ThirdParty Standing = "third-party"
)

// Input is one job.
type Input struct {
	JobID      string
	Repository string
	Issue      int
	IssueTitle string
	IssueBody  string
	// IssueAuthor wrote the issue (or pull request); IssueAuthorStanding
	// is their standing ("" when unknown: `selfcode run`).
	IssueAuthor         string
	IssueAuthorStanding Standing
	Comments            []Comment
	// ContextNote says what of the issue's thread was left out and why
	// (comments after the trigger, past the size bound); "" when nothing.
	ContextNote  string
	Instructions string
	PlanOnly     bool
	Dir          string // the checkout
	BaseSHA      string
	Config       *repoconfig.Config // from the default branch; nil: defaults
	Progress     Progress
	// Feedback is extra context for follow-ups (review comments, PR diff).
	Feedback string
	// CIOutput is what failing CI checks printed (their output, an
	// Actions log): untrusted, shown to the model as CI output to
	// diagnose, never as instructions.
	CIOutput string
	// BaselineDir, when set, is a checkout of the commit verification is
	// compared against (a pull request's base) when that is not the commit
	// Dir starts from; BaselineSHA names it for the baseline cache.
	BaselineDir string
	BaselineSHA string
	// Budget, when set, is asked before every model call and told every
	// call's use (the installation's daily token and cost budgets).
	Budget Budget
	// Resume, when set, is the work of an earlier run of the job that
	// stopped at a limit; Dir already holds it.
	Resume *Resume
	// Unattended marks an overnight job: nobody watches it, so a plan
	// whose blast radius cannot be computed is held, not carried out.
	Unattended bool
	// Pristine, when set, writes the files of the commit Dir started from
	// (BaseSHA) into dst, an empty directory, however Dir has been edited
	// since (an export from the repository's git objects). A base verified
	// with a setup restored from the repository's cache that shows
	// failures is verified again from such a copy, with setup from
	// scratch. A job that has neither Pristine nor BaselineDir never
	// restores a kept setup: nothing could check it. When Pristine fails,
	// the base's run with the kept setup is the baseline, unconfirmed:
	// none of its failures excuses the change's, and it is not cached.
	Pristine func(ctx context.Context, dst string) error
	// Scratch is a directory of the job's own for the copies the pipeline
	// makes (the pristine base): a server's job workspace, in the data
	// directory, so that a large repository never fills a small /tmp.
	// "": the system's temporary directory.
	Scratch string
}

// Stop reasons.
const (
	StopMaxSteps = "max_steps reached before the model called finish"
	StopTokens   = "token budget exhausted"
	StopTimeout  = "job_timeout reached"
)

// Output is what a run produced.
type Output struct {
	Plan    *Plan
	Summary string
	// Verdict is verification's judgement of the change (contract section
	// 6); Verified is Verdict == verify.Verified. Empty when the job ended
	// before verification.
	Verdict     verify.Verdict
	Verified    bool
	Verify      []VerifyResult // one per verification round, last is final
	Base        *verify.Run
	Comparison  *verify.Comparison
	FixAttempts int
	Changed     []string
	Tokens      int
	ByPhase     map[string]int
	// Spend is the tokens by kind and what they cost.
	Spend      Spend
	Steps      int
	StopReason string
	// Budget is the budget that refused a model call and so ended the run
	// (nil: none did); StopReason says the same in words.
	Budget     *chat.BudgetError
	Transcript []chat.Message
	Duration   time.Duration
	// Scope is what the scope guard found about the plan (nil for plan-only
	// runs and runs that ended before a plan).
	Scope *Scope
	// Skipped, when set, is why the job made no change on purpose (a plan
	// too wide even after asking for a narrower one).
	Skipped string
	// Guidance names the repository's instructions files for agents
	// (AGENTS.md, .github/copilot-instructions.md) the model was given.
	Guidance []string
	// Took is where the job's time went inside the pipeline: sandbox
	// start, setup, baseline and model (parts that were never reached are
	// absent). They overlap: the baseline runs while the model works.
	Took map[stage.Part]time.Duration
	// Smoke, when set, says why the repository's smoke stage did not run
	// (skipped on this server, or not run on the change).
	Smoke string
}

// VerifyResult is one verification round.
type VerifyResult struct {
	Round int        `json:"round"` // 0 after the edit, then fix rounds
	Run   verify.Run `json:"run"`
}

type jobState struct {
	p       *Pipeline
	in      Input
	cfg     *repoconfig.Config
	model   *meter
	tools   *tools.Tools
	log     *slog.Logger
	out     *Output
	changed map[string]bool // every path an edit touched, to copy into the sandbox
	trans   []chat.Message
	syntax  *sandboxSyntax // edits' syntax checks, in the sandbox once it is up
	clock   *partClock
	// noRestore: set up from scratch from now on (a kept setup was
	// suspected, or could not be checked); set before the preparation
	// starts, by the preparation, or once it has ended, never by two
	// goroutines at once.
	noRestore bool
	// guide is the repository's guidance for agents the prompts carry,
	// read from the pristine checkout (for the plan, then for its files).
	guide []guidance.File
	// baseKey keys the job's baseline in the baseline cache (nil: it is
	// not cached). pendingBase: the baseline, made with a restored setup
	// and passing, waits for the job's end to be kept (keepBase);
	// spoiledSetup: the job found a kept setup that made tests fail.
	baseKey      *verify.Key
	pendingBase  bool
	spoiledSetup bool
	// baseTrust is how far the baseline can be trusted (setBase).
	baseTrust baseTrust
	smoke     smokeState
}

// partClock adds up the time spent in each part of a job; the baseline
// and the model add to it at the same time.
type partClock struct {
	now  func() time.Time
	mu   sync.Mutex
	took map[stage.Part]time.Duration
}

// since adds the time from start to now to part.
func (c *partClock) since(part stage.Part, start time.Time) {
	d := c.now().Sub(start)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.took == nil {
		c.took = map[stage.Part]time.Duration{}
	}
	c.took[part] += d
}

func (c *partClock) snapshot() map[stage.Part]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.took) == 0 {
		return nil
	}
	out := make(map[stage.Part]time.Duration, len(c.took))
	for k, v := range c.took {
		out[k] = v
	}
	return out
}

// Run runs one job. Budget and step limits end it cleanly with the reason in
// Output.StopReason; errors are infrastructure failures or cancellation.
func (p *Pipeline) Run(ctx context.Context, in Input) (*Output, error) {
	start := p.o.Now()
	cfg := in.Config
	if cfg == nil {
		cfg = repoconfig.Default()
	}
	if cfg.Limits.JobTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Limits.JobTimeout)
		defer cancel()
	}
	out := &Output{}
	clock := &partClock{now: p.o.Now}
	s := &jobState{p: p, in: in, cfg: cfg, out: out, changed: map[string]bool{}, syntax: &sandboxSyntax{}, clock: clock,
		model: &meter{m: p.o.Model, max: cfg.Limits.MaxTokens, budget: in.Budget, prices: p.o.Prices, observer: p.o.Observer,
			clock: clock, byPhase: map[string]int{}},
		log: p.o.Logger.With("job_id", in.JobID)}
	var editObs func(tool, result string)
	if p.o.Observer != nil {
		editObs = p.o.Observer.Edit
	}
	var err error
	s.tools, err = tools.New(tools.Options{Root: in.Dir, MaxFiles: cfg.Limits.MaxFiles, Observer: editObs,
		Policy: s.policy(), Logger: s.log, Syntax: s.syntax})
	if err != nil {
		return nil, fmt.Errorf("edit tools: %w", err)
	}
	err = s.run(ctx)
	s.keepBase()
	out.Tokens, out.ByPhase, out.Spend = s.model.snapshot()
	out.Transcript = s.trans
	out.Duration = p.o.Now().Sub(start)
	out.Took = clock.snapshot()
	out.Changed = s.changedFiles()
	if tr, jerr := json.MarshalIndent(redactTranscript(s.trans), "", "  "); jerr == nil && in.Progress != nil {
		in.Progress.Artifact("transcript.json", tr)
	}
	if errors.Is(err, chat.ErrBudgetExhausted) {
		out.StopReason, out.Budget = StopTokens, &chat.BudgetError{Limit: chat.LimitJobTokens}
		if be := (*chat.BudgetError)(nil); errors.As(err, &be) {
			out.StopReason, out.Budget = be.Error(), be
		}
		return out, nil
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		out.StopReason = StopTimeout
		return out, fmt.Errorf("%s: %w", StopTimeout, err)
	}
	return out, err
}

// policy is the model's path policy from .selfcode.yml; the always
// off-limits paths are enforced by the tools themselves.
func (s *jobState) policy() tools.Policy { return PathPolicy(s.cfg) }

// PathPolicy is the model's path policy from a repository's
// configuration (nil: the defaults).
func PathPolicy(cfg *repoconfig.Config) tools.Policy {
	if cfg == nil {
		cfg = repoconfig.Default()
	}
	p := cfg.Paths
	return tools.Policy{Allow: p.Allow, Deny: p.Deny, Protected: p.Protected, GitHub: p.GitHubOptIn}
}

func (s *jobState) stage(name stage.Name, status stage.Status, summary string) {
	if s.in.Progress != nil {
		s.in.Progress.Stage(name, status, summary)
	}
}

func (s *jobState) artifact(name string, v any) {
	if s.in.Progress == nil {
		return
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		s.in.Progress.Artifact(name, b)
	}
}

func (s *jobState) run(ctx context.Context) error {
	// 0. The sandbox starts from the pristine checkout, runs setup and
	// verifies the base while the model plans.
	var prep *preparation
	if !s.in.PlanOnly {
		prep = s.prepare(ctx)
		defer prep.close()
		s.syntax.prep = prep
	}

	// 1. Plan, with the repository's guidance for agents; a run that
	// resumes one stopped at a limit keeps that run's plan.
	s.stage(stage.Plan, stage.Running, "")
	s.setGuidance(nil)
	if r := s.in.Resume; r != nil && r.Plan != nil && !s.in.PlanOnly {
		s.out.Plan = r.Plan
		s.setGuidance(r.Plan.Files())
		s.artifact("plan.json", r.Plan)
		s.stage(stage.Plan, stage.Pass, "resumed: "+r.Plan.Summary)
		return s.editAndVerify(ctx, prep)
	}
	plan, msgs, err := s.plan(ctx)
	if err != nil {
		s.stage(stage.Plan, stage.Fail, err.Error())
		return err
	}
	if !s.in.PlanOnly {
		// 1b. Scope guard: max_files and the blast radius, before any edit.
		if plan, err = s.guardScope(ctx, msgs, plan); err != nil {
			s.stage(stage.Plan, stage.Fail, err.Error())
			return err
		}
	}
	s.out.Plan = plan
	s.setGuidance(plan.Files()) // still the pristine checkout: nothing is edited yet
	s.artifact("plan.json", plan)
	if s.out.Skipped != "" {
		s.stage(stage.Plan, stage.Fail, s.out.Skipped)
		return nil
	}
	s.stage(stage.Plan, stage.Pass, plan.Summary)
	if s.in.PlanOnly {
		return nil
	}
	return s.editAndVerify(ctx, prep)
}

// editAndVerify edits the checkout to the plan, then verifies and fixes
// the change.
func (s *jobState) editAndVerify(ctx context.Context, prep *preparation) error {
	// 2. No edit before the pristine checkout is in the sandbox.
	if err := prep.waitCopied(ctx); err != nil {
		s.stage(stage.Verify, stage.Fail, err.Error())
		return err
	}

	// 3. Edit.
	s.stage(stage.Edit, stage.Running, "")
	summary, stop, err := s.edit(ctx, chat.RoleEditor, s.editorMessages(), s.cfg.Limits.MaxSteps)
	if err != nil {
		s.stage(stage.Edit, stage.Fail, err.Error())
		return err
	}
	s.out.Summary, s.out.StopReason = summary, stop
	if len(s.changedFiles()) == 0 {
		s.stage(stage.Edit, stage.Fail, "the model changed no file")
		return nil
	}
	s.stage(stage.Edit, stage.Pass, fmt.Sprintf("%d file(s) changed", len(s.changedFiles())))
	env, err := prep.wait(ctx)
	if err != nil {
		s.stage(stage.Verify, stage.Fail, err.Error())
		return err
	}

	// 4. Verify, then fix while a fix can help, until verified or out of
	// rounds. A base that was already broken never gets a fix round.
	for round := 0; ; round++ {
		name := stage.Verify
		if round > 0 {
			name = stage.Fix
		}
		what := "checking the change"
		if round > 0 {
			what = fmt.Sprintf("checking fix round %d", round)
		}
		s.stage(name, stage.Running, what)
		head, cmp, err := s.verifyChanges(ctx, env, round)
		if err != nil {
			s.stage(name, stage.Fail, err.Error())
			return err
		}
		s.out.Comparison = &cmp
		s.out.Verdict, s.out.Verified = cmp.Verdict, cmp.Verified
		s.observe(cmp)
		if cmp.Verified {
			s.stage(name, stage.Pass, verifySummary(head, cmp))
			if round == 0 {
				s.stage(stage.Fix, stage.Skipped, "not needed")
			}
			return nil
		}
		s.stage(name, stage.Fail, verifySummary(head, cmp))
		if !cmp.Fixable {
			if round == 0 {
				s.stage(stage.Fix, stage.Skipped, "nothing the change broke")
			}
			return nil
		}
		if round >= s.cfg.Limits.MaxFixAttempts {
			return nil
		}
		s.out.FixAttempts = round + 1
		failure := verify.Summarize(cmp, head, verify.SummaryOptions{MaxTokens: 3000, WorkDir: "/work"})
		msgs, err := s.fixerMessages(failure, round+1)
		if err != nil {
			return err
		}
		before := s.treeDigest()
		fsum, fstop, err := s.edit(ctx, chat.RoleFixer, msgs, s.cfg.Limits.MaxSteps)
		if err != nil {
			return err
		}
		if fsum != "" {
			s.out.Summary = strings.TrimSpace(s.out.Summary + "\n\nFix round " + fmt.Sprint(round+1) + ": " + fsum)
		}
		if fstop != "" {
			s.out.StopReason = fstop
		}
		if s.treeDigest() == before {
			// The fixer changed nothing: verifying again would say the same.
			s.stage(stage.Fix, stage.Fail, fmt.Sprintf("fix round %d changed nothing", round+1))
			return nil
		}
	}
}

// treeDigest identifies the content of every file the job has touched, so
// a fix round that changed nothing is not verified again.
func (s *jobState) treeDigest() string { return s.digestOf(func(string) bool { return true }) }

func (s *jobState) observe(cmp verify.Comparison) {
	obs := s.p.o.Observer
	if obs == nil {
		return
	}
	c := cmp.Counts
	obs.Verify("pass", c.Pass)
	obs.Verify("regression", c.Regression)
	obs.Verify("preexisting", c.PreExisting)
	obs.Verify("fixed", c.Fixed)
	obs.Verify("unknown", c.Unknown)
}

// plan asks the planner for a plan and returns it with the conversation
// that produced it.
func (s *jobState) plan(ctx context.Context) (*Plan, []chat.Message, error) {
	pr := s.p.o.Prompts
	rmap, err := repomap.Build(ctx, repomap.Options{Root: s.in.Dir, Budget: 2 * s.p.o.RepoMapTokens,
		Policy: s.policy(), Focus: focusWords(s.in)})
	if err != nil {
		return nil, nil, fmt.Errorf("repository map: %w", err)
	}
	sys, err := pr.Render(prompts.PlannerSystem, map[string]any{"MaxFiles": s.cfg.Limits.MaxFiles})
	if err != nil {
		return nil, nil, err
	}
	user, err := pr.Render(prompts.PlannerUser, s.promptData(rmap))
	if err != nil {
		return nil, nil, err
	}
	msgs := []chat.Message{{Role: chat.System, Content: sys}, {Role: chat.User, Content: user}}
	plan, err := s.askPlan(ctx, msgs)
	return plan, msgs, err
}

// askPlan sends the planner conversation and asks again, with the
// validation error, while the reply is not a valid plan (bounded).
func (s *jobState) askPlan(ctx context.Context, msgs []chat.Message) (*Plan, error) {
	pr := s.p.o.Prompts
	var lastErr error
	for attempt := 1; attempt <= s.p.o.MaxPlanAttempts; attempt++ {
		resp, err := s.model.Chat(ctx, chat.Request{Role: chat.RolePlanner, Messages: msgs,
			Schema: &chat.Schema{Name: "plan", Schema: PlanSchema, Strict: true}})
		if err != nil {
			return nil, fmt.Errorf("planner: %w", err)
		}
		s.trans = append(s.trans, msgs[len(msgs)-1], resp.Message)
		plan, perr := ParsePlan(resp.Message.Content)
		if perr == nil {
			return plan, nil
		}
		lastErr = perr
		retry, err := pr.Render(prompts.PlanRetry, map[string]any{"Error": perr.Error()})
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, chat.Message{Role: chat.Assistant, Content: resp.Message.Content}, chat.Message{Role: chat.User, Content: retry})
	}
	return nil, fmt.Errorf("planner gave no valid plan in %d attempts: %w", s.p.o.MaxPlanAttempts, lastErr)
}

func focusWords(in Input) []string {
	var out []string
	for _, w := range strings.FieldsFunc(in.IssueTitle+" "+in.Instructions, func(r rune) bool {
		return !(r == '.' || r == '_' || r == '/' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) {
		if len(w) >= 4 {
			out = append(out, w)
		}
	}
	return out
}

// setGuidance reads the repository's guidance for agents that applies to
// files (none: the whole repository) and records which files it came from.
func (s *jobState) setGuidance(files []string) {
	s.guide = guidance.Find(s.in.Dir, files, guidance.Options{})
	for _, g := range s.guide {
		if !slices.Contains(s.out.Guidance, g.Path) {
			s.out.Guidance = append(s.out.Guidance, g.Path)
		}
	}
}

func (s *jobState) promptData(rmap string) map[string]any {
	comments := make([]map[string]string, 0, len(s.in.Comments))
	for _, c := range s.in.Comments {
		comments = append(comments, map[string]string{"Author": c.Author, "Body": c.Body, "Standing": string(c.Standing)})
	}
	plan := ""
	if s.out.Plan != nil {
		plan = s.out.Plan.Text()
	}
	instr := s.in.Instructions
	if s.in.Feedback != "" {
		instr = strings.TrimSpace(instr + "\n\n" + s.in.Feedback)
	}
	return map[string]any{
		"Repository": s.in.Repository, "Issue": s.in.Issue, "IssueTitle": s.in.IssueTitle, "IssueBody": s.in.IssueBody,
		"Comments": comments, "Instructions": instr, "RepoInstructions": s.cfg.Instructions, "RepoMap": rmap,
		"PlanText": plan, "MaxFiles": s.cfg.Limits.MaxFiles, "MaxSteps": s.cfg.Limits.MaxSteps,
		"Guidance": s.guide, "Resume": s.resumeText(), "CIOutput": s.in.CIOutput,
		"IssueAuthor": s.in.IssueAuthor, "IssueAuthorStanding": string(s.in.IssueAuthorStanding), "ContextNote": s.in.ContextNote,
	}
}

// changedFiles are the files the job changed: this run's edits and, when
// it resumes an earlier run, that run's.
func (s *jobState) changedFiles() []string {
	now := s.tools.Changed()
	if s.in.Resume == nil {
		return now
	}
	out := slices.Clone(s.in.Resume.Changed)
	for _, c := range now {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// resumeText tells the model where the earlier run it continues stopped
// (empty when it continues none).
func (s *jobState) resumeText() string {
	r := s.in.Resume
	if r == nil {
		return ""
	}
	text, err := s.p.o.Prompts.Render(prompts.Resume, map[string]any{"Stopped": r.Stopped, "Progress": r.Progress()})
	if err != nil {
		s.log.Error("render the resume prompt", "err", err)
	}
	return text
}

func (s *jobState) editorMessages() []chat.Message {
	pr := s.p.o.Prompts
	rmap, err := repomap.Build(context.Background(), repomap.Options{Root: s.in.Dir, Budget: s.p.o.RepoMapTokens,
		Policy: s.policy(), Focus: append(s.out.Plan.Files(), focusWords(s.in)...)})
	if err != nil {
		rmap = "(repository map unavailable: " + err.Error() + ")"
	}
	data := s.promptData(rmap)
	sys, err1 := pr.Render(prompts.EditorSystem, data)
	user, err2 := pr.Render(prompts.EditorUser, data)
	if err := errors.Join(err1, err2); err != nil {
		s.log.Error("render editor prompts", "err", err)
	}
	return []chat.Message{{Role: chat.System, Content: sys}, {Role: chat.User, Content: user}}
}

func (s *jobState) fixerMessages(failure string, round int) ([]chat.Message, error) {
	pr := s.p.o.Prompts
	data := s.promptData("")
	data["Failure"], data["Round"], data["MaxRounds"] = failure, round, s.cfg.Limits.MaxFixAttempts
	data["Changed"] = s.changedFiles()
	sys, err := pr.Render(prompts.FixerSystem, data)
	if err != nil {
		return nil, err
	}
	user, err := pr.Render(prompts.FixerUser, data)
	if err != nil {
		return nil, err
	}
	return []chat.Message{{Role: chat.System, Content: sys}, {Role: chat.User, Content: user}}, nil
}

// edit runs one tool-using conversation until the model calls finish, stops
// calling tools, or runs out of steps. It returns the finish summary and a
// stop reason when the conversation ended otherwise.
func (s *jobState) edit(ctx context.Context, role chat.Role, msgs []chat.Message, maxSteps int) (string, string, error) {
	defs := s.tools.Definitions()
	nudged := false
	steps := 0
	for steps < maxSteps {
		msgs = shorten(msgs, s.p.o.PromptBudget)
		resp, err := s.model.Chat(ctx, chat.Request{Role: role, Messages: msgs, Tools: defs})
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", role, err)
		}
		msg := resp.Message
		msg.Role = chat.Assistant
		msgs = append(msgs, msg)
		s.trans = append(s.trans, msg)
		if len(msg.ToolCalls) == 0 {
			if nudged {
				return strings.TrimSpace(msg.Content), "", nil
			}
			nudged = true
			nudge, err := s.p.o.Prompts.Render(prompts.Nudge, nil)
			if err != nil {
				return "", "", err
			}
			msgs = append(msgs, chat.Message{Role: chat.User, Content: nudge})
			continue
		}
		for _, tc := range msg.ToolCalls {
			steps++
			s.out.Steps++
			res := s.tools.Call(ctx, tc)
			for _, c := range res.Changed {
				s.changed[c] = true
			}
			tm := chat.Message{Role: chat.ToolRole, ToolCallID: tc.ID, Name: tc.Name, Content: res.Output}
			msgs = append(msgs, tm)
			s.trans = append(s.trans, tm)
			if res.Finished {
				return res.Summary, "", nil
			}
			if steps >= maxSteps {
				break
			}
		}
	}
	return "", StopMaxSteps, nil
}

// shorten keeps the conversation under budget characters by cutting the
// oldest tool results first (the system and first user message stay whole).
func shorten(msgs []chat.Message, budget int) []chat.Message {
	size := 0
	for _, m := range msgs {
		size += len(m.Content) + 64
		for _, tc := range m.ToolCalls {
			size += len(tc.Arguments) + 32
		}
	}
	for i := 2; i < len(msgs)-4 && size > budget; i++ {
		if msgs[i].Role != chat.ToolRole || len(msgs[i].Content) <= 300 {
			continue
		}
		before := len(msgs[i].Content)
		msgs[i].Content = tools.Shorten(msgs[i].Content, 300)
		size -= before - len(msgs[i].Content)
	}
	return msgs
}

// commandKind maps a configured command's kind to the verifier's.
func commandKind(k repoconfig.Kind) verify.CommandKind {
	switch k {
	case repoconfig.KindBuild:
		return verify.BuildCommand
	case repoconfig.KindTest:
		return verify.TestCommand
	}
	return verify.OtherCommand
}

// manifestDigest identifies the dependency manifests of the checkout as the
// model left them, so setup runs again when they change.
func (s *jobState) manifestDigest() string { return s.digestOf(repoconfig.IsManifest) }

// digestOf identifies the content of the touched files that keep selects.
func (s *jobState) digestOf(keep func(string) bool) string {
	h := sha256.New()
	paths := append([]string(nil), s.tools.Changed()...)
	sort.Strings(paths)
	for _, p := range paths {
		if !keep(p) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.in.Dir, filepath.FromSlash(p)))
		if err != nil {
			b = []byte("\x00deleted")
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// verifyChanges brings the model's changes into the sandbox (a fresh one,
// with setup run again, when a dependency manifest changed), runs the
// verification commands, reruns alone the tests that newly fail to tell
// flaky ones, and judges the result against the base.
func (s *jobState) verifyChanges(ctx context.Context, env *sandboxEnv, round int) (verify.Run, verify.Comparison, error) {
	d := s.manifestDigest()
	if d != env.manifests || env.restored != "" && s.noRestore {
		// A changed manifest needs its own setup; a kept setup doubted
		// since (the base failed with it) is not used for the change.
		s.log.Info("setting up a fresh sandbox for the change", "round", round, "manifest_changed", d != env.manifests)
		env.close()
		sess, setup, restored, err := s.start(ctx, s.in.Dir, s.cfg.SetupSteps(s.in.Dir), nil)
		if err != nil {
			return verify.Run{}, verify.Comparison{}, err
		}
		env.sess, env.setup, env.manifests, env.restored = sess, setup, d, restored
		env.cmds = s.verifyCommands(s.in.Dir)
	} else {
		var changed, deleted []string
		for c := range s.changed {
			if _, err := os.Lstat(filepath.Join(s.in.Dir, filepath.FromSlash(c))); err == nil {
				changed = append(changed, c)
			} else {
				deleted = append(deleted, c)
			}
		}
		sort.Strings(changed)
		sort.Strings(deleted)
		if err := env.sess.CopyFiles(ctx, s.in.Dir, changed, deleted); err != nil {
			return verify.Run{}, verify.Comparison{}, fmt.Errorf("copy changes into sandbox: %w", err)
		}
	}
	head, cmp, err := s.judge(ctx, env)
	if err != nil {
		return verify.Run{}, verify.Comparison{}, err
	}
	if len(cmp.Regressions) > 0 && env.restored != "" && !s.noRestore {
		if head, cmp, err = s.judgeSetUpAfresh(ctx, env, cmp); err != nil {
			return verify.Run{}, verify.Comparison{}, err
		}
	}
	s.out.Verify = append(s.out.Verify, VerifyResult{Round: round, Run: head})
	s.artifact(fmt.Sprintf("verify-%d.json", round), head)
	return head, cmp, nil
}

// judge runs the verification commands in env, reruns alone the tests
// that newly fail to tell flaky ones, and compares with the base.
func (s *jobState) judge(ctx context.Context, env *sandboxEnv) (verify.Run, verify.Comparison, error) {
	head, err := s.runCommands(ctx, env.sess, env.setup, env.cmds)
	if err != nil {
		return verify.Run{}, verify.Comparison{}, fmt.Errorf("verification: %w", err)
	}
	cmp := verify.Compare(*s.out.Base, head)
	if len(cmp.Regressions) > 0 {
		n, err := verify.RerunRegressions(ctx, env.sess, env.cmds, &head, cmp)
		if err != nil {
			return verify.Run{}, verify.Comparison{}, fmt.Errorf("run failing tests again: %w", err)
		}
		if n > 0 {
			cmp = verify.Compare(*s.out.Base, head)
		}
	}
	head, cmp, err = s.smokeChange(ctx, head, cmp)
	if err != nil {
		return verify.Run{}, verify.Comparison{}, fmt.Errorf("smoke stage: %w", err)
	}
	return head, s.doubtBase(cmp), nil
}

// doubtBase makes cmp unverified when the base is unconfirmed and one of
// its failures would excuse a failure of the change: a kept setup that
// made the base fail could make the change fail alike.
func (s *jobState) doubtBase(cmp verify.Comparison) verify.Comparison {
	if s.baseTrust != baseUnconfirmed || len(cmp.PreExisting) == 0 || cmp.Verdict == verify.Failed {
		return cmp
	}
	cmp.Reasons = append(cmp.Reasons, verify.Reason{
		Why:  "the base failed with a setup restored from the repository's cache and could not be verified again from scratch (no pristine copy of it), so its failures excuse none of the change's",
		Next: "run the job again; `selfcode cache clear --repo OWNER/NAME` drops the kept setup"})
	cmp.Verdict, cmp.Verified = verify.Unverified, false
	return cmp
}

// judgeSetUpAfresh verifies the change again in a new sandbox whose setup
// runs from scratch, when it newly failed tests with a setup restored from
// the repository's cache: a spoiled kept setup must not make a change look
// broken. When that clears failures, the kept setup is forgotten, so the
// next job sets up afresh and keeps a good one.
func (s *jobState) judgeSetUpAfresh(ctx context.Context, env *sandboxEnv, restoredCmp verify.Comparison) (verify.Run, verify.Comparison, error) {
	key := env.restored
	s.log.Info("tests newly fail with a restored setup; verifying again with setup run from scratch", "regressions", len(restoredCmp.Regressions))
	s.noRestore = true
	env.close()
	sess, setup, _, err := s.start(ctx, s.in.Dir, s.cfg.SetupSteps(s.in.Dir), nil)
	if err != nil {
		return verify.Run{}, verify.Comparison{}, err
	}
	env.sess, env.setup, env.restored = sess, setup, ""
	head, cmp, err := s.judge(ctx, env)
	if err != nil {
		return verify.Run{}, verify.Comparison{}, err
	}
	if len(cmp.Regressions) < len(restoredCmp.Regressions) {
		s.forgetSetup(ctx, sess, key)
	}
	return head, cmp, nil
}

func verifySummary(head verify.Run, cmp verify.Comparison) string {
	if cmp.Verdict == verify.Unverified && len(cmp.Reasons) > 0 {
		return "unverified: " + cmp.Reasons[0].Why
	}
	var parts []string
	for _, c := range head.Commands {
		mark := "pass"
		if !c.Passed {
			mark = "fail"
		}
		parts = append(parts, c.Name+" "+mark)
	}
	s := strings.Join(parts, ", ")
	if cmp.Verified && len(cmp.PreExisting) > 0 {
		s += fmt.Sprintf(" (%d failure(s) also on the base)", len(cmp.PreExisting))
	}
	return s
}

// secretLike matches credentials that must not be stored even if a
// repository file or command output contained them: GitHub tokens, OpenAI
// style keys, private key blocks, bearer and basic credentials.
var secretLike = regexp.MustCompile(`(gh[pousr]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----|(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,})`)

// Redact replaces credential-looking text with [redacted].
func Redact(s string) string { return secretLike.ReplaceAllString(s, "[redacted]") }

// redactTranscript keeps the transcript for the job's artifacts: tool
// outputs shortened (they can hold whole files) and credential-looking text
// removed everywhere.
func redactTranscript(msgs []chat.Message) []chat.Message {
	out := make([]chat.Message, len(msgs))
	for i, m := range msgs {
		if m.Role == chat.ToolRole {
			m.Content = tools.Shorten(m.Content, 2000)
		}
		m.Content = Redact(m.Content)
		calls := make([]chat.ToolCall, len(m.ToolCalls))
		for k, tc := range m.ToolCalls {
			tc.Arguments = Redact(tc.Arguments)
			calls[k] = tc
		}
		m.ToolCalls = calls
		out[i] = m
	}
	return out
}
