package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/selfcode/selfcode/pipeline/smoke"
)

// SmokeRepository is the image repository smoke builds are tagged in.
const SmokeRepository = "selfcode-smoke"

// ErrSmokeUnreachable: this process cannot reach a container on a private
// network of the engine (it runs in a container the engine does not know,
// such as beside a Docker-in-Docker sidecar).
var ErrSmokeUnreachable = errors.New("shadow containers are unreachable from this process")

// buildLogBytes bounds the build log kept (its end).
const buildLogBytes = 64 << 10

// SmokeBackend runs the smoke stage (smoke.Engine) on the Manager's
// engine: images built with the classic builder, without network and
// without pulling; shadow containers locked down like job containers, on a
// private network per run with no route out.
type SmokeBackend struct {
	Manager *Manager
	// TempDir holds build contexts while they wait for their build
	// (default: the system's temporary directory).
	TempDir string
}

var _ smoke.Engine = SmokeBackend{}

// Available checks once that the engine builds images (a build of an empty
// image, which proxies that refuse builds answer with 403) and that this
// process reaches a container's private network.
func (b SmokeBackend) Available(ctx context.Context) error {
	m := b.Manager
	if err := m.startup(ctx); err != nil {
		return err
	}
	m.smokeMu.Lock()
	defer m.smokeMu.Unlock()
	if m.smokeReady {
		return nil
	}
	if err := m.probeBuild(ctx); err != nil {
		return fmt.Errorf("the Docker engine does not build images for selfcode: %w", err)
	}
	nw, err := m.createNetwork(ctx, "probe", time.Now().Add(time.Minute))
	if err != nil {
		return err
	}
	_, rerr := m.reach(ctx, nw)
	if err := m.removeNetwork(context.WithoutCancel(ctx), nw, ""); err != nil {
		m.log.Warn("remove the smoke probe network", "err", err)
	}
	if rerr != nil {
		return rerr
	}
	m.smokeReady = true
	return nil
}

// probeBuild builds and removes an image holding nothing but a label.
func (m *Manager) probeBuild(ctx context.Context) error {
	ctxTar, err := dockerfileContext("FROM scratch\nLABEL selfcode.probe=1\n")
	if err != nil {
		return err
	}
	tag := m.smokeTag(time.Now().Add(time.Minute))
	m.owned.add(tag)
	defer m.owned.remove(tag)
	res, err := m.build(ctx, ctxTar, "Dockerfile", tag)
	if err != nil {
		return err
	}
	m.removeImages(context.WithoutCancel(ctx), tag, res.ids)
	if res.failure != "" {
		return errors.New(res.failure)
	}
	return nil
}

// dockerfileContext is a build context holding only a Dockerfile.
func dockerfileContext(dockerfile string) (*bytes.Buffer, error) {
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return nil, err
	}
	return &ctxTar, tw.Close()
}

// Snapshot captures dir's build context now.
func (b SmokeBackend) Snapshot(ctx context.Context, dir, dockerfile string) (*smoke.Snapshot, error) {
	return snapshotContext(dir, dockerfile, b.TempDir, MaxContextBytes)
}

// Build builds spec's snapshot, refusing first when a base image is not on
// the engine (the classic builder would pull it).
func (b SmokeBackend) Build(ctx context.Context, spec smoke.BuildSpec) (smoke.Image, error) {
	m := b.Manager
	if err := m.startup(ctx); err != nil {
		return nil, err
	}
	for _, base := range spec.Snapshot.Bases {
		if _, err := m.api.ImageInspect(ctx, base); err != nil {
			if errdefs.IsNotFound(err) {
				return nil, &smoke.Failure{Reason: fmt.Sprintf("%s builds from %s, which is not on the Docker engine; selfcode never pulls images: load it on the engine first, or build from an image that is there", spec.Snapshot.Dockerfile, base)}
			}
			return nil, fmt.Errorf("inspect base image %s: %w", base, err)
		}
	}
	f, err := os.Open(spec.Snapshot.Path)
	if err != nil {
		return nil, fmt.Errorf("open the build context: %w", err)
	}
	defer f.Close()
	tag := m.smokeTag(spec.Deadline)
	m.owned.add(tag)
	res, err := m.build(ctx, f, spec.Snapshot.Dockerfile, tag)
	if err == nil && res.failure == "" {
		m.log.Info("smoke image built", "job_id", spec.JobID, "image", tag, "layers", len(res.ids))
		return &builtImage{m: m, tag: tag, ids: res.ids}, nil
	}
	// Whatever the build made before it stopped goes now.
	m.removeImages(context.WithoutCancel(ctx), tag, res.ids)
	m.owned.remove(tag)
	if err != nil {
		return nil, err
	}
	return nil, &smoke.Failure{Reason: res.failure, Log: res.log}
}

