package budget

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
)

// Ledger stores token counts per installation and day, and the one-per-issue
// notices already sent (*store.Store is one).
type Ledger interface {
	AddUsage(ctx context.Context, installationID int64, day string, tokens int64) (int64, error)
	Usage(ctx context.Context, installationID int64, day string) (int64, error)
	MarkNotice(ctx context.Context, key, kind string) (bool, error)
}

// Commenter tells an issue why its job waits.
type Commenter interface {
	Comment(ctx context.Context, j *job.Job, body string) error
}

// Options configures a Budget.
type Options struct {
	Ledger Ledger
	// Limit is the model tokens each installation may use per day; 0 turns
	// the budget off (usage is still counted).
	Limit int64
	// Location is where days begin and end (SELFCODE_TIMEZONE); default UTC.
	Location *time.Location
	Now      func() time.Time
	// Issues, when set, receives the one comment per issue and day that says
	// why the job waits.
	Issues Commenter
	Logger *slog.Logger
}

// Budget is the daily token budget.
type Budget struct{ o Options }

// New builds a Budget.
func New(o Options) (*Budget, error) {
	if o.Ledger == nil {
		return nil, errs.E(errs.KindInvalid, "token budget needs a ledger", nil)
	}
	if o.Limit < 0 {
		return nil, errs.E(errs.KindInvalid, "daily token budget must not be negative", nil)
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Budget{o: o}, nil
}

// Day names the budget day of t ("YYYY-MM-DD" in the budget's zone).
func (b *Budget) Day(t time.Time) string { return t.In(b.o.Location).Format(time.DateOnly) }

// NextDay is when the budget day after t's begins.
func (b *Budget) NextDay(t time.Time) time.Time {
	l := t.In(b.o.Location)
	return time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, b.o.Location)
}

// Admit decides whether a job may start now (worker.Options.Admit): while
// its installation has used less than the limit today it may; otherwise it
// waits until the next day begins, and its issue is told once why.
func (b *Budget) Admit(ctx context.Context, j *job.Job) (time.Time, string, error) {
	if b.o.Limit <= 0 {
		return time.Time{}, "", nil
	}
	now := b.o.Now()
	day := b.Day(now)
	used, err := b.o.Ledger.Usage(ctx, j.InstallationID, day)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("read today's token usage: %w", err)
	}
	if used < b.o.Limit {
		return time.Time{}, "", nil
	}
	until := b.NextDay(now)
	reason := fmt.Sprintf("the daily token budget is used up (%d of %d tokens on %s); the job waits until %s",
		used, b.o.Limit, day, until.Format("2006-01-02 15:04 MST"))
	log := b.o.Logger.With("job_id", j.ID, "repo", j.Repo.FullName(), "issue", j.Issue, "installation_id", j.InstallationID)
	if b.o.Issues != nil {
		first, err := b.o.Ledger.MarkNotice(ctx, j.Key(), "budget:"+day)
		if err != nil {
			log.Warn("record budget notice", "err", err)
		} else if first {
			body := fmt.Sprintf("⏸️ selfcode has not started this job: this installation has used its daily model-token budget "+
				"(%d of %d tokens today, `SELFCODE_DAILY_TOKEN_BUDGET`). The job stays queued and starts after %s.",
				used, b.o.Limit, until.Format("2006-01-02 15:04 MST"))
			if err := b.o.Issues.Comment(ctx, j, body); err != nil {
				log.Warn("comment on the budget wait", "err", err)
			}
		}
	}
	log.Info("job waits for the daily token budget", "used", used, "limit", b.o.Limit, "until", until)
	return until, reason, nil
}

// Record counts the tokens a job's run used (worker.Options.Finished; the
// store resets a job's token count when it is leased, so ended.Tokens is this
// run's).
func (b *Budget) Record(ctx context.Context, leased, ended *job.Job) {
	if ended.Tokens <= 0 {
		return
	}
	if _, err := b.o.Ledger.AddUsage(ctx, ended.InstallationID, b.Day(b.o.Now()), int64(ended.Tokens)); err != nil {
		b.o.Logger.Error("count token usage", "job_id", ended.ID, "installation_id", ended.InstallationID, "err", err)
	}
}
