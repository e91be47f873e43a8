package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// Lane names a FIFO a worker leases from.
type Lane int

// Lanes: pipeline jobs are bounded by SELFCODE_WORKERS; control jobs are
// quick replies that must not wait behind long pipeline runs.
const (
	LanePipeline Lane = iota
	LaneControl
)

func (l Lane) bucket() []byte {
	if l == LaneControl {
		return bucketControl
	}
	return bucketQueue
}

type lease struct {
	Owner    string    `json:"owner"`
	Deadline time.Time `json:"deadline"`
	Attempt  int       `json:"attempt"`
}

// Lease takes the oldest runnable job of a lane, marks it running with
// attempt+1 and records a lease for owner until now+ttl. It returns nil when
// the lane is empty.
func (s *Store) Lease(ctx context.Context, lane Lane, owner string, ttl time.Duration) (*job.Job, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	var out *job.Job
	// Workers ask often; an empty lane is answered read-only (a write
	// transaction with nothing to write still costs an fsync and holds up
	// intake's commits).
	empty := false
	if err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(lane.bucket()).Cursor().First()
		empty = k == nil
		return nil
	}); err == nil && empty {
		return nil, nil
	}
	err := s.update(func(tx *bolt.Tx) error {
		out = nil
		q := tx.Bucket(lane.bucket())
		c := q.Cursor()
		for k, v := c.First(); k != nil; k, v = c.First() {
			if err := q.Delete(k); err != nil {
				return err
			}
			j, err := getJob(tx, string(v))
			if err == ErrNotFound {
				continue
			}
			if err != nil {
				return err
			}
			if j.State != job.StateQueued {
				continue // stale entry of a job canceled or superseded meanwhile
			}
			prev := j.State
			j.State = job.StateRunning
			j.Attempts++
			j.StartedAt, j.UpdatedAt = now, now
			j.FinishedAt = time.Time{}
			j.Tokens, j.Usage = 0, nil // tokens and cost count this run
			l, _ := json.Marshal(lease{Owner: owner, Deadline: now.Add(ttl), Attempt: j.Attempts})
			if err := tx.Bucket(bucketLeases).Put([]byte(j.ID), l); err != nil {
				return err
			}
			if err := putJob(tx, j, prev); err != nil {
				return err
			}
			out = j
			return nil
		}
		return nil
	})
	return out, err
}

// Heartbeat extends a lease held by owner.
func (s *Store) Heartbeat(ctx context.Context, id, owner string, ttl time.Duration) error {
	now := s.now().UTC()
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLeases)
		v := b.Get([]byte(id))
		if v == nil {
			return errs.E(errs.KindConflict, "no lease for job "+id, nil)
		}
		var l lease
		if err := json.Unmarshal(v, &l); err != nil {
			return fmt.Errorf("decode lease %s: %w", id, err)
		}
		if l.Owner != owner {
			return errs.E(errs.KindConflict, "lease of job "+id+" is held by "+l.Owner, nil)
		}
		l.Deadline = now.Add(ttl)
		nv, _ := json.Marshal(l)
		return b.Put([]byte(id), nv)
	})
}

// Result is how a run ended.
type Result struct {
	State   job.State
	Outcome job.Outcome
	Error   string
	Reason  string
	// Stop is set when the worker cut the run short.
	Stop job.Stop
}

// Finish ends a running job: it records the result, drops the lease and lets
// the next job of the same issue run.
func (s *Store) Finish(ctx context.Context, id string, r Result) (*job.Job, error) {
	if !r.State.Terminal() && r.State != job.StateQueued {
		return nil, errs.E(errs.KindInvalid, "finish with non-final state "+string(r.State), nil)
	}
	now := s.now().UTC()
	var out *job.Job
	runnable := false
	err := s.update(func(tx *bolt.Tx) error {
		j, err := getJob(tx, id)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketLeases).Delete([]byte(id)); err != nil {
			return err
		}
		prev := j.State
		j.State, j.Outcome = r.State, r.Outcome
		j.Error, j.Reason = r.Error, r.Reason
		if r.State != job.StateQueued {
			// Back in the queue the run has not ended: the limit its last
			// run stopped at (what a retry resumes from) still stands.
			j.Stop = r.Stop
		}
		j.UpdatedAt = now
		j.CancelRequested = false
		if r.State == job.StateQueued {
			// Back to the queue (a retryable failure): keep the slot.
			if j.QueueSeq, err = pushQueue(tx, laneOf(j).bucket(), j.ID, j.QueueSeq); err != nil {
				return err
			}
			runnable = true
		} else {
			j.FinishedAt = now
		}
		if err := putJob(tx, j, prev); err != nil {
			return err
		}
		if r.State.Terminal() && j.Kind != job.KindControl {
			if runnable, err = leaveSlot(tx, j, now); err != nil {
				return err
			}
		}
		out = j
		return nil
	})
	if err == nil && runnable {
		s.notify()
	}
	return out, err
}

