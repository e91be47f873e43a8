package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// Options configures Open.
type Options struct {
	// Path of the bbolt file, e.g. <data dir>/selfcode.db.
	Path string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// OpenTimeout bounds the wait for the file lock held by another process.
	OpenTimeout time.Duration
	// NoSync skips fsync; for benchmarks that isolate CPU cost only.
	NoSync bool
	// GroupWait is how long a group commit under load stays open for
	// more deliveries; DefaultGroupWait when zero, none when negative.
	GroupWait time.Duration
}

// Store is the durable job store.
type Store struct {
	db  *bolt.DB
	now func() time.Time
	ids *job.IDs

	commits committer // group commit of deliveries (group.go)

	mu       sync.Mutex
	wake     chan struct{} // closed and replaced whenever a job becomes runnable
	closed   bool
	onCancel func(id string)
}

// OnCancel registers who interrupts a running job when a delivery cancels it
// (the worker pool).
func (s *Store) OnCancel(fn func(id string)) {
	s.mu.Lock()
	s.onCancel = fn
	s.mu.Unlock()
}

func (s *Store) interrupt(id string) {
	s.mu.Lock()
	fn := s.onCancel
	s.mu.Unlock()
	if fn != nil {
		fn(id)
	}
}

// ErrNotFound is returned when a job does not exist.
var ErrNotFound = errs.E(errs.KindNotFound, "job not found", nil)

// Open opens (creating if needed) the store at opts.Path.
func Open(opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errs.E(errs.KindInvalid, "store path is empty", nil)
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	timeout := opts.OpenTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	db, err := bolt.Open(opts.Path, 0o600, &bolt.Options{Timeout: timeout, NoSync: opts.NoSync})
	if err != nil {
		return nil, errs.E(errs.KindUnavailable, "open store "+opts.Path, err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Store{db: db, now: now, ids: job.NewIDs(), wake: make(chan struct{})}
	s.commits.nudge = make(chan struct{}, 1)
	s.commits.max = maxGroup
	s.commits.wait = opts.GroupWait
	if s.commits.wait == 0 {
		s.commits.wait = DefaultGroupWait
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get([]byte("schema")); {
		case v == nil, string(v) == schemaVersion:
		case string(v) == "1":
			if err := upgradeFrom1(tx); err != nil {
				return fmt.Errorf("upgrade store schema 1 to %s: %w", schemaVersion, err)
			}
		default:
			return fmt.Errorf("store schema %s is not the supported %s", v, schemaVersion)
		}
		return meta.Put([]byte("schema"), []byte(schemaVersion))
	}); err != nil {
		db.Close()
		return nil, errs.E(errs.KindUnavailable, "initialise store", err)
	}
	return s, nil
}

// Close closes the database; later calls fail with KindUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.wake)
	}
	s.mu.Unlock()
	return s.db.Close()
}

// DB exposes the bbolt handle for consistent backups (read transactions).
func (s *Store) DB() *bolt.DB { return s.db }

// Ping reports whether the store can serve.
func (s *Store) Ping() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errs.E(errs.KindUnavailable, "store is closed", nil)
	}
	return s.db.View(func(tx *bolt.Tx) error { return nil })
}

// NewID returns a fresh sortable job id.
func (s *Store) NewID() string { return s.ids.New(s.now()) }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Wait returns a channel closed the next time a job becomes runnable (or the
// store closes). Workers take it before leasing and select on it when the
// queue was empty, so no wake-up is lost between the two.
func (s *Store) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}

// Wake wakes every waiting worker (e.g. when the kill switch is lifted).
func (s *Store) Wake() { s.notify() }

func (s *Store) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	err := s.db.Update(fn)
	return classify(err)
}

func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	return classify(s.db.View(fn))
}

// classify turns bbolt's own failures into KindUnavailable and passes
// through errors the transaction functions classified themselves.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, berrors.ErrDatabaseNotOpen) || errors.Is(err, berrors.ErrTimeout) || errors.Is(err, berrors.ErrDatabaseReadOnly) {
		return errs.E(errs.KindUnavailable, "store unavailable", err)
	}
	return errs.E(errs.KindUnavailable, "store write failed", err)
}

// --- small encoding helpers ---

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func timeKey(t time.Time, suffix string) []byte {
	k := make([]byte, 8, 8+len(suffix))
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	return append(k, suffix...)
}

