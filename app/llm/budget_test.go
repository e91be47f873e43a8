package llm

import (
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/selfcode/selfcode/pipeline/chat"
)

func TestBudget(t *testing.T) {
	tests := []struct {
		name          string
		max           int
		adds          []int
		wantUsed      int
		wantRemaining int
		wantExhausted bool
	}{
		{"fresh", 100, nil, 0, 100, false},
		{"under", 100, []int{30, 69}, 99, 1, false},
		{"exactly at max", 100, []int{60, 40}, 100, 0, true},
		{"over", 100, []int{150}, 150, 0, true},
		{"negative counts ignored", 100, []int{-50, 10}, 10, 90, false},
		{"unlimited", 0, []int{1 << 30}, 1 << 30, math.MaxInt, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.max)
			for _, n := range tt.adds {
				b.Add(chat.RoleEditor, n)
			}
			err := b.Check()
			if got := errors.Is(err, chat.ErrBudgetExhausted); got != tt.wantExhausted {
				t.Errorf("Check() = %v, want exhausted %v", err, tt.wantExhausted)
			}
			if b.Used() != tt.wantUsed || b.Remaining() != tt.wantRemaining {
				t.Errorf("Used %d, Remaining %d; want %d, %d", b.Used(), b.Remaining(), tt.wantUsed, tt.wantRemaining)
			}
		})
	}
}

func TestBudgetConcurrentAdds(t *testing.T) {
	b := NewBudget(0)
	roles := []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer, chat.RoleReporter}
	var wg sync.WaitGroup
	for _, r := range roles {
		wg.Go(func() {
			for range 1000 {
				b.Add(r, 2)
				_ = b.Check()
				_ = b.ByRole()
			}
		})
	}
	wg.Wait()
	if b.Used() != 8000 {
		t.Errorf("Used = %d, want 8000", b.Used())
	}
	by := b.ByRole()
	for _, r := range roles {
		if by[r] != 2000 {
			t.Errorf("ByRole[%s] = %d, want 2000", r, by[r])
		}
	}
	by[chat.RolePlanner] = -1
	if b.ByRole()[chat.RolePlanner] != 2000 {
		t.Error("ByRole returned the live map")
	}
}
