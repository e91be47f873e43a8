package engine

import (
	"context"
	"time"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Sandbox implements pipeline.Sandbox with app/sandbox containers.
type Sandbox struct {
	Manager *sandbox.Manager
}

// Start starts a job's container.
func (s Sandbox) Start(ctx context.Context, spec pipeline.SandboxSpec) (pipeline.Session, error) {
	c, err := s.Manager.Start(ctx, sandbox.Spec{JobID: spec.JobID, Image: spec.Image, Deadline: spec.Deadline, SetupNetwork: spec.SetupNetwork})
	if err != nil {
		return nil, err
	}
	return session{c: c}, nil
}

type session struct{ c *sandbox.Container }

func (s session) CopyTree(ctx context.Context, dir string) error { return s.c.CopyTree(ctx, dir) }

func (s session) CopyFiles(ctx context.Context, dir string, changed, deleted []string) error {
	return s.c.CopyFiles(ctx, dir, changed, deleted)
}

func (s session) DropNetwork(ctx context.Context) error { return s.c.DropNetwork(ctx) }

func (s session) Close(ctx context.Context) error { return s.c.Close(ctx) }

func (s session) Setup(ctx context.Context, run string, timeout time.Duration) (verify.Outcome, error) {
	r, err := s.c.Exec(ctx, sandbox.Cmd{Run: run, Timeout: timeout, Setup: true})
	return outcome(r), err
}

func (s session) Exec(ctx context.Context, c verify.Command) (verify.Outcome, error) {
	r, err := s.c.Exec(ctx, sandbox.Cmd{Run: c.Run, Timeout: c.Timeout})
	return outcome(r), err
}

func outcome(r sandbox.Result) verify.Outcome {
	out := r.Output
	if out == "" {
		out = r.Stdout + r.Stderr
	}
	return verify.Outcome{ExitCode: r.ExitCode, Output: out, Duration: r.Duration,
		TimedOut: r.TimedOut || r.Killed, Truncated: r.Truncated, OOMKilled: r.OOMKilled}
}
