package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// PromoteOptions refines Promote for the overnight window.
type PromoteOptions struct {
	// OnePerRepo promotes at most one overnight job per repository, and none
	// while another job of that repository is queued or running.
	OnePerRepo bool
	// WindowEnd, when set, is the end of the overnight window that starts at
	// start. An overnight job still scheduled at or after the end of its
	// window moves to NextWindow(now) instead of starting, and its window's
	// record says so.
	WindowEnd  func(start time.Time) time.Time
	NextWindow func(t time.Time) time.Time
}

// Promotion is what Promote did.
type Promotion struct {
	Promoted []string
	Moved    []MovedJob
}

// Window is the record of one overnight window: the jobs it started and
// the jobs it moved on to a later window.
type Window struct {
	Start    time.Time  `json:"start"`
	Jobs     []string   `json:"jobs,omitempty"`
	Moved    []MovedJob `json:"moved,omitempty"`
	ReportID string     `json:"report_id,omitempty"`
	Closed   bool       `json:"closed"`
}

// MovedJob is a job a window could not start, moved to a later window.
type MovedJob struct {
	JobID  string    `json:"job_id"`
	To     time.Time `json:"to"`
	Reason string    `json:"reason"`
}

// ReasonWindowOver is why a job moves when its window ended before it could
// start.
const ReasonWindowOver = "the overnight window ended before the job could start"

