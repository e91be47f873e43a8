package overnight_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline"
)

// lazyPipeline lets the test build the pipeline once the fake model runs;
// before, when set, sees each run's input first.
type lazyPipeline struct {
	p      *pipeline.Pipeline
	before func(in pipeline.Input)
}

func (l *lazyPipeline) Run(ctx context.Context, in pipeline.Input) (*pipeline.Output, error) {
	if l.before != nil {
		l.before(in)
	}
	return l.p.Run(ctx, in)
}

func planTouching(path string) string {
	b, _ := json.Marshal(map[string]any{"summary": "change " + path, "risks": []string{}, "questions": []string{},
		"steps": []any{map[string]any{"id": "1", "title": "edit", "acceptance": []string{},
			"files": []any{map[string]string{"path": path, "action": "modify", "purpose": "change it"}}}}})
	return string(b)
}

// A plan too wide even after one narrower try is SKIPPED with the blast
// radius in the report; a repository with `enabled: false` ends canceled with
// a reply saying why. Both run the real pipeline engine (no sandbox is
// needed: neither gets to verification).
func TestSkippedJobsInTheReport(t *testing.T) {
	t.Parallel()
	layered := map[string]string{
		".selfcode.yml":    "limits: {blast_radius: 1}\n",
		"go.mod":           "module example.com/layers\n\ngo 1.22\n",
		"a/a.go":           "package a\n\nfunc A() int { return 1 }\n",
		"b/b.go":           "package b\n\nimport \"example.com/layers/a\"\n\nfunc B() int { return a.A() }\n",
		"c/c.go":           "package c\n\nimport \"example.com/layers/b\"\n\nfunc C() int { return b.B() }\n",
		"cmd/tool/main.go": "package main\n\nimport \"example.com/layers/c\"\n\nfunc main() { _ = c.C() }\n",
	}
	disabled := map[string]string{".selfcode.yml": "enabled: false\n", "README.md": "off\n"}
	eng := &lazyPipeline{}
	recv := newReceiver(t, 0)
	h := newHarness(t, eng, []string{"SELFCODE_REPORT_WEBHOOK_URL=" + recv.srv.URL},
		map[string]map[string]string{"alpha": disabled, "beta": layered},
		fakeopenai.Step{Role: "planner", Content: planTouching("a/a.go")},
		fakeopenai.Step{Role: "planner", Content: planTouching("b/b.go")},
		fakeopenai.Step{Role: "reporter", Content: "One sentence only."})
	eng.p = realPipeline(t, h, nil)

	a1 := h.Issue("alpha", "Turn it off", "selfcode:overnight")
	b1 := h.Issue("beta", "Change A everywhere", "selfcode:overnight")
	ida := h.Label("labeled", "alpha", a1, "selfcode:overnight", "Turn it off")
	idb := h.Label("labeled", "beta", b1, "selfcode:overnight", "Change A everywhere")
	h.clk.Set(windowStart.Add(time.Second))
	h.Eventually("both jobs to end", func() bool { return h.Job(ida).State.Terminal() && h.Job(idb).State.Terminal() })

	ja, jb := h.Job(ida), h.Job(idb)
	if ja.State != job.StateCanceled || !strings.Contains(ja.Reason, "enabled: false") {
		t.Fatalf("disabled repository: %s %q", ja.State, ja.Reason)
	}
	replies := 0
	for _, c := range h.Comments("alpha", a1, "selfcode is disabled for this repository") {
		if strings.HasPrefix(c, "selfcode is disabled") {
			replies++
		}
	}
	if replies != 1 {
		t.Fatalf("no reply saying why on the disabled repository's issue: %+v", h.GitHub.Comments(owner, "alpha", a1))
	}
	if jb.State != job.StateCanceled || !strings.Contains(jb.Reason, "blast radius is 2 packages (limit 1)") {
		t.Fatalf("too wide: %s %q", jb.State, jb.Reason)
	}
	if len(h.Comments("beta", b1, "example.com/layers/cmd/tool")) == 0 {
		t.Fatal("the skip reply does not list the blast radius")
	}

	h.clk.Set(windowStart.Add(6*time.Hour + time.Second))
	var body []byte
	select {
	case body = <-recv.got:
	case <-time.After(60 * time.Second):
		t.Fatalf("no report\n%s", h.Logs())
	}
	rep := validate(t, body)
	ra, rb := runFor(t, rep, "alpha", a1), runFor(t, rep, "beta", b1)
	if ra.Outcome != "SKIPPED" || !strings.Contains(ra.Narrative, "enabled: false") {
		t.Fatalf("disabled run %+v", ra)
	}
	if rb.Outcome != "SKIPPED" || !strings.Contains(rb.Narrative, "blast radius is 2 packages (limit 1)") ||
		!strings.Contains(rb.Narrative, "example.com/layers/c") || rb.Steps[0].Step != "plan" || rb.Steps[0].Status != "fail" ||
		!strings.Contains(rb.NextSuggestedTarget, "narrower") || len(rb.TargetFiles) != 1 || rb.TargetFiles[0] != "b/b.go" {
		t.Fatalf("too-wide run %+v", rb)
	}
	// The reporter answered one sentence: out of bounds, so the plain narrative.
	if strings.Contains(rep.Narrative, "One sentence only") || !strings.Contains(rep.Narrative, "2 were skipped") {
		t.Fatalf("narrative %q", rep.Narrative)
	}
}
