package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 3, 10, 2, 0, 0, 0, time.UTC)
	c := New(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("Now = %v", c.Now())
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Add(time.Minute); _ = c.Now() })
	}
	wg.Wait()
	if want := t0.Add(10 * time.Minute); !c.Now().Equal(want) {
		t.Fatalf("after 10 Adds: %v, want %v", c.Now(), want)
	}
	c.Set(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("after Set: %v", c.Now())
	}
}
