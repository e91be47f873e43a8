package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/smoke/smoketest"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// execAfterEdit holds every command until the model's edit of calc.go is
// on disk, so a base whose build context were taken when its smoke stage
// runs, rather than before any edit, would be built from the change.
type execAfterEdit struct{ *eventSandbox }

func (s execAfterEdit) Start(ctx context.Context, spec pipeline.SandboxSpec) (pipeline.Session, error) {
	sess, err := s.eventSandbox.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &gatedSession{eventSession: sess.(*eventSession)}, nil
}

type gatedSession struct {
	*eventSession
	dir string
}

func (g *gatedSession) CopyTree(ctx context.Context, dir string) error {
	g.dir = dir
	return g.eventSession.CopyTree(ctx, dir)
}

func (g *gatedSession) Exec(ctx context.Context, c verify.Command) (verify.Outcome, error) {
	for {
		if b, _ := os.ReadFile(filepath.Join(g.dir, "calc.go")); string(b) != goRepo["calc.go"] {
			return g.eventSession.Exec(ctx, c)
		}
		select {
		case <-ctx.Done():
			return verify.Outcome{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// smokeNames are a run's smoke steps as "name=pass|fail".
func smokeNames(run *verify.Run) []string {
	if run == nil {
		return nil
	}
	var out []string
	for _, c := range run.Commands {
		if c.Kind == verify.SmokeCommand {
			out = append(out, fmt.Sprintf("%s=%v", c.Name, c.Passed))
		}
	}
	return out
}

// The smoke stage's place in a job, without Docker: the base's build
// context is taken before any edit, its steps are rows of the base and of
// the change judged by the one rule, a regression reaches the fixer, and a
// stage that does not run says why (and never counts as having run in the
// baseline cache).
func TestSmokeInTheJob(t *testing.T) {
	t.Parallel()
	const yaml = "verify: [{name: test, run: \"npm test\"}]\nlimits: {max_fix_attempts: 1}\n" +
		"smoke: {port: 8080, health: {path: /health, timeout: 300ms}, requests: [{path: /api, body_contains: sum}], timeout: 1m}\n"
	all := []string{"smoke: image build=true", "smoke: container start=true", "smoke: health=true", "smoke: GET /api=true"}
	pristine := goRepo["calc.go"]
	for _, tt := range []struct {
		name string
		off  string // the operator's switch
		// unavailable is the engine's answer to Available.
		unavailable error
		// brokenByChange: the change's image answers /health with 500.
		brokenByChange  bool
		failAfterChange bool // the change fails its verify command
		verdict         verify.Verdict
		note            string
		base, head      []string
		fixerTold       string
	}{
		{name: "the base and the change get smoke rows: verified", verdict: verify.Verified, base: all, head: all},
		{name: "a smoke step the change breaks: failed, and the fixer is told", brokenByChange: true, verdict: verify.Failed, base: all,
			head: []string{"smoke: image build=true", "smoke: container start=true", "smoke: health=false"}, fixerTold: "GET /health: no status 200 within 300ms; the last answer was status 500"},
		{name: "switched off by the operator: skipped, and said", off: "turned off on this server (SELFCODE_SMOKE_ENABLED=false)",
			verdict: verify.Verified, note: "The smoke stage was skipped: turned off on this server (SELFCODE_SMOKE_ENABLED=false)."},
		{name: "an engine that cannot: skipped with its reason", unavailable: errors.New("the Docker engine does not build images for selfcode: 403 Forbidden"),
			verdict: verify.Verified, note: "The smoke stage was skipped: the Docker engine does not build images for selfcode: 403 Forbidden."},
		{name: "a change its verify commands already fail: no smoke on it", failAfterChange: true, verdict: verify.Failed, base: all,
			note: "The smoke stage did not run on the change: its verify commands already fail."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sb := newEventSandbox(false)
			sb.failAfterChange = tt.failAfterChange
			var mu sync.Mutex
			var snapped []string // calc.go as each build context was taken
			eng := &smoketest.Engine{
				Unavailable: tt.unavailable,
				OnSnapshot: func(dir string) {
					b, _ := os.ReadFile(filepath.Join(dir, "calc.go"))
					mu.Lock()
					snapped = append(snapped, string(b))
					mu.Unlock()
				},
				Serve: func(dir string) http.Handler {
					b, _ := os.ReadFile(filepath.Join(dir, "calc.go"))
					healthy := !tt.brokenByChange || string(b) == pristine
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.URL.Path == "/health" && !healthy {
							http.Error(w, "calc: sum overflow", http.StatusInternalServerError)
							return
						}
						fmt.Fprintln(w, `{"sum": 3}`)
					})
				},
			}
			cfg, err := repoconfig.Parse([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			baselines, err := verify.NewCache(verify.CacheOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			model := &gatedModel{ctx: ctx, sb: sb, noGate: true}
			out, dir := runWithOptions(t, ctx, model, pipeline.Options{Sandbox: execAfterEdit{sb}, Baseline: baselines, SmokeOff: tt.off,
				Smoke: eng}, false, cfg)
			if out.Verdict != tt.verdict || out.Smoke != tt.note {
				t.Fatalf("verdict %q (want %q), smoke note %q (want %q); %+v", out.Verdict, tt.verdict, out.Smoke, tt.note, out.Comparison)
			}
			if got := smokeNames(out.Base); !slices.Equal(got, tt.base) {
				t.Errorf("base smoke rows %v, want %v", got, tt.base)
			}
			if got := smokeNames(&out.Verify[len(out.Verify)-1].Run); !slices.Equal(got, tt.head) {
				t.Errorf("change smoke rows %v, want %v", got, tt.head)
			}
			mu.Lock()
			if len(tt.base) > 0 && (len(snapped) == 0 || snapped[0] != pristine) {
				t.Errorf("the base's build context was not the pristine checkout")
			}
			mu.Unlock()
			if builds, removed, closed := eng.Counts(); removed != builds || closed > builds {
				t.Errorf("%d images built, %d removed, %d shadows closed", builds, removed, closed)
			}
			if tt.fixerTold != "" {
				model.mu.Lock()
				told := strings.Join(model.prompts[chat.RoleFixer], "\n")
				model.mu.Unlock()
				if !strings.Contains(told, tt.fixerTold) || out.FixAttempts != 1 {
					t.Errorf("after %d fix rounds the fixer was told:\n%s", out.FixAttempts, told)
				}
			}
			// The baseline is kept under the configuration as it ran: with
			// its smoke stage only when the stage ran.
			base := strings.TrimSpace(gitOut(t, dir, "rev-parse", "HEAD"))
			noSmoke := *cfg
			noSmoke.Smoke = nil
			_, withStage, _ := baselines.Get(verify.Key{Repository: "o/calc", SHA: base, Config: pipeline.BaselineHash(cfg, dir), Image: eventImage})
			_, without, _ := baselines.Get(verify.Key{Repository: "o/calc", SHA: base, Config: pipeline.BaselineHash(&noSmoke, dir), Image: eventImage})
			if ran := tt.off == "" && tt.unavailable == nil; withStage != ran || without == ran {
				t.Errorf("baseline kept with the smoke stage: %v, without: %v", withStage, without)
			}
		})
	}
}
