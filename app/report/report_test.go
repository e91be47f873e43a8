package report_test

import (
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/report"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/templates"
)

// The pull request body lists the blast radius the scope guard computed, or
// says why it could not.
func TestPRBodyListsTheBlastRadius(t *testing.T) {
	tm, err := templates.New(templates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		scope *pipeline.Scope
		want  []string
	}{
		{"packages depend on the change", &pipeline.Scope{BlastRadius: []string{"example.com/m/api", "example.com/m/cmd/tool"}},
			[]string{"## Blast radius", "`example.com/m/api`", "`example.com/m/cmd/tool`"}},
		{"nothing depends on it", &pipeline.Scope{BlastRadius: []string{}}, nil},
		{"not measured", nil, nil},
		{"could not be computed", &pipeline.Scope{BlastRadius: []string{}, Note: "native/lib.rs: code in a language whose imports selfcode does not read"},
			[]string{"## Blast radius", "Not computed: native/lib.rs: code in a language whose imports selfcode does not read."}},
	}
	for _, tt := range tests {
		out := &pipeline.Output{Summary: "Changed it.", Scope: tt.scope}
		rep := templates.Report{JobID: "01j", Repository: "o/r", Issue: 3}
		report.Fill(&rep, out, repoconfig.Default())
		body, err := tm.PRBody(rep)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: PR body lacks %q:\n%s", tt.name, w, body)
			}
		}
		if tt.want == nil && strings.Contains(body, "Blast radius") {
			t.Errorf("%s: PR body has a blast radius section:\n%s", tt.name, body)
		}
	}
}

// Fill keeps what the caller set (job, repository, issue, state) and its
// summary when the pipeline has none; the pipeline's summary, else its
// plan's, wins otherwise.
func TestFillKeepsTheHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		out  *pipeline.Output
		want string
	}{
		{"pipeline summary", &pipeline.Output{Summary: "Did it.", Plan: &pipeline.Plan{Summary: "Plan it."}}, "Did it."},
		{"plan summary", &pipeline.Output{Plan: &pipeline.Plan{Summary: "Plan it."}}, "Plan it."},
		{"none", &pipeline.Output{}, "kept"},
	}
	for _, tt := range tests {
		rep := templates.Report{JobID: "01j", Repository: "o/r", Issue: 3, State: "running", Summary: "kept"}
		report.Fill(&rep, tt.out, repoconfig.Default())
		if rep.JobID != "01j" || rep.Repository != "o/r" || rep.Issue != 3 || rep.State != "running" || rep.Summary != tt.want {
			t.Errorf("%s: %+v", tt.name, rep)
		}
	}
}

// The report names the repository guidance files the model was given.
func TestFillNamesGuidance(t *testing.T) {
	tm, err := templates.New(templates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := templates.Report{JobID: "01j", Repository: "o/r", Issue: 3}
	report.Fill(&rep, &pipeline.Output{Summary: "Changed it.", Guidance: []string{"AGENTS.md", "api/AGENTS.md"}}, repoconfig.Default())
	body, err := tm.PRBody(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "Repository guidance given to the model: `AGENTS.md`, `api/AGENTS.md`") {
		t.Fatalf("PR body does not name the guidance:\n%s", body)
	}
}

// The report's cost: dollars when every call was priced, unknown (with the
// models lacking a price) otherwise, and unknown for tokens counted
// without their kinds.
func TestFillCost(t *testing.T) {
	tests := []struct {
		name string
		out  pipeline.Output
		want templates.Cost
	}{
		{"priced", pipeline.Output{Tokens: 10, Spend: pipeline.Spend{Usage: chat.Usage{Prompt: 8, Completion: 2, Total: 10}, Cost: 0.25}},
			templates.Cost{Dollars: 0.25, Known: true}},
		{"a model without a price", pipeline.Output{Tokens: 10, Spend: pipeline.Spend{Usage: chat.Usage{Total: 10}, Cost: 0.1, Unpriced: []string{"local"}}},
			templates.Cost{Dollars: 0.1, Unpriced: []string{"local"}}},
		{"tokens without kinds", pipeline.Output{Tokens: 42}, templates.Cost{}},
		{"no model use", pipeline.Output{}, templates.Cost{Known: true}},
	}
	for _, tt := range tests {
		rep := templates.Report{}
		report.Fill(&rep, &tt.out, repoconfig.Default())
		if rep.Cost.Dollars != tt.want.Dollars || rep.Cost.Known != tt.want.Known || strings.Join(rep.Cost.Unpriced, ",") != strings.Join(tt.want.Unpriced, ",") {
			t.Errorf("%s: cost %+v, want %+v", tt.name, rep.Cost, tt.want)
		}
	}
}
