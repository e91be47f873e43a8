package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// Budget is a job's share of budgets kept outside it (its installation's
// model tokens and dollars for the day): asked before every model call,
// and told every call's use as it happens, so that concurrent jobs see
// each other's.
type Budget interface {
	// Allow returns an error wrapping a *chat.BudgetError when a budget is
	// spent (any other error fails the call).
	Allow(ctx context.Context) error
	// Spend counts one call.
	Spend(ctx context.Context, c Charge)
}

// Charge is one model call's use.
type Charge struct {
	Role chat.Role
	// Model is the model asked for (the one the price is looked up by
	// first); Served the one that answered.
	Model, Served string
	Usage         chat.Usage
	// Cost is the call's price in dollars when Priced; a model without a
	// price leaves the cost unknown.
	Cost   float64
	Priced bool
}

// Pricer prices a call's tokens by the first of models it has a price
// for (*pricing.Table).
type Pricer interface {
	Cost(u chat.Usage, models ...string) (dollars float64, ok bool)
}

// Spend is what a run's model calls used and cost.
type Spend struct {
	Usage chat.Usage
	// Cost is the dollars of the priced calls; when Unpriced names any
	// model, the run's cost is unknown.
	Cost     float64
	Unpriced []string
}

// Known reports whether Cost is the whole run's cost.
func (s Spend) Known() bool { return len(s.Unpriced) == 0 }

// Cost is the run's cost in dollars; known only when every call was priced
// and every token counted by kind (a pipeline that does not meter its
// calls may report tokens without them).
func (o *Output) Cost() (dollars float64, known bool) {
	return o.Spend.Cost, o.Spend.Known() && o.Spend.Usage.Total >= o.Tokens
}

// meter wraps a model with the job's budgets: a call is refused once the
// job's own tokens (limits.max_tokens) or an outside budget is spent, and
// every call's usage (from the API) is counted per phase and priced.
type meter struct {
	m        chat.Model
	max      int
	budget   Budget // may be nil
	prices   Pricer // may be nil: every call's cost is unknown
	observer Observer
	clock    *partClock // may be nil

	mu      sync.Mutex
	used    int
	byPhase map[string]int
	calls   int
	spend   Spend
}

// MeterOptions configures Metered.
type MeterOptions struct {
	Budget   Budget   // may be nil: no outside budget
	Prices   Pricer   // may be nil: every call's cost is unknown
	Observer Observer // may be nil
}

// Metered wraps m the way a job's model is wrapped, for model calls made
// outside a job (the morning report's narrative): every call is first
// allowed by the budget (refused with a *chat.BudgetError once it is
// spent), then priced, told to the observer (/metrics) and charged to the
// budget.
func Metered(m chat.Model, o MeterOptions) chat.Model {
	return &meter{m: m, budget: o.Budget, prices: o.Prices, observer: o.Observer, byPhase: map[string]int{}}
}

func (t *meter) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	if err := t.allow(ctx); err != nil {
		return chat.Response{}, err
	}
	if t.clock != nil {
		defer t.clock.since(stage.PartModel, t.clock.now())
	}
	resp, err := t.m.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	u := resp.Usage
	if u.Total == 0 {
		u.Total = u.Prompt + u.Completion
	}
	c := Charge{Role: req.Role, Model: resp.Requested, Served: resp.Model, Usage: u}
	if c.Model == "" {
		c.Model = resp.Model
	}
	if t.prices != nil {
		c.Cost, c.Priced = t.prices.Cost(u, resp.Requested, resp.Model)
	}
	t.mu.Lock()
	t.used += u.Total
	t.byPhase[string(req.Role)] += u.Total
	t.calls++
	t.spend.Usage = t.spend.Usage.Add(u)
	if c.Priced {
		t.spend.Cost += c.Cost
	} else if !slices.Contains(t.spend.Unpriced, c.Model) {
		t.spend.Unpriced = append(t.spend.Unpriced, c.Model)
	}
	t.mu.Unlock()
	if t.observer != nil {
		t.observer.Tokens(string(req.Role), u.Total)
		t.observer.Cost(c.Model, c.Cost, c.Priced)
	}
	if t.budget != nil {
		t.budget.Spend(ctx, c)
	}
	return resp, nil
}

// allow refuses a call once the job's tokens are used, then asks the
// outside budget.
func (t *meter) allow(ctx context.Context) error {
	t.mu.Lock()
	used := t.used
	t.mu.Unlock()
	if t.max > 0 && used >= t.max {
		return &chat.BudgetError{Limit: chat.LimitJobTokens, Detail: fmt.Sprintf("%d of %d tokens used", used, t.max)}
	}
	if t.budget != nil {
		return t.budget.Allow(ctx)
	}
	return nil
}

func (t *meter) snapshot() (int, map[string]int, Spend) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spend
	s.Unpriced = slices.Clone(s.Unpriced)
	return t.used, maps.Clone(t.byPhase), s
}
