package eval

import (
	"context"
	"sync"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// Usage is the tokens one model took in a task.
type Usage struct {
	Input int `json:"input"` // prompt tokens, cached ones included
	// CachedInput is the part of Input the provider served from its prompt
	// cache. The model client does not report it yet, so it is 0 and
	// every input token is priced as uncached.
	CachedInput int `json:"cached_input"`
	Output      int `json:"output"`
}

// Pricer prices a model's usage in dollars (a price table per model:
// input, cached input and output per million tokens).
type Pricer interface {
	// Cost is the price of u on model; ok is false when the model's price
	// is not known.
	Cost(model string, u Usage) (dollars float64, ok bool)
}

// usageMeter passes calls to a model and adds up each model's usage, by
// the model name its role is configured with.
type usageMeter struct {
	next   chat.Model
	models map[chat.Role]string

	mu sync.Mutex
	by map[string]Usage
}

func newUsageMeter(next chat.Model, models map[chat.Role]string) *usageMeter {
	return &usageMeter{next: next, models: models, by: map[string]Usage{}}
}

func (m *usageMeter) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	resp, err := m.next.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	name := m.models[req.Role]
	if name == "" {
		name = resp.Model
	}
	if name == "" {
		name = string(req.Role)
	}
	m.mu.Lock()
	u := m.by[name]
	u.Input += resp.Usage.Prompt
	u.Output += resp.Usage.Completion
	m.by[name] = u
	m.mu.Unlock()
	return resp, nil
}

func (m *usageMeter) snapshot() map[string]Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.by) == 0 {
		return nil
	}
	out := make(map[string]Usage, len(m.by))
	for k, v := range m.by {
		out[k] = v
	}
	return out
}

// cost prices a task's usage: unknown (nil) without a price table or when
// one of its models has no price; 0 when it used no model at all.
func cost(p Pricer, by map[string]Usage) *float64 {
	if p == nil {
		return nil
	}
	total := 0.0
	for model, u := range by {
		c, ok := p.Cost(model, u)
		if !ok {
			return nil
		}
		total += c
	}
	return &total
}
