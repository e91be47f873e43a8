package doctor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/versions"

	"github.com/selfcode/selfcode/app/sandbox"
)

const (
	fixAPI    = "upgrade the Docker engine to 20.10 or later (Docker Desktop: install its update); if DOCKER_API_VERSION is set, unset it or set it to " + sandbox.MinAPIVersion + " or later"
	fixEngine = "start the Docker engine, or point DOCKER_HOST at it; the user running selfcode needs access to its socket (the docker group, or rootless Docker)"
	fixImage  = "run `selfcode image build` (it pulls a released image, or builds with docker build or offline, whichever works here), or pull a released sandbox image and set SELFCODE_SANDBOX_IMAGE to it"
	fixLimits = "the engine must enforce memory and pids limits: enable the memory and pids cgroup controllers (cgroup v2, or cgroup_enable=memory swapaccount=1 on the kernel command line) and restart the engine"
)

// limits are the sandbox limits the configuration asks for.
func (d *Doctor) limits() sandbox.Limits {
	return sandbox.Limits{Memory: d.cfg.SandboxMemoryMB << 20, CPUs: float64(d.cfg.SandboxMilliCPUs) / 1000, Pids: d.cfg.SandboxPids}
}

// manager is the sandbox manager the docker checks share: the one serve
// would build, under an instance of its own.
func (d *Doctor) manager(ctx context.Context) (*sandbox.Manager, error) {
	return d.mgr.get(func() (*sandbox.Manager, error) {
		return sandbox.New(ctx, sandbox.Options{Instance: d.instance, Image: d.cfg.SandboxImage, Runtime: d.cfg.SandboxRuntime,
			Limits: d.limits(), Logger: d.o.Logger})
	})
}

// engine is what the engine says of itself, asked once.
func (d *Doctor) engine(ctx context.Context) (sandbox.EngineInfo, error) {
	return d.engineInfo.get(func() (sandbox.EngineInfo, error) {
		m, err := d.manager(ctx)
		if err != nil {
			return sandbox.EngineInfo{}, err
		}
		return m.Describe(ctx)
	})
}

func (d *Doctor) checkEngine(ctx context.Context) Result {
	info, err := d.engine(ctx)
	if errors.Is(err, sandbox.ErrInvalid) {
		return fail(err.Error(), fmt.Sprintf("install the runtime %q on the engine and restart it (gVisor: `runsc install`), or unset SELFCODE_SANDBOX_RUNTIME", d.cfg.SandboxRuntime))
	}
	if err != nil {
		return fail(err.Error(), fixEngine)
	}
	runtime := info.DefaultRuntime
	if d.cfg.SandboxRuntime != "" {
		runtime = d.cfg.SandboxRuntime
	}
	return engineVerdict(info, runtime)
}

// engineVerdict judges what the engine says of itself: an API older than
// selfcode needs fails, the engine's own warnings warn.
func engineVerdict(info sandbox.EngineInfo, runtime string) Result {
	detail := fmt.Sprintf("Docker %s (API %s) on %s, runtime %s, cgroup v%s", info.ServerVersion, info.APIVersion, info.OS, runtime, info.CgroupVersion)
	if versions.LessThan(info.APIVersion, sandbox.MinAPIVersion) {
		return fail(fmt.Sprintf("%s; selfcode needs API %s (Docker 20.10) or later", detail, sandbox.MinAPIVersion), fixAPI)
	}
	if len(info.Warnings) > 0 {
		return warn(detail+"; the engine warns: "+strings.Join(info.Warnings, "; "), "see `docker info`: a missing limit makes every job fail (the sandbox refuses to run with weaker limits)")
	}
	return ok("%s", detail)
}

// imageInfo inspects the configured sandbox image once.
func (d *Doctor) imageInfo(ctx context.Context) (sandbox.ImageInfo, error) {
	return d.image.get(func() (sandbox.ImageInfo, error) {
		m, err := d.manager(ctx)
		if err != nil {
			return sandbox.ImageInfo{}, err
		}
		return m.ImageInfo(ctx, d.cfg.SandboxImage)
	})
}

func (d *Doctor) checkImage(ctx context.Context) Result {
	if _, err := d.engine(ctx); err != nil {
		return skip(CheckEngine)
	}
	info, err := d.imageInfo(ctx)
	if errors.Is(err, sandbox.ErrImageNotFound) {
		return fail(d.cfg.SandboxImage+" is not on the engine", fixImage)
	}
	if err != nil {
		return fail(err.Error(), fixEngine)
	}
	detail := fmt.Sprintf("%s present (%s, %s, built %s", d.cfg.SandboxImage, shortID(info.ID), mib(info.Size), info.Created.UTC().Format(time.DateOnly))
	if recipe := info.Labels["io.selfcode.recipe"]; recipe != "" {
		detail += ", recipe " + recipe
	}
	detail += ")"
	if info.Labels[sandbox.ImageCacheLabel] == "" {
		return warn(detail+"; it names no cache directory (label "+sandbox.ImageCacheLabel+"), so every job starts cold",
			"use the selfcode sandbox image (`selfcode image build`), or add LABEL "+sandbox.ImageCacheLabel+"=/cache (a directory owned by uid 10001) to yours")
	}
	return ok("%s", detail)
}