type buildResult struct {
	ids     []string // images the build made, in order (base images excluded)
	log     string   // the end of its output
	failure string   // what made it fail, when the Dockerfile did
}

// build runs one classic-builder build of contextTar: no network, no
// cache (nothing is shared with other builds, so every layer is this
// build's own), intermediate containers always removed, the job's memory,
// CPU and open-file limits. The build API takes no pids limit, no
// capability and no security option (the engine refuses SecurityOpt on a
// build): docs/security.md says what that leaves.
// The image is found again by its tag (smokeTag), not by labels: the
// classic builder adds a layer per label, a commit each. An error means
// the engine could not build; a failing Dockerfile is a result with
// failure set.
func (m *Manager) build(ctx context.Context, contextTar io.Reader, dockerfile, tag string) (buildResult, error) {
	lim := m.opts.Limits
	resp, err := m.api.ImageBuild(ctx, contextTar, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  dockerfile,
		Version:     build.BuilderV1,
		NoCache:     true,
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		NetworkMode: network.NetworkNone,
		Memory:      lim.Memory,
		MemorySwap:  lim.Memory,
		CPUPeriod:   100_000,
		CPUQuota:    int64(lim.CPUs * 100_000),
		Ulimits:     []*container.Ulimit{{Name: "nofile", Soft: int64(lim.NoFile), Hard: int64(lim.NoFile)}},
	})
	if err != nil {
		return buildResult{}, fmt.Errorf("build the smoke image: %w", err)
	}
	defer resp.Body.Close()
	res, err := readBuild(resp.Body)
	if err != nil {
		return res, fmt.Errorf("read the smoke build: %w", err)
	}
	return res, nil
}

// stepIDRE matches the classic builder's " ---> 0123456789ab" line naming
// the image a step made (or, after FROM, its base image).
var stepIDRE = regexp.MustCompile(`^ ---> ([0-9a-f]{12,64})\s*$`)

