package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/prompts"
)

// The sandbox starts, sets up and verifies the base while the model plans
// (the planner answers only once the baseline has begun), no edit happens
// before the pristine checkout is in the sandbox (its copy is held until
// the plan is done, and the editor must wait), and the job records where
// its time went.
func TestBaselineOverlapsThePlan(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		gatePlan bool // the planner answers once the baseline has begun
		holdCopy bool // the copy ends only after the plan
	}{
		{"the baseline runs while the model plans", true, false},
		{"edits wait for the copy", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb := newEventSandbox(tt.holdCopy)
			model := &gatedModel{ctx: ctx, sb: sb, noGate: !tt.gatePlan}
			out, dir := runWith(t, ctx, model, sb, false)
			if model.err != nil {
				t.Fatal(model.err)
			}
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if !sb.copiedPristine {
				t.Error("the checkout copied into the sandbox was not the pristine one")
			}
			if sb.editBeforeCopy {
				t.Error("the model edited before the pristine checkout was in the sandbox")
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); string(b) == goRepo["calc.go"] {
				t.Error("the edit did not happen")
			}
			for _, p := range []stage.Part{stage.PartSandboxStart, stage.PartBaseline, stage.PartModel} {
				if _, ok := out.Took[p]; !ok {
					t.Errorf("no time recorded for %s: %v", p, out.Took)
				}
			}
			if sb.starts != 1 || sb.closes != 1 {
				t.Errorf("%d sandboxes started, %d closed; want 1 and 1", sb.starts, sb.closes)
			}
		})
	}
}

// A plan-only job starts no sandbox; a job whose plan fails closes the one
// it started.
func TestPreparationEndsWithThePlan(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		planOnly bool
		badPlan  bool
		starts   int
	}{
		{"plan only", true, false, 0},
		{"plan fails", false, true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb := newEventSandbox(false)
			model := &gatedModel{ctx: ctx, sb: sb, badPlan: tt.badPlan, noGate: true}
			runWith(t, ctx, model, sb, tt.planOnly)
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if tt.planOnly && sb.starts != 0 {
				t.Errorf("a plan-only job started %d sandboxes", sb.starts)
			}
			if sb.starts != sb.closes {
				t.Errorf("%d sandboxes started, %d closed", sb.starts, sb.closes)
			}
		})
	}
}

// Setup is restored from the repository's cache when it kept one for the
// same manifests and steps, run and kept when not, and run from scratch in
// a new container when the cache cannot be read.
func TestSetupFromTheCache(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		hit        bool
		restoreErr error
		setups     int
		saves      int
		starts     int
		restored   bool
	}{
		{"kept: restored, not run", true, nil, 0, 0, 1, true},
		{"not kept: run and kept", false, nil, 1, 1, 1, false},
		{"unreadable: a new container, set up from scratch", false, errors.New("cp: disk full"), 1, 0, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb := newEventSandbox(false)
			sb.restoreHit, sb.restoreErr = tt.hit, tt.restoreErr
			cfg, err := repoconfig.Parse([]byte("setup: [\"npm ci\"]\nverify: [{name: test, run: \"npm test\"}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := runWith(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true}, sb, false, cfg)
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if sb.setups != tt.setups || len(sb.savedKeys) != tt.saves || sb.starts != tt.starts || sb.closes != sb.starts {
				t.Errorf("setups %d (want %d), saves %d (want %d), starts %d (want %d), closes %d",
					sb.setups, tt.setups, len(sb.savedKeys), tt.saves, sb.starts, tt.starts, sb.closes)
			}
			if len(sb.restoredKeys) == 0 || (len(sb.savedKeys) > 0 && sb.savedKeys[0] != sb.restoredKeys[0]) {
				t.Errorf("restored %v, saved %v: one key", sb.restoredKeys, sb.savedKeys)
			}
			if out.Base == nil || len(out.Base.Setup) != 1 || !out.Base.Setup[0].Passed ||
				strings.Contains(out.Base.Setup[0].Output, "restored") != tt.restored {
				t.Errorf("base setup %+v", out.Base)
			}
		})
	}
}

