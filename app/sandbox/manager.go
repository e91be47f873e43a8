package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/selfcode/selfcode/internal/keyedlock"
)

// MinAPIVersion is the oldest Docker Engine API selfcode runs on: that of
// Docker Engine 20.10, the oldest engine its Docker tests run against
// (`selfcode doctor` checks it).
const MinAPIVersion = "1.41"

// Labels put on every container and work volume.
const (
	LabelInstance = "selfcode.instance" // Options.Instance
	LabelJob      = "selfcode.job"      // Spec.JobID
	LabelDeadline = "selfcode.deadline" // RFC 3339, UTC
)

// Manager starts job containers on one Docker engine and reaps leftovers.
// It is safe for concurrent use.
type Manager struct {
	api  *client.Client
	opts Options
	log  *slog.Logger

	// creating is read-held from ContainerCreate until the container is
	// tracked, and write-held by a reap, so a reap never takes a container
	// that is being started.
	creating sync.RWMutex
	// volumes serialises the creation of containers that mount the same
	// cache volume: the engine fills an empty volume from the image on
	// create, and two creates filling it at once fail ("file exists").
	volumes keyedlock.Locks
	startMu sync.Mutex // serialises the startup reap

	mu     sync.Mutex
	live   map[string]*Container // by container ID
	reaped bool                  // the startup reap has happened

	cacheMu    sync.Mutex            // guards cacheIndex and its file
	cacheIndex map[string]cacheEntry // by cache volume; nil until loaded
	evicting   atomic.Bool           // a background eviction is running
	bg         sync.WaitGroup        // background evictions

	owned      ownedSet   // the smoke stage's live networks, containers and image tags
	smokeMu    sync.Mutex // serialises the smoke stage's availability check
	smokeReady bool       // the engine builds images and a helper forwards to shadow containers
}

// New connects to the engine named by the environment (DOCKER_HOST etc.),
// logs what it supports, checks Options.Runtime, and reaps containers and
// volumes a previous run of this instance left behind (and any past their
// deadline). When the engine does not answer, New still returns a Manager and
// logs a warning; the reap then happens before the first Start, and Ping
// reports the engine's state for readiness checks.
func New(ctx context.Context, opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("create docker client: %w", err)
	}
	m := &Manager{api: api, opts: opts, log: opts.Logger, live: map[string]*Container{}}
	if err := m.startup(ctx); err != nil {
		if !errors.Is(err, ErrEngineUnavailable) {
			_ = api.Close()
			return nil, err
		}
		m.log.Warn("docker engine not reachable; sandbox reap deferred to the first job", "err", err)
	}
	return m, nil
}

// startup describes the engine, validates the runtime and reaps once.
func (m *Manager) startup(ctx context.Context) error {
	m.mu.Lock()
	done := m.reaped
	m.mu.Unlock()
	if done {
		return nil
	}
	m.startMu.Lock()
	defer m.startMu.Unlock()
	m.mu.Lock()
	done = m.reaped
	m.mu.Unlock()
	if done {
		return nil
	}
	info, err := m.Describe(ctx)
	if err != nil {
		return err
	}
	m.log.Info("sandbox engine",
		"server_version", info.ServerVersion, "api_version", info.APIVersion,
		"cgroup_version", info.CgroupVersion, "cgroup_driver", info.CgroupDriver,
		"runtimes", info.Runtimes, "default_runtime", info.DefaultRuntime, "runsc", info.Runsc,
		"runtime", m.runtimeName(info))
	if m.opts.Runtime != "" && !slices.Contains(info.Runtimes, m.opts.Runtime) {
		return fmt.Errorf("%w: runtime %q not offered by the engine (it has %v)", ErrInvalid, m.opts.Runtime, info.Runtimes)
	}
	n, err := m.reap(ctx, reapPass{startup: true})
	if err != nil {
		return err
	}
	if n > 0 {
		m.log.Info("sandbox reaped leftovers", "removed", n, "instance", m.opts.Instance)
	}
	m.mu.Lock()
	m.reaped = true
	m.mu.Unlock()
	return nil
}

func (m *Manager) runtimeName(info EngineInfo) string {
	if m.opts.Runtime != "" {
		return m.opts.Runtime
	}
	return info.DefaultRuntime
}

// Instance is the name this Manager labels everything with.
func (m *Manager) Instance() string { return m.opts.Instance }

// Close waits for a background cache eviction and releases the engine
// connection. Containers still open are left to their deadline and to the
// next startup's reap.
func (m *Manager) Close() error {
	m.bg.Wait()
	return m.api.Close()
}

// ImageID is the ID of the image a Spec's Image names ("": Options.Image),
// which changes whenever the image is rebuilt.
func (m *Manager) ImageID(ctx context.Context, image string) (string, error) {
	if image == "" {
		image = m.opts.Image
	}
	img, err := m.api.ImageInspect(ctx, image)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", image, err)
	}
	return img.ID, nil
}

