package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"
)

// Spec describes one job's container.
type Spec struct {
	JobID string
	// Image overrides Options.Image (for example the repository's
	// `.selfcode.yml` image). It must exist on the engine.
	Image string
	// Deadline is when the container ends by itself (its PID 1 exits);
	// zero means now + Limits.JobTimeout.
	Deadline time.Time
	// SetupNetwork starts the container with the engine's default bridge
	// network so setup commands (Cmd.Setup) can download dependencies. Call
	// DropNetwork before anything else: until then CopyFiles and non-setup
	// commands are refused with ErrNetworkAttached.
	SetupNetwork bool
	// Env holds non-secret variables for every command. Names that look
	// like credentials or selfcode settings are refused.
	Env map[string]string
	// Cache names the repository whose cache the container mounts (see
	// cache.go); empty, or caches off, or an image without a cache
	// directory: none.
	Cache string
}

// Container is one job's running sandbox. Its methods may be called from
// several goroutines; Close may interrupt a running Exec.
type Container struct {
	m        *Manager
	id       string
	name     string
	jobID    string
	image    string
	volume   string
	deadline time.Time
	env      []string
	uid, gid int
	seq      atomic.Int64

	cache *cacheMount // the repository's cache, when mounted

	mu       sync.Mutex
	network  bool  // a network other than "none" may be attached
	gone     error // non-nil once the container is known to be gone
	oomKills int64 // last oom_kill count read from the memory cgroup
}

// ID is the container's engine ID.
func (c *Container) ID() string { return c.id }

// Name is the container's engine name.
func (c *Container) Name() string { return c.name }

// Deadline is when the container ends by itself.
func (c *Container) Deadline() time.Time { return c.deadline }

// Workdir is the path of the work tree inside the container.
func (c *Container) Workdir() string { return c.m.opts.Workdir }

// Start creates and starts a job container, running as a non-root user with
// no capabilities, no new privileges, a read-only root, an exec-able /tmp
// tmpfs, the work tree in an anonymous volume, the configured limits, and no
// network unless spec.SetupNetwork. Any warning from the engine fails Start.
func (m *Manager) Start(ctx context.Context, spec Spec) (*Container, error) {
	if err := m.startup(ctx); err != nil {
		return nil, err
	}
	if spec.JobID == "" || len(spec.JobID) > 128 || strings.ContainsFunc(spec.JobID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return nil, fmt.Errorf("%w: job id %q", ErrInvalid, spec.JobID)
	}
	if err := checkEnv(spec.Env); err != nil {
		return nil, err
	}
	now := time.Now()
	if spec.Deadline.IsZero() {
		spec.Deadline = now.Add(m.opts.Limits.JobTimeout)
	}
	life := spec.Deadline.Sub(now)
	if life < time.Second {
		return nil, fmt.Errorf("%w: deadline %s is less than 1s away", ErrInvalid, spec.Deadline.Format(time.RFC3339))
	}
	image := spec.Image
	if image == "" {
		image = m.opts.Image
	}
	cache, err := m.cacheFor(ctx, spec.Cache, image)
	if err != nil {
		m.log.Warn("repository cache unavailable; the job runs cold", "job_id", spec.JobID, "repo", spec.Cache, "err", err)
		cache = nil
	}
	cfg, host := m.containerConfig(spec, image, life, cache)
	uid, gid, _ := parseUser(m.opts.User) // validated in New
	name := "selfcode-" + nameSafe(spec.JobID) + "-" + randomHex(4)
	unlock := func() {}
	if cache != nil {
		if unlock, err = m.volumes.Lock(ctx, cache.volume); err != nil {
			return nil, err
		}
	}
	m.creating.RLock()
	created, err := m.api.ContainerCreate(ctx, cfg, host, nil, nil, name)
	unlock()
	if err != nil {
		m.creating.RUnlock()
		if errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s (run `selfcode image build`): %w", ErrImageNotFound, image, err)
		}
		return nil, fmt.Errorf("create sandbox container: %w", err)
	}
	c := &Container{
		m: m, id: created.ID, name: name, jobID: spec.JobID, image: image,
		deadline: spec.Deadline, env: cfg.Env, uid: uid, gid: gid, network: spec.SetupNetwork, cache: cache,
	}
	m.track(c)
	m.creating.RUnlock()
	if len(created.Warnings) > 0 {
		werr := &WarningError{Warnings: created.Warnings}
		m.log.Error("sandbox create warned; refusing to run", "job_id", spec.JobID, "warnings", created.Warnings)
		c.destroy(ctx, werr)
		return nil, werr
	}
	if err := m.api.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		c.destroy(ctx, ErrContainerGone)
		return nil, fmt.Errorf("start sandbox container: %w", err)
	}
	info, err := m.api.ContainerInspect(ctx, c.id)
	if err != nil {
		c.destroy(ctx, ErrContainerGone)
		return nil, fmt.Errorf("inspect sandbox container: %w", err)
	}
	for _, mp := range info.Mounts {
		if mp.Type == mount.TypeVolume && mp.Destination == m.opts.Workdir {
			c.mu.Lock()
			c.volume = mp.Name
			c.mu.Unlock()
		}
	}
	m.log.Info("sandbox started", "job_id", spec.JobID, "container", shortID(c.id), "image", image,
		"deadline", spec.Deadline.UTC().Format(time.RFC3339), "setup_network", spec.SetupNetwork, "cache", cache != nil)
	return c, nil
}