// A job that could not verify its base again from a pristine copy (no
// Pristine, no base checkout) never restores a kept setup: it runs setup.
func TestNoPristineCopyNoKeptSetup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := newEventSandbox(false)
	sb.restoreHit = true
	cfg, err := repoconfig.Parse([]byte("setup: [\"npm ci\"]\nverify: [{name: test, run: \"npm test\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	runWithInput(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true}, pipeline.Options{Sandbox: sb},
		func(in *pipeline.Input) { in.Pristine = nil }, cfg)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.restoredKeys) != 0 || sb.setups != 1 {
		t.Errorf("restored %q, setups %d: want setup run, nothing restored", sb.restoredKeys, sb.setups)
	}
}

// A change to a dependency manifest is verified in a fresh sandbox whose
// setup ran (or was restored) for the changed manifests: never with the
// dependencies of the old ones.
func TestManifestChangeSetsUpAgain(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		files map[string]string
		edit  map[string]string
	}{
		{"package.json", map[string]string{"package.json": `{"name":"a","dependencies":{"x":"1.0.0"}}` + "\n", "index.js": "exports.a = 1;\n"},
			map[string]string{"path": "package.json", "old_str": `"1.0.0"`, "new_str": `"2.0.0"`}},
		{"requirements.txt", map[string]string{"requirements.txt": "x==1.0\n", "a.py": "A = 1\n"},
			map[string]string{"path": "requirements.txt", "old_str": "x==1.0", "new_str": "x==2.0"}},
		{"go.mod", map[string]string{"go.mod": "module example.com/a\n\ngo 1.21\n", "a.go": "package a\n"},
			map[string]string{"path": "go.mod", "old_str": "go 1.21", "new_str": "go 1.22"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb := newEventSandbox(false)
			cfg, err := repoconfig.Parse([]byte("setup: [\"install\"]\nverify: [{name: test, run: \"true\"}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			runWith(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true, files: tt.files, edit: tt.edit}, sb, false, cfg)
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if sb.starts != 2 || sb.setups != 2 || sb.closes != 2 {
				t.Fatalf("starts %d, setups %d, closes %d: want a second sandbox set up for the changed manifest", sb.starts, sb.setups, sb.closes)
			}
			if len(sb.restoredKeys) != 2 || sb.restoredKeys[0] == sb.restoredKeys[1] {
				t.Errorf("setup keys %q: the changed manifest must be another key", sb.restoredKeys)
			}
		})
	}
}

// When the change's tests newly fail with a setup restored from the cache,
// the change is verified again with setup run from scratch: a spoiled kept
// setup is then forgotten and does not make the change look broken, and a
// real failure still fails.
func TestRestoredSetupSuspectedBeforeBlame(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		always    bool // the change fails with a fresh setup too
		verdict   verify.Verdict
		forgotten int
		baseKept  bool
	}{
		{"the kept setup was spoiled", false, verify.Verified, 1, false},
		{"the change breaks the tests", true, verify.Failed, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb := newEventSandbox(false)
			sb.restoreHit, sb.spoiled, sb.alwaysFails = true, true, tt.always
			cfg, baselines := setupJob(t)
			out, dir := runWithBaselines(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true}, sb, false, baselines, cfg)
			// A baseline made with a spoiled kept setup is not kept.
			base := strings.TrimSpace(gitOut(t, dir, "rev-parse", "HEAD"))
			if _, kept, err := baselines.Get(verify.Key{Repository: "o/calc", SHA: base, Config: pipeline.BaselineHash(cfg, dir), Image: eventImage}); err != nil || kept != tt.baseKept {
				t.Errorf("baseline kept: %v (%v), want %v", kept, err, tt.baseKept)
			}
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if out.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (%+v)", out.Verdict, tt.verdict, out.Comparison)
			}
			if sb.starts != 2 || sb.setups != 1 || sb.closes != 2 {
				t.Errorf("starts %d, setups %d, closes %d: want a second sandbox with setup run", sb.starts, sb.setups, sb.closes)
			}
			if len(sb.forgotten) != tt.forgotten || (tt.forgotten > 0 && sb.forgotten[0] != sb.restoredKeys[0]) {
				t.Errorf("forgotten %q (restored %q), want %d", sb.forgotten, sb.restoredKeys, tt.forgotten)
			}
		})
	}
}

