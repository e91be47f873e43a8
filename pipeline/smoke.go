package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/smoke"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// smokeState is what a job knows about its smoke stage.
type smokeState struct {
	decided bool
	// on: the repository configures the stage and this server runs it.
	on bool
	// skipped says why a configured stage does not run at all.
	skipped string
}

// decideSmoke settles, once per job, whether the repository's smoke stage
// runs here: the operator's switch, then the engine.
func (s *jobState) decideSmoke(ctx context.Context) {
	if s.smoke.decided || s.cfg.Smoke == nil {
		s.smoke.decided = true
		return
	}
	s.smoke.decided = true
	switch {
	case s.p.o.SmokeOff != "":
		s.smoke.skipped = s.p.o.SmokeOff
	case s.p.o.Smoke == nil:
		s.smoke.skipped = "this server has no engine that builds images"
	default:
		if err := s.p.o.Smoke.Available(ctx); err != nil {
			s.smoke.skipped = err.Error()
		} else {
			s.smoke.on = true
		}
	}
	if s.smoke.skipped != "" {
		s.log.Warn("smoke stage skipped", "why", s.smoke.skipped)
		s.out.Smoke = "The smoke stage was skipped: " + s.smoke.skipped + "."
	}
}

// baselineHash keys the baseline of checkout c in the baseline cache: the
// configuration as it runs here, so that a base verified without its
// smoke stage (switched off, or an engine that could not) is not taken for
// one verified with it, and c's setup steps and verify commands as they
// run (baselineHash).
func (s *jobState) baselineHash(c checkout) string {
	cfg := s.cfg
	if cfg.Smoke != nil && !s.smoke.on {
		without := *cfg
		without.Smoke = nil
		cfg = &without
	}
	return baselineHash(cfg, c.steps, c.cmds)
}

// baselineVersion names how a baseline is made and read beyond what its
// commands show (how a report is parsed, what a setup step is given):
// bump it when that changes, so that no change is compared with a baseline
// made the old way.
const baselineVersion = "selfcode-baseline-v1"

// baselineHash digests what a baseline's run depends on besides the
// commit, the repository and the image: what the configuration file
// declares (Config.Hash, its smoke stage included) and the setup steps and
// verify commands resolved from it and the tree, inferred ones included —
// a change to inference (a new flag on an inferred command) is another
// key, never a baseline made with the old commands.
func baselineHash(cfg *repoconfig.Config, steps []repoconfig.SetupStep, cmds []verify.Command) string {
	b, err := json.Marshal(struct {
		Version  string
		Config   string
		Steps    []repoconfig.SetupStep
		Commands []verify.Command
	}{baselineVersion, cfg.Hash(), steps, cmds})
	if err != nil {
		panic(fmt.Sprintf("encode the baseline key: %v", err)) // plain structs: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// contextSource gives the smoke stage its build context.
type contextSource func(ctx context.Context) (*smoke.Snapshot, error)

// fromDir takes the build context of dir when the stage runs.
func (s *jobState) fromDir(dir string) contextSource {
	return func(ctx context.Context) (*smoke.Snapshot, error) {
		return s.p.o.Smoke.Snapshot(ctx, dir, s.cfg.Smoke.Dockerfile)
	}
}

// earlySnapshot is a build context taken before any edit, while the
// sandbox starts.
type earlySnapshot struct {
	done chan struct{}
	snap *smoke.Snapshot
	err  error
	once sync.Once
}

// snapshotNow starts taking dir's build context.
func (s *jobState) snapshotNow(ctx context.Context, dir string) *earlySnapshot {
	e := &earlySnapshot{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.snap, e.err = s.fromDir(dir)(ctx)
	}()
	return e
}

// before returns f made to wait until the snapshot is taken.
func (e *earlySnapshot) before(f func()) func() {
	return func() {
		<-e.done
		f()
	}
}

func (e *earlySnapshot) source() contextSource {
	if e == nil {
		return nil
	}
	return func(ctx context.Context) (*smoke.Snapshot, error) {
		select {
		case <-e.done:
			return e.snap, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// release removes the snapshot when no stage took it.
func (e *earlySnapshot) release() {
	e.once.Do(func() {
		<-e.done
		_ = e.snap.Remove() // a temporary file: the system's cleaner has it otherwise

	})
}

// runnable reports whether run got far enough for a smoke stage to mean
// something: setup succeeded and every verify command ran.
func runnable(run verify.Run) bool {
	if _, failed := run.SetupFailed(); failed {
		return false
	}
	for _, c := range run.Commands {
		if c.Skipped || c.Error != "" {
			return false
		}
	}
	return true
}

// withSmoke runs the smoke stage after run's verify commands and adds its
// steps to run, as commands compared with the base like any other.
func (s *jobState) withSmoke(ctx context.Context, run verify.Run, src contextSource) (verify.Run, error) {
	if !s.smoke.on || src == nil || !runnable(run) {
		return run, nil
	}
	rows, err := smoke.Run(ctx, s.p.o.Smoke, smoke.Spec{JobID: s.in.JobID, Config: *s.cfg.Smoke, Context: src, Logger: s.log})
	if err != nil {
		return run, err
	}
	run.Commands = append(run.Commands, rows...)
	for _, r := range rows {
		run.Passed = run.Passed && r.Passed
	}
	return run, nil
}

// smokeChange runs the smoke stage on the change unless its verify
// commands already show a regression (the change fails either way, and the
// fixer sees those first).
func (s *jobState) smokeChange(ctx context.Context, head verify.Run, cmp verify.Comparison) (verify.Run, verify.Comparison, error) {
	if !s.smoke.on {
		return head, cmp, nil
	}
	if len(cmp.Regressions) > 0 {
		s.out.Smoke = "The smoke stage did not run on the change: its verify commands already fail."
		return head, cmp, nil
	}
	s.out.Smoke = ""
	head, err := s.withSmoke(ctx, head, s.fromDir(s.in.Dir))
	if err != nil {
		return head, cmp, err
	}
	return head, verify.Compare(*s.out.Base, head), nil
}
