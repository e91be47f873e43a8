package keyedlock

import (
	"context"
	"errors"
	"testing"
)

func TestLocks(t *testing.T) {
	t.Parallel()
	var l Locks
	ctx := context.Background()
	unlockA, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another key is free while a is held.
	unlockB, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockB()
	// A second holder of a waits; a canceled wait fails with the context's error.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Lock(canceled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock on a held key with a canceled context = %v", err)
	}
	got := make(chan struct{})
	go func() {
		unlock, err := l.Lock(ctx, "a")
		if err == nil {
			unlock()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a was taken twice")
	default:
	}
	unlockA()
	<-got // the waiter gets it once released (bounded by the test timeout)
}
