package smoke_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/smoke"
	"github.com/selfcode/selfcode/pipeline/smoke/smoketest"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// service answers /health and /api/items like the sample service.
func service(health int) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(health)
		fmt.Fprintln(w, "database: unreachable")
	})
	mux.HandleFunc("/api/items", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, `{"items":["a"]}`) })
	mux.HandleFunc("/api/items/", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintln(w, `{"error":"no item 9"}`)
	})
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

// buildContext takes its build context from a directory through the engine,
// and reports the snapshot file Run must remove.
func buildContext(t *testing.T, e *smoketest.Engine) (func(context.Context) (*smoke.Snapshot, error), *string) {
	dir := t.TempDir()
	file := new(string)
	return func(ctx context.Context) (*smoke.Snapshot, error) {
		s, err := e.Snapshot(ctx, dir, "Dockerfile")
		if s != nil {
			*file = s.Path
		}
		return s, err
	}, file
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
		engine *smoketest.Engine
		rows   string
		output map[string][]string // step → what its output must hold
		lacks  map[string][]string // step → what its output must not hold
		noImg  bool                // no image was built, so none to remove
		noRun  bool                // no container was started
	}{
		{
			name:   "a healthy service: every step passes, requests judged one by one",
			yaml:   sampleYAML,
			engine: serving(service(200)),
			rows:   "smoke: image build=pass, smoke: container start=pass, smoke: health=pass, smoke: GET /api/items=pass, smoke: GET /api/items (2)=fail, smoke: GET /moved=pass",
			output: map[string][]string{"smoke: GET /api/items (2)": {"container log (last 20 lines)", "listening on :8080", `does not contain "widgets"`, `body: {"items":["a"]}`}},
		},
		{
			name:   "a broken health endpoint: its status, its body and the container's log",
			yaml:   sampleYAML,
			engine: serving(service(500)),
			rows:   "smoke: image build=pass, smoke: container start=pass, smoke: health=fail",
			output: map[string][]string{"smoke: health": {"listening on :8080", "GET /health: no status 200 within 600ms", "the last answer was status 500", "body: database: unreachable"}},
		},
		{
			name:   "a request answered with another status: the status, the body and the container's log; the next request still runs",
			yaml:   "smoke:\n  port: 8080\n  env: {APP_ENV: smoke}\n  health: {path: /health}\n  requests:\n    - {path: /api/items/9}\n    - {path: /api/items, body_contains: items}\n",
			engine: serving(service(200)),
			rows:   "smoke: image build=pass, smoke: container start=pass, smoke: health=pass, smoke: GET /api/items/9=fail, smoke: GET /api/items=pass",
			output: map[string][]string{"smoke: GET /api/items/9": {"container log (last 20 lines)", "listening on :8080", "GET /api/items/9: status 404, want 200", `body: {"error":"no item 9"}`}},
		},
		{
			name: "a crash at startup: the start fails with the exit status and the log",
			yaml: sampleYAML,
			engine: &smoketest.Engine{Serve: always(service(200)), Logs: "panic: missing config file\n",
				State: func() smoke.State { return smoke.State{ExitCode: 2} }},
			rows:   "smoke: image build=pass, smoke: container start=fail",
			output: map[string][]string{"smoke: container start": {"panic: missing config file", "exited with status 2"}},
		},
		{
			name: "a build that tries the network: the log tail and why",
			yaml: sampleYAML,
			engine: &smoketest.Engine{BuildErr: &smoke.Failure{Reason: "The command '/bin/sh -c go mod download' returned a non-zero code: 1",
				Log: "Step 3/5 : RUN go mod download\ngo: example.com/x@v1: dial tcp: lookup proxy.golang.org: Temporary failure in name resolution\n"}},
			rows:   "smoke: image build=fail",
			output: map[string][]string{"smoke: image build": {"Step 3/5", "returned a non-zero code", "has no network"}},
			noImg:  true, noRun: true,
		},
		{
			name:   "a build failing for another reason gets no network advice",
			yaml:   sampleYAML,
			engine: &smoketest.Engine{BuildErr: &smoke.Failure{Reason: "base image golang:9 is not on the Docker engine", Log: ""}},
			rows:   "smoke: image build=fail",
			output: map[string][]string{"smoke: image build": {"golang:9"}},
			noImg:  true, noRun: true,
		},
		{
			name:   "an engine that cannot build: could not run",
			yaml:   sampleYAML,
			engine: &smoketest.Engine{BuildErr: errors.New("Error response from daemon: 403 Forbidden")},
			rows:   "smoke: image build=error",
			noImg:  true, noRun: true,
		},
		{
			name:   "an engine that cannot reach into the container: could not run, not the service's failure",
			yaml:   sampleYAML,
			engine: &smoketest.Engine{Serve: always(service(200)), DialErr: fmt.Errorf("%w: exec in the helper container: no such container", smoke.ErrEngine)},
			rows:   "smoke: image build=pass, smoke: container start=error",
		},
		{
			name: "a service listening where nothing outside its container reaches it: the health step fails at once, saying so",
			yaml: sampleYAML,
			engine: &smoketest.Engine{Serve: always(service(200)),
				DialErr: &smoke.Failure{Reason: "port 8080: the service listens on 127.0.0.1 only: unreachable from outside its container"}},
			rows:   "smoke: image build=pass, smoke: container start=pass, smoke: health=fail",
			output: map[string][]string{"smoke: health": {"listening on :8080", "listens on 127.0.0.1 only: unreachable from outside its container"}},
			lacks:  map[string][]string{"smoke: health": {"no status 200 within"}},
		},
		{
			name:   "an image that cannot start as configured",
			yaml:   sampleYAML,
			engine: &smoketest.Engine{StartErr: &smoke.Failure{Reason: "the image has no command to run (CMD or ENTRYPOINT)"}},
			rows:   "smoke: image build=pass, smoke: container start=fail",
			output: map[string][]string{"smoke: container start": {"no command to run"}},
			noRun:  true,
		},
		{
			name:   "the stage's time runs out during the build",
			yaml:   "smoke: {port: 8080, health: {timeout: 1s}, timeout: 2s}",
			engine: &smoketest.Engine{BuildFor: time.Minute},
			rows:   "smoke: image build=timeout",
			noImg:  true, noRun: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.engine.Logs == "" {
				tt.engine.Logs = "listening on :8080\n"
			}
			src, file := buildContext(t, tt.engine)
			rows, err := smoke.Run(context.Background(), tt.engine, smoke.Spec{JobID: "j1", Config: config(t, tt.yaml), Context: src})
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
				for _, not := range tt.lacks[r.Name] {
					if strings.Contains(r.Output, not) {
						t.Errorf("%s: output holds %q:\n%s", r.Name, not, r.Output)
					}
				}
			}
			if _, err := os.Stat(*file); *file == "" || !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the build context %q was not removed", *file)
			}
			_, removed, closed := tt.engine.Counts()
			if (removed == 1) == tt.noImg || (closed == 1) == tt.noRun {
				t.Errorf("images removed %d, containers removed %d", removed, closed)
			}
			if run := tt.engine.LastRun(); !tt.noRun && (run.Port != 8080 || !run.ReadOnly || run.Env["APP_ENV"] != "smoke") {
				t.Errorf("run spec %+v", run)
			}
		})
	}
}

func TestRunEndsWithTheJob(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	e := &smoketest.Engine{Serve: func(string) http.Handler {
		cancel() // the job ends as the shadow starts
		return service(500)
	}}
	src, _ := buildContext(t, e)
	rows, err := smoke.Run(ctx, e, smoke.Spec{JobID: "j1", Config: config(t, "smoke: {port: 8080, health: {timeout: 1m}, timeout: 2m}"), Context: src})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v (rows %s)", err, names(rows))
	}
	if _, removed, closed := e.Counts(); removed != 1 || closed != 1 {
		t.Errorf("not cleaned up after the job ended: images removed %d, containers %d", removed, closed)
	}
}

// serving is an engine whose every shadow is h.
func serving(h http.Handler) *smoketest.Engine { return &smoketest.Engine{Serve: always(h)} }

func always(h http.Handler) func(string) http.Handler { return func(string) http.Handler { return h } }
