package store

import (
	"errors"
	"fmt"
	"github.com/selfcode/selfcode/internal/poll"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/errs"
)

// Functions waiting at the same time commit together; one that fails or
// panics gets its own error and rolls back only its own writes: the others
// commit.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	s, _, _ := open(t)
	bucket := []byte("group-test")
	if err := s.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	errBad := errors.New("bad")
	const n = 40
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.group(nil, func(tx *bolt.Tx) error {
				if err := tx.Bucket(bucket).Put([]byte(fmt.Sprint(i)), []byte("x")); err != nil {
					return err
				}
				switch i % 10 {
				case 3:
					return errs.E(errs.KindConflict, "conflict", errBad)
				case 7:
					panic("boom")
				}
				return nil
			})
		}()
	}
	wg.Wait()
	err := s.view(func(tx *bolt.Tx) error {
		for i := 0; i < n; i++ {
			stored := tx.Bucket(bucket).Get([]byte(fmt.Sprint(i))) != nil
			switch i % 10 {
			case 3:
				if !errors.Is(results[i], errBad) || stored {
					t.Errorf("%d: error %v, stored %v; want its own error and nothing stored", i, results[i], stored)
				}
			case 7:
				if results[i] == nil || stored {
					t.Errorf("%d: panic gave error %v, stored %v", i, results[i], stored)
				}
			default:
				if results[i] != nil || !stored {
					t.Errorf("%d: error %v, stored %v; want committed", i, results[i], stored)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Asking for work when there is none writes nothing (no fsync to hold up
// intake): an empty lane's Lease and a Promote with nothing due are
// answered read-only.
func TestIdleAsksWriteNothing(t *testing.T) {
	t.Parallel()
	s, clk, _ := open(t)
	ctx := t.Context()
	writes := func() int64 { st := s.db.Stats(); return st.TxStats.GetWrite() }
	before := writes()
	for i := 0; i < 5; i++ {
		if j, err := s.Lease(ctx, LanePipeline, "w", time.Minute); err != nil || j != nil {
			t.Fatalf("lease: %v %v", j, err)
		}
		if p, err := s.Promote(ctx, clk.Now(), PromoteOptions{}); err != nil || len(p.Promoted) != 0 {
			t.Fatalf("promote: %+v %v", p, err)
		}
	}
	if after := writes(); after != before {
		t.Errorf("%d page writes while idle", after-before)
	}
}

// groupStore opens a store whose groups stay open an hour under load and
// close at max: a test sees which deliveries shared a commit without
// racing the window.
func groupStore(t *testing.T, max int) (*Store, []byte) {
	t.Helper()
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "selfcode.db"), GroupWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.commits.max = max
	bucket := []byte("group-test")
	if err := s.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	return s, bucket
}

// put is a grouped write that reports the transaction it ran in.
func put(s *Store, a *Arrival, bucket []byte, key string, tx *int) error {
	return s.group(a, func(t *bolt.Tx) error {
		*tx = t.ID()
		return t.Bucket(bucket).Put([]byte(key), []byte("x"))
	})
}

func TestGroupWindow(t *testing.T) {
	t.Parallel()
	t.Run("a lone delivery commits at once", func(t *testing.T) {
		t.Parallel()
		s, bucket := groupStore(t, maxGroup)
		var tx int
		if err := put(s, nil, bucket, "lone", &tx); err != nil {
			t.Fatal(err) // with the hour-long window applied, this would never return
		}
	})
	t.Run("deliveries under load share one commit", func(t *testing.T) {
		t.Parallel()
		const n = 8
		s, bucket := groupStore(t, n)
		c := &s.commits
		locked := func(f func() bool) func() bool {
			return func() bool { c.mu.Lock(); defer c.mu.Unlock(); return f() }
		}
		// A first delivery holds the commit loop inside its transaction
		// while n-1 more arrive. When it is done, the loop must keep their
		// group open (under load) for the last one instead of committing.
		release, inside := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- s.group(nil, func(*bolt.Tx) error { close(inside); <-release; return nil })
		}()
		<-inside
		txs := make([]int, n)
		var wg sync.WaitGroup
		deliver := func(i int) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := put(s, nil, bucket, fmt.Sprint(i), &txs[i]); err != nil {
					t.Error(err)
				}
			}()
		}
		for i := range n - 1 {
			deliver(i)
		}
		poll.Until(t, "n-1 deliveries waiting for the next commit", 30*time.Second, locked(func() bool { return len(c.pending) == n-1 }))
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		poll.Until(t, "their group held open", 30*time.Second, locked(func() bool { return c.open && len(c.pending) == n-1 }))
		deliver(n - 1)
		wg.Wait()
		for i, tx := range txs {
			if tx != txs[0] {
				t.Fatalf("delivery %d committed in transaction %d, delivery 0 in %d: want one commit for all", i, tx, txs[0])
			}
		}
	})
	t.Run("an announced delivery holds the group open until it lands or is withdrawn", func(t *testing.T) {
		t.Parallel()
		s, bucket := groupStore(t, maxGroup)
		a := s.Expect()
		var tx int
		done := make(chan error, 1)
		go func() { done <- put(s, nil, bucket, "early", &tx) }()
		pending := func() int { s.commits.mu.Lock(); defer s.commits.mu.Unlock(); return len(s.commits.pending) }
		poll.Until(t, "the early delivery to wait in the open group", 30*time.Second, func() bool { return pending() == 1 })
		select {
		case err := <-done:
			t.Fatalf("committed (%v) while an announced delivery was on its way", err)
		default:
		}
		a.Cancel()
		a.Cancel() // twice is harmless
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s.commits.mu.Lock()
		defer s.commits.mu.Unlock()
		if s.commits.expected != 0 {
			t.Errorf("expected = %d after the announcement was withdrawn", s.commits.expected)
		}
	})
	t.Run("an announcement is ended by its submission", func(t *testing.T) {
		t.Parallel()
		s, bucket := groupStore(t, 1) // a group of one closes at once
		a := s.Expect()
		var tx int
		if err := put(s, a, bucket, "announced", &tx); err != nil {
			t.Fatal(err)
		}
		a.Cancel() // as the webhook's defer does: no second decrement
		s.commits.mu.Lock()
		defer s.commits.mu.Unlock()
		if s.commits.expected != 0 {
			t.Errorf("expected = %d after the announced delivery was submitted", s.commits.expected)
		}
	})
}