// A base verified with a kept setup is trusted only when nothing fails on
// it: otherwise the base is verified again with setup from scratch, from a
// pristine copy (Pristine for an issue, the untouched base checkout for a
// pull request), and the change too. A kept setup that made test x fail on
// the base and on the change alike so cannot hide the change breaking x;
// it is forgotten, and the baseline made with it is never kept. A base
// that fails the same way set up from scratch keeps its kept setup.
func TestFailingBaseWithAKeptSetupIsVerifiedAfresh(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name                                 string
		pr                                   bool // the baseline is another checkout (BaselineDir)
		keptSpoils, changeBreaks, baseBreaks bool
		verdict                              verify.Verdict
		forgotten, pristines                 int
		starts, setups                       int
		basePassed                           bool // the baseline kept in the cache passes
	}{
		{"a spoiled kept setup hides no regression", false, true, true, false, verify.Failed, 1, 1, 2, 1, true},
		{"a spoiled kept setup hides no regression (pull request)", true, true, true, false, verify.Failed, 1, 0, 4, 2, true},
		{"the base fails however it is set up", false, false, false, true, verify.Verified, 0, 1, 2, 1, false},
		{"a passing base with a kept setup is trusted", false, false, true, false, verify.Failed, 0, 0, 2, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var pristines atomic.Int32
			var baseSHA string
			r := runKeptSetupJob(t, keptSetup{tt.keptSpoils, tt.changeBreaks, tt.baseBreaks}, func(in *pipeline.Input) {
				export := in.Pristine
				in.Pristine = func(ctx context.Context, dst string) error {
					pristines.Add(1)
					return export(ctx, dst)
				}
				baseSHA = in.BaseSHA
				if tt.pr {
					in.BaselineDir, in.BaselineSHA = gitRepo(t, goRepo)
					baseSHA = in.BaselineSHA
				}
			})
			sb := r.sb
			if r.out.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (%+v)", r.out.Verdict, tt.verdict, r.out.Comparison)
			}
			if run, kept, err := r.baseline(baseSHA); err != nil || !kept || run.Passed != tt.basePassed {
				t.Errorf("baseline kept %v (%v), passed %v: want the one set up from scratch kept, passed %v", kept, err, run.Passed, tt.basePassed)
			}
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if len(sb.forgotten) != tt.forgotten || (tt.forgotten > 0 && sb.forgotten[0] != sb.restoredKeys[0]) {
				t.Errorf("forgotten %q (restored %q), want %d", sb.forgotten, sb.restoredKeys, tt.forgotten)
			}
			if int(pristines.Load()) != tt.pristines || sb.starts != tt.starts || sb.setups != tt.setups || sb.closes != sb.starts {
				t.Errorf("pristine copies %d (want %d), starts %d (want %d), setups %d (want %d), closes %d",
					pristines.Load(), tt.pristines, sb.starts, tt.starts, sb.setups, tt.setups, sb.closes)
			}
		})
	}
}

// A check run with a kept setup in which something fails is run again
// with setup from scratch, as a job's base is: the check says what the
// fresh run says, the spoiled kept setup is forgotten, and only the fresh
// run is kept under the check's key.
func TestCheckDoubtsAFailingKeptSetup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := newEventSandbox(false)
	sb.restoreHit, sb.keptSpoils = true, true
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, baselines := setupJob(t)
	p, err := pipeline.New(pipeline.Options{Model: &gatedModel{}, Prompts: ps, Sandbox: sb, Baseline: baselines})
	if err != nil {
		t.Fatal(err)
	}
	dir, base := gitRepo(t, goRepo)
	res, err := p.Check(ctx, pipeline.CheckInput{JobID: "01jcheck", Repository: "o/calc", Dir: dir, Config: cfg, Key: base})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Passed {
		t.Errorf("the check says what the spoiled kept setup made of it: %+v", res.Run)
	}
	if run, kept, err := baselines.Get(verify.Key{Repository: "o/calc", SHA: base, Config: pipeline.BaselineHash(cfg, dir), Image: eventImage}); err != nil || !kept || !run.Passed {
		t.Errorf("kept %v (%v), passed %v: want the fresh run kept", kept, err, run.Passed)
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.forgotten) != 1 || sb.starts != 2 || sb.setups != 1 || sb.closes != 2 {
		t.Errorf("forgotten %q, starts %d, setups %d, closes %d: want the kept setup forgotten and a fresh sandbox set up",
			sb.forgotten, sb.starts, sb.setups, sb.closes)
	}
}

