package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/prompts"
)

// The baseline cache's key covers the setup steps and verify commands as
// they run, inferred ones included (there is no .selfcode.yml here): the
// same commit checked with other inferred commands — as after a change to
// inference — is checked again, never answered with a run of the old
// commands; checked with the same ones, it comes from the cache.
func TestBaselineKeyCoversInferredCommands(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ps, err := prompts.Load(prompts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, baselines := setupJob(t)
	sb := newEventSandbox(false)
	p, err := pipeline.New(pipeline.Options{Model: &gatedModel{}, Prompts: ps, Sandbox: sb, Baseline: baselines})
	if err != nil {
		t.Fatal(err)
	}
	dir, base := gitRepo(t, goRepo)
	check := func(what string, cached bool) {
		t.Helper()
		res, err := p.Check(ctx, pipeline.CheckInput{JobID: "01jkey", Repository: "o/calc", Dir: dir, Key: base})
		if err != nil {
			t.Fatal(err)
		}
		if res.Cached != cached {
			t.Errorf("%s: from the cache %v, want %v", what, res.Cached, cached)
		}
	}
	check("first check", false)
	check("the same commands", true)
	// The same commit (Key), now inferred to have a JavaScript test too.
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"scripts": {"test": "node --test"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("other inferred commands", false)
	check("those commands again", true)
}
