package pricing

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// Price is what a model's tokens cost, in dollars per million tokens.
type Price struct {
	Input       float64 // prompt tokens not served from the prompt cache
	CachedInput float64 // prompt tokens served from the prompt cache
	Output      float64 // completion tokens (reasoning tokens included)
}

// Defaults are OpenAI's list prices (standard tier, August 2025) of the
// models selfcode is most often run with. Prices change: an operator whose
// bill matters sets SELFCODE_MODEL_PRICES, which wins over these.
func Defaults() map[string]Price {
	return map[string]Price{
		"gpt-5":        {Input: 1.25, CachedInput: 0.125, Output: 10},
		"gpt-5-mini":   {Input: 0.25, CachedInput: 0.025, Output: 2},
		"gpt-5-nano":   {Input: 0.05, CachedInput: 0.005, Output: 0.40},
		"gpt-4.1":      {Input: 2, CachedInput: 0.50, Output: 8},
		"gpt-4.1-mini": {Input: 0.40, CachedInput: 0.10, Output: 1.60},
		"gpt-4.1-nano": {Input: 0.10, CachedInput: 0.025, Output: 0.40},
		"gpt-4o":       {Input: 2.50, CachedInput: 1.25, Output: 10},
		"gpt-4o-mini":  {Input: 0.15, CachedInput: 0.075, Output: 0.60},
		"o1":           {Input: 15, CachedInput: 7.50, Output: 60},
		"o3":           {Input: 2, CachedInput: 0.50, Output: 8},
		"o3-mini":      {Input: 1.10, CachedInput: 0.55, Output: 4.40},
		"o4-mini":      {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	}
}

// Table is a price per model name. It is not changed after New, so it is
// safe for concurrent use.
type Table struct{ prices map[string]Price }

// New builds the table: the defaults, with overrides on top (an override
// replaces a default of the same name).
func New(overrides map[string]Price) *Table {
	p := Defaults()
	maps.Copy(p, overrides)
	return &Table{prices: p}
}

// snapshot is the date suffix of a model snapshot's name:
// gpt-4o-2024-08-06, gpt-4-0613.
var snapshot = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{4})$`)

// Lookup finds model's price: its own entry, else, for a dated snapshot
// (gpt-4o-2024-08-06), the entry of the name without the date. Any other
// name the table does not hold has no price.
func (t *Table) Lookup(model string) (Price, bool) {
	if p, ok := t.prices[model]; ok {
		return p, true
	}
	if base := snapshot.ReplaceAllString(model, ""); base != model {
		p, ok := t.prices[base]
		return p, ok
	}
	return Price{}, false
}

// Has reports whether model has a price (Lookup finds one).
func (t *Table) Has(model string) bool {
	_, ok := t.Lookup(model)
	return ok
}

// Cost is what u cost in dollars at the price of the first of models the
// table knows (the model the call asked for, then the one that answered).
// ok is false when none has a price, or when the usage does not say how
// many tokens were prompt and completion: the cost is then unknown.
func (t *Table) Cost(u chat.Usage, models ...string) (dollars float64, ok bool) {
	if u.Total > 0 && u.Prompt+u.Completion == 0 {
		return 0, false
	}
	for _, m := range models {
		if p, found := t.Lookup(m); found {
			cached := min(max(u.CachedPrompt, 0), u.Prompt)
			return (float64(u.Prompt-cached)*p.Input + float64(cached)*p.CachedInput + float64(u.Completion)*p.Output) / 1e6, true
		}
	}
	return 0, false
}

// Parse reads a price list, SELFCODE_MODEL_PRICES:
// "MODEL=INPUT,CACHED_INPUT,OUTPUT" entries in dollars per million tokens,
// separated by semicolons (blank entries are ignored), e.g.
// "gpt-4.1=2,0.5,8; my-local-model=0,0,0".
func Parse(s string) (map[string]Price, error) {
	out := map[string]Price{}
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, list, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		nums := strings.Split(list, ",")
		if !ok || name == "" || strings.ContainsAny(name, " \t,") || len(nums) != 3 {
			return nil, fmt.Errorf("price %q: want MODEL=INPUT,CACHED_INPUT,OUTPUT in dollars per million tokens, e.g. gpt-4.1=2,0.5,8", entry)
		}
		var v [3]float64
		for i, n := range nums {
			f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				return nil, fmt.Errorf("price %q: %q is not a price (a number of dollars, zero or more)", entry, strings.TrimSpace(n))
			}
			v[i] = f
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("price of %s is set twice", name)
		}
		out[name] = Price{Input: v[0], CachedInput: v[1], Output: v[2]}
	}
	return out, nil
}
