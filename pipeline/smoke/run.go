package smoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/selfcode/selfcode/internal/utf8cut"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Output bounds of the failure reports, which go to the fixer model and the
// pull request.
const (
	buildLogLines     = 40
	containerLogLines = 20
	bodyExcerptBytes  = 1024
	bodyExcerptLines  = 10
	maxBodyBytes      = 1 << 20 // read for body_contains
	maxLineBytes      = 500
)

// Probe timing.
const (
	probeEvery   = 200 * time.Millisecond
	probeTimeout = 5 * time.Second  // one health attempt
	requestLimit = 30 * time.Second // one request
	cleanupLimit = 30 * time.Second
)

// Spec is one run of the stage.
type Spec struct {
	JobID  string
	Config repoconfig.Smoke
	// Context gives the build context: a snapshot taken earlier (the base
	// commit, before any edit) or one taken now. Run removes it.
	Context func(ctx context.Context) (*Snapshot, error)
	Logger  *slog.Logger
}

// Run runs the stage on eng: image build, container start, health, then
// each request. It returns one result per step that ran (a step after a
// failing one does not run); a step the engine could not run has Error
// set. The container (with its helper) and the image are removed before Run
// returns, whatever happened. The error is ctx's when the job ended.
func Run(ctx context.Context, eng Engine, spec Spec) ([]verify.CommandResult, error) {
	cfg := spec.Config
	log := spec.Logger
	if log == nil {
		log = slog.Default()
	}
	stageCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	deadline, _ := stageCtx.Deadline()
	r := &runner{ctx: ctx, stage: stageCtx, log: log.With("job_id", spec.JobID)}
	cleanup := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), cleanupLimit)
	}

	// 1. The image.
	began := time.Now()
	build := r.step(repoconfig.SmokeBuildStep, fmt.Sprintf("docker build -f %s . (no network)", cfg.Dockerfile))
	snap, err := spec.Context(stageCtx)
	var img Image
	if err == nil {
		img, err = eng.Build(stageCtx, BuildSpec{JobID: spec.JobID, Snapshot: snap, Deadline: deadline})
	}
	if rerr := snap.Remove(); rerr != nil {
		r.log.Warn("remove the smoke build context", "err", rerr)
	}
	if err == nil {
		defer func() {
			c, cancel := cleanup()
			defer cancel()
			if err := img.Remove(c); err != nil {
				r.log.Warn("remove the smoke image", "image", img.Ref(), "err", err)
			}
		}()
	}
	r.finish(&build, began, err, buildOutput)
	if !build.Passed {
		return r.done(build)
	}
	r.rows = append(r.rows, build)

	// 2. The shadow container, then its health.
	began = time.Now()
	start := r.step(repoconfig.SmokeStartStep, fmt.Sprintf("docker run %s (port %d, no network)", img.Ref(), cfg.Port))
	sh, err := eng.Start(stageCtx, RunSpec{JobID: spec.JobID, Image: img, Port: cfg.Port, Env: cfg.Env, ReadOnly: cfg.ReadOnly, Deadline: deadline})
	if err != nil {
		r.finish(&start, began, err, plainOutput)
		return r.done(start)
	}
	defer func() {
		c, cancel := cleanup()
		defer cancel()
		if err := sh.Close(c); err != nil {
			r.log.Warn("remove the shadow container", "err", err)
		}
	}()
	r.client = newClient(sh)
	health := r.step(repoconfig.SmokeHealthStep, fmt.Sprintf("GET %s → %d within %s", cfg.Health.Path, cfg.Health.Status, cfg.Health.Timeout))
	hbegan := time.Now()
	exited, err := r.health(sh, cfg)
	switch {
	case exited != nil:
		start.Duration = time.Since(began)
		start.ExitCode, start.OOMKilled = exited.ExitCode, exited.OOMKilled
		start.Output = r.logs(sh) + exitText(*exited)
		return r.done(start)
	case err != nil && errors.Is(err, ErrEngine):
		start.Duration = time.Since(began)
		start.Error = err.Error()
		return r.done(start)
	}
	start.Passed, start.Duration = true, hbegan.Sub(began)
	r.finish(&health, hbegan, err, func(f *Failure) string { return r.logs(sh) + f.Reason })
	if !health.Passed {
		return r.done(start, health)
	}

	// 3. The requests.
	rows := []verify.CommandResult{start, health}
	for i, rq := range cfg.Requests {
		began := time.Now()
		row := r.step(cfg.RequestStep(i), requestText(rq))
		err := r.request(sh, rq)
		r.finish(&row, began, err, func(f *Failure) string {
			out := r.logs(sh)
			if st, serr := sh.State(r.stage); serr == nil && !st.Running {
				out += exitText(st)
			}
			return out + f.Reason
		})
		rows = append(rows, row)
		if row.Error != "" || row.TimedOut {
			break // the engine or the stage's time is gone: the rest cannot run
		}
	}
	return r.done(rows...)
}

