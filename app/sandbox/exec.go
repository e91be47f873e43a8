package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// Cmd is one command to run in the container.
type Cmd struct {
	// Run is a shell command line, run as `sh -c Run`.
	Run string
	// Timeout bounds the command (default Limits.CommandTimeout, and never
	// past the container's deadline).
	Timeout time.Duration
	// OutputCap bounds the bytes of stdout+stderr kept (default
	// Limits.OutputCap): past it the first and last halves are kept, with a
	// line saying how much was cut between them, and the command goes on.
	OutputCap int64
	// OutputStop bounds the bytes of stdout+stderr a command may print at
	// all (default Limits.OutputStop); past it the command is stopped.
	OutputStop int64
	// Dir is the working directory, relative to the work tree (default: the
	// work tree itself).
	Dir string
	// Env adds non-secret variables for this command only.
	Env map[string]string
	// Setup marks a setup command. Only setup commands may run while the
	// setup network is attached; any other command is refused with
	// ErrNetworkAttached until DropNetwork, so verification never has one.
	Setup bool
}

// Result is what a command did.
type Result struct {
	ExitCode  int    // -1 when the container was killed before the command ended
	Stdout    string // at most OutputCap bytes together with Stderr
	Stderr    string
	Output    string // stdout and stderr interleaved as they arrived
	Duration  time.Duration
	TimedOut  bool // the timeout ended the command
	Truncated bool // output passed OutputCap; its middle was cut (the command went on)
	// OutputStopped means output passed OutputStop and the command was
	// stopped there.
	OutputStopped bool
	OOMKilled     bool // the kernel's out-of-memory killer ended a process of the command
	// Killed means the command outlived its timeout so the whole container
	// was killed; the Container is unusable afterwards (ErrContainerGone).
	Killed bool
}

// execWrapper runs a command under GNU `timeout -k`, which puts it in a
// process group of its own, and records that group's ID in a file so the
// command can be stopped from a second exec (output cap). With bash in the
// image the wrapper also kills whatever the command left running in its group
// once it ends (bash's kill can signal a group without forking; dash's cannot).
// Arguments: $0 pid file, $1 kill-after, $2 timeout, $3 the command line.
const execWrapper = `if command -v bash >/dev/null 2>&1; then exec bash -c '
timeout -k "$2" "$3" /bin/sh -c "$4" & p=$!
echo "$p" >"$1" || exit 125
wait "$p"; rc=$?
kill -s KILL -- "-$p" 2>/dev/null
exit "$rc"' bash "$0" "$1" "$2" "$3"; fi
echo $$ >"$0" || exit 125
exec timeout -k "$1" "$2" /bin/sh -c "$3"`

// killScript stops the process group whose ID is in the file $0: SIGKILL to
// the whole group with bash when the image has it, else SIGTERM to GNU
// timeout, which passes it to the group and follows with SIGKILL. Exit 3:
// the ID is not recorded yet.
const killScript = `p=$(cat "$0" 2>/dev/null); [ -n "$p" ] || exit 3
if command -v bash >/dev/null 2>&1; then exec bash -c 'kill -s KILL -- "-$1"' bash "$p"; fi
kill -s TERM "$p"`

// errStopReached stops copying output once OutputStop is reached.
var errStopReached = errors.New("output stop limit reached")