// imagedSandbox is an eventSandbox whose default image has the ID id.
type imagedSandbox struct {
	*eventSandbox
	id string
}

func (s imagedSandbox) ImageID(ctx context.Context, image string) (string, error) { return s.id, nil }

// A base commit's baseline is found again only by the same repository on
// the same sandbox image: a fork with the same commits, or the image
// rebuilt, verifies the base afresh, and so does every job on a sandbox
// that cannot say its image's ID.
func TestBaselineCacheIsPerRepositoryAndImage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	baselines, err := verify.NewCache(verify.CacheOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		repo, image string
		cached      bool
	}{
		{"o/calc", "sha256:one", false},
		{"o/calc", "sha256:one", true},
		{"fork/calc", "sha256:one", false},
		{"o/calc", "sha256:rebuilt", false},
		{"fork/calc", "sha256:one", true},
		{"o/calc", "", false},
		{"o/calc", "", false},
	} {
		sb := newEventSandbox(false)
		out, _ := runWithInput(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true},
			pipeline.Options{Sandbox: imagedSandbox{sb, tt.image}, Baseline: baselines}, func(in *pipeline.Input) { in.Repository = tt.repo })
		if _, verified := out.Took[stage.PartBaseline]; verified == tt.cached || out.Base == nil {
			t.Errorf("job %d (%s on %s): base verified %v, want the cached baseline %v", i, tt.repo, tt.image, verified, tt.cached)
		}
	}
}

// The repository's own guidance for agents (AGENTS.md, the Copilot
// instructions file) reaches the planner's and the editor's prompts,
// delimited as repository text, and the output names it for the report.
func TestGuidanceReachesTheModel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	files := map[string]string{".github/copilot-instructions.md": "Copilot: keep functions short.\n", "AGENTS.md": "Agents: run go test before finishing.\n"}
	for k, v := range goRepo {
		files[k] = v
	}
	sb := newEventSandbox(false)
	model := &gatedModel{ctx: ctx, sb: sb, noGate: true, files: files}
	out, _ := runWith(t, ctx, model, sb, false)
	model.mu.Lock()
	defer model.mu.Unlock()
	for _, role := range []chat.Role{chat.RolePlanner, chat.RoleEditor} {
		all := strings.Join(model.prompts[role], "\n")
		for _, want := range []string{`<data kind="guidance AGENTS.md">`, "Agents: run go test before finishing.", `<data kind="guidance .github/copilot-instructions.md">`, "Copilot: keep functions short."} {
			if !strings.Contains(all, want) {
				t.Errorf("the %s was not given %q", role, want)
			}
		}
	}
	if strings.Join(out.Guidance, ",") != "AGENTS.md,.github/copilot-instructions.md" {
		t.Errorf("output names %q", out.Guidance)
	}
}