// ansiRE matches the colour codes the builder puts around a step's stderr.
var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// readBuild reads the build's JSON message stream: its output (the end
// kept), the images its steps made, and its error.
func readBuild(r io.Reader) (buildResult, error) {
	var res buildResult
	log := &tailBuffer{max: buildLogBytes}
	dec := json.NewDecoder(r)
	var pending strings.Builder // output up to the next newline
	afterFrom := false
	for {
		var msg struct {
			Stream      string `json:"stream"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
			Error string `json:"error"`
		}
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.log = log.String()
			return res, err
		}
		if msg.ErrorDetail != nil || msg.Error != "" {
			res.failure = msg.Error
			if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
				res.failure = msg.ErrorDetail.Message
			}
			log.WriteString(res.failure + "\n")
			continue
		}
		text := ansiRE.ReplaceAllString(msg.Stream, "") // the builder colours a step's stderr
		log.WriteString(text)
		pending.WriteString(text)
		for {
			s := pending.String()
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				break
			}
			line := s[:i]
			pending.Reset()
			pending.WriteString(s[i+1:])
			if strings.HasPrefix(line, "Step ") {
				_, instr, _ := strings.Cut(line, " : ")
				afterFrom = strings.HasPrefix(strings.ToUpper(strings.TrimSpace(instr)), "FROM ")
				continue
			}
			if m := stepIDRE.FindStringSubmatch(line); m != nil {
				if !afterFrom {
					res.ids = append(res.ids, m[1])
				}
				afterFrom = false
			}
		}
	}
	res.log = log.String()
	return res, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
	cut bool
}

func (t *tailBuffer) WriteString(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > t.max {
		t.b = slices.Clone(t.b[len(t.b)-t.max:])
		t.cut = true
	}
}

func (t *tailBuffer) String() string {
	if t.cut {
		if i := bytes.IndexByte(t.b, '\n'); i >= 0 {
			return string(t.b[i+1:]) // from the first whole line
		}
	}
	return string(t.b)
}

// removeImages removes a build's images: the tag, then every image the
// build made, newest first (children before parents), never forced and never
// pruning parents, so no image the build did not make is touched.
func (m *Manager) removeImages(ctx context.Context, tag string, ids []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var errs []error
	if _, err := m.api.ImageRemove(ctx, tag, image.RemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove %s: %w", tag, err))
	}
	for _, id := range slices.Backward(ids) {
		if _, err := m.api.ImageRemove(ctx, id, image.RemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// builtImage is a smoke image, removed with every layer its build made.
type builtImage struct {
	m    *Manager
	tag  string
	ids  []string
	once sync.Once
	err  error
}

func (i *builtImage) Ref() string { return i.tag }

// IDs are the images the build made (the last is the image itself).
func (i *builtImage) IDs() []string { return slices.Clone(i.ids) }

func (i *builtImage) Remove(ctx context.Context) error {
	i.once.Do(func() {
		i.err = i.m.removeImages(ctx, i.tag, i.ids)
		i.m.owned.remove(i.tag)
		if i.err == nil {
			i.m.log.Info("smoke image removed", "image", i.tag)
		}
	})
	return i.err
}

// smokeTag names a smoke image after this instance and the deadline past
// which any selfcode instance may reap it: "selfcode-smoke:<instance>.<unix
// deadline>.<random>".
func (m *Manager) smokeTag(deadline time.Time) string {
	if deadline.IsZero() {
		deadline = time.Now().Add(m.opts.Limits.JobTimeout)
	}
	return fmt.Sprintf("%s:%s.%d.%s", SmokeRepository, m.opts.Instance, deadline.Unix(), randomHex(4))
}

// smokeTagLabels reads a smoke image's tag back as the labels a reap
// judges by; ok is false for any other name.
func smokeTagLabels(ref string) (map[string]string, bool) {
	tag, ok := strings.CutPrefix(ref, SmokeRepository+":")
	if !ok {
		return nil, false
	}
	rest, random, ok1 := cutLast(tag, ".")
	instance, deadline, ok2 := cutLast(rest, ".")
	unix, err := strconv.ParseInt(deadline, 10, 64)
	if !ok1 || !ok2 || err != nil || random == "" || !instancePattern.MatchString(instance) {
		return nil, false
	}
	return map[string]string{LabelInstance: instance, LabelDeadline: time.Unix(unix, 0).UTC().Format(time.RFC3339)}, true
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// smokeLabels are the labels of the containers and networks the smoke
// stage makes: those of job containers, so the same reaper finds them.
func (m *Manager) smokeLabels(jobID string, deadline time.Time) map[string]string {
	if deadline.IsZero() {
		deadline = time.Now().Add(m.opts.Limits.JobTimeout)
	}
	return map[string]string{
		LabelInstance: m.opts.Instance,
		LabelJob:      jobID,
		LabelDeadline: deadline.UTC().Format(time.RFC3339),
	}
}

// Start starts a shadow container of spec.Image on a new internal network
// (no route out), reachable from this process, locked down like a job
// container except that it runs the image's own user and command.
func (b SmokeBackend) Start(ctx context.Context, spec smoke.RunSpec) (smoke.Shadow, error) {
	m := b.Manager
	if err := m.startup(ctx); err != nil {
		return nil, err
	}
	nw, err := m.createNetwork(ctx, spec.JobID, spec.Deadline)
	if err != nil {
		return nil, err
	}
	sh := &shadow{m: m, network: nw, port: spec.Port, jobID: spec.JobID}
	fail := func(err error) (smoke.Shadow, error) {
		if cerr := sh.Close(context.WithoutCancel(ctx)); cerr != nil {
			m.log.Warn("remove a shadow container that did not start", "job_id", spec.JobID, "err", cerr)
		}
		return nil, err
	}
	if sh.joined, err = m.reach(ctx, nw); err != nil {
		return fail(err)
	}
	cfg, host := m.shadowConfig(spec, nw)
	name := "selfcode-smoke-" + nameSafe(spec.JobID) + "-" + randomHex(4)
	m.creating.RLock()
	created, err := m.api.ContainerCreate(ctx, cfg, host, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{nw: {}}}, nil, name)
	if err == nil {
		sh.id = created.ID
		m.owned.add(created.ID)
	}
	m.creating.RUnlock()
	switch {
	case err != nil && errdefs.IsInvalidArgument(err):
		return fail(&smoke.Failure{Reason: "the image cannot be run: " + err.Error()})
	case err != nil:
		return fail(fmt.Errorf("create the shadow container: %w", err))
	case len(created.Warnings) > 0:
		return fail(&WarningError{Warnings: created.Warnings})
	}
	if err := m.api.ContainerStart(ctx, sh.id, container.StartOptions{}); err != nil {
		if ctx.Err() != nil || errdefs.IsNotFound(err) || client.IsErrConnectionFailed(err) {
			return fail(fmt.Errorf("start the shadow container: %w", err))
		}
		// The engine answered: the image's command could not start.
		return fail(&smoke.Failure{Reason: "the container could not start: " + err.Error()})
	}
	info, err := m.api.ContainerInspect(ctx, sh.id)
	if err != nil {
		return fail(fmt.Errorf("inspect the shadow container: %w", err))
	}
	if info.NetworkSettings != nil {
		for _, ep := range info.NetworkSettings.Networks { // keyed by name
			if ep != nil && ep.NetworkID == nw {
				sh.ip = ep.IPAddress
			}
		}
	}
	if sh.ip == "" {
		if info.State != nil && !info.State.Running {
			return sh, nil // exited already: State says how, Logs why
		}
		return fail(fmt.Errorf("the shadow container has no address on %s", nw))
	}
	m.log.Info("shadow container started", "job_id", spec.JobID, "container", shortID(sh.id), "image", spec.Image.Ref(), "address", sh.URL())
	return sh, nil
}

// shadowConfig is the locked-down configuration of a shadow container.
func (m *Manager) shadowConfig(spec smoke.RunSpec, nw string) (*container.Config, *container.HostConfig) {
	lim := m.opts.Limits
	env := make([]string, 0, len(spec.Env))
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	init := true
	cfg := &container.Config{
		Image:    spec.Image.Ref(),
		Env:      env,
		Hostname: "shadow",
		Labels:   m.smokeLabels(spec.JobID, spec.Deadline),
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(nw),
		ReadonlyRootfs: spec.ReadOnly,
		CapDrop:        strslice.StrSlice{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &init,
		IpcMode:        container.IPCModePrivate,
		// Its last lines are read for the report: a small local log.
		LogConfig: container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "1"}},
		Runtime:   m.opts.Runtime,
		Tmpfs: map[string]string{
			"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", lim.TmpSize),
		},
		Resources: m.resources(),
	}
	return cfg, host
}

// createNetwork creates an internal network (no route out) for a job's
// shadow container and returns its ID.
func (m *Manager) createNetwork(ctx context.Context, jobID string, deadline time.Time) (string, error) {
	name := "selfcode-smoke-" + nameSafe(jobID) + "-" + randomHex(4)
	m.creating.RLock()
	defer m.creating.RUnlock()
	nw, err := m.api.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Internal: true, Labels: m.smokeLabels(jobID, deadline)})
	if err != nil {
		return "", fmt.Errorf("create the smoke network: %w", err)
	}
	m.owned.add(nw.ID)
	return nw.ID, nil
}

// removeNetwork disconnects this process's container (joined) and removes
// the network.
func (m *Manager) removeNetwork(ctx context.Context, nw, joined string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var errs []error
	if joined != "" {
		if err := m.api.NetworkDisconnect(ctx, nw, joined, true); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("leave the smoke network: %w", err))
		}
	}
	if err := m.api.NetworkRemove(ctx, nw); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove the smoke network: %w", err))
	} else {
		m.owned.remove(nw)
	}
	return errors.Join(errs...)
}

// reach makes network nw reachable from this process: directly when its
// gateway is one of this process's addresses (selfcode runs beside the
// engine: on the host, or in a pod sharing the engine's network), else by
// connecting this process's own container to it (selfcode runs in a
// container of the same engine). It returns the container it connected.
func (m *Manager) reach(ctx context.Context, nw string) (string, error) {
	info, err := m.api.NetworkInspect(ctx, nw, network.InspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect the smoke network: %w", err)
	}
	for _, c := range info.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && localAddress(ip) {
			return "", nil
		}
	}
	self, err := m.selfContainer(ctx)
	if err != nil {
		return "", err
	}
	if err := m.api.NetworkConnect(ctx, nw, self, nil); err != nil {
		return "", fmt.Errorf("join the smoke network: %w", err)
	}
	return self, nil
}

// selfContainer finds the container this process runs in on the engine
// (Docker names a container's host after its ID).
func (m *Manager) selfContainer(ctx context.Context) (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSmokeUnreachable, err)
	}
	info, err := m.api.ContainerInspect(ctx, host)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", fmt.Errorf("%w: the engine's networks are not this process's, and this process does not run in a container of that engine (host name %q); run selfcode on the engine's host, in a container of the same engine, or in a pod that shares the engine's network", ErrSmokeUnreachable, host)
		}
		return "", fmt.Errorf("inspect this process's container: %w", err)
	}
	return info.ID, nil
}

// localAddress reports whether ip is assigned to an interface here.
func localAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// shadow is a running shadow container and its network.
type shadow struct {
	m       *Manager
	id      string
	network string
	joined  string // this process's container, connected to network
	ip      string
	port    int
	jobID   string
	once    sync.Once
	err     error
}

func (s *shadow) URL() string {
	return "http://" + net.JoinHostPort(s.ip, fmt.Sprint(s.port))
}

func (s *shadow) State(ctx context.Context) (smoke.State, error) {
	info, err := s.m.api.ContainerInspect(ctx, s.id)
	if err != nil {
		return smoke.State{}, fmt.Errorf("inspect the shadow container: %w", err)
	}
	if info.State == nil {
		return smoke.State{}, errors.New("the engine gave no state of the shadow container")
	}
	return smoke.State{Running: info.State.Running, ExitCode: info.State.ExitCode, OOMKilled: info.State.OOMKilled}, nil
}

// maxLogBytes bounds the log read back.
const maxLogBytes = 256 << 10

func (s *shadow) Logs(ctx context.Context, lines int) (string, error) {
	rc, err := s.m.api.ContainerLogs(ctx, s.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(lines)})
	if err != nil {
		return "", fmt.Errorf("read the shadow container's log: %w", err)
	}
	defer rc.Close()
	var out bytes.Buffer
	// One buffer for both streams keeps their lines in order.
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(rc, maxLogBytes)); err != nil && out.Len() == 0 {
		return "", fmt.Errorf("read the shadow container's log: %w", err)
	}
	return out.String(), nil
}

// Close removes the container (with any anonymous volume its image
// declares) and its network. It is idempotent.
func (s *shadow) Close(ctx context.Context) error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var errs []error
		if s.id != "" {
			err := s.m.api.ContainerRemove(ctx, s.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove the shadow container: %w", err))
			} else {
				s.m.owned.remove(s.id)
			}
		}
		errs = append(errs, s.m.removeNetwork(ctx, s.network, s.joined))
		s.err = errors.Join(errs...)
		if s.err == nil {
			s.m.log.Info("shadow container removed", "job_id", s.jobID, "container", shortID(s.id))
		}
	})
	return s.err
}

// ownedSet holds the names and IDs of the smoke stage's live objects
// (networks, shadow containers, image tags), which a reap leaves alone.
type ownedSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (o *ownedSet) add(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ids == nil {
		o.ids = map[string]bool{}
	}
	o.ids[id] = true
}

func (o *ownedSet) remove(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.ids, id)
}

func (o *ownedSet) has(ids ...string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if o.ids[id] {
			return true
		}
	}
	return false
}

// reapSmoke removes the smoke stage's networks and images that stale
// says are leftovers (a crashed predecessor's, or past their deadline).
// Shadow containers are job containers to the reaper and already gone.
func (m *Manager) reapSmoke(ctx context.Context, stale func(labels map[string]string, id string) bool, startup bool) (int, error) {
	removed := 0
	nets, err := m.api.NetworkList(ctx, network.ListOptions{Filters: instanceFilter()})
	if err != nil {
		return 0, fmt.Errorf("%w: list networks: %w", ErrEngineUnavailable, err)
	}
	for _, n := range nets {
		if m.owned.has(n.ID) || !stale(n.Labels, n.ID) {
			continue
		}
		err := m.api.NetworkRemove(ctx, n.ID)
		switch {
		case err == nil:
			removed++
			m.log.Info("sandbox reaped network", "network", n.Name, "job_id", n.Labels[LabelJob], "startup", startup)
		case errdefs.IsNotFound(err), errdefs.IsPermissionDenied(err), errdefs.IsConflict(err):
			// Gone, or still has an endpoint (a container being removed).
		default:
			return removed, fmt.Errorf("reap network %s: %w", n.Name, err)
		}
	}
	imgs, err := m.api.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", SmokeRepository+":*"))})
	if err != nil {
		return removed, fmt.Errorf("%w: list images: %w", ErrEngineUnavailable, err)
	}
	for _, img := range imgs {
		var labels map[string]string
		for _, ref := range img.RepoTags {
			if l, ok := smokeTagLabels(ref); ok {
				labels = l
			}
		}
		if labels == nil || m.owned.has(img.RepoTags...) || !stale(labels, img.ID) {
			continue
		}
		// Pruning takes the build's layers under the image too: only
		// parents that no other image, container or name uses go.
		_, err := m.api.ImageRemove(ctx, img.ID, image.RemoveOptions{PruneChildren: true})
		switch {
		case err == nil:
			removed++
			m.log.Info("sandbox reaped image", "image", img.RepoTags, "startup", startup)
		case errdefs.IsNotFound(err), errdefs.IsConflict(err):
			// Gone, in use (a container still being removed), or named
			// by someone else too.
		default:
			return removed, fmt.Errorf("reap image %s: %w", img.ID, err)
		}
	}
	return removed, nil
}

// instanceFilter lists what carries selfcode's instance label.
func instanceFilter() filters.Args { return filters.NewArgs(filters.Arg("label", LabelInstance)) }