func getJob(tx *bolt.Tx, id string) (*job.Job, error) {
	v := tx.Bucket(bucketJobs).Get([]byte(id))
	if v == nil {
		return nil, ErrNotFound
	}
	var j job.Job
	if err := json.Unmarshal(v, &j); err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	return &j, nil
}

// putJob writes j, keeping the per-state counts right. prev is the state the
// job had in the store before this write ("" for a new job).
func putJob(tx *bolt.Tx, j *job.Job, prev job.State) error {
	j.Repository = j.Repo.FullName()
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	if err := tx.Bucket(bucketJobs).Put([]byte(j.ID), data); err != nil {
		return fmt.Errorf("put job %s: %w", j.ID, err)
	}
	if prev != j.State {
		c := tx.Bucket(bucketCounts)
		if prev != "" {
			if err := addCount(c, prev, -1); err != nil {
				return err
			}
		}
		return addCount(c, j.State, 1)
	}
	return nil
}

func addCount(b *bolt.Bucket, st job.State, d int64) error {
	var n int64
	if v := b.Get([]byte(st)); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += d
	if n < 0 {
		n = 0
	}
	return b.Put([]byte(st), u64(uint64(n)))
}

// slot is the single-flight record of one (repository, issue).
type slot struct {
	Current string `json:"current,omitempty"` // queued, scheduled or running job
	Next    string `json:"next,omitempty"`    // queued job waiting behind a running Current
	Last    string `json:"last,omitempty"`    // newest pipeline job of the issue
}

// upgradeFrom1 moves schema 1's last bucket into the slots and drops its
// delivery_age index, in Open's transaction.
func upgradeFrom1(tx *bolt.Tx) error {
	if b := tx.Bucket(bucketLastV1); b != nil {
		if err := b.ForEach(func(k, v []byte) error {
			sl := getSlot(tx, string(k))
			sl.Last = string(v)
			return putSlot(tx, string(k), sl)
		}); err != nil {
			return err
		}
	}
	for _, name := range [][]byte{bucketLastV1, bucketDeliveryAgeV1} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return fmt.Errorf("drop bucket %s: %w", name, err)
		}
	}
	return nil
}

func getSlot(tx *bolt.Tx, key string) slot {
	var sl slot
	if v := tx.Bucket(bucketActive).Get([]byte(key)); v != nil {
		_ = json.Unmarshal(v, &sl)
	}
	return sl
}

func putSlot(tx *bolt.Tx, key string, sl slot) error {
	b := tx.Bucket(bucketActive)
	if sl == (slot{}) {
		return b.Delete([]byte(key))
	}
	data, _ := json.Marshal(sl)
	return b.Put([]byte(key), data)
}

// pushQueue appends id to a FIFO bucket, reusing seq when it is non-zero and
// free (so a recovered job keeps its place), and returns the sequence used.
func pushQueue(tx *bolt.Tx, bucket []byte, id string, seq uint64) (uint64, error) {
	b := tx.Bucket(bucket)
	if seq == 0 || b.Get(u64(seq)) != nil {
		var err error
		if seq, err = b.NextSequence(); err != nil {
			return 0, fmt.Errorf("queue sequence: %w", err)
		}
	}
	return seq, b.Put(u64(seq), []byte(id))
}

// dequeue removes a job's queue and schedule entries, whichever exist.
func dequeue(tx *bolt.Tx, j *job.Job) error {
	if j.QueueSeq != 0 {
		for _, name := range [][]byte{bucketQueue, bucketControl} {
			b := tx.Bucket(name)
			if v := b.Get(u64(j.QueueSeq)); string(v) == j.ID {
				if err := b.Delete(u64(j.QueueSeq)); err != nil {
					return err
				}
			}
		}
	}
	if !j.ScheduledFor.IsZero() {
		if err := tx.Bucket(bucketScheduled).Delete(timeKey(j.ScheduledFor, j.ID)); err != nil {
			return err
		}
	}
	return nil
}

// ctxErr lets long scans stop when the caller gives up.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// InstanceID returns this data directory's stable instance name, made on
// first use. Containers and leases are labelled with it so a restarted server
// recognises what its previous life left behind.
func (s *Store) InstanceID() (string, error) {
	var id string
	err := s.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get([]byte("instance")); v != nil {
			id = string(v)
			return nil
		}
		id = "sc-" + s.ids.New(s.now())[16:]
		return meta.Put([]byte("instance"), []byte(id))
	})
	return id, err
}
