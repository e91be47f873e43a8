package smoke

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// fakeEngine builds nothing and "runs" an httptest server; it records
// what was removed.
type fakeEngine struct {
	build    error // Build's error
	buildFor time.Duration
	start    error
	handler  http.Handler
	state    func() State
	logs     string

	mu                       sync.Mutex
	imageRemoved, shadowGone bool
	got                      RunSpec
}

type fakeImage struct{ e *fakeEngine }

func (i fakeImage) Ref() string { return "selfcode-smoke:test" }
func (i fakeImage) Remove(context.Context) error {
	i.e.mu.Lock()
	i.e.imageRemoved = true
	i.e.mu.Unlock()
	return nil
}

type fakeShadow struct {
	e   *fakeEngine
	srv *httptest.Server
}

func (s *fakeShadow) URL() string { return s.srv.URL }
func (s *fakeShadow) State(context.Context) (State, error) {
	if s.e.state != nil {
		return s.e.state(), nil
	}
	return State{Running: true}, nil
}
func (s *fakeShadow) Logs(context.Context, int) (string, error) { return s.e.logs, nil }
func (s *fakeShadow) Close(context.Context) error {
	s.srv.Close()
	s.e.mu.Lock()
	s.e.shadowGone = true
	s.e.mu.Unlock()
	return nil
}

func (e *fakeEngine) Available(context.Context) error { return nil }
func (e *fakeEngine) Snapshot(context.Context, string, string) (*Snapshot, error) {
	return nil, errors.New("not used")
}
func (e *fakeEngine) Build(ctx context.Context, spec BuildSpec) (Image, error) {
	if e.buildFor > 0 {
		select {
		case <-time.After(e.buildFor):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if e.build != nil {
		return nil, e.build
	}
	return fakeImage{e}, nil
}
func (e *fakeEngine) Start(ctx context.Context, spec RunSpec) (Shadow, error) {
	e.mu.Lock()
	e.got = spec
	e.mu.Unlock()
	if e.start != nil {
		return nil, e.start
	}
	return &fakeShadow{e: e, srv: httptest.NewServer(e.handler)}, nil
}

// service answers /health and /api/items like the sample service.
func service(health int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(health)
		fmt.Fprintln(w, "database: unreachable")
	})
	mux.HandleFunc("/api/items", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, `{"items":["a"]}`) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/", http.StatusFound)
	})
	return mux
}

func config(t *testing.T, yaml string) repoconfig.Smoke {
	t.Helper()
	c, err := repoconfig.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return *c.Smoke
}

const sampleYAML = `smoke:
  port: 8080
  env: {APP_ENV: smoke}
  health: {path: /health, timeout: 600ms}
  requests:
    - {path: /api/items, body_contains: items}
    - {method: GET, path: /api/items, body_contains: widgets}
    - {path: /moved, status: 302}
  timeout: 1m
`

