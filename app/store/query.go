package store

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// Get returns one job.
func (s *Store) Get(ctx context.Context, id string) (*job.Job, error) {
	var j *job.Job
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		j, err = getJob(tx, id)
		return err
	})
	return j, err
}

// ListOptions selects a page of jobs.
type ListOptions struct {
	Limit  int       // default 100, at most 1000
	Cursor string    // the previous page's next
	State  job.State // only jobs in this state
	Key    string    // only jobs of this issue key
}

// List returns jobs newest first and the cursor of the next page ("" on the
// last page).
func (s *Store) List(ctx context.Context, o ListOptions) ([]*job.Job, string, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		limit = 1000
	}
	var out []*job.Job
	next := ""
	err := s.view(func(tx *bolt.Tx) error {
		out, next = nil, ""
		c := tx.Bucket(bucketJobs).Cursor()
		var k, v []byte
		if o.Cursor == "" {
			k, v = c.Last()
		} else {
			k, v = c.Seek([]byte(o.Cursor))
			if k == nil {
				k, v = c.Last()
			}
			for k != nil && bytes.Compare(k, []byte(o.Cursor)) >= 0 {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = c.Prev() {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			var j job.Job
			if err := json.Unmarshal(v, &j); err != nil {
				continue
			}
			if o.State != "" && j.State != o.State {
				continue
			}
			if o.Key != "" && j.Key() != o.Key {
				continue
			}
			if len(out) == limit {
				next = out[len(out)-1].ID
				return nil
			}
			out = append(out, &j)
		}
		return nil
	})
	return out, next, err
}

// Active returns the running or waiting pipeline job of an issue: the
// running one when there is one, else the queued or scheduled one.
func (s *Store) Active(ctx context.Context, key string) (*job.Job, error) {
	var j *job.Job
	err := s.view(func(tx *bolt.Tx) error {
		sl := getSlot(tx, key)
		if sl.Current == "" {
			return nil
		}
		var err error
		j, err = getJob(tx, sl.Current)
		return err
	})
	return j, err
}

// Last returns the newest pipeline job of an issue, nil when there is none.
func (s *Store) Last(ctx context.Context, key string) (*job.Job, error) {
	var j *job.Job
	err := s.view(func(tx *bolt.Tx) error {
		id := getSlot(tx, key).Last
		if id == "" {
			return nil
		}
		var err error
		j, err = getJob(tx, id)
		return err
	})
	return j, err
}

// PutArtifact stores a named artifact of a job (plan, transcript, diff, …).
func (s *Store) PutArtifact(ctx context.Context, id, name string, data []byte) error {
	return s.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketJobs).Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return tx.Bucket(bucketArtifacts).Put(artifactKey(id, name), data)
	})
}

// Artifact returns one artifact.
func (s *Store) Artifact(ctx context.Context, id, name string) ([]byte, error) {
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketArtifacts).Get(artifactKey(id, name))
		if v == nil {
			return errs.E(errs.KindNotFound, "no artifact "+name+" for job "+id, nil)
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// Artifacts lists a job's artifacts with their sizes.
func (s *Store) Artifacts(ctx context.Context, id string) (map[string]int, error) {
	out := map[string]int{}
	err := s.view(func(tx *bolt.Tx) error {
		prefix := artifactKey(id, "")
		c := tx.Bucket(bucketArtifacts).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			out[string(k[len(prefix):])] = len(v)
		}
		return nil
	})
	return out, err
}

func artifactKey(id, name string) []byte {
	k := make([]byte, 0, len(id)+1+len(name))
	k = append(k, id...)
	k = append(k, 0)
	return append(k, name...)
}

// MarkNotice records that a one-per-issue reply of kind was sent for key and
// reports whether this is the first time.
func (s *Store) MarkNotice(ctx context.Context, key, kind string) (bool, error) {
	first := false
	now := s.now()
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketNotices)
		k := append(append([]byte(key), 0), kind...)
		if b.Get(k) != nil {
			first = false
			return nil
		}
		first = true
		return b.Put(k, u64(uint64(now.UnixNano())))
	})
	return first, err
}

// Installation is what selfcode remembers of an installation of the app.
type Installation struct {
	ID           int64     `json:"id"`
	Account      string    `json:"account"`
	Repositories []string  `json:"repositories,omitempty"`
	Suspended    bool      `json:"suspended,omitempty"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// GetInstallation returns a recorded installation.
func (s *Store) GetInstallation(ctx context.Context, id int64) (*Installation, error) {
	var out *Installation
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketInstallations).Get([]byte(strconv.FormatInt(id, 10)))
		if v == nil {
			return errs.E(errs.KindNotFound, "installation not recorded", nil)
		}
		out = &Installation{}
		return json.Unmarshal(v, out)
	})
	return out, err
}

// Stats are gauges for /metrics.
type Stats struct {
	ByState      map[job.State]int64
	Queued       int // runnable pipeline jobs in the FIFO
	ControlQueue int
	Scheduled    int
	Leased       int
	Deliveries   int
}

// Stats counts jobs by state and the sizes of the queues.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{ByState: map[job.State]int64{}}
	err := s.view(func(tx *bolt.Tx) error {
		_ = tx.Bucket(bucketCounts).ForEach(func(k, v []byte) error {
			if len(v) == 8 {
				st.ByState[job.State(k)] = int64(beUint64(v))
			}
			return nil
		})
		st.Queued = tx.Bucket(bucketQueue).Stats().KeyN
		st.ControlQueue = tx.Bucket(bucketControl).Stats().KeyN
		st.Scheduled = tx.Bucket(bucketScheduled).Stats().KeyN
		st.Leased = tx.Bucket(bucketLeases).Stats().KeyN
		st.Deliveries = tx.Bucket(bucketDeliveries).Stats().KeyN
		return nil
	})
	return st, err
}

// PruneDeliveries forgets delivery ids recorded before cutoff and returns how
// many it removed. GitHub redelivers for at most 3 days (7 on GHES); keep at
// least 7. The ids are found by reading every record's time in a read
// transaction (an hourly scan costs less than an index written with every
// delivery), then removed in write transactions of at most pruneBatch.
func (s *Store) PruneDeliveries(ctx context.Context, cutoff time.Time) (int, error) {
	var old [][]byte
	err := s.view(func(tx *bolt.Tx) error {
		old = nil
		return tx.Bucket(bucketDeliveries).ForEach(func(k, v []byte) error {
			var rec struct {
				At time.Time `json:"at"`
			}
			if json.Unmarshal(v, &rec) == nil && rec.At.Before(cutoff) {
				old = append(old, append([]byte(nil), k...))
			}
			return ctxErr(ctx)
		})
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for len(old) > 0 {
		batch := old[:min(len(old), pruneBatch)]
		old = old[len(batch):]
		err := s.update(func(tx *bolt.Tx) error {
			del := tx.Bucket(bucketDeliveries)
			for _, k := range batch {
				if err := del.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n += len(batch)
	}
	return n, nil
}

// pruneBatch bounds one pruning write transaction, so deliveries arriving
// meanwhile are not held up behind a long one.
const pruneBatch = 5000

// HasDelivery reports whether a delivery id has been recorded.
func (s *Store) HasDelivery(ctx context.Context, id string) (bool, error) {
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketDeliveries).Get([]byte(id)) != nil
		return nil
	})
	return found, err
}