type runner struct {
	ctx    context.Context // the job
	stage  context.Context // the job, bounded by smoke.timeout
	log    *slog.Logger
	rows   []verify.CommandResult
	client *http.Client // to the shadow container, once it runs
}

func (r *runner) step(name, run string) verify.CommandResult {
	return verify.CommandResult{Name: name, Run: run, Kind: verify.SmokeCommand}
}

// done returns the rows so far plus rows; the error is the job's, when it
// ended.
func (r *runner) done(rows ...verify.CommandResult) ([]verify.CommandResult, error) {
	r.rows = append(r.rows, rows...)
	return r.rows, r.ctx.Err()
}

// finish records how a step ended: passed (err nil), failed (a *Failure,
// shown by output), out of the stage's time, or not run (the engine).
func (r *runner) finish(row *verify.CommandResult, began time.Time, err error, output func(*Failure) string) {
	row.Duration = time.Since(began)
	var f *Failure
	switch {
	case err == nil:
		row.Passed = true
	case r.ctx.Err() != nil:
		row.Error = "the job ended: " + r.ctx.Err().Error()
	case r.stage.Err() != nil:
		row.TimedOut = true
		row.Output = "the smoke stage ran out of time (smoke.timeout)"
	case errors.As(err, &f):
		row.ExitCode = 1
		row.Output = output(f)
	default:
		row.Error = err.Error()
	}
}

func plainOutput(f *Failure) string {
	if f.Log == "" {
		return f.Reason
	}
	return tail(f.Log, buildLogLines) + "\n" + f.Reason
}

// noNetworkRE finds what a build step prints when it tries the network.
var noNetworkRE = regexp.MustCompile(`(?i)temporary failure in name resolution|could not resolve|no such host|name or service not known|network is unreachable|EAI_AGAIN|ENOTFOUND|getaddrinfo|dial tcp|failed to establish a new connection|connection refused`)

func buildOutput(f *Failure) string {
	out := plainOutput(f)
	if noNetworkRE.MatchString(f.Log) {
		out += "\nThe image build has no network: a Dockerfile step cannot download anything. Vendor what it needs into the repository, or build FROM an image on the Docker engine that has it."
	}
	return out
}

// health polls the health path until it answers the expected status, the
// health timeout passes or the container exits (returned as exited). An
// error wrapping ErrEngine means the engine could not say.
func (r *runner) health(sh Shadow, cfg repoconfig.Smoke) (exited *State, err error) {
	ctx, cancel := context.WithTimeout(r.stage, cfg.Health.Timeout)
	defer cancel()
	url := sh.URL() + cfg.Health.Path
	var last string
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		st, err := sh.State(r.stage)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEngine, err)
		}
		if !st.Running {
			return &st, nil
		}
		actx, acancel := context.WithTimeout(ctx, probeTimeout)
		status, body, perr := r.get(actx, http.MethodGet, url)
		acancel()
		var f *Failure
		switch {
		case perr != nil && errors.Is(perr, ErrEngine) && r.stage.Err() == nil:
			return nil, perr
		case perr != nil && errors.As(perr, &f):
			// The service cannot serve as configured: waiting changes nothing.
			return nil, f
		case perr == nil && status == cfg.Health.Status:
			return nil, nil
		case perr == nil:
			last = fmt.Sprintf("the last answer was status %d%s", status, excerpt(body))
		case ctx.Err() == nil || last == "":
			// An attempt cut short by the health deadline says nothing
			// new: the answer before it is the one to show.
			last = "the last attempt got no answer: " + perr.Error()
		}
		select {
		case <-ctx.Done():
			if r.stage.Err() != nil {
				return nil, r.stage.Err()
			}
			if st, err := sh.State(r.stage); err == nil && !st.Running {
				return &st, nil
			}
			return nil, &Failure{Reason: fmt.Sprintf("GET %s: no status %d within %s; %s", cfg.Health.Path, cfg.Health.Status, cfg.Health.Timeout, last)}
		case <-tick.C:
		}
	}
}