// container starts a sandbox container the way a job does (locked down,
// no network, the configured limits), for a check.
func (d *Doctor) container(ctx context.Context) (*sandbox.Container, Result, bool) {
	if _, err := d.engine(ctx); err != nil {
		return nil, skip(CheckEngine), false
	}
	m, _ := d.manager(ctx)
	if _, err := d.imageInfo(ctx); err != nil {
		return nil, skip(CheckImage), false
	}
	c, err := m.Start(ctx, sandbox.Spec{JobID: d.instance, Deadline: time.Now().Add(d.o.CheckTimeout)})
	if err != nil {
		return nil, startFailure(err), false
	}
	return c, Result{}, true
}

// startFailure says why a sandbox container did not start.
func startFailure(err error) Result {
	var w *sandbox.WarningError
	if errors.As(err, &w) {
		return fail("the engine would run the sandbox with weaker limits than configured: "+strings.Join(w.Warnings, "; "), fixLimits)
	}
	return fail("a sandbox container did not start: "+err.Error(), fixEngine)
}

func (d *Doctor) checkIsolation(ctx context.Context) Result {
	c, r, started := d.container(ctx)
	if !started {
		return r
	}
	defer c.Close(context.WithoutCancel(ctx))
	ifaces, err := c.Interfaces(ctx)
	if err != nil {
		return fail("read the container's network interfaces: "+err.Error(), fixEngine)
	}
	got, err := c.CgroupLimits(ctx)
	if err != nil {
		return fail(err.Error(), fixLimits)
	}
	return isolationVerdict(ifaces, got, d.limits())
}

// isolationVerdict compares what a container saw with what was asked: only
// the loopback interface (--network=none), and the memory and pids limits
// read back from its own cgroup.
func isolationVerdict(ifaces []string, got sandbox.CgroupLimits, want sandbox.Limits) Result {
	if !slices.Equal(ifaces, []string{"lo"}) {
		return fail(fmt.Sprintf("a container started with --network=none sees the interfaces %v", ifaces),
			"the engine or its runtime does not isolate the network: check SELFCODE_SANDBOX_RUNTIME and the engine's network configuration; never run jobs until only lo is left")
	}
	var bad []string
	if got.Memory != want.Memory {
		bad = append(bad, fmt.Sprintf("memory %s (want %s)", mib(got.Memory), mib(want.Memory)))
	}
	if got.Pids != want.Pids {
		pids := fmt.Sprint(got.Pids)
		if got.Pids < 0 {
			pids = "unlimited"
		}
		bad = append(bad, fmt.Sprintf("pids %s (want %d)", pids, want.Pids))
	}
	if len(bad) > 0 {
		return fail("the container's cgroup holds "+strings.Join(bad, ", "), fixLimits)
	}
	return ok("a sandbox container has no network (only lo) and its cgroup holds the limits: memory %s, pids %d", mib(want.Memory), want.Pids)
}

// toolchains are the commands the default image must answer, with the
// name each is reported under.
var toolchainCommands = []struct{ name, run string }{
	{"go", "go version"},
	{"python", "python3 --version"},
	{"venv", "python3 -m venv --help >/dev/null && echo ok"},
	{"pip", "python3 -m pip --version"},
	{"pytest", "python3 -m pytest --version"},
	{"node", "node --version"},
	{"npm", "npm --version"},
	{"tsc", "tsc --version"},
	{"jest", "jest --version"},
	{"mocha", "mocha --version"},
	{"git", "git --version"},
	{"make", "make --version"},
}

var versionPattern = regexp.MustCompile(`v?[0-9]+(\.[0-9]+)+`)

func (d *Doctor) checkToolchains(ctx context.Context) Result {
	c, r, started := d.container(ctx)
	if !started {
		return r
	}
	defer c.Close(context.WithoutCancel(ctx))
	var found, missing []string
	for _, t := range toolchainCommands {
		res, err := c.Exec(ctx, sandbox.Cmd{Run: t.run, Timeout: 30 * time.Second})
		if err != nil {
			return fail("run "+t.run+" in the sandbox: "+err.Error(), fixEngine)
		}
		first, _, _ := strings.Cut(strings.TrimSpace(res.Output), "\n")
		if res.ExitCode != 0 {
			missing = append(missing, fmt.Sprintf("%s (%q exits %d: %s)", t.name, t.run, res.ExitCode, first))
			continue
		}
		if v := versionPattern.FindString(first); v != "" {
			found = append(found, t.name+" "+v)
		} else {
			found = append(found, t.name)
		}
	}
	if len(missing) > 0 {
		return fail(d.cfg.SandboxImage+" lacks "+strings.Join(missing, "; "),
			"build the image from selfcode's recipe (`selfcode image build --force`; it carries Go, Python 3 and Node.js), or add what is missing to your image")
	}
	return ok("%s", strings.Join(found, ", "))
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