// Ping reports whether the Docker engine answers; use it for readiness.
func (m *Manager) Ping(ctx context.Context) error {
	if _, err := m.api.Ping(ctx); err != nil {
		return fmt.Errorf("%w: ping: %w", ErrEngineUnavailable, err)
	}
	return nil
}

// EngineInfo is what the engine supports, for startup logs and diagnostics.
type EngineInfo struct {
	ServerVersion  string
	APIVersion     string // negotiated with the engine
	OS             string
	KernelVersion  string
	CgroupVersion  string // "1" or "2"
	CgroupDriver   string
	Runtimes       []string // sorted
	DefaultRuntime string
	Runsc          bool // gVisor's runsc is available
	Security       []string
	Warnings       []string // the engine's own warnings (docker info)
}

// Describe asks the engine what it supports.
func (m *Manager) Describe(ctx context.Context) (EngineInfo, error) {
	info, err := m.api.Info(ctx)
	if err != nil {
		return EngineInfo{}, fmt.Errorf("%w: info: %w", ErrEngineUnavailable, err)
	}
	e := EngineInfo{
		ServerVersion:  info.ServerVersion,
		APIVersion:     m.api.ClientVersion(),
		OS:             info.OperatingSystem,
		KernelVersion:  info.KernelVersion,
		CgroupVersion:  info.CgroupVersion,
		CgroupDriver:   info.CgroupDriver,
		DefaultRuntime: info.DefaultRuntime,
		Security:       info.SecurityOptions,
		Warnings:       info.Warnings,
	}
	for name := range info.Runtimes {
		e.Runtimes = append(e.Runtimes, name)
	}
	slices.Sort(e.Runtimes)
	e.Runsc = slices.Contains(e.Runtimes, "runsc")
	return e, nil
}

// Reap removes containers, work volumes and the smoke stage's images (and
// networks, which earlier versions made) labelled with this instance that this Manager did not make (a
// crashed predecessor's), and those of any instance whose deadline has
// passed. It returns how many it removed.
func (m *Manager) Reap(ctx context.Context) (int, error) {
	return m.reap(ctx, reapPass{})
}

// Why a reap removed something (ReapObserver's reason).
const (
	// ReapOrphan: this instance's, but not started by this Manager (a
	// crashed predecessor's, or one whose Start never finished).
	ReapOrphan = "orphan"
	// ReapJobEnded: started by this Manager for a job that no longer runs
	// (its runner ended without closing it).
	ReapJobEnded = "job_ended"
	// ReapDeadline: past its deadline, whichever instance it belongs to.
	ReapDeadline = "deadline"
)

// JobStates tells the reaper whether a job still runs (the job store).
type JobStates interface {
	Running(ctx context.Context, jobID string) (bool, error)
}

// ReapObserver counts what reaps remove; kind is "container" or "volume",
// reason one of ReapOrphan, ReapJobEnded, ReapDeadline.
type ReapObserver interface {
	SandboxReaped(kind, reason string)
}

// ReaperOptions configure RunReaper.
type ReaperOptions struct {
	// Interval between passes; default one minute.
	Interval time.Duration
	// Jobs says which jobs still run: a container this Manager started for
	// a job that no longer runs is removed. Nil: only orphans and
	// containers past their deadline are.
	Jobs JobStates
	// Observer counts what each pass removes; may be nil.
	Observer ReapObserver
}

// RunReaper reaps every Interval until ctx ends: what Reap removes, and the
// containers (with their work volumes) of jobs that no longer run, so a job
// whose runner died without closing its sandbox does not keep it until its
// deadline or the next restart. Only this instance's objects, and any past
// their deadline, are touched; repository caches never are.
func (m *Manager) RunReaper(ctx context.Context, o ReaperOptions) {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := m.startup(ctx); err != nil {
			m.log.Debug("sandbox reap skipped: engine not ready", "err", err)
			continue
		}
		if _, err := m.reap(ctx, reapPass{jobs: o.Jobs, obs: o.Observer}); err != nil && ctx.Err() == nil {
			m.log.Warn("sandbox reap failed", "err", err)
		}
	}
}

// reapPass is what one reap judges by.
type reapPass struct {
	startup bool
	jobs    JobStates    // nil: live containers are never judged by their job
	obs     ReapObserver // may be nil
}

func (p reapPass) count(kind, reason string) {
	if p.obs != nil {
		p.obs.SandboxReaped(kind, reason)
	}
}

