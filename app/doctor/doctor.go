package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/selfcode/selfcode/app/config"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/setup"
)

// Status is a check's verdict.
type Status string

// The verdicts. Only Fail makes `selfcode doctor` exit non-zero; Skip
// marks a check that could not run because one it needs failed.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "FAIL"
	Skip Status = "skip"
)

// Result is one check's line, and for a failure or warning what to do.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// The checks, in the order they run.
const (
	CheckEngine        = "docker engine"
	CheckImage         = "sandbox image"
	CheckIsolation     = "sandbox isolation"
	CheckToolchains    = "sandbox toolchains"
	CheckDataDir       = "data directory"
	CheckWebhookSecret = "webhook secret"
	CheckAppKey        = "github app key"
	CheckApp           = "github app"
	CheckInstallations = "github installations"
	CheckPermissions   = "github permissions"
	CheckModelEndpoint = "model endpoint"
	CheckModelNames    = "model names"
	CheckModelCall     = "model call"
	CheckPublicURL     = "public url"
)

// Options configure a Doctor.
type Options struct {
	Config *config.Config
	// Manifest is app.yml: the permissions and events the App needs.
	Manifest []byte
	// MinFreeBytes is the free space below which the data directory fails
	// (default 1 GiB); below 5× it, it warns.
	MinFreeBytes int64
	// CheckTimeout bounds each check (default 2 minutes).
	CheckTimeout time.Duration
	// GitHub adjusts the GitHub client's options (tests shorten retries).
	GitHub func(*gh.Options)
	// HTTPClient fetches the public URL (default: 10 s timeout).
	HTTPClient *http.Client
	// Logger receives the sandbox manager's and clients' logs; nil discards.
	Logger *slog.Logger
}

// Doctor runs the checks against one configuration. Checks that need the
// same thing (the engine, the App, the model's list) share it.
type Doctor struct {
	o        Options
	cfg      *config.Config
	instance string

	mgr        memo[*sandbox.Manager]
	engineInfo memo[sandbox.EngineInfo]
	image      memo[sandbox.ImageInfo]
	factory    memo[*gh.Factory]
	app        memo[gh.AppInfo]
	installs   memo[[]gh.InstallationInfo]
	model      memo[*llm.Client]
	listed     memo[[]string]
}

// New prepares the checks; nothing is contacted until Run.
func New(o Options) *Doctor {
	if o.MinFreeBytes <= 0 {
		o.MinFreeBytes = 1 << 30
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 2 * time.Minute
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &Doctor{o: o, cfg: o.Config, instance: "doctor-" + hex.EncodeToString(b)}
}

// Close releases the engine connection.
func (d *Doctor) Close() error {
	if d.mgr.done && d.mgr.err == nil {
		return d.mgr.v.Close()
	}
	return nil
}

// memo is a value the checks share, computed by the first that needs it.
type memo[T any] struct {
	done bool
	v    T
	err  error
}

func (m *memo[T]) get(f func() (T, error)) (T, error) {
	if !m.done {
		m.v, m.err = f()
		m.done = true
	}
	return m.v, m.err
}

type check struct {
	name string
	// fast: local and quick, no container and no network call beyond the
	// engine's socket; serve runs these at start.
	fast bool
	run  func(d *Doctor, ctx context.Context) Result
}

// allChecks is every check, in order.
func allChecks() []check {
	return []check{
		{CheckEngine, true, (*Doctor).checkEngine},
		{CheckImage, true, (*Doctor).checkImage},
		{CheckIsolation, false, (*Doctor).checkIsolation},
		{CheckToolchains, false, (*Doctor).checkToolchains},
		{CheckDataDir, true, (*Doctor).checkDataDir},
		{CheckWebhookSecret, true, (*Doctor).checkWebhookSecret},
		{CheckAppKey, true, (*Doctor).checkAppKey},
		{CheckApp, false, (*Doctor).checkApp},
		{CheckInstallations, false, (*Doctor).checkInstallations},
		{CheckPermissions, false, (*Doctor).checkPermissions},
		{CheckModelEndpoint, false, (*Doctor).checkModelEndpoint},
		{CheckModelNames, false, (*Doctor).checkModelNames},
		{CheckModelCall, false, (*Doctor).checkModelCall},
		{CheckPublicURL, false, (*Doctor).checkPublicURL},
	}
}

// Run runs the checks in order (only the fast ones when fast is set) and
// returns one result each.
func (d *Doctor) Run(ctx context.Context, fast bool) []Result {
	var out []Result
	for _, c := range allChecks() {
		if fast && !c.fast {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, d.o.CheckTimeout)
		r := c.run(d, cctx)
		cancel()
		r.Check = c.name
		out = append(out, r)
	}
	return out
}

// Failed reports whether any result failed.
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// Write prints one line per result, and a fix line under each failure and
// warning.
func Write(w io.Writer, results []Result) {
	width := 0
	for _, r := range results {
		width = max(width, len(r.Check))
	}
	for _, r := range results {
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", r.Status, width, r.Check, oneLine(r.Detail))
		if r.Fix != "" && (r.Status == Fail || r.Status == Warn) {
			fmt.Fprintf(w, "%-4s  %-*s  fix: %s\n", "", width, "", oneLine(r.Fix))
		}
	}
}

// Log writes each result as one log record: info when ok, warn otherwise.
func Log(log *slog.Logger, results []Result) {
	for _, r := range results {
		level := slog.LevelInfo
		switch r.Status {
		case Warn, Skip:
			level = slog.LevelWarn
		case Fail:
			level = slog.LevelError
		}
		attrs := []any{"check", r.Check, "status", string(r.Status), "detail", r.Detail}
		if r.Fix != "" && r.Status != OK {
			attrs = append(attrs, "fix", r.Fix)
		}
		log.Log(context.Background(), level, "doctor", attrs...)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func ok(format string, a ...any) Result { return Result{Status: OK, Detail: fmt.Sprintf(format, a...)} }

func fail(detail, fix string) Result { return Result{Status: Fail, Detail: detail, Fix: fix} }

func warn(detail, fix string) Result { return Result{Status: Warn, Detail: detail, Fix: fix} }

func skip(needs string) Result {
	return Result{Status: Skip, Detail: "needs a passing " + needs + " check"}
}

// needs returns the manifest's permissions and events.
func (d *Doctor) needs() (setup.Needs, error) { return setup.ReadNeeds(d.o.Manifest) }

// mib formats bytes for people.
func mib(n int64) string {
	switch {
	case n < 0:
		return "unlimited"
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%d MiB", n>>20)
	}
}
