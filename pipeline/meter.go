package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// meter wraps a model with the job's token budget: a call is refused once
// the budget is spent, and every call's usage (from the API) is counted per
// phase.
type meter struct {
	m        chat.Model
	max      int
	observer func(phase string, tokens int)
	clock    *partClock // may be nil

	mu      sync.Mutex
	used    int
	byPhase map[string]int
	calls   int
}

func newMeter(m chat.Model, max int, observer func(string, int), clock *partClock) *meter {
	return &meter{m: m, max: max, observer: observer, clock: clock, byPhase: map[string]int{}}
}

func (t *meter) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	t.mu.Lock()
	if t.max > 0 && t.used >= t.max {
		used := t.used
		t.mu.Unlock()
		return chat.Response{}, fmt.Errorf("%w: %d of %d tokens used", chat.ErrBudgetExhausted, used, t.max)
	}
	t.mu.Unlock()
	if t.clock != nil {
		defer t.clock.since(stage.PartModel, t.clock.now())
	}
	resp, err := t.m.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	n := resp.Usage.Total
	if n == 0 {
		n = resp.Usage.Prompt + resp.Usage.Completion
	}
	t.mu.Lock()
	t.used += n
	t.byPhase[string(req.Role)] += n
	t.calls++
	t.mu.Unlock()
	if t.observer != nil {
		t.observer(string(req.Role), n)
	}
	return resp, nil
}

func (t *meter) snapshot() (int, map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.byPhase))
	for k, v := range t.byPhase {
		out[k] = v
	}
	return t.used, out
}
