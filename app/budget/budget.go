package budget

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// Ledger stores model use per installation and day, and the one-per-issue
// notices already sent (*store.Store is one).
type Ledger interface {
	AddUsage(ctx context.Context, installationID int64, day string, add store.DayUsage) (store.DayUsage, error)
	Usage(ctx context.Context, installationID int64, day string) (store.DayUsage, error)
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
	// the token budget off (usage is still counted).
	Limit int64
	// CostLimit is the dollars each installation may spend on the model
	// per day (SELFCODE_DAILY_COST_BUDGET); 0 turns it off. Calls to a
	// model without a price count tokens only.
	CostLimit float64
	// Location is where days begin and end (SELFCODE_TIMEZONE); default UTC.
	Location *time.Location
	Now      func() time.Time
	// Issues, when set, receives the one comment per issue and day that says
	// why the job waits.
	Issues Commenter
	Logger *slog.Logger
}

// Budget is the daily token and cost budget of each installation.
type Budget struct{ o Options }

// New builds a Budget.
func New(o Options) (*Budget, error) {
	if o.Ledger == nil {
		return nil, errs.E(errs.KindInvalid, "token budget needs a ledger", nil)
	}
	if o.Limit < 0 || o.CostLimit < 0 {
		return nil, errs.E(errs.KindInvalid, "daily budgets must not be negative", nil)
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

// spent reads an installation's use today and says which budget it has
// used up (nil: neither).
func (b *Budget) spent(ctx context.Context, installationID int64) (*chat.BudgetError, error) {
	if b.o.Limit <= 0 && b.o.CostLimit <= 0 {
		return nil, nil
	}
	day := b.Day(b.o.Now())
	used, err := b.o.Ledger.Usage(ctx, installationID, day)
	if err != nil {
		return nil, fmt.Errorf("read today's model use: %w", err)
	}
	switch {
	case b.o.Limit > 0 && used.Tokens >= b.o.Limit:
		return &chat.BudgetError{Limit: chat.LimitDailyTokens, Detail: fmt.Sprintf("%d of %d tokens on %s", used.Tokens, b.o.Limit, day)}, nil
	case b.o.CostLimit > 0 && used.Dollars() >= b.o.CostLimit:
		return &chat.BudgetError{Limit: chat.LimitDailyCost, Detail: fmt.Sprintf("$%.2f of $%.2f on %s", used.Dollars(), b.o.CostLimit, day)}, nil
	}
	return nil, nil
}

// Admit decides whether a job may start now (worker.Options.Admit): while
// its installation has used less than its budgets today it may; otherwise
// it waits until the next day begins, and its issue is told once why.
func (b *Budget) Admit(ctx context.Context, j *job.Job) (time.Time, string, error) {
	spent, err := b.spent(ctx, j.InstallationID)
	if err != nil || spent == nil {
		return time.Time{}, "", err
	}
	now := b.o.Now()
	day := b.Day(now)
	until := b.NextDay(now)
	what, setting := "daily model-token budget", "SELFCODE_DAILY_TOKEN_BUDGET"
	if spent.Limit == chat.LimitDailyCost {
		what, setting = "daily cost budget", "SELFCODE_DAILY_COST_BUDGET"
	}
	reason := fmt.Sprintf("the %s is used up (%s); the job waits until %s", what, spent.Detail, until.Format("2006-01-02 15:04 MST"))
	log := b.o.Logger.With("job_id", j.ID, "repo", j.Repo.FullName(), "issue", j.Issue, "installation_id", j.InstallationID)
	if b.o.Issues != nil {
		first, err := b.o.Ledger.MarkNotice(ctx, j.Key(), "budget:"+day)
		if err != nil {
			log.Warn("record budget notice", "err", err)
		} else if first {
			body := fmt.Sprintf("⏸️ selfcode has not started this job: this installation has used its %s "+
				"(%s, `%s`). The job stays queued and starts after %s.",
				what, spent.Detail, setting, until.Format("2006-01-02 15:04 MST"))
			if err := b.o.Issues.Comment(ctx, j, body); err != nil {
				log.Warn("comment on the budget wait", "err", err)
			}
		}
	}
	log.Info("job waits for the daily budget", "budget", spent.Limit, "used", spent.Detail, "until", until)
	return until, reason, nil
}

// Job is a job's share of its installation's daily budgets, for the
// pipeline (pipeline.Input.Budget): every model call is refused once the
// installation's tokens or dollars for today are used up, and charged to
// the day as soon as it has been made.
func (b *Budget) Job(j *job.Job) *Job {
	return &Job{b: b, installationID: j.InstallationID,
		log: b.o.Logger.With("job_id", j.ID, "installation_id", j.InstallationID)}
}

// ServerAccount is the ledger account of the server's own model use, made
// for no installation (the morning report's narrative). GitHub numbers
// installations from 1, so it is never an installation's.
const ServerAccount int64 = 0

// Server is the share of the server's own model use: it is kept in the
// ledger as ServerAccount, under the same daily token and cost limits as
// one installation, so a report's call is refused once they are spent.
func (b *Budget) Server() *Job {
	return &Job{b: b, installationID: ServerAccount, log: b.o.Logger.With("account", "server")}
}

// Job implements pipeline.Budget for one job (or for the server's own
// calls: Server).
type Job struct {
	b              *Budget
	installationID int64
	log            *slog.Logger
}

var _ pipeline.Budget = (*Job)(nil)

// Allow returns a *chat.BudgetError when the installation's daily token
// or cost budget is used up.
func (j *Job) Allow(ctx context.Context) error {
	spent, err := j.b.spent(ctx, j.installationID)
	if err != nil {
		return err
	}
	if spent != nil {
		return spent
	}
	return nil
}

// Spend charges one call's tokens, and its cost when priced, to today.
func (j *Job) Spend(ctx context.Context, c pipeline.Charge) {
	add := store.DayUsage{Tokens: int64(c.Usage.Total)}
	if c.Priced {
		add.NanoDollars = store.NanoDollars(c.Cost)
	}
	if add.Tokens <= 0 && add.NanoDollars <= 0 {
		return
	}
	if _, err := j.b.o.Ledger.AddUsage(context.WithoutCancel(ctx), j.installationID, j.b.Day(j.b.o.Now()), add); err != nil {
		j.log.Error("count model use", "err", err)
	}
}