// A fix round that changes nothing is not verified again: the verdict
// stands from the round before.
func TestFixRoundThatChangesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := newEventSandbox(false)
	sb.failAfterChange = true // the change fails its test
	cfg, err := repoconfig.Parse([]byte("verify: [{name: test, run: \"npm test\"}]\nlimits: {max_fix_attempts: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runWith(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true}, sb, false, cfg)
	if out.Verdict != verify.Failed || out.FixAttempts != 1 || len(out.Verify) != 1 {
		t.Fatalf("verdict %q after %d fix attempts and %d verification rounds; want failed, 1, 1", out.Verdict, out.FixAttempts, len(out.Verify))
	}
}

// setupJob is a configuration with a setup step, one test command and no
// fix round, and a baseline cache of the test's own.
// keptSetup is how the kept setup of runKeptSetupJob's sandbox behaves:
// spoiled (a test fails with it), and whether the change or the base
// itself makes the test fail.
type keptSetup struct{ spoils, changeBreaks, baseBreaks bool }

// keptRun is what runKeptSetupJob ran and left.
type keptRun struct {
	out       *pipeline.Output
	dir       string // the checkout
	sb        *eventSandbox
	cfg       *repoconfig.Config
	baselines *verify.Cache
}

// runKeptSetupJob runs setupJob's job in an eventSandbox whose kept setup
// is found and behaves as k says; edit changes the input first.
func runKeptSetupJob(t *testing.T, k keptSetup, edit func(*pipeline.Input)) keptRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := newEventSandbox(false)
	sb.restoreHit, sb.keptSpoils, sb.changeBreaks, sb.baseBreaks = true, k.spoils, k.changeBreaks, k.baseBreaks
	cfg, baselines := setupJob(t)
	out, dir := runWithInput(t, ctx, &gatedModel{ctx: ctx, sb: sb, noGate: true}, pipeline.Options{Sandbox: sb, Baseline: baselines}, edit, cfg)
	return keptRun{out: out, dir: dir, sb: sb, cfg: cfg, baselines: baselines}
}

// baseline is the baseline the run kept for commit sha, if any.
func (r keptRun) baseline(sha string) (verify.Run, bool, error) {
	return r.baselines.Get(verify.Key{Repository: "o/calc", SHA: sha, Config: pipeline.BaselineHash(r.cfg, r.dir), Image: eventImage})
}