// Exec runs cmd inside the container and returns its result. Three layers
// bound its time: GNU `timeout -k` inside, then a host-side deadline a little
// longer after which the whole container is killed (Result.Killed), and ctx:
// when ctx ends first the container is destroyed (cancelling an exec does not
// stop its process) and ctx's error is returned.
func (c *Container) Exec(ctx context.Context, cmd Cmd) (Result, error) {
	if err := c.usable(); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(cmd.Run) == "" || strings.ContainsRune(cmd.Run, 0) {
		return Result{}, fmt.Errorf("%w: empty command or NUL byte in it", ErrInvalid)
	}
	if err := checkEnv(cmd.Env); err != nil {
		return Result{}, err
	}
	c.mu.Lock()
	netOn := c.network
	c.mu.Unlock()
	if netOn && !cmd.Setup {
		return Result{}, ErrNetworkAttached
	}
	dir := c.m.opts.Workdir
	if cmd.Dir != "" {
		if cmd.Dir != "." {
			if err := checkRelPath(cmd.Dir); err != nil {
				return Result{}, err
			}
		}
		dir = path.Join(dir, path.Clean(cmd.Dir))
	}
	lim := c.m.opts.Limits
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = lim.CommandTimeout
	}
	if left := time.Until(c.deadline); timeout > left {
		timeout = max(left, time.Second)
	}
	outCap := cmd.OutputCap
	if outCap <= 0 {
		outCap = lim.OutputCap
	}
	outStop := cmd.OutputStop
	if outStop <= 0 {
		outStop = lim.OutputStop
	}
	outStop = max(outStop, outCap)
	env := slices.Clone(c.env)
	for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
		env = append(env, k+"="+cmd.Env[k])
	}
	pidFile := fmt.Sprintf("/tmp/.selfcode-exec-%d.pid", c.seq.Add(1))
	argv := []string{"/bin/sh", "-c", execWrapper, pidFile, seconds(lim.KillAfter), seconds(timeout), cmd.Run}

	start := time.Now()
	hostLimit := time.NewTimer(timeout + lim.KillAfter + hostGrace)
	defer hostLimit.Stop()
	created, err := c.m.api.ContainerExecCreate(ctx, c.id, container.ExecOptions{
		User: c.m.opts.User, WorkingDir: dir, Env: env, Cmd: argv,
		AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return Result{}, c.goneError("create exec", err)
	}
	resp, err := c.m.api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		if ctx.Err() != nil {
			// The command may have started and cannot be stopped by itself.
			c.destroy(ctx, fmt.Errorf("%w: command canceled", ErrContainerGone))
			return Result{}, fmt.Errorf("run %q in sandbox: %w", cmd.Run, ctx.Err())
		}
		return Result{}, c.goneError("start exec", err)
	}
	out := newCapture(outCap, outStop)
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stream{out, out.stdout}, stream{out, out.stderr}, resp.Reader)
		copied <- err
	}()

	var res Result
	select {
	case err := <-copied:
		resp.Close()
		if errors.Is(err, errStopReached) {
			res.OutputStopped = true
			c.stopGroup(ctx, pidFile)
		}
	case <-hostLimit.C:
		resp.Close()
		<-copied
		return c.killedAtTimeout(ctx, out, start, timeout), nil
	case <-ctx.Done():
		resp.Close()
		<-copied
		c.destroy(ctx, fmt.Errorf("%w: command canceled", ErrContainerGone))
		return Result{}, fmt.Errorf("run %q in sandbox: %w", cmd.Run, ctx.Err())
	}

	// Wait for the exit code, still under the host-side deadline.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ins, err := c.m.api.ContainerExecInspect(ctx, created.ID)
		if err != nil && ctx.Err() == nil {
			return Result{}, c.goneError("inspect exec", err)
		}
		if err == nil && !ins.Running {
			res.ExitCode = ins.ExitCode
			break
		}
		select {
		case <-tick.C:
		case <-hostLimit.C:
			return c.killedAtTimeout(ctx, out, start, timeout), nil
		case <-ctx.Done():
			c.destroy(ctx, fmt.Errorf("%w: command canceled", ErrContainerGone))
			return Result{}, fmt.Errorf("run %q in sandbox: %w", cmd.Run, ctx.Err())
		}
	}
	res.Duration = time.Since(start)
	out.fill(&res)
	// 124: GNU timeout's SIGTERM ended it; 137 after the timeout: its SIGKILL did.
	if (res.ExitCode == 124 || res.ExitCode == 137) && res.Duration >= timeout && !res.OutputStopped {
		res.TimedOut = true
	}
	if res.ExitCode != 0 && !res.TimedOut && !res.OutputStopped {
		res.OOMKilled = c.oomKilled(ctx)
	}
	if err := c.usable(); err != nil {
		// The container ended during the command (its deadline, or Close).
		return res, err
	}
	return res, nil
}

// killedAtTimeout kills the whole container because a command outlived
// `timeout -k` and the host-side grace.
func (c *Container) killedAtTimeout(ctx context.Context, out *capture, start time.Time, timeout time.Duration) Result {
	reason := fmt.Errorf("%w: a command outlived its %s timeout, container killed", ErrContainerGone, timeout)
	c.m.log.Warn("sandbox command outlived its timeout; killing the container", "job_id", c.jobID, "container", shortID(c.id), "timeout", timeout)
	if err := c.destroy(ctx, reason); err != nil {
		c.m.log.Error("sandbox kill after timeout failed", "job_id", c.jobID, "container", shortID(c.id), "err", err)
	}
	res := Result{ExitCode: -1, TimedOut: true, Killed: true, Duration: time.Since(start)}
	out.fill(&res)
	return res
}

// stopGroup kills the process group of the exec whose PID is in pidFile.
// Failure is logged: the host-side deadline still bounds the command.
func (c *Container) stopGroup(ctx context.Context, pidFile string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 50 { // the group's ID may not be recorded yet: retry briefly
		out, code, err := c.run(ctx, []string{"/bin/sh", "-c", killScript, pidFile})
		if err == nil && code == 0 {
			return
		}
		if err != nil || code != 3 {
			c.m.log.Warn("sandbox could not stop a command past its output cap", "job_id", c.jobID,
				"container", shortID(c.id), "exit_code", code, "output", strings.TrimSpace(out), "err", err)
			return
		}
	}
}

// oomKilled reports whether the memory cgroup's OOM-kill count grew since it
// was last read (cgroup v1 memory.oom_control or v2 memory.events).
func (c *Container) oomKilled(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _, err := c.run(ctx, []string{"cat", "/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"})
	if err != nil {
		c.m.log.Debug("sandbox could not read the OOM count", "job_id", c.jobID, "err", err)
		return false
	}
	n, ok := parseOOMKills(out)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	grew := n > c.oomKills
	c.oomKills = n
	return grew
}