// Promote makes runnable the jobs whose time has come: queued jobs deferred
// until a time go back to the FIFO; scheduled jobs become queued. Overnight
// jobs follow o (one per repository at a time; moved on when their window
// is over). Every overnight job promoted or moved is recorded in the record
// of the window it was scheduled for, in the same transaction.
func (s *Store) Promote(ctx context.Context, now time.Time, o PromoteOptions) (Promotion, error) {
	var p Promotion
	if !s.anyDue(now) {
		return p, nil
	}
	runnable := false
	err := s.update(func(tx *bolt.Tx) error {
		p, runnable = Promotion{}, false
		b := tx.Bucket(bucketScheduled)
		c := b.Cursor()
		limit := timeKey(now, "\xff")
		var due [][]byte
		for k, _ := c.First(); k != nil && bytes.Compare(k, limit) <= 0; k, _ = c.Next() {
			due = append(due, append([]byte(nil), k...))
		}
		for _, k := range due {
			id := string(k[8:])
			j, err := getJob(tx, id)
			if err == ErrNotFound || (err == nil && !j.ScheduledFor.Equal(time.Unix(0, int64(beUint64(k[:8]))))) {
				if err := b.Delete(k); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			switch j.State {
			case job.StateQueued: // deferred until now
				if err := b.Delete(k); err != nil {
					return err
				}
				j.ScheduledFor, j.Reason, j.UpdatedAt = time.Time{}, "", now
				if getSlot(tx, j.Key()).Current == j.ID && !inFIFO(tx, j) {
					if err := place(tx, j, true); err != nil {
						return err
					}
					runnable = true
				}
				if err := putJob(tx, j, j.State); err != nil {
					return err
				}
				p.Promoted = append(p.Promoted, id)
			case job.StateScheduled:
				start := j.ScheduledFor
				if j.Overnight && o.WindowEnd != nil && o.NextWindow != nil && !now.Before(o.WindowEnd(start)) {
					m := MovedJob{JobID: id, To: o.NextWindow(now).UTC(), Reason: ReasonWindowOver}
					if err := moveScheduled(tx, j, start, m, now); err != nil {
						return err
					}
					p.Moved = append(p.Moved, m)
					continue
				}
				if j.Overnight && o.OnePerRepo {
					busy, err := repoBusy(tx, j.Repo.FullName())
					if err != nil {
						return err
					}
					if busy {
						continue
					}
				}
				if err := b.Delete(k); err != nil {
					return err
				}
				prev := j.State
				j.State = job.StateQueued
				j.ScheduledFor = time.Time{}
				j.UpdatedAt = now
				if getSlot(tx, j.Key()).Current == j.ID {
					if err := place(tx, j, true); err != nil {
						return err
					}
					runnable = true
				}
				if err := putJob(tx, j, prev); err != nil {
					return err
				}
				if j.Overnight {
					if err := updateWindow(tx, start, func(w *Window) { w.Jobs = appendOnce(w.Jobs, id) }); err != nil {
						return err
					}
				}
				p.Promoted = append(p.Promoted, id)
			default:
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil && runnable {
		s.notify()
	}
	return p, err
}

// anyDue reports, in a read-only transaction, whether a scheduled entry's
// time has come: schedulers ask every tick, and a write transaction with
// nothing to write still costs an fsync and holds up intake's commits. On a
// read error it says yes, so that the write transaction reports it.
func (s *Store) anyDue(now time.Time) bool {
	due := true
	err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketScheduled).Cursor().First()
		due = k != nil && bytes.Compare(k, timeKey(now, "\xff")) <= 0
		return nil
	})
	return due || err != nil
}

// inFIFO reports whether the job's queue entry is in place.
func inFIFO(tx *bolt.Tx, j *job.Job) bool {
	return j.QueueSeq != 0 && string(tx.Bucket(laneOf(j).bucket()).Get(u64(j.QueueSeq))) == j.ID
}

// repoBusy reports whether a job of the repository is queued or running.
func repoBusy(tx *bolt.Tx, fullName string) (bool, error) {
	prefix := []byte(strings.ToLower(fullName) + "#")
	c := tx.Bucket(bucketActive).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var sl slot
		if err := json.Unmarshal(v, &sl); err != nil || sl.Current == "" {
			continue
		}
		j, err := getJob(tx, sl.Current)
		if err == ErrNotFound {
			continue
		}
		if err != nil {
			return false, err
		}
		if j.State == job.StateQueued || j.State == job.StateRunning {
			return true, nil
		}
	}
	return false, nil
}

// moveScheduled moves a waiting job to m.To as a scheduled job and records
// the move in the record of the window that started at from.
func moveScheduled(tx *bolt.Tx, j *job.Job, from time.Time, m MovedJob, now time.Time) error {
	if err := dequeue(tx, j); err != nil {
		return err
	}
	prev := j.State
	j.State = job.StateScheduled
	j.ScheduledFor = m.To
	j.QueueSeq = 0
	j.Reason = "moved to the next overnight window: " + m.Reason
	j.UpdatedAt = now
	if err := tx.Bucket(bucketScheduled).Put(timeKey(j.ScheduledFor, j.ID), []byte(j.ID)); err != nil {
		return err
	}
	if err := putJob(tx, j, prev); err != nil {
		return err
	}
	return updateWindow(tx, from, func(w *Window) {
		for _, x := range w.Moved {
			if x.JobID == m.JobID && x.To.Equal(m.To) {
				return
			}
		}
		w.Moved = append(w.Moved, m)
	})
}

// MoveToWindow moves a waiting job (queued, deferred or scheduled) of the
// window that started at from to the window starting at to, and records the
// move in from's record. A running or finished job is left alone and moved
// is false.
func (s *Store) MoveToWindow(ctx context.Context, id string, from, to time.Time, reason string) (moved bool, err error) {
	now := s.now().UTC()
	err = s.update(func(tx *bolt.Tx) error {
		moved = false
		j, err := getJob(tx, id)
		if err != nil {
			return err
		}
		if j.State != job.StateQueued && j.State != job.StateScheduled {
			return nil
		}
		moved = true
		return moveScheduled(tx, j, from.UTC(), MovedJob{JobID: id, To: to.UTC(), Reason: reason}, now)
	})
	return moved, err
}

// Defer returns a leased (running) job to the queued state without counting
// the attempt, to wait until until (e.g. when the daily token budget
// resets). It keeps its issue's slot, and PromoteDue puts it back in its
// place in the FIFO when its time comes.
func (s *Store) Defer(ctx context.Context, id string, until time.Time, reason string) (*job.Job, error) {
	now := s.now().UTC()
	var out *job.Job
	err := s.update(func(tx *bolt.Tx) error {
		j, err := getJob(tx, id)
		if err != nil {
			return err
		}
		if j.State != job.StateRunning {
			return errs.E(errs.KindConflict, fmt.Sprintf("job %s is %s, not running", id, j.State), nil)
		}
		if err := tx.Bucket(bucketLeases).Delete([]byte(id)); err != nil {
			return err
		}
		prev := j.State
		j.State = job.StateQueued
		if j.Attempts > 0 {
			j.Attempts--
		}
		j.StartedAt = time.Time{}
		j.ScheduledFor = until.UTC()
		j.Reason = reason
		j.UpdatedAt = now
		if err := tx.Bucket(bucketScheduled).Put(timeKey(j.ScheduledFor, j.ID), []byte(j.ID)); err != nil {
			return err
		}
		out = j
		return putJob(tx, j, prev)
	})
	return out, err
}

func windowKey(start time.Time) []byte { return u64(uint64(start.UnixNano())) }

func updateWindow(tx *bolt.Tx, start time.Time, fn func(*Window)) error {
	b := tx.Bucket(bucketWindows)
	w := Window{Start: start.UTC()}
	if v := b.Get(windowKey(start)); v != nil {
		if err := json.Unmarshal(v, &w); err != nil {
			return fmt.Errorf("decode window %s: %w", start, err)
		}
	}
	fn(&w)
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return b.Put(windowKey(start), data)
}

func appendOnce(list []string, id string) []string {
	for _, x := range list {
		if x == id {
			return list
		}
	}
	return append(list, id)
}

// Windows lists the overnight window records, oldest first; openOnly keeps
// those not yet closed.
func (s *Store) Windows(ctx context.Context, openOnly bool) ([]Window, error) {
	var out []Window
	err := s.view(func(tx *bolt.Tx) error {
		out = nil
		return tx.Bucket(bucketWindows).ForEach(func(_, v []byte) error {
			var w Window
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("decode window: %w", err)
			}
			if !openOnly || !w.Closed {
				out = append(out, w)
			}
			return nil
		})
	})
	return out, err
}

