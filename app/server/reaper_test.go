package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/pipeline"
)

// A job's runner dies mid-way — it started its sandbox and panicked before
// anything closed it. The worker records the job as failed, and the
// server's periodic reaper removes the container and its work volume while
// the server keeps running (no restart), counting both on /metrics.
func TestReaperRemovesTheSandboxOfADeadRunner(t *testing.T) {
	t.Parallel()
	sb := dockertest.Manager(t)
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	e := e2e.Start(t, e2e.Options{SandboxManager: sb, ReapInterval: 50 * time.Millisecond})
	started := make(chan string, 1)
	e.Scripted.SetHook(func(ctx context.Context, _ int, in pipeline.Input) error {
		c, err := sb.Start(ctx, sandbox.Spec{JobID: in.JobID})
		if err != nil {
			return err
		}
		started <- c.ID() // never closed: the runner dies here
		panic("the runner dies mid-way")
	})
	issue, err := e.GitHub.AddIssue(owner, repoName, fakegithub.Issue{Title: "Crash", Body: "x", User: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.Comment(repoName, issue, "writer", "/selfcode do it")
	if code != http.StatusAccepted {
		t.Fatalf("delivery: %d %v", code, out)
	}
	var id string
	select {
	case id = <-started:
	case <-time.After(time.Minute):
		t.Fatalf("the pipeline never started its sandbox\n%s", e.Logs())
	}
	j := e.Wait(out["job_id"].(string))
	if j.State != job.StateFailed {
		t.Fatalf("job %s %q, want failed", j.State, j.Error)
	}
	e.Eventually("the dead runner's container to be reaped", func() bool {
		_, err := api.ContainerInspect(context.Background(), id)
		return errdefs.IsNotFound(err)
	})
	e.Eventually("the reaped container and its work volume counted on /metrics", func() bool {
		code, body := e.Admin(http.MethodGet, "/metrics", "")
		return code == http.StatusOK && strings.Contains(string(body), `selfcode_sandbox_reaped_total{kind="container",reason="job_ended"} 1`) &&
			strings.Contains(string(body), `selfcode_sandbox_reaped_total{kind="volume",reason="job_ended"} 1`)
	})
}
