package eval

import (
	"context"
	"testing"

	"github.com/selfcode/selfcode/app/pricing"
	"github.com/selfcode/selfcode/pipeline/chat"
)

type replies struct{}

func (replies) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	return chat.Response{Usage: chat.Usage{Prompt: 100, CachedPrompt: 40, Completion: 10, Total: 110}, Model: "served-" + string(req.Role)}, nil
}

// prices: dollars per token, uncached input and output alike; cached input
// is free.
type prices map[string]float64

func (p prices) Cost(u chat.Usage, models ...string) (float64, bool) {
	d, ok := p[models[0]]
	return d * float64(u.Prompt-u.CachedPrompt+u.Completion), ok
}

func TestUsageByModelAndCost(t *testing.T) {
	t.Parallel()
	m := newUsageMeter(replies{}, map[chat.Role]string{chat.RolePlanner: "big", chat.RoleEditor: "small", chat.RoleFixer: "small"})
	for _, r := range []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer, chat.RoleReporter} {
		if _, err := m.Chat(context.Background(), chat.Request{Role: r}); err != nil {
			t.Fatal(err)
		}
	}
	by := m.snapshot()
	if by["big"] != (Usage{Input: 100, CachedInput: 40, Output: 10}) || by["small"] != (Usage{Input: 200, CachedInput: 80, Output: 20}) ||
		by["served-reporter"] != (Usage{Input: 100, CachedInput: 40, Output: 10}) || len(by) != 3 {
		t.Fatalf("usage by model %+v", by)
	}
	if c := cost(nil, by); c != nil {
		t.Fatalf("without a price table the cost is %v, want unknown", *c)
	}
	if c := cost(prices{"big": 1, "small": 0.5}, by); c != nil {
		t.Fatalf("a model without a price gave a cost of %v, want unknown", *c)
	}
	c := cost(prices{"big": 1, "small": 0.5, "served-reporter": 0}, by)
	if c == nil || *c != 70+70 {
		t.Fatalf("cost %v, want 140", c)
	}
	// The server's own price table fits, and prices cached input apart.
	table := pricing.New(map[string]pricing.Price{"big": {Input: 1e6, CachedInput: 0, Output: 1e6}, "small": {Input: 1e6, Output: 1e6}, "served-reporter": {}})
	if c := cost(table, by); c == nil || *c != 70+140 {
		t.Fatalf("cost at the price table %v, want 210", c)
	}
	if c := cost(prices{}, nil); c == nil || *c != 0 {
		t.Fatalf("no model used: cost %v, want 0", c)
	}
}