// Report is a stored morning report: its JSON payload (contract section 9)
// and the state of its delivery.
type Report struct {
	ID          string          `json:"id"`
	WindowStart time.Time       `json:"window_start"`
	CreatedAt   time.Time       `json:"created_at"`
	Payload     json.RawMessage `json:"payload"`
	Delivered   bool            `json:"delivered"`
	DeliveredAt time.Time       `json:"delivered_at,omitempty"`
	Attempts    int             `json:"attempts"`
	LastError   string          `json:"last_error,omitempty"`
}

// CloseWindow marks the window that started at start closed and stores its
// report (nil when there is nothing to report), in one transaction. The
// report gets an id when it has none.
func (s *Store) CloseWindow(ctx context.Context, start time.Time, r *Report) error {
	now := s.now().UTC()
	if r != nil {
		if r.ID == "" {
			r.ID = s.ids.New(now)
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		r.WindowStart = start.UTC()
	}
	return s.update(func(tx *bolt.Tx) error {
		if r != nil {
			if err := putReport(tx, r); err != nil {
				return err
			}
		}
		return updateWindow(tx, start, func(w *Window) {
			w.Closed = true
			if r != nil {
				w.ReportID = r.ID
			}
		})
	})
}

func putReport(tx *bolt.Tx, r *Report) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode report %s: %w", r.ID, err)
	}
	return tx.Bucket(bucketReports).Put([]byte(r.ID), data)
}

