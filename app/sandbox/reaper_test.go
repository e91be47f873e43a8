package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/selfcode/selfcode/internal/poll"
)

// jobBook is the reaper's view of which jobs run (the store, in the server).
type jobBook struct {
	mu      sync.Mutex
	running map[string]bool
}

func (b *jobBook) Running(_ context.Context, id string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running[id], nil
}

func (b *jobBook) set(id string, running bool) {
	b.mu.Lock()
	b.running[id] = running
	b.mu.Unlock()
}

// reapCount counts what the reaper reports removed.
type reapCount struct {
	mu sync.Mutex
	n  map[string]int // "kind/reason"
}

func (c *reapCount) SandboxReaped(kind, reason string) {
	c.mu.Lock()
	c.n[kind+"/"+reason]++
	c.mu.Unlock()
}

func (c *reapCount) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// A job whose runner died mid-way without closing its sandbox (the
// container was never closed; its job no longer runs) loses the container
// and its work volume to the periodic reaper while the server runs: no
// restart. The containers of running jobs, another instance's containers
// and the repository's idle cache stay.
func TestReaperRemovesTheSandboxOfAJobThatNoLongerRuns(t *testing.T) {
	api := dockerClient(t)
	m := cacheManager(t, 1<<30, "")
	ctx := context.Background()
	repo := testRepo(t, m, "reaped")
	dead, alive := "dead-"+randomHex(3), "alive-"+randomHex(3)
	book := &jobBook{running: map[string]bool{dead: true, alive: true}}

	// The dying job's runner starts its sandbox and never closes it.
	orphan, err := m.Start(ctx, Spec{JobID: dead, Cache: repo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orphan.Close(context.Background()) })
	orphan.mu.Lock()
	work := orphan.volume
	orphan.mu.Unlock()
	if orphan.cache == nil || work == "" {
		t.Fatalf("want a work volume and a cache: volume %q cache %+v", work, orphan.cache)
	}
	cacheVolume := orphan.cache.volume
	live := start(t, m, Spec{JobID: alive})

	// Another instance's container (another server, another test) whose
	// job this server's book does not know.
	labels := map[string]string{LabelInstance: "other-" + randomHex(4), LabelJob: dead,
		LabelDeadline: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	created, err := api.ContainerCreate(ctx, &container.Config{Image: testImage(), Entrypoint: []string{"sleep", "300"}, Labels: labels},
		&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Target: "/work", VolumeOptions: &mount.VolumeOptions{Labels: labels}}}},
		nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		api.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	if err := api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}

	// While both jobs run, a pass removes nothing.
	if n, err := m.reap(ctx, reapPass{jobs: book}); err != nil || n != 0 {
		t.Fatalf("a pass while every job runs removed %d (%v)", n, err)
	}

	count := &reapCount{n: map[string]int{}}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		m.RunReaper(rctx, ReaperOptions{Interval: 20 * time.Millisecond, Jobs: book, Observer: count})
		close(done)
	}()
	t.Cleanup(func() { stop(); <-done })

	// The runner died: the job is no longer running (the worker recorded
	// its failure); nobody closes the container.
	book.set(dead, false)
	waitGone(t, api, orphan.ID(), time.Minute)
	poll.Until(t, "the reaped container's work volume to go", time.Minute, func() bool { return !volumeExists(t, api, work) })
	poll.Until(t, "the reaped container and its work volume to be counted", time.Minute, func() bool {
		return count.get("container/"+ReapJobEnded) == 1 && count.get("volume/"+ReapJobEnded) == 1
	})
	if _, err := orphan.Exec(ctx, Cmd{Run: "true"}); !isGone(err) {
		t.Errorf("the reaped container still answers: %v", err)
	}

	// What must stay.
	if res := mustExec(t, live, Cmd{Run: "true"}); res.ExitCode != 0 {
		t.Errorf("a running job's container was broken by the reaper: %+v", res)
	}
	if _, err := api.ContainerInspect(ctx, created.ID); errdefs.IsNotFound(err) {
		t.Error("another instance's container was reaped")
	}
	if !volumeExists(t, api, cacheVolume) {
		t.Error("the repository's idle cache volume was reaped")
	}
}

// The smoke stage's probe (Available) starts a helper container that
// belongs to no job: a periodic reaper pass that runs meanwhile, asking
// the job store about the jobs of the containers it finds, leaves it
// alone, whatever the store says.
func TestReaperLeavesTheSmokeProbesHelperAlone(t *testing.T) {
	m, api := newManager(t, Limits{})
	cleanupInstance(t, m.opts.Instance)
	ctx := context.Background()
	helper, err := m.startProbeHelper(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.removeContainer(context.Background(), helper) })
	// The store knows no job at all: every job it is asked about has ended.
	book := &jobBook{running: map[string]bool{}}
	count := &reapCount{n: map[string]int{}}
	if n, err := m.reap(ctx, reapPass{jobs: book, obs: count}); err != nil || n != 0 {
		t.Errorf("a pass during the probe removed %d (%v): %v", n, err, count.n)
	}
	if _, err := api.ContainerInspect(ctx, helper); err != nil {
		t.Fatalf("the probe's helper was reaped mid-probe: %v", err)
	}
	if err := m.removeContainer(ctx, helper); err != nil {
		t.Fatal(err)
	}
	waitGone(t, api, helper, time.Minute)
}
