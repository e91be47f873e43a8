package store

import (
	"errors"
	"fmt"
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
			results[i] = s.group(func(tx *bolt.Tx) error {
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
