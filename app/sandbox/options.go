package sandbox

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Defaults used when a Limits or Options field is zero.
const (
	DefaultImage          = "selfcode-sandbox:latest"
	DefaultUser           = "10001:10001"
	DefaultWorkdir        = "/work"
	DefaultMemory         = 2 << 30 // bytes; swap is not allowed on top
	DefaultCPUs           = 1.0
	DefaultPids           = 512
	DefaultNoFile         = 4096
	DefaultTmpSize        = 1 << 30 // bytes of the /tmp tmpfs (counts towards Memory)
	DefaultCommandTimeout = 10 * time.Minute
	DefaultKillAfter      = 5 * time.Second
	DefaultOutputCap      = 4 << 20 // bytes of stdout+stderr kept per command (head and tail)
	DefaultOutputStop     = 1 << 30 // bytes of stdout+stderr after which a command is stopped
	DefaultJobTimeout     = time.Hour
)

// hostGrace is how much longer than `timeout -k` the host waits before it
// kills the whole container.
const hostGrace = 3 * time.Second

// Limits bound what a job container may use. Zero fields take the defaults
// above, so the zero value is safe.
type Limits struct {
	Memory         int64         // bytes of memory; memory+swap is set to the same value
	CPUs           float64       // CPUs (fractions allowed)
	Pids           int64         // processes and threads
	NoFile         uint64        // open files (soft and hard)
	TmpSize        int64         // bytes of the exec-able /tmp tmpfs
	IOWeight       uint16        // block I/O weight 10..1000; 0 leaves it unset
	CommandTimeout time.Duration // per command when Cmd.Timeout is zero
	KillAfter      time.Duration // SIGTERM → SIGKILL delay of `timeout -k`
	OutputCap      int64         // per command when Cmd.OutputCap is zero
	OutputStop     int64         // per command when Cmd.OutputStop is zero
	JobTimeout     time.Duration // container lifetime when Spec.Deadline is zero
}

func (l Limits) withDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.CPUs == 0 {
		l.CPUs = DefaultCPUs
	}
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.NoFile == 0 {
		l.NoFile = DefaultNoFile
	}
	if l.TmpSize == 0 {
		l.TmpSize = DefaultTmpSize
	}
	if l.CommandTimeout == 0 {
		l.CommandTimeout = DefaultCommandTimeout
	}
	if l.KillAfter == 0 {
		l.KillAfter = DefaultKillAfter
	}
	if l.OutputCap == 0 {
		l.OutputCap = DefaultOutputCap
	}
	if l.OutputStop == 0 {
		l.OutputStop = DefaultOutputStop
	}
	if l.JobTimeout == 0 {
		l.JobTimeout = DefaultJobTimeout
	}
	return l
}

func (l Limits) validate() error {
	switch {
	case l.Memory < 16<<20:
		return fmt.Errorf("%w: memory limit %d below 16 MiB", ErrInvalid, l.Memory)
	case l.CPUs < 0.01:
		return fmt.Errorf("%w: cpu limit %g below 0.01", ErrInvalid, l.CPUs)
	case l.Pids < 8:
		return fmt.Errorf("%w: pids limit %d below 8", ErrInvalid, l.Pids)
	case l.NoFile < 64:
		return fmt.Errorf("%w: nofile limit %d below 64", ErrInvalid, l.NoFile)
	case l.TmpSize < 1<<20:
		return fmt.Errorf("%w: tmp size %d below 1 MiB", ErrInvalid, l.TmpSize)
	case l.IOWeight != 0 && (l.IOWeight < 10 || l.IOWeight > 1000):
		return fmt.Errorf("%w: io weight %d outside 10..1000", ErrInvalid, l.IOWeight)
	case l.CommandTimeout < time.Second || l.KillAfter < time.Second:
		return fmt.Errorf("%w: command timeout and kill-after must be at least 1s", ErrInvalid)
	case l.OutputCap < 1024:
		return fmt.Errorf("%w: output cap %d below 1 KiB", ErrInvalid, l.OutputCap)
	case l.JobTimeout < time.Second:
		return fmt.Errorf("%w: job timeout %s below 1s", ErrInvalid, l.JobTimeout)
	}
	return nil
}