// ended reports whether jobID is known to run no longer; an error asking
// counts as still running (nothing is removed on a guess).
func (p reapPass) ended(ctx context.Context, jobID string, seen map[string]bool) bool {
	if p.jobs == nil || jobID == "" {
		return false
	}
	if e, ok := seen[jobID]; ok {
		return e
	}
	running, err := p.jobs.Running(ctx, jobID)
	e := err == nil && !running
	seen[jobID] = e
	return e
}

func (m *Manager) reap(ctx context.Context, p reapPass) (int, error) {
	var ended []*Container
	removed, err := m.reapUntracked(ctx, p, &ended)
	// A live container whose job ended is destroyed like Close would (its
	// work volume with it, counted too), outside the create lock: that may
	// take a while.
	for _, c := range ended {
		m.log.Warn("sandbox reaped the container of a job that no longer runs", "job_id", c.jobID, "container", shortID(c.id))
		vol, derr := c.remove(ctx, fmt.Errorf("%w: reaped, its job no longer runs", ErrContainerGone))
		if derr != nil {
			err = errors.Join(err, derr)
			continue
		}
		removed++
		p.count("container", ReapJobEnded)
		if vol {
			removed++
			p.count("volume", ReapJobEnded)
		}
	}
	return removed, err
}

// reapUntracked removes, under the create lock, what no live container of
// this Manager holds; the live containers of ended jobs are added to ended.
func (m *Manager) reapUntracked(ctx context.Context, p reapPass, ended *[]*Container) (int, error) {
	m.creating.Lock()
	defer m.creating.Unlock()
	now := time.Now()
	seen := map[string]bool{}
	// why says why an object labelled labels (a container when id is set)
	// goes, or "" when it stays.
	why := func(labels map[string]string, id string) string {
		m.mu.Lock()
		live, mine := m.live[id]
		m.mu.Unlock()
		if mine {
			if p.ended(ctx, labels[LabelJob], seen) {
				*ended = append(*ended, live)
			}
			return ""
		}
		if m.owned.has(id) {
			// A smoke stage's own object stays while its job runs.
			if id != "" && p.ended(ctx, labels[LabelJob], seen) {
				return ReapJobEnded
			}
			return ""
		}
		if labels[LabelInstance] == m.opts.Instance {
			if id == "" && p.ended(ctx, labels[LabelJob], seen) {
				return ReapJobEnded
			}
			return ReapOrphan
		}
		if d, err := time.Parse(time.RFC3339, labels[LabelDeadline]); err == nil && now.After(d) {
			return ReapDeadline
		}
		return ""
	}
	removed := 0
	cs, err := m.api.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelInstance)),
	})
	if err != nil {
		return 0, fmt.Errorf("%w: list containers: %w", ErrEngineUnavailable, err)
	}
	for _, c := range cs {
		reason := why(c.Labels, c.ID)
		if reason == "" {
			continue
		}
		err := m.api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
			return removed, fmt.Errorf("reap container %s: %w", c.ID, err)
		}
		removed++
		p.count("container", reason)
		m.log.Info("sandbox reaped container", "container", shortID(c.ID), "job_id", c.Labels[LabelJob], "reason", reason, "startup", p.startup)
	}
	vs, err := m.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelInstance))})
	if err != nil {
		return removed, fmt.Errorf("%w: list volumes: %w", ErrEngineUnavailable, err)
	}
	for _, v := range vs.Volumes {
		if v == nil || m.ownsVolume(v.Name) {
			continue
		}
		reason := why(v.Labels, "")
		if reason == "" {
			continue
		}
		err := m.api.VolumeRemove(ctx, v.Name, false)
		switch {
		case err == nil:
			removed++
			p.count("volume", reason)
			m.log.Info("sandbox reaped volume", "volume", shortID(v.Name), "job_id", v.Labels[LabelJob], "reason", reason, "startup", p.startup)
		case errdefs.IsNotFound(err), errdefs.IsConflict(err):
			// Gone already, or still in use by a container being removed.
		default:
			return removed, fmt.Errorf("reap volume %s: %w", v.Name, err)
		}
	}
	// The smoke stage is optional: an engine (or proxy) that will not list
	// or remove its networks and images must not keep sandboxes from
	// starting.
	n, err := m.reapSmoke(ctx, func(labels map[string]string, id string) bool { return why(labels, id) != "" }, p.startup)
	if err != nil {
		m.log.Warn("sandbox could not reap the smoke stage's leftovers", "err", err)
	}
	return removed + n, nil
}

func (m *Manager) ownsVolume(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.live {
		if c.volume == name {
			return true
		}
	}
	return false
}

func (m *Manager) track(c *Container) {
	m.mu.Lock()
	m.live[c.id] = c
	m.mu.Unlock()
}

func (m *Manager) untrack(c *Container) {
	m.mu.Lock()
	delete(m.live, c.id)
	m.mu.Unlock()
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
