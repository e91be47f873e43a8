package e2e

import (
	"context"
	"time"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// NullSandbox is a sandbox that runs nothing: every setup and verify
// command reports that it could not run (exit 127), on the base as on the
// change, so a change is unverified. It lets the real pipeline run in
// tests of the job path that are not about verification (Options.Sandbox),
// without Docker.
type NullSandbox struct{}

// Start implements pipeline.Sandbox.
func (NullSandbox) Start(ctx context.Context, spec pipeline.SandboxSpec) (pipeline.Session, error) {
	return nullSession{}, nil
}

// ImageID implements pipeline.Sandbox: one image that never changes.
func (NullSandbox) ImageID(ctx context.Context, image string) (string, error) {
	return "sha256:null-sandbox", ctx.Err()
}

type nullSession struct{}

func (nullSession) CopyTree(ctx context.Context, dir string) error { return ctx.Err() }
func (nullSession) CopyFiles(ctx context.Context, dir string, changed, deleted []string) error {
	return ctx.Err()
}
func (nullSession) Setup(ctx context.Context, run string, timeout time.Duration) (verify.Outcome, error) {
	return notRun(ctx)
}
func (nullSession) DropNetwork(ctx context.Context) error { return ctx.Err() }
func (nullSession) Exec(ctx context.Context, c verify.Command) (verify.Outcome, error) {
	return notRun(ctx)
}
func (nullSession) Close(ctx context.Context) error { return nil }

func notRun(ctx context.Context) (verify.Outcome, error) {
	return verify.Outcome{ExitCode: 127, Output: "sh: not run: the test sandbox runs nothing"}, ctx.Err()
}
