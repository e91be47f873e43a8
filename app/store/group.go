package store

import (
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit: deliveries that arrive while a write transaction commits
// share the next one — one fsync for all of them. A lone delivery commits
// at once. Under load (other deliveries in the group already, or announced
// by the webhook with Expect and still being read and decoded) a group
// stays open for more until Options.GroupWait has passed since its first
// delivery arrived, or it holds maxGroup. The window runs while the
// previous group commits, as bbolt's Batch's does, so a busy disk is never
// left idle waiting for it; unlike Batch's, nobody waits for it at low load
// (docs/benchmarks.md).

// DefaultGroupWait is how long a group under load stays open.
const DefaultGroupWait = 2 * time.Millisecond

// maxGroup closes a group at once when it is this large.
const maxGroup = 256

// grouped is one function waiting for its group's commit.
type grouped struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// committer runs the groups; at most one loop runs at a time.
type committer struct {
	mu       sync.Mutex
	pending  []*grouped
	opened   time.Time // when the first of pending arrived
	running  bool
	expected int           // announced deliveries not yet pending or given up
	nudge    chan struct{} // signalled when pending grows or expected falls
	wait     time.Duration // Options.GroupWait
	max      int           // maxGroup; smaller in tests
	open     bool          // gather is keeping a group open
}

// Arrival is a delivery announced to the group commit before its
// submission: it keeps an open group waiting for it (within GroupWait).
// Hand it to Submit in Submission.Arrival, or Cancel it when the delivery
// will not be submitted. Both are safe to do more than once.
type Arrival struct {
	c    *committer
	once sync.Once
}

// Expect announces a delivery that is on its way to Submit.
func (s *Store) Expect() *Arrival {
	c := &s.commits
	c.mu.Lock()
	c.expected++
	c.mu.Unlock()
	return &Arrival{c: c}
}

// Cancel withdraws the announcement; a nil Arrival is allowed.
func (a *Arrival) Cancel() {
	if a == nil {
		return
	}
	a.c.mu.Lock()
	a.landLocked()
	a.c.mu.Unlock()
}

// landLocked ends the announcement, with c.mu held.
func (a *Arrival) landLocked() {
	a.once.Do(func() {
		a.c.expected--
		a.c.poke()
	})
}

// poke wakes a gathering commit loop, if one waits.
func (c *committer) poke() {
	select {
	case c.nudge <- struct{}{}:
	default:
	}
}

// group runs fn in a write transaction shared with the functions that are
// waiting at the same time, and returns fn's error or the commit's. Like
// bbolt's Batch, fn may run more than once (when another function of its
// group fails, the rest run again without it), so it must reset what it
// records at each call.
func (s *Store) group(a *Arrival, fn func(*bolt.Tx) error) error {
	g := &grouped{fn: fn, done: make(chan error, 1)}
	c := &s.commits
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.opened = time.Now()
	}
	c.pending = append(c.pending, g)
	if a != nil && a.c == c {
		a.landLocked()
	}
	c.poke()
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
		c.gather()
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

// gather keeps the pending group open, with c.mu held, while it is under
// load, not full, and younger than c.wait.
func (c *committer) gather() {
	if c.wait <= 0 || len(c.pending) == 0 {
		return
	}
	var timer *time.Timer
	for len(c.pending) < c.max && (c.expected > 0 || len(c.pending) > 1) {
		left := c.wait - time.Since(c.opened)
		if left <= 0 {
			return
		}
		if timer == nil {
			timer = time.NewTimer(left)
			defer timer.Stop()
		}
		c.open = true
		c.mu.Unlock()
		select {
		case <-c.nudge:
			c.mu.Lock()
		case <-timer.C:
			c.mu.Lock()
			c.open = false
			return
		}
		c.open = false
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