// parseOOMKills finds the "oom_kill N" line of memory.oom_control (v1) or
// memory.events (v2).
func parseOOMKills(s string) (int64, bool) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "oom_kill" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || n < 0 {
				return 0, false
			}
			return n, true
		}
	}
	return 0, false
}

// run executes argv directly (no shell, no timeout wrapper) for the
// sandbox's own small commands and returns combined output and exit code.
func (c *Container) run(ctx context.Context, argv []string) (string, int, error) {
	created, err := c.m.api.ContainerExecCreate(ctx, c.id, container.ExecOptions{
		User: c.m.opts.User, WorkingDir: c.m.opts.Workdir, Env: c.env, Cmd: argv,
		AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return "", -1, c.goneError("create exec", err)
	}
	resp, err := c.m.api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", -1, c.goneError("start exec", err)
	}
	defer resp.Close()
	out := newCapture(1<<20, 1<<20)
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stream{out, out.stdout}, stream{out, out.stderr}, resp.Reader)
		copied <- err
	}()
	select {
	case <-copied:
	case <-ctx.Done():
		resp.Close()
		<-copied
		return "", -1, fmt.Errorf("exec %s: %w", argv[0], ctx.Err())
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ins, err := c.m.api.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return "", -1, c.goneError("inspect exec", err)
		}
		if !ins.Running {
			return out.combined.String(), ins.ExitCode, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return "", -1, fmt.Errorf("exec %s: %w", argv[0], ctx.Err())
		}
	}
}

// capture keeps a command's output within bounds: each of stdout, stderr
// and the interleaved stream keeps its first and last keep/2 bytes, and
// copying stops once stop bytes have arrived in all.
type capture struct {
	seen, stop               int64
	stopped                  bool
	stdout, stderr, combined *headTail
}

func newCapture(keep, stop int64) *capture {
	return &capture{stop: stop, stdout: newHeadTail(keep), stderr: newHeadTail(keep), combined: newHeadTail(keep)}
}

// stream is one of a capture's two writers; StdCopy writes from one goroutine.
type stream struct {
	c   *capture
	buf *headTail
}

func (s stream) Write(p []byte) (int, error) {
	n := len(p)
	if left := s.c.stop - s.c.seen; int64(len(p)) > left {
		p = p[:left]
		s.c.stopped = true
	}
	s.buf.Write(p)
	s.c.combined.Write(p)
	s.c.seen += int64(len(p))
	if s.c.stopped {
		return len(p), errStopReached
	}
	return n, nil
}

func (c *capture) fill(r *Result) {
	r.Stdout, r.Stderr, r.Output = c.stdout.String(), c.stderr.String(), c.combined.String()
	r.Truncated = r.Truncated || c.combined.cut > 0 || c.stdout.cut > 0 || c.stderr.cut > 0
	r.OutputStopped = r.OutputStopped || c.stopped
}

// headTail keeps the first and the last half of at most keep bytes
// written to it, and counts what falls between.
type headTail struct {
	head, tail []byte // tail is a ring once full
	half       int
	next       int   // ring position of the oldest tail byte
	cut        int64 // bytes dropped between head and tail
}

func newHeadTail(keep int64) *headTail {
	half := int(max(keep/2, 1))
	return &headTail{half: half}
}

func (h *headTail) Write(p []byte) {
	if n := min(len(p), h.half-len(h.head)); n > 0 {
		h.head = append(h.head, p[:n]...)
		p = p[n:]
	}
	for len(p) > 0 {
		if len(h.tail) < h.half {
			n := min(len(p), h.half-len(h.tail))
			h.tail = append(h.tail, p[:n]...)
			p = p[n:]
			continue
		}
		// The ring is full: each new byte pushes the oldest one out.
		if len(p) >= h.half {
			h.cut += int64(len(p) - h.half)
			h.cut += int64(h.half)
			copy(h.tail, p[len(p)-h.half:])
			h.next = 0
			return
		}
		n := min(len(p), h.half-h.next)
		copy(h.tail[h.next:], p[:n])
		h.cut += int64(n)
		h.next = (h.next + n) % h.half
		p = p[n:]
	}
}

// TruncationNote is the line put where output was cut; %d is the number
// of bytes left out.
const TruncationNote = "[… selfcode cut %d bytes of output here …]"

// String returns the head, the tail, and between them a line saying how
// much was cut when anything was.
func (h *headTail) String() string {
	tail := h.tail
	if h.next > 0 {
		tail = append(append([]byte(nil), h.tail[h.next:]...), h.tail[:h.next]...)
	}
	if h.cut == 0 {
		return string(h.head) + string(tail)
	}
	note := fmt.Sprintf(TruncationNote, h.cut)
	head := string(h.head)
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return head + note + "\n" + string(tail)
}

// seconds formats d for GNU timeout, rounded up to milliseconds.
func seconds(d time.Duration) string {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s"
}