// containerConfig is the locked-down configuration of a job container whose
// PID 1 lives for life.
func (m *Manager) containerConfig(spec Spec, image string, life time.Duration, cache *cacheMount) (*container.Config, *container.HostConfig) {
	lim := m.opts.Limits

	labels := map[string]string{
		LabelInstance: m.opts.Instance,
		LabelJob:      spec.JobID,
		LabelDeadline: spec.Deadline.UTC().Format(time.RFC3339),
	}
	env := map[string]string{
		"HOME":           "/tmp",
		"TMPDIR":         "/tmp",
		"GOPATH":         "/tmp/go",
		"GOCACHE":        "/tmp/.cache/go-build",
		"XDG_CACHE_HOME": "/tmp/.cache",
		// Python and Node.js keep their caches in /tmp too (the root file
		// system is read-only), and test runners behave as on CI: no watch
		// mode, no prompts, no colour codes in the output.
		"PIP_CACHE_DIR":              "/tmp/.cache/pip",
		"npm_config_cache":           "/tmp/.npm",
		"npm_config_update_notifier": "false",
		"PYTHONDONTWRITEBYTECODE":    "1",
		"CI":                         "true",
		"NO_COLOR":                   "1",
		"FORCE_COLOR":                "0",
	}
	if cache != nil {
		maps.Copy(env, cacheEnv(cache.dir))
	}
	maps.Copy(env, m.opts.Env)
	maps.Copy(env, spec.Env)
	envList := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	netMode := container.NetworkMode(network.NetworkNone)
	if spec.SetupNetwork {
		netMode = network.NetworkBridge
	}
	cfg := &container.Config{
		Image:      image,
		User:       m.opts.User,
		WorkingDir: m.opts.Workdir,
		Env:        envList,
		Hostname:   "sandbox",
		Labels:     labels,
		// PID 1 (under the engine's init) ends the container at the deadline.
		Entrypoint: strslice.StrSlice{"sleep", strconv.FormatInt(int64(math.Ceil(life.Seconds())), 10)},
	}
	host := m.lockedDown(netMode)
	host.Tmpfs = map[string]string{
		"/tmp": fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", lim.TmpSize),
	}
	host.Mounts = []mount.Mount{{
		Type:          mount.TypeVolume, // no Source: anonymous, removed with the container
		Target:        m.opts.Workdir,
		VolumeOptions: &mount.VolumeOptions{Labels: labels},
	}}
	host.Resources = m.resources()
	if cache != nil {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: cache.volume, Target: cache.dir})
	}
	return cfg, host
}

