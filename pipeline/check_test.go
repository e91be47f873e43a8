package pipeline_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/testreport"
)

// Check verifies a tree as a job verifies its base: the same inferred
// commands, test by test; kept in the baseline cache under its key, where
// a job on that commit then finds it.
func TestCheckVerifiesATreeAsTheBaseIs(t *testing.T) {
	t.Parallel()
	files := maps.Clone(goRepo)
	files["README.md"] = "This tree is TestCheckVerifiesATreeAsTheBaseIs's own, so its baseline is not cached yet.\n"
	h := newHarness(t, files, "",
		planner(calcPlan),
		editor(call("str_replace", map[string]any{"path": "calc.go", "old_str": "return a - b }\n\n// Sub", "new_str": "return a + b }\n\n// Sub"})),
		editor(call("finish", map[string]any{"summary": "fixed Add"})))
	ctx := context.Background()
	in := pipeline.CheckInput{JobID: "01jcheck", Repository: "o/greeter", Dir: h.dir, Config: h.cfg, Key: h.base}
	first, err := h.p.Check(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached {
		t.Fatal("the first check of a new tree came from the cache")
	}
	var tests *testreport.Report
	for _, c := range first.Run.Commands {
		if c.Tests != nil {
			tests = c.Tests
		}
	}
	if tests == nil || tests.Tests[testreport.ID{Suite: "example.com/calc", Name: "TestAdd"}] != testreport.Fail ||
		tests.Tests[testreport.ID{Suite: "example.com/calc", Name: "TestSub"}] != testreport.Pass {
		t.Fatalf("the check did not read the tests one by one: %+v", first.Run)
	}
	again, err := h.p.Check(ctx, in)
	if err != nil || !again.Cached {
		t.Fatalf("the second check of the same key ran again (cached %v, err %v)", again.Cached, err)
	}
	out, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(first.Run)
	got, _ := json.Marshal(out.Base)
	if string(got) != string(want) {
		t.Fatalf("the job did not take its baseline from the check:\n got %s\nwant %s", got, want)
	}
}

// A setup that fails is in the run (its commands skipped), never kept.
func TestCheckReportsAFailedSetup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, goRepo, "")
	cfg, err := repoconfig.Parse([]byte("setup: [\"exit 3\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := pipeline.CheckInput{JobID: "01jcheckfail", Repository: "o/greeter", Dir: h.dir, Config: cfg, Key: h.base}
	for i := range 2 {
		res, err := h.p.Check(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if _, failed := res.Run.SetupFailed(); !failed || res.Cached {
			t.Fatalf("check %d: setup failed %v, cached %v: %+v", i, failed, res.Cached, res.Run)
		}
		for _, c := range res.Run.Commands {
			if !c.Skipped {
				t.Fatalf("check %d: %s ran after a failed setup", i, c.Name)
			}
		}
	}
}
