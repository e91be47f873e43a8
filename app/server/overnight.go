package server

import (
	"context"
	"time"

	"github.com/selfcode/selfcode/app/budget"
	"github.com/selfcode/selfcode/app/ghapp"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/overnight"
)

// jobHooks are the worker's hooks around each pipeline job.
type jobHooks struct {
	admit    func(ctx context.Context, j *job.Job) (time.Time, string, error)
	finished func(ctx context.Context, leased, ended *job.Job)
}

// overnight builds the overnight scheduler and the daily budgets, which
// hold jobs back before they start (and, through the runner, refuse their
// model calls once spent).
func (s *Server) overnight(parts Parts, windows overnight.Windows, o Options) (jobHooks, error) {
	cfg := s.cfg
	var issues interface {
		overnight.Issues
		budget.Commenter
	}
	if parts.GitHub != nil {
		issues = ghapp.Issues{Clients: parts.GitHub}
	} else {
		s.log.Warn("no GitHub client for overnight outcomes and budget notices; issues will not be commented or relabelled")
	}
	// A nil issues converts to nil interfaces below: no comments, no labels.
	var err error
	s.budget, err = budget.New(budget.Options{Ledger: s.Store, Limit: cfg.DailyTokenBudget, CostLimit: cfg.DailyCostBudget,
		Location: cfg.Location(), Now: s.Store.Now, Issues: issues, Logger: s.log})
	if err != nil {
		return jobHooks{}, err
	}
	// The report's narrative is the server's own model use: budgeted,
	// priced and counted like a job's calls.
	sched, err := overnight.New(overnight.Options{
		Store: s.Store, Windows: windows, Issues: issues, Model: s.model, ReportURL: cfg.ReportWebhookURL,
		Budget: s.budget.Server(), Prices: cfg.Prices(), Observer: s.Metrics,
		Backoff: o.ReportBackoff, Location: cfg.Location(), OvernightLabel: cfg.OvernightLabel,
		Tick: o.Tick, Logger: s.log,
	})
	if err != nil {
		return jobHooks{}, err
	}
	s.Overnight = sched
	return jobHooks{admit: s.budget.Admit, finished: sched.JobFinished}, nil
}

// Enabled reports the kill switch: false keeps every pipeline job queued.
func (s *Server) Enabled() bool { return s.enabled.Load() }

// SetEnabled turns the kill switch at run time (admin API POST
// /api/enabled). Lifting it wakes the workers, so stored jobs start at once.
func (s *Server) SetEnabled(on bool) {
	if s.enabled.Swap(on) == on {
		return
	}
	s.log.Warn("kill switch changed", "enabled", on)
	if on {
		s.Store.Wake()
	}
}
