package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"golang.org/x/sys/unix"

	"github.com/selfcode/selfcode/pipeline/smoke"
)

// A shadow container has no network at all: it joins the network namespace
// of a helper container started with network none, so its only interface
// is a loopback it shares with the helper. No interface, route or gateway
// leads anywhere — not out of the machine, not to the host's listeners,
// not to other containers. This process reaches the service through the
// engine's API instead: each connection is an exec in the helper of a
// small forwarder (the sandbox image's python3) that connects to the port
// on that loopback and copies bytes between it and the exec's stdin and
// stdout.

// Bounds of a helper container: a sleeping PID 1 and one forwarder per
// connection, which the smoke stage opens one at a time.
const (
	helperMemory = 128 << 20
	helperPids   = 64
	// dialLimit bounds a forwarder's word on its connection (its own
	// connect attempt gives up after 10s).
	dialLimit = 15 * time.Second
)

// forwarder connects to the port argv[1] on the loopback (IPv4, then
// IPv6), says "ok" on stderr — or "E <errno name> <message>" and exits 1
// when it cannot — then copies stdin to the connection and the connection
// to stdout, and exits when either ends: the smoke stage's client never
// half-closes, so the end of stdin is the end of the connection. The errno
// goes by its name ("ECONNREFUSED", "-" when there is none), not its
// number: the number is Linux's, which this process's host need not share
// (ECONNREFUSED is 111 on Linux, 61 on macOS).
const forwarder = `import errno, os, socket, sys, threading
port = int(sys.argv[1])
err = None
for host in ("127.0.0.1", "::1"):
    try:
        s = socket.create_connection((host, port), timeout=10)
        break
    except OSError as e:
        err = err or e
else:
    name = errno.errorcode.get(err.errno, "-") if err.errno else "-"
    sys.stderr.write("E %s %s\n" % (name, err.strerror or err))
    sys.exit(1)
s.settimeout(None)
sys.stderr.write("ok\n")
sys.stderr.flush()
def down():
    while True:
        b = s.recv(65536)
        if not b:
            os._exit(0)
        while b:
            b = b[os.write(1, b):]
threading.Thread(target=down, daemon=True).start()
while True:
    b = os.read(0, 65536)
    if not b:
        os._exit(0)
    s.sendall(b)
`

// Start starts a shadow container of spec.Image in the network namespace
// of a new helper container (loopback only), locked down like a job
// container except that it runs the image's own user and command.
func (b SmokeBackend) Start(ctx context.Context, spec smoke.RunSpec) (smoke.Shadow, error) {
	m := b.Manager
	if err := m.startup(ctx); err != nil {
		return nil, err
	}
	sh := &shadow{m: m, port: spec.Port, jobID: spec.JobID}
	fail := func(err error) (smoke.Shadow, error) {
		if cerr := sh.Close(context.WithoutCancel(ctx)); cerr != nil {
			m.log.Warn("remove a shadow container that did not start", "job_id", spec.JobID, "err", cerr)
		}
		return nil, err
	}
	var err error
	if sh.helper, err = m.startHelper(ctx, spec.JobID, spec.Deadline); err != nil {
		return fail(err)
	}
	cfg, host := m.shadowConfig(spec, sh.helper)
	name := "selfcode-smoke-" + nameSafe(spec.JobID) + "-" + randomHex(4)
	m.creating.RLock()
	created, err := m.api.ContainerCreate(ctx, cfg, host, nil, nil, name)
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
	m.log.Info("shadow container started", "job_id", spec.JobID, "container", shortID(sh.id), "helper", shortID(sh.helper), "image", spec.Image.Ref(), "port", spec.Port)
	return sh, nil
}

