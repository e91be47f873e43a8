package pipeline_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// spoilingSandbox starts sessions that run spoil, a shell command, in the
// container just before the change is copied in: after the baseline, before
// the change is verified.
type spoilingSandbox struct {
	pipeline.Sandbox
	spoil string
	ran   *atomic.Int32 // spoils that succeeded
}

func (s spoilingSandbox) Start(ctx context.Context, spec pipeline.SandboxSpec) (pipeline.Session, error) {
	sess, err := s.Sandbox.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &spoilingSession{Session: sess, sb: s}, nil
}

type spoilingSession struct {
	pipeline.Session
	sb spoilingSandbox
}

func (s *spoilingSession) CopyFiles(ctx context.Context, dir string, changed, deleted []string) error {
	out, err := s.Exec(ctx, verify.Command{Name: "spoil", Run: s.sb.spoil, Timeout: time.Minute})
	if err != nil || out.ExitCode != 0 {
		return fmt.Errorf("spoil the cache: exit %d, %v: %s", out.ExitCode, err, out.Output)
	}
	s.sb.ran.Add(1)
	return s.Session.CopyFiles(ctx, dir, changed, deleted)
}

// A repository's cache emptied, or the build outputs its baseline wrote
// there cut short, between the baseline and the verification of the change
// costs time, not the truth: a change that breaks a test still fails, and
// one that fixes a test is still verified.
func TestCacheSpoiledMidJob(t *testing.T) {
	t.Parallel()
	const (
		emptied = `rm -rf /cache/* && test -z "$(ls -A /cache)"`
		// What the baseline built (newer than the checkout) is cut short.
		spoiled = `n=0; for f in $(find /cache/go-build -type f -name '*-d' -newer go.mod); do echo spoiled > "$f"; n=$((n+1)); done; test $n -gt 0`
		fixAdd  = "func Add(a, b int) int { return a + b }"
	)
	for _, tt := range []struct {
		name, spoil, edit string
		verdict           verify.Verdict
		regression, fixed string
	}{
		{"emptied, the change breaks a test", emptied, fixAdd + "\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a + b }", verify.Failed, "TestSub", "TestAdd"},
		{"spoiled, the change breaks a test", spoiled, fixAdd + "\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a + b }", verify.Failed, "TestSub", "TestAdd"},
		{"emptied, the change is fine", emptied, fixAdd + "\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }", verify.Verified, "", "TestAdd"},
		{"spoiled, the change is fine", spoiled, fixAdd + "\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }", verify.Verified, "", "TestAdd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := dockertest.Manager(t)
			// A repository of its own: its cache starts from the image, and
			// its base has no baseline cached, so the baseline runs here.
			repo := dockertest.FreshRepo(t, m, "spoiled-mid-job")
			var ran atomic.Int32
			h := newHarnessWith(t, func(o *pipeline.Options, _ *sandbox.Manager) {
				o.Sandbox = spoilingSandbox{Sandbox: o.Sandbox, spoil: tt.spoil, ran: &ran}
			}, maps.Clone(goRepo), "limits: {max_fix_attempts: 0}\n",
				planner(calcPlan),
				editor(call("str_replace", map[string]any{"path": "calc.go",
					"old_str": "func Add(a, b int) int { return a - b }\n\n// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }", "new_str": tt.edit})),
				editor(call("finish", map[string]any{"summary": "changed calc.go"})))
			out, err := h.run(func(in *pipeline.Input) { in.Repository = repo })
			if err != nil {
				t.Fatal(err)
			}
			if ran.Load() != 1 || out.Base == nil {
				t.Fatalf("the cache was spoiled %d times after the baseline (base %v): want once", ran.Load(), out.Base != nil)
			}
			cmp := out.Comparison
			if out.Verdict != tt.verdict || cmp == nil {
				t.Fatalf("verdict %q, want %q: %+v", out.Verdict, tt.verdict, cmp)
			}
			if tt.regression != "" && !anyContains(cmp.Regressions, tt.regression) || !anyContains(cmp.Fixed, tt.fixed) {
				t.Errorf("regressions %q (want %q), fixed %q (want %q)", cmp.Regressions, tt.regression, cmp.Fixed, tt.fixed)
			}
		})
	}
}