func laneOf(j *job.Job) Lane {
	if j.Kind == job.KindControl {
		return LaneControl
	}
	return LanePipeline
}

// Cancel cancels one job: a queued or scheduled job at once; a running job
// is marked CancelRequested and its worker interrupted (OnCancel). A
// finished job is a conflict.
func (s *Store) Cancel(ctx context.Context, id, reason string) (*job.Job, error) {
	now := s.now().UTC()
	var j *job.Job
	running := false
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		j, running, _, err = cancelTx(tx, id, reason, now)
		return err
	})
	if err == nil && running {
		s.interrupt(id)
	}
	return j, err
}

func cancelTx(tx *bolt.Tx, id, reason string, now time.Time) (*job.Job, bool, bool, error) {
	j, err := getJob(tx, id)
	if err != nil {
		return nil, false, false, err
	}
	switch j.State {
	case job.StateRunning:
		j.CancelRequested = true
		j.Reason = reason
		j.UpdatedAt = now
		return j, true, false, putJob(tx, j, j.State)
	case job.StateQueued, job.StateScheduled:
		return j, false, false, cancelWaiting(tx, j, reason, now)
	}
	return j, false, false, errs.E(errs.KindConflict, fmt.Sprintf("job %s is already %s", id, j.State), nil)
}