// shadowConfig is the locked-down configuration of a shadow container in
// helper's network namespace.
func (m *Manager) shadowConfig(spec smoke.RunSpec, helper string) (*container.Config, *container.HostConfig) {
	lim := m.opts.Limits
	env := make([]string, 0, len(spec.Env))
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	init := true
	cfg := &container.Config{
		Image:  spec.Image.Ref(),
		Env:    env,
		Labels: m.smokeLabels(spec.JobID, spec.Deadline),
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode("container:" + helper),
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

// startHelper starts a helper container of the sandbox image with network
// none, locked down like a job container, asleep until deadline (the
// engine removes it then, if nothing did before), and returns its ID. An
// empty jobID is the probe's (startProbeHelper).
func (m *Manager) startHelper(ctx context.Context, jobID string, deadline time.Time) (string, error) {
	if deadline.IsZero() {
		deadline = time.Now().Add(m.opts.Limits.JobTimeout)
	}
	life := max(int64(math.Ceil(time.Until(deadline).Seconds())), 1)
	mem, pids := int64(helperMemory), int64(helperPids)
	cfg := &container.Config{
		Image:      m.opts.Image,
		User:       m.opts.User,
		Hostname:   "shadow",
		Env:        []string{"PYTHONDONTWRITEBYTECODE=1"},
		Labels:     m.smokeLabels(jobID, deadline),
		Entrypoint: strslice.StrSlice{"sleep", strconv.FormatInt(life, 10)},
	}
	host := m.lockedDown(network.NetworkNone)
	res := m.resources()
	host.Resources = container.Resources{Memory: mem, MemorySwap: mem, NanoCPUs: res.NanoCPUs, PidsLimit: &pids, Ulimits: res.Ulimits}
	owner := nameSafe(jobID)
	if jobID == "" {
		owner = "probe"
	}
	name := "selfcode-smoke-helper-" + owner + "-" + randomHex(4)
	m.creating.RLock()
	created, err := m.api.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err == nil {
		m.owned.add(created.ID)
	}
	m.creating.RUnlock()
	switch {
	case err != nil:
		return "", fmt.Errorf("create the shadow's helper container: %w", err)
	case len(created.Warnings) > 0:
		m.removeContainer(ctx, created.ID)
		return "", &WarningError{Warnings: created.Warnings}
	}
	if err := m.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		m.removeContainer(ctx, created.ID)
		return "", fmt.Errorf("start the shadow's helper container: %w", err)
	}
	return created.ID, nil
}

// removeContainer removes a container of the smoke stage (and its
// anonymous volumes), forgetting it once gone.
func (m *Manager) removeContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := m.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return err
	}
	// Not found, or already being removed (AutoRemove): it is going.
	m.owned.remove(id)
	return nil
}

// probeShadow checks that a helper starts and its forwarder runs: asked for
// a port nothing listens on, it must say the connection was refused.
func (m *Manager) probeShadow(ctx context.Context) error {
	helper, err := m.startProbeHelper(ctx)
	if err != nil {
		return fmt.Errorf("the smoke stage cannot start its helper container: %w", err)
	}
	defer func() {
		if err := m.removeContainer(ctx, helper); err != nil {
			m.log.Warn("remove the smoke probe's helper container", "err", err)
		}
	}()
	sh := &shadow{m: m, helper: helper, port: 9}
	conn, err := sh.Dial(ctx)
	if err == nil {
		conn.Close()
		return errors.New("the smoke stage's helper container connected to a port nothing should listen on")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("the smoke stage cannot reach a shadow container through its helper (the sandbox image %s runs the forwarder with python3): %w", m.opts.Image, err)
	}
	return nil
}

// startProbeHelper starts probeShadow's helper. It belongs to no job: its
// job label is empty, which the reaper never asks the job store about (a
// job ID such as "probe" would be unknown to the store, so ended, and the
// periodic reaper would remove the helper mid-probe). Like any smoke
// object it stays while this Manager owns it, and goes as an orphan or
// past its deadline otherwise.
func (m *Manager) startProbeHelper(ctx context.Context) (string, error) {
	return m.startHelper(ctx, "", time.Now().Add(time.Minute))
}

// shadow is a running shadow container and its helper.
type shadow struct {
	m      *Manager
	id     string
	helper string // owns the network namespace (loopback only) and forwards
	port   int
	jobID  string
	once   sync.Once
	err    error
	// exposed: the service was found listening beyond its loopback
	// (checkExposed).
	exposed atomic.Bool
}

// URL names the service as the forwarder reaches it.
func (s *shadow) URL() string {
	return "http://" + net.JoinHostPort("localhost", strconv.Itoa(s.port))
}

