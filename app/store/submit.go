package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// Action is what a verified delivery asks the store to do.
type Action int

// Submission actions.
const (
	// ActionIgnore records the delivery id and nothing else.
	ActionIgnore Action = iota
	// ActionEnqueue stores a new pipeline job under single-flight rules.
	ActionEnqueue
	// ActionControl stores a control job (cancel, retry, status, help).
	ActionControl
	// ActionCancelOvernight cancels the issue's overnight job that has not started.
	ActionCancelOvernight
	// ActionCancelIssue cancels every waiting and running pipeline job of an
	// issue or pull request (a pull request was closed or merged).
	ActionCancelIssue
)

// Submission is one delivery's effect, applied atomically with the record of
// its delivery id.
type Submission struct {
	DeliveryID string
	Event      string
	Action     Action
	Job        *job.Job // ActionEnqueue, ActionControl
	Key        string   // ActionCancelOvernight, ActionCancelIssue: the issue key
	Reason     string   // ActionIgnore: why
	// Installation, when set, is recorded (or, with InstallationDeleted,
	// forgotten) in the same transaction as the delivery.
	Installation        *Installation
	InstallationDeleted bool
	// Arrival, when set, is the announcement (Expect) this submission
	// fulfils.
	Arrival *Arrival
}

// Receipt is what Submit did.
type Receipt struct {
	Duplicate  bool
	JobID      string
	Status     string
	Ignored    string
	Superseded string
}

type deliveryRecord struct {
	At     time.Time `json:"at"`
	Event  string    `json:"event,omitempty"`
	JobID  string    `json:"job_id,omitempty"`
	Result string    `json:"result"`
}

// Submit applies sub in one transaction shared, through bbolt's Batch, with
// other concurrent deliveries so they share an fsync. A delivery id seen
// before yields a Duplicate receipt and changes nothing. The function given to
// Batch only reads and writes the transaction, so bbolt may safely re-run it.
func (s *Store) Submit(ctx context.Context, sub Submission) (Receipt, error) {
	if err := ctxErr(ctx); err != nil {
		return Receipt{}, err
	}
	now := s.now().UTC()
	var tmpl job.Job
	if sub.Job != nil {
		tmpl = *sub.Job
		if tmpl.ID == "" {
			tmpl.ID = s.ids.New(now)
		}
		if tmpl.CreatedAt.IsZero() {
			tmpl.CreatedAt = now
		}
	}
	var rc Receipt
	runnable := false
	var interrupt []string
	err := s.group(sub.Arrival, func(tx *bolt.Tx) error {
		rc, runnable, interrupt = Receipt{}, false, nil
		deliveries := tx.Bucket(bucketDeliveries)
		if sub.DeliveryID != "" {
			if v := deliveries.Get([]byte(sub.DeliveryID)); v != nil {
				var rec deliveryRecord
				_ = json.Unmarshal(v, &rec)
				rc = Receipt{Duplicate: true, JobID: rec.JobID}
				return nil
			}
		}
		var err error
		switch sub.Action {
		case ActionIgnore:
			rc.Ignored = sub.Reason
		case ActionEnqueue:
			j := tmpl
			j.Trigger.DeliveryID = sub.DeliveryID
			if prev := consumedBy(tx, &j); prev != "" {
				rc = Receipt{Ignored: "this feedback was already turned into job " + prev}
				break
			}
			rc, err = enqueue(tx, &j, now)
			if err == nil {
				err = consume(tx, &j)
			}
			runnable = rc.Status == string(job.StateQueued)
		case ActionControl:
			j := tmpl
			j.Trigger.DeliveryID = sub.DeliveryID
			j.Kind = job.KindControl
			j.State = job.StateQueued
			j.UpdatedAt = now
			if j.QueueSeq, err = pushQueue(tx, bucketControl, j.ID, 0); err != nil {
				return err
			}
			if err = putJob(tx, &j, ""); err != nil {
				return err
			}
			rc = Receipt{JobID: j.ID, Status: string(j.State)}
			runnable = true
		case ActionCancelOvernight:
			rc, err = cancelOvernight(tx, sub.Key, now)
		case ActionCancelIssue:
			var jobs []*job.Job
			jobs, interrupt, err = cancelIssueTx(tx, sub.Key, sub.Reason, now)
			if len(jobs) > 0 {
				rc = Receipt{JobID: jobs[len(jobs)-1].ID, Status: string(job.StateCanceled)}
			} else {
				rc.Ignored = "no queued or running job for this pull request"
			}
		default:
			return errs.E(errs.KindInvalid, fmt.Sprintf("unknown submission action %d", sub.Action), nil)
		}
		if err != nil {
			return err
		}
		if err := applyInstallation(tx, sub, now); err != nil {
			return err
		}
		if sub.DeliveryID == "" {
			return nil
		}
		result := rc.Status
		if rc.Ignored != "" {
			result = "ignored: " + rc.Ignored
		}
		rec, _ := json.Marshal(deliveryRecord{At: now, Event: sub.Event, JobID: rc.JobID, Result: result})
		return deliveries.Put([]byte(sub.DeliveryID), rec)
	})
	if err != nil {
		return Receipt{}, err
	}
	if runnable {
		s.notify()
	}
	for _, id := range interrupt {
		s.interrupt(id)
	}
	return rc, nil
}