// lockedDown is the host configuration of a container whose PID 1 is
// selfcode's own (a job container, a shadow's helper): removed once it
// ends, a read-only root, no capabilities, no new privileges, the engine's
// init, private IPC, no log kept, the configured runtime.
func (m *Manager) lockedDown(netMode container.NetworkMode) *container.HostConfig {
	init := true
	return &container.HostConfig{
		NetworkMode:    netMode,
		AutoRemove:     true,
		ReadonlyRootfs: true,
		CapDrop:        strslice.StrSlice{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &init,
		IpcMode:        container.IPCModePrivate,
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        m.opts.Runtime,
	}
}

// resources are the limits of every container the manager starts: memory
// with no swap on top, CPU, processes, block I/O weight and open files.
func (m *Manager) resources() container.Resources {
	lim := m.opts.Limits
	pids := lim.Pids
	return container.Resources{
		Memory:      lim.Memory,
		MemorySwap:  lim.Memory,
		NanoCPUs:    int64(lim.CPUs * 1e9),
		PidsLimit:   &pids,
		BlkioWeight: lim.IOWeight,
		Ulimits:     []*container.Ulimit{{Name: "nofile", Soft: int64(lim.NoFile), Hard: int64(lim.NoFile)}},
	}
}

// usable returns the reason the container cannot be used, or nil.
func (c *Container) usable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// markGone records that the container no longer exists.
func (c *Container) markGone(reason error) {
	c.mu.Lock()
	if c.gone == nil {
		c.gone = reason
	}
	c.mu.Unlock()
}

// goneError turns an engine error about a missing or stopped container into
// ErrContainerGone (remembering it); other errors are returned wrapped.
func (c *Container) goneError(what string, err error) error {
	if errdefs.IsNotFound(err) || errdefs.IsConflict(err) {
		if time.Now().After(c.deadline) {
			err = fmt.Errorf("%w: reached its deadline %s: %w", ErrContainerGone, c.deadline.UTC().Format(time.RFC3339), err)
		} else {
			err = fmt.Errorf("%w: %w", ErrContainerGone, err)
		}
		c.markGone(err)
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Close kills and removes the container and its work volume. It is
// idempotent and works even when ctx is already canceled.
func (c *Container) Close(ctx context.Context) error {
	measured := c.measureCache(ctx)
	err := c.destroy(ctx, fmt.Errorf("%w: closed", ErrContainerGone))
	if measured {
		// Once the container is gone, its cache is no longer in use: past
		// the cap, it may go too.
		c.m.evictSoon()
	}
	return err
}

// destroy kills the container, removes it with its volume, waits until the
// engine no longer knows it, and marks it gone with reason.
func (c *Container) destroy(ctx context.Context, reason error) error {
	_, err := c.remove(ctx, reason)
	return err
}

// remove is destroy, reporting whether it removed the work volume (false
// when there was none, or it was gone already).
func (c *Container) remove(ctx context.Context, reason error) (bool, error) {
	c.markGone(reason)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	api := c.m.api
	defer c.m.untrack(c)
	if err := api.ContainerKill(ctx, c.id, "KILL"); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		c.m.log.Warn("sandbox kill failed", "job_id", c.jobID, "container", shortID(c.id), "err", err)
	}
	err := api.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return false, fmt.Errorf("remove sandbox container: %w", err)
	}
	// AutoRemove may be removing it concurrently: wait until it is gone.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := api.ContainerInspect(ctx, c.id)
		if errdefs.IsNotFound(err) {
			break
		}
		if err == nil {
			// Still there (removal in progress); ask again in case the
			// first request lost a race with AutoRemove.
			_ = api.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("wait for sandbox container removal: %w", ctx.Err())
		case <-tick.C:
		}
	}
	c.mu.Lock()
	vol := c.volume
	c.mu.Unlock()
	volumeRemoved := false
	if vol != "" {
		switch err := api.VolumeRemove(ctx, vol, true); {
		case err == nil:
			volumeRemoved = true
		case !errdefs.IsNotFound(err):
			return false, fmt.Errorf("remove sandbox volume: %w", err)
		}
	}
	c.m.log.Info("sandbox removed", "job_id", c.jobID, "container", shortID(c.id))
	return volumeRemoved, nil
}

// CopyTree copies hostDir's tree into the work tree: regular files,
// directories and symlinks, owned by the sandbox user, modes and times kept.
// The top-level .git directory is left out unless Options.IncludeGit.
// Symlinks are copied as links and never followed on the host.
func (c *Container) CopyTree(ctx context.Context, hostDir string) error {
	if err := c.usable(); err != nil {
		return err
	}
	return c.copyIn(ctx, func(w io.Writer) error {
		return writeTree(w, hostDir, c.uid, c.gid, c.m.opts.IncludeGit)
	})
}