// Dial opens a connection to the service's port: a forwarder exec in the
// helper. An error wrapping the connect attempt's errno (this host's
// syscall.ECONNREFUSED, say) is the service's; one wrapping smoke.ErrEngine
// is the engine's; a *smoke.Failure says the service listens where nothing
// outside its container reaches it (checkExposed).
func (s *shadow) Dial(ctx context.Context) (net.Conn, error) {
	api := s.m.api
	created, err := api.ContainerExecCreate(ctx, s.helper, container.ExecOptions{
		Cmd:          []string{"python3", "-I", "-S", "-c", forwarder, strconv.Itoa(s.port)},
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: connect to the shadow container: %w", smoke.ErrEngine, err)
	}
	hj, err := api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w: connect to the shadow container: %w", smoke.ErrEngine, err)
	}
	c := newExecConn(hj)
	timer := time.NewTimer(dialLimit)
	defer timer.Stop()
	select {
	case word := <-c.word:
		if word != "ok" {
			c.Close()
			return nil, s.dialError(word)
		}
		if err := s.checkExposed(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	case <-timer.C:
		c.Close()
		return nil, fmt.Errorf("%w: the forwarder to the shadow container said nothing for %s", smoke.ErrEngine, dialLimit)
	}
}

// checkExposed fails with a *smoke.Failure when the service listens on
// its port on a loopback address only. The forwarder reaches it anyway, over
// the loopback the helper shares, but nothing outside its container would:
// a published port leads to the container's own interface, not its
// loopback. The helper lists the sockets of the namespace it shares with
// the shadow (/proc/net/tcp and tcp6). Once the listener is found reachable
// (or cannot be seen) later connections skip the check.
func (s *shadow) checkExposed(ctx context.Context) error {
	if s.exposed.Load() {
		return nil
	}
	table, err := s.listenTable(ctx)
	if err != nil {
		return fmt.Errorf("%w: list the shadow container's listening sockets: %w", smoke.ErrEngine, err)
	}
	addrs := listenAddrs(table, s.port)
	if !loopbackOnly(addrs) {
		s.exposed.Store(true)
		return nil
	}
	var names []string
	for _, a := range addrs {
		names = append(names, a.String())
	}
	slices.Sort(names)
	return &smoke.Failure{Reason: fmt.Sprintf("port %d: the service listens on %s only: unreachable from outside its container (a published port reaches its network interface, not its loopback); make it listen on all interfaces (0.0.0.0 or ::)",
		s.port, strings.Join(slices.Compact(names), " and "))}
}

// maxTableBytes bounds the socket tables read.
const maxTableBytes = 1 << 20

// listenTable is the text of /proc/net/tcp and /proc/net/tcp6 in the helper
// (a file the kernel lacks, without IPv6, is left out).
func (s *shadow) listenTable(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dialLimit)
	defer cancel()
	api := s.m.api
	created, err := api.ContainerExecCreate(ctx, s.helper, container.ExecOptions{
		Cmd:          []string{"cat", "/proc/net/tcp", "/proc/net/tcp6"},
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return "", err
	}
	hj, err := api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", err
	}
	defer hj.Close()
	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&out, io.Discard, io.LimitReader(hj.Reader, maxTableBytes))
		copied <- err
	}()
	select {
	case err = <-copied:
	case <-ctx.Done():
		hj.Close()
		<-copied
		return "", ctx.Err()
	}
	if err != nil && out.Len() == 0 {
		return "", err
	}
	return out.String(), nil
}

// dialError reads a forwarder's "E <errno name> <message>" (or whatever
// ended it instead). The errno names a connect attempt ends with become
// this host's syscall.Errno, so errors.Is(err, syscall.ECONNREFUSED) holds
// whatever the host's numbering.
func (s *shadow) dialError(word string) error {
	what := fmt.Sprintf("connect to port %d in the shadow container", s.port)
	if rest, ok := strings.CutPrefix(word, "E "); ok {
		name, msg, _ := strings.Cut(rest, " ")
		if n, ok := hostErrno(name); ok {
			return fmt.Errorf("%s: %w", what, n)
		}
		if name != "-" && name != "" {
			msg = strings.TrimSpace(name + ": " + msg)
		}
		if msg != "" {
			return fmt.Errorf("%s: %s", what, msg)
		}
	}
	return fmt.Errorf("%w: %s: the forwarder did not run: %q", smoke.ErrEngine, what, word)
}