func setupJob(t *testing.T) (*repoconfig.Config, *verify.Cache) {
	t.Helper()
	cfg, err := repoconfig.Parse([]byte("setup: [\"npm ci\"]\nverify: [{name: test, run: \"npm test\"}]\nlimits: {max_fix_attempts: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	baselines, err := verify.NewCache(verify.CacheOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, baselines
}

func runWith(t *testing.T, ctx context.Context, model chat.Model, sb pipeline.Sandbox, planOnly bool, cfg ...*repoconfig.Config) (*pipeline.Output, string) {
	t.Helper()
	return runWithBaselines(t, ctx, model, sb, planOnly, nil, cfg...)
}

// runWithBaselines is runWith with a baseline cache (nil: none).
func runWithBaselines(t *testing.T, ctx context.Context, model chat.Model, sb pipeline.Sandbox, planOnly bool, baselines *verify.Cache, cfg ...*repoconfig.Config) (*pipeline.Output, string) {
	t.Helper()
	return runWithOptions(t, ctx, model, pipeline.Options{Sandbox: sb, Baseline: baselines}, planOnly, cfg...)
}

// runWithOptions runs a job with o (its model and prompts filled in).
func runWithOptions(t *testing.T, ctx context.Context, model chat.Model, o pipeline.Options, planOnly bool, cfg ...*repoconfig.Config) (*pipeline.Output, string) {
	t.Helper()
	return runWithInput(t, ctx, model, o, func(in *pipeline.Input) { in.PlanOnly = planOnly }, cfg...)
}

// runWithInput runs a job with o on a new repository of the model's files,
// its input changed by mod (which may be nil). The base's pristine copy
// comes from the repository's objects, as a job's does.
func runWithInput(t *testing.T, ctx context.Context, model chat.Model, o pipeline.Options, mod func(*pipeline.Input), cfg ...*repoconfig.Config) (*pipeline.Output, string) {
	t.Helper()
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Model, o.Prompts = model, ps
	p, err := pipeline.New(o)
	if err != nil {
		t.Fatal(err)
	}
	files := goRepo
	if m, ok := model.(*gatedModel); ok && m.files != nil {
		files = m.files
	}
	dir, base := gitRepo(t, files)
	in := pipeline.Input{JobID: "01jprep", Repository: "o/calc", Issue: 1, IssueTitle: "Add adds",
		Dir: dir, BaseSHA: base, Pristine: func(ctx context.Context, dst string) error {
			return gitops.ExportLocal(ctx, filepath.Join(dir, ".git"), base, dst)
		}}
	if len(cfg) > 0 {
		in.Config = cfg[0]
	}
	if mod != nil {
		mod(&in)
	}
	out, err := p.Run(ctx, in)
	if err != nil && !errors.Is(err, errBadPlan) {
		t.Fatal(err)
	}
	return out, dir
}

var errBadPlan = errors.New("no plan")

// gatedModel plans only once the sandbox has begun the baseline (unless
// noGate), then edits calc.go and finishes.
type gatedModel struct {
	ctx     context.Context
	sb      *eventSandbox
	badPlan bool
	noGate  bool
	// files is the repository (default goRepo) and edit the first edit
	// (default: Add adds in calc.go).
	files map[string]string
	edit  map[string]string
	// prompts are the messages each role was sent, in order.
	prompts map[chat.Role][]string
	mu      sync.Mutex
	edits   int
	err     error
}

func (m *gatedModel) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	reply := func(content string, calls ...chat.ToolCall) (chat.Response, error) {
		return chat.Response{Message: chat.Message{Role: "assistant", Content: content, ToolCalls: calls}, Usage: chat.Usage{Total: 10}}, nil
	}
	m.mu.Lock()
	if m.prompts == nil {
		m.prompts = map[chat.Role][]string{}
	}
	for _, msg := range req.Messages {
		m.prompts[req.Role] = append(m.prompts[req.Role], msg.Content)
	}
	m.mu.Unlock()
	switch req.Role {
	case chat.RolePlanner:
		if m.badPlan {
			return chat.Response{}, errBadPlan
		}
		if !m.noGate {
			select {
			case <-m.sb.execStarted:
			case <-m.ctx.Done():
				m.mu.Lock()
				m.err = errors.New("the baseline had not begun while the model planned")
				m.mu.Unlock()
			}
		}
		defer m.sb.once(&m.sb.plannedOnce, m.sb.planned)
		return reply(calcPlan)
	case chat.RoleFixer:
		return reply("", chat.ToolCall{ID: "f1", Name: "finish", Arguments: `{"summary":"cannot fix it"}`})
	case chat.RoleEditor:
		m.sb.once(&m.sb.editedOnce, m.sb.edited)
		m.mu.Lock()
		m.edits++
		n := m.edits
		m.mu.Unlock()
		args := func(v any) string { b, _ := json.Marshal(v); return string(b) }
		if n == 1 {
			edit := m.edit
			if edit == nil {
				edit = map[string]string{"path": "calc.go", "old_str": "return a - b }\n\n// Sub", "new_str": "return a + b }\n\n// Sub"}
			}
			return reply("", chat.ToolCall{ID: "c1", Name: "str_replace", Arguments: args(edit)})
		}
		return reply("", chat.ToolCall{ID: "c2", Name: "finish", Arguments: args(map[string]string{"summary": "fixed Add"})})
	}
	return reply("done")
}

// eventSandbox records what the pipeline does with its sandbox.
type eventSandbox struct {
	holdCopy     bool
	restoreHit   bool  // RestoreSetup finds a kept setup
	restoreErr   error // RestoreSetup fails (once)
	setups       int   // setup commands run
	restoredKeys []string
	savedKeys    []string
	forgotten    []string
	// spoiled: commands fail in a restored sandbox once the change is
	// copied in (a kept setup that breaks the change's tests); always: in
	// a fresh one too.
	spoiled, alwaysFails bool
	// failAfterChange: commands fail once the change is copied in, in any
	// sandbox.
	failAfterChange bool
	// Commands print TAP for tests a and x when one of these is set; x
	// fails in a sandbox whose setup was restored (keptSpoils: a spoiled
	// kept setup, on the base and the change alike), once the change is in
	// (changeBreaks: the change really breaks x), or always (baseBreaks).
	keptSpoils, changeBreaks, baseBreaks bool

	mu             sync.Mutex
	starts, closes int
	copiedPristine bool
	editBeforeCopy bool
	execStarted    chan struct{} // closed at the first command
	planned        chan struct{} // closed when the planner has answered
	edited         chan struct{} // closed at the first editor call
	execOnce       sync.Once
	plannedOnce    sync.Once
	editedOnce     sync.Once
}

func newEventSandbox(holdCopy bool) *eventSandbox {
	return &eventSandbox{holdCopy: holdCopy, execStarted: make(chan struct{}), planned: make(chan struct{}), edited: make(chan struct{})}
}

func (s *eventSandbox) once(o *sync.Once, ch chan struct{}) { o.Do(func() { close(ch) }) }

// eventImage is the ID of an eventSandbox's image.
const eventImage = "sha256:event"

func (s *eventSandbox) ImageID(ctx context.Context, image string) (string, error) {
	return eventImage, nil
}

func (s *eventSandbox) Start(ctx context.Context, spec pipeline.SandboxSpec) (pipeline.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts++
	return &eventSession{s: s}, nil
}

type eventSession struct {
	s        *eventSandbox
	closed   bool
	restored bool // RestoreSetup found a kept setup
	changed  bool // CopyFiles brought the change in
}

// CopyTree, when held, ends only after the plan, and waits a moment then
// for an edit that must not come before it returns.
func (e *eventSession) CopyTree(ctx context.Context, dir string) error {
	b, _ := os.ReadFile(filepath.Join(dir, "calc.go"))       // absent in some repositories
	e.changed = len(b) > 0 && string(b) != goRepo["calc.go"] // a sandbox started for the change
	if !e.s.holdCopy {
		e.s.mu.Lock()
		e.s.copiedPristine = string(b) == goRepo["calc.go"]
		e.s.mu.Unlock()
		return nil
	}
	select {
	case <-e.s.planned:
		select {
		case <-e.s.edited:
			e.s.mu.Lock()
			e.s.editBeforeCopy = true
			e.s.mu.Unlock()
		case <-time.After(200 * time.Millisecond):
		}
	case <-ctx.Done():
	}
	e.s.mu.Lock()
	e.s.copiedPristine = string(b) == goRepo["calc.go"]
	e.s.mu.Unlock()
	return nil
}

func (e *eventSession) CopyFiles(ctx context.Context, dir string, changed, deleted []string) error {
	e.changed = true
	return nil
}

func (e *eventSession) Setup(ctx context.Context, run string, timeout time.Duration) (verify.Outcome, error) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.setups++
	return verify.Outcome{}, nil
}

