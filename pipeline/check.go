package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// CheckInput is a checkout to verify on its own, with no model: a base
// commit, or a tree someone else made (selfcode eval's held-back tests
// applied to a base or to a job's result).
type CheckInput struct {
	JobID      string // names the sandbox container
	Repository string // the repository whose warm caches the sandbox may use
	Dir        string
	Config     *repoconfig.Config // nil: defaults
	// Key, when set, keys the run in the baseline cache (with the
	// repository, the configuration and the commands as they run, and the
	// sandbox image, as a job's base is keyed): a run kept there is returned without running anything,
	// and a new one is kept — only when its setup ran rather than being
	// restored, as a job keeps its base. A run with a restored setup in
	// which something fails is run again with setup from scratch, as a
	// job's base is. A commit SHA, or any 4–64 hex digits that name the
	// tree as surely.
	Key string
}

// CheckResult is a check's run and where it came from.
type CheckResult struct {
	Run    verify.Run
	Cached bool // from the baseline cache: nothing ran
}

// Check runs the setup steps and the verify commands on a checkout in a
// sandbox of its own, exactly as a job verifies its base commit (the same
// commands read from the tree, the same setup and setup cache, the same
// skipping when setup fails). A failing setup or command is in the run,
// not an error; errors mean the sandbox could not run it.
func (p *Pipeline) Check(ctx context.Context, in CheckInput) (CheckResult, error) {
	if p.o.Sandbox == nil {
		return CheckResult{}, errors.New("no sandbox: verification needs Docker")
	}
	cfg := in.Config
	if cfg == nil {
		cfg = repoconfig.Default()
	}
	s := &jobState{p: p, in: Input{JobID: in.JobID, Repository: in.Repository, Dir: in.Dir, Config: cfg}, cfg: cfg, out: &Output{},
		clock: &partClock{now: p.o.Now}, log: p.o.Logger.With("job_id", in.JobID)}
	c := checkout{dir: in.Dir, cmds: s.verifyCommands(in.Dir), steps: cfg.SetupSteps(in.Dir)}
	if in.Key != "" {
		// The key a job on that commit uses: no smoke stage runs here, as
		// in a job on a server that does not run it.
		s.baseKey = s.baselineKey(ctx, in.Key, c)
	}
	if s.baseKey != nil {
		if run, found, err := p.o.Baseline.Get(*s.baseKey); err == nil && found {
			return CheckResult{Run: run, Cached: true}, nil
		}
	}
	if cfg.Limits.JobTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Limits.JobTimeout)
		defer cancel()
	}
	env, err := s.startEnv(ctx, c)
	if err != nil {
		return CheckResult{}, err
	}
	defer env.close()
	began := p.o.Now()
	run, err := s.runCommands(ctx, env.sess, env.setup, c.cmds)
	if err != nil {
		return CheckResult{}, fmt.Errorf("verification: %w", err)
	}
	// As for a job's base: a run with a kept setup is trusted only when
	// nothing fails. Nothing edits in.Dir: it is still pristine.
	if run, err = s.settle(ctx, env, run, asIs(c)); err != nil {
		return CheckResult{}, fmt.Errorf("verification: %w", err)
	}
	s.log.Info("checked a tree", "commands", len(run.Commands), "took", p.o.Now().Sub(began).Round(time.Millisecond))
	if env.restored == "" {
		s.setBase(run, baseSetUp)
	}
	return CheckResult{Run: run}, nil
}
