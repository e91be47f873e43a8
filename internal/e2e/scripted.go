package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/stage"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Scripted is the scripted pipeline (runner.Pipeline): on a checkout of the
// sample repository it makes a one-line change to greet.go (the greeting
// gets the call's number, so every run changes something) and reports the
// verdict it is told, with a fixed breakdown of its time. It records the last input and how many runs of each
// repository overlap.
type Scripted struct {
	mu      sync.Mutex
	calls   int
	last    pipeline.Input
	verdict verify.Verdict
	hook    func(ctx context.Context, call int, in pipeline.Input) error
	hang    map[string]bool // "owner/name#N"
	work    time.Duration
	active  map[string]int
	maxSeen map[string]int
}

// NewScripted returns a pipeline whose changes are verified.
func NewScripted() *Scripted {
	return &Scripted{verdict: verify.Verified, hang: map[string]bool{}, active: map[string]int{}, maxSeen: map[string]int{}}
}

// SetVerdict sets the verdict of the following runs.
func (s *Scripted) SetVerdict(v verify.Verdict) { s.mu.Lock(); s.verdict = v; s.mu.Unlock() }

// SetHook runs fn at the start of each following run (to block, to check
// the input, or to act while the job runs); an error ends the run.
func (s *Scripted) SetHook(fn func(ctx context.Context, call int, in pipeline.Input) error) {
	s.mu.Lock()
	s.hook = fn
	s.mu.Unlock()
}

// Hang makes runs for "owner/name#N" last until their context ends.
func (s *Scripted) Hang(key string) { s.mu.Lock(); s.hang[key] = true; s.mu.Unlock() }

// SetWork makes every run take at least d after its plan (so that runs
// that must not overlap would).
func (s *Scripted) SetWork(d time.Duration) { s.mu.Lock(); s.work = d; s.mu.Unlock() }

// Calls is how many runs started.
func (s *Scripted) Calls() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

// Last is the last run's input.
func (s *Scripted) Last() pipeline.Input {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// MaxConcurrent is the most runs of repo ("owner/name") seen at once.
func (s *Scripted) MaxConcurrent(repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxSeen[repo]
}

var greeting = regexp.MustCompile(`"Hello[^"]*"`)

// Run implements runner.Pipeline.
func (s *Scripted) Run(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
	key := fmt.Sprintf("%s#%d", in.Repository, in.Issue)
	s.mu.Lock()
	s.calls++
	call, verdict, hook, hang, work := s.calls, s.verdict, s.hook, s.hang[key], s.work
	s.last = in
	s.active[in.Repository]++
	s.maxSeen[in.Repository] = max(s.maxSeen[in.Repository], s.active[in.Repository])
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.active[in.Repository]--; s.mu.Unlock() }()
	if hook != nil {
		if err := hook(ctx, call, in); err != nil {
			return nil, err
		}
	}
	plan := &pipeline.Plan{Summary: "Greet the world", Risks: []string{}, Questions: []string{},
		Steps: []pipeline.PlanStep{{ID: "1", Title: "edit", Files: []pipeline.PlanFile{{Path: "greet.go", Action: "modify", Purpose: "greet"}}}}}
	in.Progress.Stage(stage.Plan, stage.Pass, "change the greeting")
	in.Progress.Artifact("plan.json", []byte(`{"summary":"Greet the world","steps":[{"id":"1","title":"edit","files":[{"path":"greet.go","action":"modify","purpose":"greet"}],"acceptance":[]}],"risks":[],"questions":[]}`))
	out := &pipeline.Output{Plan: plan, Summary: "Changed the greeting.", Tokens: 42}
	if in.PlanOnly {
		return out, nil
	}
	if hang {
		<-ctx.Done()
		return out, ctx.Err()
	}
	if work > 0 {
		t := time.NewTimer(work)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return out, ctx.Err()
		}
	}
	path := filepath.Join(in.Dir, "greet.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return out, err
	}
	if err := os.WriteFile(path, greeting.ReplaceAll(b, []byte(fmt.Sprintf(`"Hello, world (%d)"`, call))), 0o644); err != nil {
		return out, err
	}
	in.Progress.Stage(stage.Edit, stage.Pass, "greet.go")
	in.Progress.Stage(stage.Verify, stage.Pass, "build, test")
	in.Progress.Stage(stage.Fix, stage.Skipped, "not needed")
	passed := verdict == verify.Verified
	run := verify.Run{Passed: passed, Commands: []verify.CommandResult{{Name: "test", Run: "go test ./...", Passed: passed, Duration: time.Second}}}
	cmp := &verify.Comparison{Verdict: verdict, Verified: passed}
	if verdict == verify.Unverified {
		cmp.Reasons = []verify.Reason{{Why: "the scripted pipeline was told so", Next: "run the tests"}}
	}
	out.Verdict, out.Verified, out.Verify, out.Comparison = verdict, passed, []pipeline.VerifyResult{{Run: run}}, cmp
	out.Changed, out.Scope = []string{"greet.go"}, &pipeline.Scope{BlastRadius: []string{"example.com/hello/cmd"}}
	// Where a real job's time goes inside its stages, as the pipeline
	// reports it (fixed: nothing ran).
	out.Took = map[stage.Part]time.Duration{stage.PartSandboxStart: 1500 * time.Millisecond, stage.PartSetup: 0,
		stage.PartBaseline: 3 * time.Second, stage.PartModel: 2 * time.Second}
	return out, nil
}