// hostErrno is this host's errno of the given name (unix.ErrnoName's
// spelling, which the forwarder sends), among the errors a connect attempt
// ends with.
func hostErrno(name string) (syscall.Errno, bool) {
	for _, e := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EADDRNOTAVAIL} {
		if unix.ErrnoName(e) == name {
			return e, true
		}
	}
	return 0, false
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
// declares), then its helper. It is idempotent.
func (s *shadow) Close(ctx context.Context) error {
	s.once.Do(func() {
		var errs []error
		if s.id != "" {
			if err := s.m.removeContainer(ctx, s.id); err != nil {
				errs = append(errs, fmt.Errorf("remove the shadow container: %w", err))
			}
		}
		if s.helper != "" {
			if err := s.m.removeContainer(ctx, s.helper); err != nil {
				errs = append(errs, fmt.Errorf("remove the shadow's helper container: %w", err))
			}
		}
		s.err = errors.Join(errs...)
		if s.err == nil && s.id != "" {
			s.m.log.Info("shadow container removed", "job_id", s.jobID, "container", shortID(s.id))
		}
	})
	return s.err
}

// execConn is a connection through a forwarder exec: what is written goes
// to its stdin; what is read comes from its stdout, taken apart from its
// stderr, whose first line (word) says whether it connected. A goroutine
// demultiplexes the exec's stream into an in-memory pipe, and reads (and
// read deadlines) are on that pipe: a deadline on the exec's connection
// itself would end the goroutine's read, and with it the connection, for
// good. Writes, and write deadlines, go to the exec's connection.
type execConn struct {
	hj   types.HijackedResponse
	out  net.Conn // the pipe's reading end
	word chan string

	mu  sync.Mutex
	err error // what ended the stream other than its end
}

func newExecConn(hj types.HijackedResponse) *execConn {
	outR, outW := net.Pipe()
	c := &execConn{hj: hj, out: outR, word: make(chan string, 1)}
	stderr := &firstLine{word: c.word}
	go func() {
		_, err := stdcopy.StdCopy(outW, stderr, hj.Reader)
		stderr.end()
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		outW.Close()
	}()
	return c
}

// Read reads the forwarder's stdout; its end is io.EOF, or the error that
// broke the exec's stream.
func (c *execConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if err == io.EOF {
		c.mu.Lock()
		if c.err != nil {
			err = c.err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *execConn) Write(p []byte) (int, error) { return c.hj.Conn.Write(p) }

// Close ends the exec's stdin (the forwarder exits) and the stream.
func (c *execConn) Close() error {
	c.hj.Close()
	return c.out.Close()
}

func (c *execConn) LocalAddr() net.Addr  { return c.hj.Conn.LocalAddr() }
func (c *execConn) RemoteAddr() net.Addr { return c.hj.Conn.RemoteAddr() }

func (c *execConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *execConn) SetReadDeadline(t time.Time) error  { return c.out.SetReadDeadline(t) }
func (c *execConn) SetWriteDeadline(t time.Time) error { return c.hj.Conn.SetWriteDeadline(t) }

// maxWordBytes bounds the forwarder's first stderr line kept.
const maxWordBytes = 4096

// firstLine sends the first line written to it on word (once), and
// discards the rest.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	sent bool
	word chan<- string
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent {
		return len(p), nil
	}
	f.buf = append(f.buf, p[:min(len(p), maxWordBytes-len(f.buf))]...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
		f.send(string(f.buf[:i]))
	} else if len(f.buf) >= maxWordBytes {
		f.send(string(f.buf))
	}
	return len(p), nil
}

// end sends what was written when no whole line came.
func (f *firstLine) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.sent {
		f.send(strings.TrimSpace(string(f.buf)))
	}
}

func (f *firstLine) send(s string) {
	f.sent = true
	f.buf = nil
	f.word <- s
}