// GetReport returns one stored morning report.
func (s *Store) GetReport(ctx context.Context, id string) (*Report, error) {
	var out *Report
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketReports).Get([]byte(id))
		if v == nil {
			return errs.E(errs.KindNotFound, "report not found", nil)
		}
		out = &Report{}
		return json.Unmarshal(v, out)
	})
	return out, err
}

// ListReports returns stored morning reports, newest first, at most limit
// (default 100).
func (s *Store) ListReports(ctx context.Context, limit int) ([]*Report, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []*Report
	err := s.view(func(tx *bolt.Tx) error {
		out = nil
		c := tx.Bucket(bucketReports).Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			var r Report
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode report %s: %w", k, err)
			}
			out = append(out, &r)
		}
		return nil
	})
	return out, err
}

// UpdateReport applies fn to a stored report (delivery bookkeeping).
func (s *Store) UpdateReport(ctx context.Context, id string, fn func(*Report) error) (*Report, error) {
	var out *Report
	err := s.update(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketReports).Get([]byte(id))
		if v == nil {
			return errs.E(errs.KindNotFound, "report not found", nil)
		}
		r := &Report{}
		if err := json.Unmarshal(v, r); err != nil {
			return fmt.Errorf("decode report %s: %w", id, err)
		}
		if err := fn(r); err != nil {
			return err
		}
		r.ID = id
		out = r
		return putReport(tx, r)
	})
	return out, err
}

func usageKey(installationID int64, day string) []byte {
	return append(append([]byte(strconv.FormatInt(installationID, 10)), 0), day...)
}

// DayUsage is what an installation's model calls used on one day.
type DayUsage struct {
	Tokens int64
	// NanoDollars is what the priced calls cost, in billionths of a
	// dollar (calls to a model without a price add tokens only).
	NanoDollars int64
}

// Dollars is the cost in dollars.
func (u DayUsage) Dollars() float64 { return float64(u.NanoDollars) / 1e9 }

// NanoDollars converts dollars to billionths of a dollar, rounded.
func NanoDollars(dollars float64) int64 { return int64(math.Round(dollars * 1e9)) }

// decodeUsage reads a usage value: 8 bytes (tokens, as schema 2 first
// wrote it) or 16 (tokens, then nano-dollars).
func decodeUsage(v []byte) DayUsage {
	var u DayUsage
	if len(v) >= 8 {
		u.Tokens = int64(beUint64(v[:8]))
	}
	if len(v) >= 16 {
		u.NanoDollars = int64(beUint64(v[8:16]))
	}
	return u
}

// AddUsage adds model use to an installation's count for day
// ("YYYY-MM-DD") and returns the new total. Jobs add each call as it
// happens, so concurrent jobs of one installation see each other's use.
func (s *Store) AddUsage(ctx context.Context, installationID int64, day string, add DayUsage) (DayUsage, error) {
	var total DayUsage
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUsage)
		k := usageKey(installationID, day)
		total = decodeUsage(b.Get(k))
		total.Tokens = max(0, total.Tokens+add.Tokens)
		total.NanoDollars = max(0, total.NanoDollars+add.NanoDollars)
		return b.Put(k, append(u64(uint64(total.Tokens)), u64(uint64(total.NanoDollars))...))
	})
	return total, err
}

// Usage returns an installation's model use counted for day.
func (s *Store) Usage(ctx context.Context, installationID int64, day string) (DayUsage, error) {
	var total DayUsage
	err := s.view(func(tx *bolt.Tx) error {
		total = decodeUsage(tx.Bucket(bucketUsage).Get(usageKey(installationID, day)))
		return nil
	})
	return total, err
}

// HasNotice reports whether MarkNotice recorded kind for key.
func (s *Store) HasNotice(ctx context.Context, key, kind string) (bool, error) {
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketNotices).Get(append(append([]byte(key), 0), kind...)) != nil
		return nil
	})
	return found, err
}