func applyInstallation(tx *bolt.Tx, sub Submission, now time.Time) error {
	if sub.Installation == nil {
		return nil
	}
	b := tx.Bucket(bucketInstallations)
	key := []byte(strconv.FormatInt(sub.Installation.ID, 10))
	if sub.InstallationDeleted {
		return b.Delete(key)
	}
	in := *sub.Installation
	in.UpdatedAt = now
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// feedbackKeys are the consumed-bucket keys of a job's triggering comment or
// review: feedback is turned into a job once, whatever delivers it again.
func feedbackKeys(j *job.Job) [][]byte {
	var keys [][]byte
	if j.Trigger.CommentID != 0 {
		keys = append(keys, []byte(fmt.Sprintf("comment:%d", j.Trigger.CommentID)))
	}
	if j.Trigger.ReviewID != 0 && j.Trigger.Source == job.SourceReview {
		keys = append(keys, []byte(fmt.Sprintf("review:%d", j.Trigger.ReviewID)))
	}
	return keys
}

func consumedBy(tx *bolt.Tx, j *job.Job) string {
	b := tx.Bucket(bucketConsumed)
	for _, k := range feedbackKeys(j) {
		if v := b.Get(k); v != nil {
			return string(v)
		}
	}
	return ""
}

func consume(tx *bolt.Tx, j *job.Job) error {
	b := tx.Bucket(bucketConsumed)
	for _, k := range feedbackKeys(j) {
		if err := b.Put(k, []byte(j.ID)); err != nil {
			return err
		}
	}
	return nil
}

// enqueue places a new pipeline job under the single-flight rules of contract
// section 5: a queued or scheduled job of the same issue is superseded; a
// running one keeps running and the new job waits behind it.
func enqueue(tx *bolt.Tx, j *job.Job, now time.Time) (Receipt, error) {
	if j.Kind == "" {
		j.Kind = job.KindRun
	}
	if j.ScheduledFor.IsZero() {
		j.State = job.StateQueued
	} else {
		j.State = job.StateScheduled
	}
	j.UpdatedAt = now
	key := j.Key()
	sl := getSlot(tx, key)
	rc := Receipt{JobID: j.ID}

	supersede := func(id string) error {
		if id == "" {
			return nil
		}
		old, err := getJob(tx, id)
		if err != nil {
			return err
		}
		if old.State != job.StateQueued && old.State != job.StateScheduled {
			return nil
		}
		if err := dequeue(tx, old); err != nil {
			return err
		}
		prev := old.State
		old.State = job.StateSuperseded
		old.SupersededBy = j.ID
		old.Reason = "superseded by a newer request for this issue"
		old.UpdatedAt, old.FinishedAt = now, now
		rc.Superseded = old.ID
		return putJob(tx, old, prev)
	}

	running := false
	if sl.Current != "" {
		cur, err := getJob(tx, sl.Current)
		if err != nil && err != ErrNotFound {
			return rc, err
		}
		running = cur != nil && cur.State == job.StateRunning
	}
	if running {
		if err := supersede(sl.Next); err != nil {
			return rc, err
		}
		sl.Next = j.ID
	} else {
		if err := supersede(sl.Current); err != nil {
			return rc, err
		}
		sl.Current, sl.Next = j.ID, ""
	}
	if err := place(tx, j, sl.Current == j.ID); err != nil {
		return rc, err
	}
	sl.Last = j.ID
	if err := putSlot(tx, key, sl); err != nil {
		return rc, err
	}
	if err := putJob(tx, j, ""); err != nil {
		return rc, err
	}
	rc.Status = string(j.State)
	if running && j.State == job.StateQueued {
		rc.Status = string(job.StateQueued)
	}
	return rc, nil
}

// place puts a job where it waits: the schedule when it has a future time,
// the FIFO when it is its issue's current job, nowhere (waiting as the
// slot's Next) otherwise.
func place(tx *bolt.Tx, j *job.Job, current bool) error {
	if j.State == job.StateScheduled {
		return tx.Bucket(bucketScheduled).Put(timeKey(j.ScheduledFor, j.ID), []byte(j.ID))
	}
	if !current {
		return nil
	}
	seq, err := pushQueue(tx, bucketQueue, j.ID, j.QueueSeq)
	if err != nil {
		return err
	}
	j.QueueSeq = seq
	return nil
}

func cancelOvernight(tx *bolt.Tx, key string, now time.Time) (Receipt, error) {
	sl := getSlot(tx, key)
	for _, id := range []string{sl.Next, sl.Current} {
		if id == "" {
			continue
		}
		j, err := getJob(tx, id)
		if err != nil {
			continue
		}
		if !j.Overnight || (j.State != job.StateScheduled && j.State != job.StateQueued) {
			continue
		}
		if err := cancelWaiting(tx, j, "the overnight label was removed before the job started", now); err != nil {
			return Receipt{}, err
		}
		return Receipt{JobID: j.ID, Status: string(job.StateCanceled)}, nil
	}
	return Receipt{Ignored: "no overnight job waiting for this issue"}, nil
}

// cancelWaiting cancels a job that is queued or scheduled and fixes its slot.
func cancelWaiting(tx *bolt.Tx, j *job.Job, reason string, now time.Time) error {
	if err := dequeue(tx, j); err != nil {
		return err
	}
	prev := j.State
	j.State = job.StateCanceled
	j.Reason = reason
	j.UpdatedAt, j.FinishedAt = now, now
	if err := putJob(tx, j, prev); err != nil {
		return err
	}
	if j.Kind == job.KindControl {
		return nil
	}
	_, err := leaveSlot(tx, j, now)
	return err
}

// leaveSlot removes a job that is done (or canceled) from its issue's slot and
// makes the job waiting behind it current. It reports whether that job became
// runnable.
func leaveSlot(tx *bolt.Tx, j *job.Job, now time.Time) (bool, error) {
	key := j.Key()
	sl := getSlot(tx, key)
	switch j.ID {
	case sl.Next:
		sl.Next = ""
		return false, putSlot(tx, key, sl)
	case sl.Current:
	default:
		return false, nil
	}
	sl.Current, sl.Next = sl.Next, ""
	runnable := false
	if sl.Current != "" {
		nj, err := getJob(tx, sl.Current)
		if err != nil {
			return false, err
		}
		if nj.State == job.StateQueued {
			if err := place(tx, nj, true); err != nil {
				return false, err
			}
			nj.UpdatedAt = now
			if err := putJob(tx, nj, nj.State); err != nil {
				return false, err
			}
			runnable = true
		}
	}
	return runnable, putSlot(tx, key, sl)
}
