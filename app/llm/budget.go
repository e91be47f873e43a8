package llm

import (
	"fmt"
	"maps"
	"math"
	"sync"

	"github.com/selfcode/selfcode/pipeline/chat"
)

// Budget counts the tokens a job spends and stops calls once the job has
// spent its allowance. It is safe for concurrent use and may be shared by
// several Clients (one job, one budget).
//
// The check happens before a call and the count after it, so calls already
// in flight when the budget runs out can take the total past the maximum.
type Budget struct {
	max int

	mu     sync.Mutex
	used   int
	byRole map[chat.Role]int
}

// NewBudget allows max tokens; max <= 0 means no limit (counting only).
func NewBudget(max int) *Budget {
	return &Budget{max: max, byRole: make(map[chat.Role]int)}
}

// Check returns an error wrapping chat.ErrBudgetExhausted when the tokens
// used have reached the maximum.
func (b *Budget) Check() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used >= b.max {
		return fmt.Errorf("%w: %d of %d tokens used", chat.ErrBudgetExhausted, b.used, b.max)
	}
	return nil
}

// Add counts tokens spent by a call for role; negative counts are ignored.
func (b *Budget) Add(role chat.Role, tokens int) {
	if tokens <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += tokens
	b.byRole[role] += tokens
}

// Used is the total tokens counted.
func (b *Budget) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Max is the allowance; 0 or less means no limit.
func (b *Budget) Max() int { return b.max }

// Remaining is the allowance left, never below 0; math.MaxInt without a limit.
func (b *Budget) Remaining() int {
	if b.max <= 0 {
		return math.MaxInt
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, b.max-b.used)
}

// ByRole is a copy of the tokens counted per role (pipeline phase).
func (b *Budget) ByRole() map[chat.Role]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.byRole)
}