// CancelIssue cancels every active pipeline job of an issue (the waiting
// one and the running one, whose worker is interrupted) and returns them.
func (s *Store) CancelIssue(ctx context.Context, key, reason string) ([]*job.Job, error) {
	now := s.now().UTC()
	var out []*job.Job
	var running []string
	err := s.update(func(tx *bolt.Tx) error {
		var err error
		out, running, err = cancelIssueTx(tx, key, reason, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, id := range running {
		s.interrupt(id)
	}
	return out, nil
}

// cancelIssueTx cancels an issue's waiting job and marks its running one; it
// returns the jobs it touched and the ids of those still running, which the
// caller interrupts once the transaction has committed.
func cancelIssueTx(tx *bolt.Tx, key, reason string, now time.Time) ([]*job.Job, []string, error) {
	sl := getSlot(tx, key)
	var out []*job.Job
	var running []string
	for _, id := range []string{sl.Next, sl.Current} {
		if id == "" {
			continue
		}
		j, wasRunning, _, err := cancelTx(tx, id, reason, now)
		if errs.Is(err, errs.KindConflict) || err == ErrNotFound {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if wasRunning {
			running = append(running, j.ID)
		}
		out = append(out, j)
	}
	return out, running, nil
}

// Retry runs a finished job again as the same job (same id, same published
// state) for trigger t, under the single-flight rules.
func (s *Store) Retry(ctx context.Context, id string, t job.Trigger) (*job.Job, error) {
	now := s.now().UTC()
	var out *job.Job
	runnable := false
	err := s.update(func(tx *bolt.Tx) error {
		j, err := getJob(tx, id)
		if err != nil {
			return err
		}
		if j.Kind == job.KindControl {
			return errs.E(errs.KindInvalid, "control jobs cannot be retried", nil)
		}
		if !j.State.Terminal() {
			return errs.E(errs.KindConflict, fmt.Sprintf("job %s is %s, not finished", id, j.State), nil)
		}
		sl := getSlot(tx, j.Key())
		if sl.Current != "" {
			return errs.E(errs.KindConflict, fmt.Sprintf("issue %s already has active job %s", j.Key(), sl.Current), nil)
		}
		prev := j.State
		cmd := j.Trigger.Command
		j.Trigger = t
		if t.Command == "retry" || t.Command == "" {
			j.Trigger.Command = cmd
		}
		j.State, j.Outcome = job.StateQueued, job.OutcomeNone
		j.Error, j.Reason, j.SupersededBy = "", "", ""
		j.Attempts = 0
		j.CancelRequested = false
		j.StartedAt, j.FinishedAt, j.ScheduledFor = time.Time{}, time.Time{}, time.Time{}
		j.Stages, j.Time = nil, nil
		j.UpdatedAt = now
		j.QueueSeq = 0
		if err := place(tx, j, true); err != nil {
			return err
		}
		sl.Current, sl.Last = j.ID, j.ID
		if err := putSlot(tx, j.Key(), sl); err != nil {
			return err
		}
		if err := putJob(tx, j, prev); err != nil {
			return err
		}
		out, runnable = j, true
		return nil
	})
	if err == nil && runnable {
		s.notify()
	}
	return out, err
}

// Recovered lists what RecoverLeases did.
type Recovered struct {
	Requeued []string
	Failed   []string
}

// RecoverLeases returns to the queue every job leased by a process that is no
// longer running (the caller holds bbolt's file lock, so every lease found at
// start-up belongs to a dead process). A job that has had maxAttempts
// attempts fails with the reason instead.
func (s *Store) RecoverLeases(ctx context.Context, maxAttempts int) (Recovered, error) {
	now := s.now().UTC()
	var rec Recovered
	err := s.update(func(tx *bolt.Tx) error {
		rec = Recovered{}
		leases := tx.Bucket(bucketLeases)
		var ids []string
		_ = leases.ForEach(func(k, _ []byte) error { ids = append(ids, string(k)); return nil })
		for _, id := range ids {
			if err := leases.Delete([]byte(id)); err != nil {
				return err
			}
			j, err := getJob(tx, id)
			if err == ErrNotFound {
				continue
			}
			if err != nil {
				return err
			}
			if j.State != job.StateRunning {
				continue
			}
			prev := j.State
			j.UpdatedAt = now
			if j.Attempts >= maxAttempts {
				j.State, j.Outcome = job.StateFailed, job.OutcomeError
				j.Error = fmt.Sprintf("abandoned: the process running it stopped %d times (attempt limit %d)", j.Attempts, maxAttempts)
				j.FinishedAt = now
				if err := putJob(tx, j, prev); err != nil {
					return err
				}
				if j.Kind != job.KindControl {
					if _, err := leaveSlot(tx, j, now); err != nil {
						return err
					}
				}
				rec.Failed = append(rec.Failed, id)
				continue
			}
			j.State = job.StateQueued
			j.CancelRequested = false
			if j.QueueSeq, err = pushQueue(tx, laneOf(j).bucket(), j.ID, j.QueueSeq); err != nil {
				return err
			}
			if err := putJob(tx, j, prev); err != nil {
				return err
			}
			rec.Requeued = append(rec.Requeued, id)
		}
		return nil
	})
	if err == nil && len(rec.Requeued) > 0 {
		s.notify()
	}
	return rec, err
}

// PromoteDue makes every job whose time has come runnable (scheduled jobs
// and queued jobs deferred until a time) and returns their ids.
func (s *Store) PromoteDue(ctx context.Context, now time.Time) ([]string, error) {
	p, err := s.Promote(ctx, now, PromoteOptions{})
	return p.Promoted, err
}

// NextScheduled returns the earliest scheduled time, zero when none.
func (s *Store) NextScheduled(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketScheduled).Cursor().First()
		if len(k) >= 8 {
			t = time.Unix(0, int64(beUint64(k[:8]))).UTC()
		}
		return nil
	})
	return t, err
}

// Update applies fn to a stored job (stages, publication, tokens). fn must not
// change the job's state; use Finish or Cancel for that.
func (s *Store) Update(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	now := s.now().UTC()
	var out *job.Job
	err := s.update(func(tx *bolt.Tx) error {
		j, err := getJob(tx, id)
		if err != nil {
			return err
		}
		st := j.State
		if err := fn(j); err != nil {
			return err
		}
		j.State = st
		j.UpdatedAt = now
		out = j
		return putJob(tx, j, st)
	})
	return out, err
}
