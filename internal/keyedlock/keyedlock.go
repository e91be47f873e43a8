// Package keyedlock serialises work per key (a repository, a mirror): one
// holder per key at a time, and a waiter gives up when its context ends.
package keyedlock

import (
	"context"
	"fmt"
	"sync"
)

// Locks is a set of locks by key. The zero value is ready to use; it must
// not be copied after first use.
type Locks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Lock takes key's lock, waiting until it is free or ctx ends; the error
// then wraps ctx.Err(). The returned func releases the lock.
func (l *Locks) Lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]chan struct{}{}
	}
	ch, ok := l.m[key]
	if !ok {
		ch = make(chan struct{}, 1)
		l.m[key] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the lock of %s: %w", key, ctx.Err())
	}
}
