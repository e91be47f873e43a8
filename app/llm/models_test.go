package llm_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/internal/fakeopenai"
)

func TestListModels(t *testing.T) {
	t.Parallel()
	fake := newFake(t, fakeopenai.Options{APIKey: testKey})
	c, _ := newClient(t, fake.URL(), nil)
	got, err := c.ListModels(context.Background())
	want := []string{"editor-model", "fixer-model", "planner-model", "reporter-model"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ListModels = %q, %v; want %q", got, err, want)
	}

	bad, sl := newClient(t, fake.URL(), func(o *llm.Options) { o.APIKey = "wrong" })
	if _, err := bad.ListModels(context.Background()); !errors.Is(err, llm.ErrUnauthorized) {
		t.Fatalf("wrong key: %v", err)
	}
	down, _ := newClient(t, "http://127.0.0.1:1/v1", nil)
	if _, err := down.ListModels(context.Background()); !errors.Is(err, llm.ErrConnection) {
		t.Fatalf("no server: %v", err)
	}
	if len(sl.got()) != 0 {
		t.Errorf("ListModels retried: %v", sl.got())
	}
}