// snapshot is a build context file that Run must remove.
func snapshot(t *testing.T) (func(context.Context) (*Snapshot, error), string) {
	p := filepath.Join(t.TempDir(), "ctx.tar")
	if err := os.WriteFile(p, []byte("tar"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(context.Context) (*Snapshot, error) { return &Snapshot{Path: p, Dockerfile: "Dockerfile"}, nil }, p
}

func names(rows []verify.CommandResult) string {
	var out []string
	for _, r := range rows {
		mark := "pass"
		switch {
		case r.Error != "":
			mark = "error"
		case r.TimedOut:
			mark = "timeout"
		case !r.Passed:
			mark = "fail"
		}
		out = append(out, r.Name+"="+mark)
	}
	return strings.Join(out, ", ")
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		yaml   string
		engine *fakeEngine
		rows   string
		output map[string][]string // step → what its output must hold
		noImg  bool                // no image was built, so none to remove
		noRun  bool                // no container was started
	}{
		{
			name:   "a healthy service: every step passes, requests judged one by one",
			yaml:   sampleYAML,
			engine: &fakeEngine{handler: service(200)},
			rows:   "smoke: image build=pass, smoke: container start=pass, smoke: health=pass, smoke: GET /api/items=pass, smoke: GET /api/items (2)=fail, smoke: GET /moved=pass",
			output: map[string][]string{"smoke: GET /api/items (2)": {"container log (last 20 lines)", "listening on :8080", `does not contain "widgets"`, `body: {"items":["a"]}`}},
		},
		{
			name:   "a broken health endpoint: its status, its body and the container's log",
			yaml:   sampleYAML,
			engine: &fakeEngine{handler: service(500)},
			rows:   "smoke: image build=pass, smoke: container start=pass, smoke: health=fail",
			output: map[string][]string{"smoke: health": {"listening on :8080", "GET /health: no status 200 within 600ms", "the last answer was status 500", "body: database: unreachable"}},
		},
		{
			name: "a crash at startup: the start fails with the exit status and the log",
			yaml: sampleYAML,
			engine: &fakeEngine{handler: service(200), logs: "panic: missing config file\n",
				state: func() State { return State{ExitCode: 2} }},
			rows:   "smoke: image build=pass, smoke: container start=fail",
			output: map[string][]string{"smoke: container start": {"panic: missing config file", "exited with status 2"}},
		},
		{
			name: "a build that tries the network: the log tail and why",
			yaml: sampleYAML,
			engine: &fakeEngine{build: &Failure{Reason: "The command '/bin/sh -c go mod download' returned a non-zero code: 1",
				Log: "Step 3/5 : RUN go mod download\ngo: example.com/x@v1: dial tcp: lookup proxy.golang.org: Temporary failure in name resolution\n"}},
			rows:   "smoke: image build=fail",
			output: map[string][]string{"smoke: image build": {"Step 3/5", "returned a non-zero code", "has no network"}},
			noImg:  true, noRun: true,
		},
		{
			name:   "a build failing for another reason gets no network advice",
			yaml:   sampleYAML,
			engine: &fakeEngine{build: &Failure{Reason: "base image golang:9 is not on the Docker engine", Log: ""}},
			rows:   "smoke: image build=fail",
			output: map[string][]string{"smoke: image build": {"golang:9"}},
			noImg:  true, noRun: true,
		},
		{
			name:   "an engine that cannot build: could not run",
			yaml:   sampleYAML,
			engine: &fakeEngine{build: errors.New("Error response from daemon: 403 Forbidden")},
			rows:   "smoke: image build=error",
			noImg:  true, noRun: true,
		},
		{
			name:   "an image that cannot start as configured",
			yaml:   sampleYAML,
			engine: &fakeEngine{start: &Failure{Reason: "the image has no command to run (CMD or ENTRYPOINT)"}},
			rows:   "smoke: image build=pass, smoke: container start=fail",
			output: map[string][]string{"smoke: container start": {"no command to run"}},
			noRun:  true,
		},
		{
			name:   "the stage's time runs out during the build",
			yaml:   "smoke: {port: 8080, health: {timeout: 1s}, timeout: 2s}",
			engine: &fakeEngine{buildFor: time.Minute},
			rows:   "smoke: image build=timeout",
			noImg:  true, noRun: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.engine.logs == "" {
				tt.engine.logs = "listening on :8080\n"
			}
			src, file := snapshot(t)
			rows, err := Run(context.Background(), tt.engine, Spec{JobID: "j1", Config: config(t, tt.yaml), Context: src})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(rows); got != tt.rows {
				t.Fatalf("rows\n%s\nwant\n%s", got, tt.rows)
			}
			for _, r := range rows {
				if r.Kind != verify.SmokeCommand || r.Run == "" {
					t.Errorf("%s: kind %q run %q", r.Name, r.Kind, r.Run)
				}
				for _, want := range tt.output[r.Name] {
					if !strings.Contains(r.Output, want) {
						t.Errorf("%s: output lacks %q:\n%s", r.Name, want, r.Output)
					}
				}
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Error("the build context was not removed")
			}
			e := tt.engine
			if e.imageRemoved == tt.noImg || e.shadowGone == tt.noRun {
				t.Errorf("image removed %v, container removed %v", e.imageRemoved, e.shadowGone)
			}
			if !tt.noRun && (e.got.Port != 8080 || !e.got.ReadOnly) {
				t.Errorf("run spec %+v", e.got)
			}
		})
	}
}

func TestRunEndsWithTheJob(t *testing.T) {
	t.Parallel()
	e := &fakeEngine{handler: service(500)}
	ctx, cancel := context.WithCancel(context.Background())
	src, _ := snapshot(t)
	go func() {
		for {
			e.mu.Lock()
			started := e.got.JobID != ""
			e.mu.Unlock()
			if started {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	rows, err := Run(ctx, e, Spec{JobID: "j1", Config: config(t, "smoke: {port: 8080, health: {timeout: 1m}, timeout: 2m}"), Context: src})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v (rows %s)", err, names(rows))
	}
	if !e.shadowGone || !e.imageRemoved {
		t.Errorf("not cleaned up after the job ended: image %v container %v", e.imageRemoved, e.shadowGone)
	}
}
