package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/internal/testclock"
)

// A schema 1 file (written here as schema 1 wrote it: the newest job of an
// issue in "last", delivery ids indexed by time in "delivery_age") opens as
// schema 2 with nothing lost: Last still finds each issue's newest job, an
// active slot keeps its job, old deliveries still prune and new ones still
// deduplicate; a second open changes nothing.
func TestUpgradeFromSchema1(t *testing.T) {
	t.Parallel()
	clk := testclock.New(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "selfcode.db")
	s, err := Open(Options{Path: path, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	done := runJob(1, "finished long ago")
	rc1 := submit(t, s, "d-old", done)
	active := runJob(2, "still queued")
	rc2 := submit(t, s, "d-active", active)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Rewrite the file into schema 1's layout.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	key1, key2 := done.Key(), active.Key()
	err = db.Update(func(tx *bolt.Tx) error {
		last, err := tx.CreateBucket(bucketLastV1)
		if err != nil {
			return err
		}
		age, err := tx.CreateBucket(bucketDeliveryAgeV1)
		if err != nil {
			return err
		}
		for _, kv := range [][2]string{{key1, rc1.JobID}, {key2, rc2.JobID}} {
			if err := last.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
				return err
			}
		}
		if err := age.Put(timeKey(clk.Now(), "d-old"), nil); err != nil {
			return err
		}
		// Schema 1's slots had no last; issue 1's job is no longer active.
		if err := tx.Bucket(bucketActive).Delete([]byte(key1)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketActive).Put([]byte(key2), []byte(`{"current":"`+rc2.JobID+`"}`)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte("schema"), []byte("1"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	for round := 0; round < 2; round++ {
		s, err := Open(Options{Path: path, Now: clk.Now})
		if err != nil {
			t.Fatalf("open %d: %v", round, err)
		}
		ctx := t.Context()
		for key, want := range map[string]string{key1: rc1.JobID, key2: rc2.JobID} {
			if j, err := s.Last(ctx, key); err != nil || j == nil || j.ID != want {
				t.Fatalf("open %d: Last(%s) = %+v, %v; want %s", round, key, j, err, want)
			}
		}
		if j, err := s.Active(ctx, key2); err != nil || j == nil || j.ID != rc2.JobID || j.State != job.StateQueued {
			t.Fatalf("open %d: Active(%s) = %+v, %v", round, key2, j, err)
		}
		if rc := submit(t, s, "d-active", runJob(2, "again")); !rc.Duplicate {
			t.Fatalf("open %d: a delivery recorded before the upgrade is not a duplicate: %+v", round, rc)
		}
		err = s.view(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketLastV1) != nil || tx.Bucket(bucketDeliveryAgeV1) != nil {
				t.Errorf("open %d: schema 1 buckets still there", round)
			}
			if v := string(tx.Bucket(bucketMeta).Get([]byte("schema"))); v != schemaVersion {
				t.Errorf("open %d: schema %q", round, v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}

	s, err = Open(Options{Path: path, Now: func() time.Time { return clk.Now().Add(9 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.PruneDeliveries(t.Context(), clk.Now().Add(24*time.Hour)); err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want both deliveries from before the upgrade", n, err)
	}
}

// A file of a schema this build does not know is refused, not rewritten.
func TestUnknownSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "selfcode.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put([]byte("schema"), []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := Open(Options{Path: path}); err == nil {
		s.Close()
		t.Fatal("a schema 99 file opened")
	}
}
