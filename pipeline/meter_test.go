package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// usageModel answers every call with the same usage.
type usageModel struct {
	u     chat.Usage
	model string
	calls int
}

func (m *usageModel) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	m.calls++
	return chat.Response{Usage: m.u, Requested: m.model, Model: m.model + "-2025-01-01"}, nil
}

// dayBudget refuses once spent reaches limit tokens, like the installation's
// daily budget.
type dayBudget struct {
	mu      sync.Mutex
	limit   int
	spent   int
	charges []Charge
}

func (b *dayBudget) Allow(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent >= b.limit {
		return &chat.BudgetError{Limit: chat.LimitDailyTokens, Detail: "spent"}
	}
	return nil
}

func (b *dayBudget) Spend(ctx context.Context, c Charge) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent += c.Usage.Total
	b.charges = append(b.charges, c)
}

type prices map[string]float64 // dollars per call

func (p prices) Cost(u chat.Usage, models ...string) (float64, bool) {
	for _, m := range models {
		if d, ok := p[m]; ok {
			return d, true
		}
	}
	return 0, false
}

type costs struct{ priced, unpriced int }

func (c *costs) Edit(string, string) {}
func (c *costs) Verify(string, int)  {}
func (c *costs) Tokens(string, int)  {}
func (c *costs) Cost(_ string, _ float64, priced bool) {
	if priced {
		c.priced++
	} else {
		c.unpriced++
	}
}

// TestMeterChecksEveryCall: every call is checked against the job's
// tokens and the outside budget before it is made, charged to both after
// it with its price, and the run's spend adds up by kind.
func TestMeterChecksEveryCall(t *testing.T) {
	ctx := context.Background()
	u := chat.Usage{Prompt: 80, CachedPrompt: 30, Completion: 20, Total: 100}
	tests := []struct {
		name      string
		max       int
		budget    *dayBudget
		prices    prices
		model     string
		wantCalls int
		wantLimit chat.Limit
		wantCost  float64
		unpriced  bool
	}{
		{"job tokens", 250, nil, prices{"m": 0.5}, "m", 3, chat.LimitJobTokens, 1.5, false},
		{"daily budget before the job's", 1000, &dayBudget{limit: 200}, prices{"m": 0.5}, "m", 2, chat.LimitDailyTokens, 1, false},
		{"priced by the answering model's name", 250, nil, prices{"m-2025-01-01": 0.25}, "m", 3, chat.LimitJobTokens, 0.75, false},
		{"unknown price", 150, nil, prices{}, "other", 2, chat.LimitJobTokens, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &usageModel{u: u, model: tt.model}
			obs := &costs{}
			mt := &meter{m: m, max: tt.max, prices: tt.prices, observer: obs, byPhase: map[string]int{}}
			if tt.budget != nil {
				mt.budget = tt.budget
			}
			var err error
			for range 10 {
				if _, err = mt.Chat(ctx, chat.Request{Role: chat.RoleEditor}); err != nil {
					break
				}
			}
			var be *chat.BudgetError
			if !errors.As(err, &be) || be.Limit != tt.wantLimit || !errors.Is(err, chat.ErrBudgetExhausted) {
				t.Fatalf("err %v, want %s", err, tt.wantLimit)
			}
			if m.calls != tt.wantCalls {
				t.Fatalf("%d calls, want %d", m.calls, tt.wantCalls)
			}
			used, by, spend := mt.snapshot()
			if used != 100*tt.wantCalls || by["editor"] != used {
				t.Fatalf("used %d by phase %v", used, by)
			}
			want := chat.Usage{Prompt: 80 * tt.wantCalls, CachedPrompt: 30 * tt.wantCalls, Completion: 20 * tt.wantCalls, Total: 100 * tt.wantCalls}
			if spend.Usage != want || spend.Cost != tt.wantCost || spend.Known() == tt.unpriced {
				t.Fatalf("spend %+v, want usage %+v cost %v unpriced %v", spend, want, tt.wantCost, tt.unpriced)
			}
			if tt.unpriced && (len(spend.Unpriced) != 1 || spend.Unpriced[0] != tt.model || obs.unpriced != tt.wantCalls) {
				t.Fatalf("unpriced %v, observed %d", spend.Unpriced, obs.unpriced)
			}
			if b := tt.budget; b != nil {
				if len(b.charges) != tt.wantCalls || b.charges[0].Model != tt.model || !b.charges[0].Priced || b.charges[0].Usage != u {
					t.Fatalf("charges %+v", b.charges)
				}
			}
		})
	}
}