// CopyFiles brings the work tree up to date with hostDir for the given
// paths (relative, slash-separated): deleted paths are removed, then changed
// paths are copied. It refuses while a setup network may still be attached,
// so that no model-written change is ever inside a container with a network.
func (c *Container) CopyFiles(ctx context.Context, hostDir string, changed, deleted []string) error {
	if err := c.usable(); err != nil {
		return err
	}
	c.mu.Lock()
	netOn := c.network
	c.mu.Unlock()
	if netOn {
		return ErrNetworkAttached
	}
	for _, p := range append(slices.Clone(changed), deleted...) {
		if err := checkRelPath(p); err != nil {
			return err
		}
	}
	if len(deleted) > 0 {
		argv := []string{"rm", "-rf", "--"}
		for _, p := range deleted {
			argv = append(argv, path.Join(c.m.opts.Workdir, filepath.ToSlash(p)))
		}
		out, code, err := c.run(ctx, argv)
		if err != nil {
			return fmt.Errorf("delete files in sandbox: %w", err)
		}
		if code != 0 {
			return fmt.Errorf("delete files in sandbox: rm exited %d: %s", code, strings.TrimSpace(out))
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return c.copyIn(ctx, func(w io.Writer) error {
		return writeFiles(w, hostDir, changed, c.uid, c.gid)
	})
}

// copyIn streams a tar archive produced by write into the work tree.
func (c *Container) copyIn(ctx context.Context, write func(io.Writer) error) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	err := c.m.api.CopyToContainer(ctx, c.id, c.m.opts.Workdir, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(io.ErrClosedPipe) // stop the writer if the engine gave up early
	if err != nil {
		return c.goneError("copy into sandbox", err)
	}
	return nil
}

// DropNetwork disconnects every network and confirms that only the loopback
// interface remains inside. If anything else remains the container is
// destroyed and ErrNetworkNotDropped returned. It is idempotent.
func (c *Container) DropNetwork(ctx context.Context) error {
	if err := c.usable(); err != nil {
		return err
	}
	info, err := c.m.api.ContainerInspect(ctx, c.id)
	if err != nil {
		return c.goneError("inspect sandbox networks", err)
	}
	if info.NetworkSettings != nil {
		for name := range info.NetworkSettings.Networks {
			if name == network.NetworkNone {
				continue
			}
			if err := c.m.api.NetworkDisconnect(ctx, name, c.id, true); err != nil && !errdefs.IsNotFound(err) {
				return c.goneError("disconnect sandbox from "+name, err)
			}
		}
	}
	ifaces, err := c.Interfaces(ctx)
	if err != nil {
		return err
	}
	if !slices.Equal(ifaces, []string{"lo"}) {
		err := fmt.Errorf("%w: interfaces %v remain", ErrNetworkNotDropped, ifaces)
		c.destroy(ctx, err)
		return err
	}
	c.mu.Lock()
	c.network = false
	c.mu.Unlock()
	c.m.log.Info("sandbox network dropped", "job_id", c.jobID, "container", shortID(c.id))
	return nil
}

// Interfaces lists the network interfaces visible inside the container
// (from /proc/net/dev), sorted.
func (c *Container) Interfaces(ctx context.Context) ([]string, error) {
	out, code, err := c.run(ctx, []string{"cat", "/proc/net/dev"})
	if err != nil {
		return nil, fmt.Errorf("list sandbox interfaces: %w", err)
	}
	if code != 0 {
		return nil, fmt.Errorf("list sandbox interfaces: cat exited %d: %s", code, strings.TrimSpace(out))
	}
	return parseNetDev(out), nil
}

// parseNetDev returns the sorted interface names in /proc/net/dev text.
func parseNetDev(s string) []string {
	var names []string
	for i, line := range strings.Split(s, "\n") {
		if i < 2 { // two header lines
			continue
		}
		name, _, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if ok && name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// nameSafe keeps characters allowed in container names, at most 40.
func nameSafe(s string) string {
	b := []byte(s)
	for i, ch := range b {
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.' || ch == '-'
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
