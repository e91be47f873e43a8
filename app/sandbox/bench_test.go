package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/strslice"
)

// BenchmarkStartToFirstCommand: Start a job container and run its first
// command (`true`); Close is not timed.
func BenchmarkStartToFirstCommand(b *testing.B) {
	m, _ := newManager(b, Limits{})
	ctx := context.Background()
	for b.Loop() {
		c, err := m.Start(ctx, Spec{JobID: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if res, err := c.Exec(ctx, Cmd{Run: "true"}); err != nil || res.ExitCode != 0 {
			b.Fatalf("first command: %+v, %v", res, err)
		}
		b.StopTimer()
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkExecWarm: one more command (`true`, with the timeout wrapper and
// output capture) in a running container.
func BenchmarkExecWarm(b *testing.B) {
	m, _ := newManager(b, Limits{})
	c := start(b, m, Spec{})
	ctx := context.Background()
	for b.Loop() {
		if res, err := c.Exec(ctx, Cmd{Run: "true"}); err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// BenchmarkFreshContainerPerCommand: the `docker run` alternative — create
// and start a container with the same lockdown for each command and wait for
// it to exit; removal is not timed.
func BenchmarkFreshContainerPerCommand(b *testing.B) {
	m, api := newManager(b, Limits{})
	ctx := context.Background()
	for b.Loop() {
		cfg, host := m.containerConfig(Spec{JobID: "bench", Deadline: time.Now().Add(time.Minute)}, m.opts.Image, time.Minute, nil)
		cfg.Entrypoint = strslice.StrSlice{"true"}
		host.AutoRemove = false
		created, err := api.ContainerCreate(ctx, cfg, host, nil, nil, "")
		if err != nil {
			b.Fatal(err)
		}
		waitC, errC := api.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
		if err := api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case w := <-waitC:
			if w.StatusCode != 0 {
				b.Fatalf("exit %d", w.StatusCode)
			}
		case err := <-errC:
			b.Fatal(err)
		}
		b.StopTimer()
		if err := api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
