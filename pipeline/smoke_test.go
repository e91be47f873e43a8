package pipeline_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/selfcode/selfcode/app/report"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/internal/samplerepo"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/smoke"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// recordingEngine is the real smoke engine, remembering the images it built
// so a test can check that none is left.
type recordingEngine struct {
	sandbox.SmokeBackend
	mu     sync.Mutex
	images []string // tags and the IDs of every layer the builds made
	builds int
}

func (r *recordingEngine) Build(ctx context.Context, spec smoke.BuildSpec) (smoke.Image, error) {
	img, err := r.SmokeBackend.Build(ctx, spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.builds++
	if err == nil {
		r.images = append(r.images, img.Ref())
		if l, ok := img.(interface{ IDs() []string }); ok {
			r.images = append(r.images, l.IDs()...)
		}
	}
	return img, err
}

// smokeHarness is a pipeline harness on the service repository with the
// real smoke engine.
func smokeHarness(t *testing.T, script ...fakeopenai.Step) (*harness, *recordingEngine, *sandbox.Manager) {
	t.Helper()
	files := samplerepo.ServiceFiles(dockertest.Image())
	var eng *recordingEngine
	var mgr *sandbox.Manager
	h := newHarnessWith(t, func(o *pipeline.Options, m *sandbox.Manager) {
		eng, mgr = &recordingEngine{SmokeBackend: sandbox.SmokeBackend{Manager: m}}, m
		o.Smoke = eng
	}, files, files[".selfcode.yml"], script...)
	return h, eng, mgr
}

// nothingLeft fails when a container, network or image the job made is
// still on the engine: listed by the manager's labels and smoke tags, and
// every image layer the builds reported.
func nothingLeft(t *testing.T, m *sandbox.Manager, eng *recordingEngine) {
	t.Helper()
	if l := dockertest.Leftovers(t, m.Instance()); len(l) > 0 {
		t.Errorf("left on the engine: %v", l)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if eng.builds == 0 || len(eng.images) == 0 {
		t.Fatalf("no image was built (%d builds)", eng.builds)
	}
	dockertest.ImagesGone(t, eng.images)
}

// smokeRows are the smoke steps of a run, as "name=pass|fail".
func smokeRows(run verify.Run) []string {
	var out []string
	for _, c := range run.Commands {
		if c.Kind == verify.SmokeCommand {
			mark := "pass"
			if !c.Passed {
				mark = "fail"
			}
			out = append(out, c.Name+"="+mark)
		}
	}
	return out
}

const itemsPlan = `{"summary":"Serve cherries too","steps":[{"id":"1","title":"Add cherry to the items","files":[{"path":"items.go","action":"modify","purpose":"list cherry"}],"acceptance":["GET /api/items lists cherry"]}],"risks":[],"questions":[]}`

const portPlan = `{"summary":"Listen on ITEMSD_PORT","steps":[{"id":"1","title":"Read the port from ITEMSD_PORT","files":[{"path":"main.go","action":"modify","purpose":"ITEMSD_PORT, default 9090"}],"acceptance":["the service listens on ITEMSD_PORT"]}],"risks":[],"questions":[]}`

// TestSmokeStage runs jobs on itemsd, a service shipped as an image: the
// smoke stage builds it (offline, FROM the sandbox image) and probes a
// shadow container on the base and on the change. Each subtest runs alone
// (-run); run together, the first keeps the verified base commit, smoke
// stage included, in the baseline cache, and the second takes it from
// there instead of building the base again.
func TestSmokeStage(t *testing.T) {
	all := []string{"smoke: image build=pass", "smoke: container start=pass", "smoke: health=pass", "smoke: GET /api/items=pass"}

	t.Run("a change that keeps the service working is verified, with smoke rows in the report", func(t *testing.T) {
		h, eng, m := smokeHarness(t,
			planner(itemsPlan),
			editor(call("str_replace", map[string]any{"path": "items.go", "old_str": samplerepo.ItemsLine, "new_str": `var Items = []string{"apple", "banana", "cherry"}`})),
			editor(call("finish", map[string]any{"summary": "Cherry is listed."})),
		)
		out, err := h.run(func(in *pipeline.Input) { in.Repository, in.IssueTitle = "o/itemsd", "List cherries" })
		if err != nil {
			t.Fatal(err)
		}
		if !out.Verified || out.Smoke != "" {
			t.Fatalf("verdict %s, smoke note %q, comparison %+v", out.Verdict, out.Smoke, out.Comparison)
		}
		head := out.Verify[len(out.Verify)-1].Run
		if got := smokeRows(head); !slices.Equal(got, all) {
			t.Errorf("change's smoke rows %v", got)
		}
		if got := smokeRows(*out.Base); !slices.Equal(got, all) {
			t.Errorf("base's smoke rows %v", got)
		}
		var rep templates.Report
		report.Fill(&rep, out, h.cfg)
		r, err := templates.New(templates.Options{})
		if err != nil {
			t.Fatal(err)
		}
		body, err := r.PRBody(rep)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"| smoke: image build | `docker build -f Dockerfile . (no network)` | ✅ pass", "| smoke: health | `GET /health → 200 within 10s` | ✅ pass", "| smoke: GET /api/items |"} {
			if !strings.Contains(body, want) {
				t.Errorf("PR body lacks %q", want)
			}
		}
		nothingLeft(t, m, eng)
	})

	t.Run("a change that breaks the health endpoint is caught, and the fixer sees the logs", func(t *testing.T) {
		h, eng, m := smokeHarness(t,
			planner(portPlan),
			editor(call("str_replace", map[string]any{"path": "main.go", "old_str": samplerepo.AddrLine, "new_str": `	addr := ":" + envOr("ITEMSD_PORT", "9090")`})),
			editor(call("finish", map[string]any{"summary": "The port comes from ITEMSD_PORT."})),
			fixer(call("finish", map[string]any{"summary": "Leaving it to a human."})),
		)
		_, cached, err := baselines.Get(h.baselineKey("o/itemsd"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.run(func(in *pipeline.Input) { in.Repository, in.IssueTitle = "o/itemsd", "Listen on ITEMSD_PORT" })
		if err != nil {
			t.Fatal(err)
		}
		if out.Verdict != verify.Failed || out.FixAttempts != 1 {
			t.Fatalf("verdict %s after %d fix rounds (%+v)", out.Verdict, out.FixAttempts, out.Comparison)
		}
		if !slices.ContainsFunc(out.Comparison.Regressions, func(r string) bool { return strings.HasPrefix(r, repoconfig.SmokeHealthStep+":") }) {
			t.Errorf("regressions %q do not name the health step", out.Comparison.Regressions)
		}
		// The unit tests pass: only the smoke stage saw the service break.
		if got := smokeRows(out.Verify[0].Run); !slices.Equal(got, []string{"smoke: image build=pass", "smoke: container start=pass", "smoke: health=fail"}) {
			t.Errorf("smoke rows %v", got)
		}
		if got := smokeRows(*out.Base); !slices.Equal(got, all) {
			t.Errorf("base's smoke rows %v", got)
		}
		eng.mu.Lock()
		builds := eng.builds
		eng.mu.Unlock()
		switch {
		case cached && builds != 1:
			t.Errorf("%d builds: the base was in the baseline cache, only the change should be built", builds)
		case !cached && builds != 2:
			t.Errorf("%d builds: the base (not in the baseline cache) and the change should be built", builds)
		}
		fix := h.fake.RequestsFor("fixer")
		if len(fix) == 0 {
			t.Fatal("no fixer round")
		}
		for _, want := range []string{"itemsd listening on :9090", "GET /health: no status 200 within 10s", "connection refused"} {
			if !strings.Contains(string(fix[0].Raw), want) {
				t.Errorf("the fixer was not told %q:\n%s", want, fix[0].Raw)
			}
		}
		nothingLeft(t, m, eng)
	})
}