// request sends one request and checks its answer.
func (r *runner) request(sh Shadow, rq repoconfig.SmokeRequest) error {
	ctx, cancel := context.WithTimeout(r.stage, requestLimit)
	defer cancel()
	status, body, err := r.get(ctx, rq.Method, sh.URL()+rq.Path)
	what := rq.Method + " " + rq.Path
	switch {
	case r.stage.Err() != nil:
		return r.stage.Err()
	case err != nil && errors.Is(err, ErrEngine):
		return err
	case err != nil:
		return &Failure{Reason: fmt.Sprintf("%s: no answer: %v", what, err)}
	case status != rq.Status:
		return &Failure{Reason: fmt.Sprintf("%s: status %d, want %d%s", what, status, rq.Status, excerpt(body))}
	case rq.BodyContains != "" && !strings.Contains(body, rq.BodyContains):
		return &Failure{Reason: fmt.Sprintf("%s: status %d, but the body does not contain %q%s", what, status, rq.BodyContains, excerpt(body))}
	}
	return nil
}

// newClient talks to sh only, whatever a URL names: every connection is
// sh.Dial's, never through a proxy from the environment, and a redirect is
// never followed (it could point anywhere).
func newClient(sh Shadow) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           func(ctx context.Context, _, _ string) (net.Conn, error) { return sh.Dial(ctx) },
			DisableKeepAlives:     true,
			ResponseHeaderTimeout: requestLimit,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// get sends a body-less request and reads up to maxBodyBytes of the answer.
func (r *runner) get(ctx context.Context, method, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	// A body cut short still has its status; what arrived is judged.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	return resp.StatusCode, string(b), nil
}

// logs is the container's last lines, as the first part of a failure's
// output (the failure itself comes last, where a tail keeps it).
func (r *runner) logs(sh Shadow) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.stage), 10*time.Second)
	defer cancel()
	l, err := sh.Logs(ctx, containerLogLines)
	switch {
	case err != nil:
		return fmt.Sprintf("(the container's log could not be read: %v)\n", err)
	case strings.TrimSpace(l) == "":
		return "(the container printed nothing)\n"
	}
	return fmt.Sprintf("container log (last %d lines):\n%s\n", containerLogLines, clip(strings.TrimRight(l, "\n")))
}

func exitText(st State) string {
	if st.OOMKilled {
		return "the container ran out of memory and was killed\n"
	}
	return fmt.Sprintf("the container exited with status %d before the service was healthy\n", st.ExitCode)
}

func requestText(rq repoconfig.SmokeRequest) string {
	s := fmt.Sprintf("%s %s → %d", rq.Method, rq.Path, rq.Status)
	if rq.BodyContains != "" {
		s += fmt.Sprintf(", body contains %q", rq.BodyContains)
	}
	return s
}

// excerpt is the start of a response body, for a failure report.
func excerpt(body string) string {
	body = strings.TrimSpace(body)
	if body == "" {
		return " (empty body)"
	}
	cut := utf8cut.Cut(body, bodyExcerptBytes)
	lines := strings.Split(cut, "\n")
	if len(lines) > bodyExcerptLines {
		lines = lines[:bodyExcerptLines]
	}
	out := clip(strings.Join(lines, "\n"))
	if len(out) < len(body) {
		out += " …"
	}
	return "\nbody: " + out
}

// tail keeps the last n lines of s, saying how many came before.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return clip(strings.Join(lines, "\n"))
	}
	return fmt.Sprintf("… %d earlier lines\n%s", len(lines)-n, clip(strings.Join(lines[len(lines)-n:], "\n")))
}

// clip shortens long lines.
func clip(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > maxLineBytes {
			lines[i] = utf8cut.Cut(l, maxLineBytes) + " …"
		}
	}
	return strings.Join(lines, "\n")
}