// Options configure a Manager.
type Options struct {
	// Instance names this selfcode process; it labels every container and
	// volume, and New reaps what a previous run with the same Instance left.
	Instance string
	// Image is used when Spec.Image is empty (default DefaultImage). Images
	// are never pulled: they must already exist on the engine.
	Image string
	// Limits bound every container; zero fields take safe defaults.
	Limits Limits
	// Runtime selects an OCI runtime known to the engine (for example
	// "runsc"); empty uses the engine's default.
	Runtime string
	// User is the numeric "uid:gid" commands run as (default DefaultUser);
	// root is refused.
	User string
	// Workdir is where the work tree lives inside the container (default
	// DefaultWorkdir); it is an anonymous volume.
	Workdir string
	// IncludeGit copies the tree's top-level .git directory too in CopyTree.
	IncludeGit bool
	// Env holds non-secret variables for every container of this manager
	// (the operator's mirrors: GOPROXY, npm_config_registry,
	// PIP_INDEX_URL); a Spec's Env wins over it. Names that look like
	// secrets are refused.
	Env map[string]string
	// Cache configures the per-repository caches (Spec.Cache); the zero
	// value turns them off.
	Cache CacheOptions
	// Logger receives lifecycle logs (default slog.Default()).
	Logger *slog.Logger
}

var instancePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

func (o Options) withDefaults() Options {
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.User == "" {
		o.User = DefaultUser
	}
	if o.Workdir == "" {
		o.Workdir = DefaultWorkdir
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Limits = o.Limits.withDefaults()
	return o
}

func (o Options) validate() error {
	if !instancePattern.MatchString(o.Instance) {
		return fmt.Errorf("%w: instance %q must match %s", ErrInvalid, o.Instance, instancePattern)
	}
	if _, _, err := parseUser(o.User); err != nil {
		return err
	}
	if err := checkEnv(o.Env); err != nil {
		return err
	}
	if o.Cache.MaxBytes < 0 {
		return fmt.Errorf("%w: cache size %d is negative", ErrInvalid, o.Cache.MaxBytes)
	}
	if !strings.HasPrefix(o.Workdir, "/") || o.Workdir == "/" || o.Workdir == "/tmp" || strings.HasPrefix(o.Workdir, "/tmp/") {
		return fmt.Errorf("%w: workdir %q must be an absolute path outside /tmp", ErrInvalid, o.Workdir)
	}
	return o.Limits.validate()
}

// parseUser parses a numeric "uid:gid" and refuses root.
func parseUser(s string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(s, ":")
	if ok {
		uid, err = strconv.Atoi(u)
		if err == nil {
			gid, err = strconv.Atoi(g)
		}
	}
	if !ok || err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("%w: user %q is not a numeric uid:gid", ErrInvalid, s)
	}
	if uid == 0 || gid == 0 {
		return 0, 0, fmt.Errorf("%w: user %q: commands must not run as root", ErrInvalid, s)
	}
	return uid, gid, nil
}

var envKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretWords are parts of variable names that suggest a credential; such
// variables are refused so that no secret can be handed into a container.
var secretWords = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE"}

// checkEnv refuses malformed names and names that look like secrets or like
// selfcode's own configuration.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if !envKeyPattern.MatchString(k) {
			return fmt.Errorf("%w: environment variable name %q", ErrInvalid, k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: environment variable %s holds a NUL byte", ErrInvalid, k)
		}
		up := strings.ToUpper(k)
		if strings.HasPrefix(up, "SELFCODE_") {
			return fmt.Errorf("%w: environment variable %s: selfcode settings never enter a sandbox", ErrInvalid, k)
		}
		for _, w := range secretWords {
			if strings.Contains(up, w) {
				return fmt.Errorf("%w: environment variable %s looks like a secret and never enters a sandbox", ErrInvalid, k)
			}
		}
	}
	return nil
}
