package pipeline

import (
	"strings"
	"testing"
)

func TestResumeProgress(t *testing.T) {
	plan := &Plan{Summary: "s", Steps: []PlanStep{
		{ID: "1", Title: "Fix greet", Files: []PlanFile{{Path: "greet.go", Action: "modify"}}},
		{ID: "2", Title: "Add a test", Files: []PlanFile{{Path: "greet_test.go", Action: "create"}, {Path: "greet.go", Action: "modify"}}},
		{ID: "3", Title: "Run the tests"},
	}}
	tests := []struct {
		name       string
		r          Resume
		done, left []string
		text       []string
	}{
		{"part done", Resume{Plan: plan, Changed: []string{"greet.go"}, Summary: "fixed greet"}, []string{"1"}, []string{"2", "3"},
			[]string{"Files changed so far: greet.go", "Steps done:\n- 1. Fix greet", "Steps left:\n- 2. Add a test\n- 3. Run the tests", "What it said it did: fixed greet"}},
		{"all files done", Resume{Plan: plan, Changed: []string{"greet.go", "greet_test.go"}}, []string{"1", "2"}, []string{"3"}, nil},
		{"nothing changed", Resume{Plan: plan}, nil, []string{"1", "2", "3"}, []string{"No file was changed yet."}},
		{"no plan", Resume{Changed: []string{"a.go"}}, nil, nil, []string{"Files changed so far: a.go"}},
	}
	ids := func(steps []PlanStep) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.ID)
		}
		return out
	}
	for _, tt := range tests {
		done, left := tt.r.Steps()
		if strings.Join(ids(done), ",") != strings.Join(tt.done, ",") || strings.Join(ids(left), ",") != strings.Join(tt.left, ",") {
			t.Errorf("%s: done %v left %v", tt.name, ids(done), ids(left))
		}
		text := tt.r.Progress()
		for _, w := range tt.text {
			if !strings.Contains(text, w) {
				t.Errorf("%s: progress lacks %q:\n%s", tt.name, w, text)
			}
		}
	}
}