func (e *eventSession) DropNetwork(ctx context.Context) error { return nil }

func (e *eventSession) RestoreSetup(ctx context.Context, key string) (bool, error) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.restoredKeys = append(e.s.restoredKeys, key)
	if err := e.s.restoreErr; err != nil {
		e.s.restoreErr = nil
		return false, err
	}
	e.restored = e.s.restoreHit
	return e.s.restoreHit, nil
}

func (e *eventSession) ForgetSetup(ctx context.Context, key string) error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.forgotten = append(e.s.forgotten, key)
	return nil
}

func (e *eventSession) SaveSetup(ctx context.Context, key string) error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.s.savedKeys = append(e.s.savedKeys, key)
	return nil
}

func (e *eventSession) Exec(ctx context.Context, c verify.Command) (verify.Outcome, error) {
	e.s.once(&e.s.execOnce, e.s.execStarted)
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if e.s.keptSpoils || e.s.changeBreaks || e.s.baseBreaks {
		x, code := "ok", 0
		if e.restored && e.s.keptSpoils || e.changed && e.s.changeBreaks || e.s.baseBreaks {
			x, code = "not ok", 1
		}
		return verify.Outcome{ExitCode: code, Output: "TAP version 13\nok 1 - a\n" + x + " 2 - x\n1..2\n"}, nil
	}
	if e.s.failAfterChange && e.changed || !e.s.failAfterChange && e.s.spoiled && (e.restored && e.changed || e.s.alwaysFails && !e.restored) {
		return verify.Outcome{ExitCode: 1, Output: "FAIL"}, nil
	}
	return verify.Outcome{Output: "ok"}, nil
}

func (e *eventSession) Close(ctx context.Context) error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if !e.closed {
		e.closed = true
		e.s.closes++
	}
	return nil
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}
