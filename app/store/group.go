package store

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Group commit: deliveries that arrive while a write transaction commits
// wait for it, then all commit together in the next one — one fsync for
// all of them, and no timer. bbolt's own Batch instead waits a fixed window
// before every commit; under load that window is idle disk time, and at
// low load it is added to every answer (docs/benchmarks.md).

// grouped is one function waiting for its group's commit.
type grouped struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// committer runs the groups; at most one loop runs at a time.
type committer struct {
	mu      sync.Mutex
	pending []*grouped
	running bool
}

// group runs fn in a write transaction shared with the functions that are
// waiting at the same time, and returns fn's error or the commit's. Like
// bbolt's Batch, fn may run more than once (when another function of its
// group fails, the rest run again without it), so it must reset what it
// records at each call.
func (s *Store) group(fn func(*bolt.Tx) error) error {
	g := &grouped{fn: fn, done: make(chan error, 1)}
	c := &s.commits
	c.mu.Lock()
	c.pending = append(c.pending, g)
	start := !c.running
	c.running = true
	c.mu.Unlock()
	if start {
		go s.commitLoop()
	}
	return classify(<-g.done)
}

// commitLoop commits what is pending until nothing is.
func (s *Store) commitLoop() {
	c := &s.commits
	for {
		c.mu.Lock()
		gs := c.pending
		c.pending = nil
		if len(gs) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		s.commitGroup(gs)
	}
}

// commitGroup runs gs in one transaction. When one of them fails, the
// transaction is rolled back: that one runs alone for its own answer and
// the others run again together.
func (s *Store) commitGroup(gs []*grouped) {
	for len(gs) > 0 {
		failed := -1
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, g := range gs {
				if err := safely(g.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, g := range gs {
				g.done <- err
			}
			return
		}
		bad := gs[failed]
		gs = append(gs[:failed:failed], gs[failed+1:]...)
		if len(gs) == 0 {
			bad.done <- err
			return
		}
		bad.done <- s.db.Update(func(tx *bolt.Tx) error { return safely(bad.fn, tx) })
	}
}

// safely runs fn, turning a panic into its error.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in a store transaction: %v", p)
		}
	}()
	return fn(tx)
}
