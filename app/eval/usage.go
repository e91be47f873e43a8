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
	// cache, billed at the cached-input price.
	CachedInput int `json:"cached_input"`
	Output      int `json:"output"`
}

// Pricer prices a model's usage in dollars (a price table per model:
// input, cached input and output per million tokens; *pricing.Table).
type Pricer interface {
	// Cost is the price of u at the first of models with a known price;
	// ok is false when none has one.
	Cost(u chat.Usage, models ...string) (dollars float64, ok bool)
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
	u.CachedInput += resp.Usage.CachedPrompt
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
		c, ok := p.Cost(chat.Usage{Prompt: u.Input, CachedPrompt: u.CachedInput, Completion: u.Output,
			Total: u.Input + u.Output}, model)
		if !ok {
			return nil
		}
		total += c
	}
	return &total
}
