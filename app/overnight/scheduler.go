package overnight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/prompts"
)

// Issues comments on a job's issue and swaps its labels (ghapp.Issues
// does, over GitHub).
type Issues interface {
	Comment(ctx context.Context, j *job.Job, body string) error
	SwapLabel(ctx context.Context, j *job.Job, remove, add string) error
}

// Options configures a Scheduler.
type Options struct {
	Store   *store.Store
	Windows Windows
	// Issues, when set, receives each overnight job's outcome comment and
	// label swap.
	Issues Issues
	// Model writes the report's narrative (reporter role); nil or failing:
	// the deterministic narrative.
	Model chat.Model
	// Budget, Prices and Observer meter the narrative's call like a job's
	// (pipeline.Metered): Budget is asked first (the server's own share of
	// the daily budgets, budget.Budget.Server) and, once it is spent, the
	// report gets the deterministic narrative; the call is priced by
	// Prices and counted by Observer (/metrics). Each may be nil.
	Budget   pipeline.Budget
	Prices   pipeline.Pricer
	Observer pipeline.Observer
	Prompts  *prompts.Set // default: the embedded prompts
	// ReportURL is SELFCODE_REPORT_WEBHOOK_URL; empty: reports are only
	// stored.
	ReportURL string
	Client    *http.Client // default: 30s timeout
	// Attempts bounds deliveries of one report in a row (default 5); the
	// first retry waits Backoff (default 2s), each next one twice as long,
	// at most a minute.
	Attempts int
	Backoff  time.Duration
	Location *time.Location // zone of report dates; default UTC
	// Labels: the overnight label is swapped for Done or Failed.
	OvernightLabel, DoneLabel, FailedLabel string
	// Tick is how often Run looks for windows to close; default 10s.
	Tick   time.Duration
	Logger *slog.Logger
}

// Scheduler runs the overnight windows.
type Scheduler struct {
	o    Options
	log  *slog.Logger
	kick chan struct{}
}

// New checks o and builds a Scheduler.
func New(o Options) (*Scheduler, error) {
	if o.Store == nil || o.Windows.Schedule == nil {
		return nil, errs.E(errs.KindInvalid, "overnight scheduler needs a store and a schedule", nil)
	}
	if o.Prompts == nil {
		ps, err := prompts.Load(prompts.Options{})
		if err != nil {
			return nil, err
		}
		o.Prompts = ps
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 2 * time.Second
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.OvernightLabel == "" {
		o.OvernightLabel = "selfcode:overnight"
	}
	if o.DoneLabel == "" {
		o.DoneLabel = "selfcode:done"
	}
	if o.FailedLabel == "" {
		o.FailedLabel = "selfcode:failed"
	}
	if o.Tick <= 0 {
		o.Tick = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Model != nil {
		o.Model = pipeline.Metered(o.Model, pipeline.MeterOptions{Budget: o.Budget, Prices: o.Prices, Observer: o.Observer})
	}
	return &Scheduler{o: o, log: o.Logger, kick: make(chan struct{}, 1)}, nil
}

// Promote starts due jobs (worker.Options.Promote): overnight jobs one per
// repository at a time, and moved on when their window is over.
func (s *Scheduler) Promote(ctx context.Context, now time.Time) error {
	p, err := s.o.Store.Promote(ctx, now, store.PromoteOptions{OnePerRepo: true, WindowEnd: s.o.Windows.End, NextWindow: s.o.Windows.Next})
	for _, m := range p.Moved {
		s.log.Info("overnight job moved to the next window", "job_id", m.JobID, "to", m.To, "reason", m.Reason)
	}
	if len(p.Moved) > 0 {
		s.Kick()
	}
	return err
}

// Kick makes Run look at the windows now.
func (s *Scheduler) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// JobFinished tells an overnight job's issue how it ended and swaps its
// label (worker.Options.Finished).
func (s *Scheduler) JobFinished(ctx context.Context, leased, ended *job.Job) {
	if !ended.Overnight || !ended.State.Terminal() {
		return
	}
	if err := s.announce(ctx, ended); err != nil {
		s.log.Warn("post overnight outcome", "job_id", ended.ID, "repo", ended.Repo.FullName(), "issue", ended.Issue, "err", err)
	}
	s.Kick()
}

// announce posts the outcome comment and swaps the label, once per finished
// run (a restart between the two posts may repeat it; a failure is tried
// again when the window closes).
func (s *Scheduler) announce(ctx context.Context, j *job.Job) error {
	if s.o.Issues == nil || j.State == job.StateSuperseded || (j.State == job.StateCanceled && j.StartedAt.IsZero()) {
		return nil
	}
	kind := "overnight-outcome:" + j.ID + ":" + strconv.FormatInt(j.FinishedAt.UnixNano(), 10)
	if done, err := s.o.Store.HasNotice(ctx, j.Key(), kind); err != nil || done {
		return err
	}
	r := BuildRun(ctx, s.o.Store, j, nil, s.o.Location)
	body := fmt.Sprintf("🌙 **selfcode overnight run: %s**\n\n%s\n\n**Next:** %s\n\n<!-- selfcode:overnight:%s -->",
		r.Outcome, r.Narrative, r.NextSuggestedTarget, j.ID)
	if err := s.o.Issues.Comment(ctx, j, body); err != nil {
		return err
	}
	label := s.o.FailedLabel
	if r.Outcome == Pass {
		label = s.o.DoneLabel
	}
	if err := s.o.Issues.SwapLabel(ctx, j, s.o.OvernightLabel, label); err != nil {
		return err
	}
	_, err := s.o.Store.MarkNotice(ctx, j.Key(), kind)
	return err
}

// Run closes windows as they end and delivers their reports until ctx is
// done. Reports left undelivered by an earlier run are delivered first.
func (s *Scheduler) Run(ctx context.Context) {
	s.redeliver(ctx)
	t := time.NewTicker(s.o.Tick)
	defer t.Stop()
	for {
		if err := s.CloseDue(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("close overnight windows", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// CloseDue closes every window whose time is up: jobs still waiting move to
// the next window; once no job of the window runs any more, its report is
// built, stored with the window's closing, and delivered. A window without
// jobs sends nothing.
func (s *Scheduler) CloseDue(ctx context.Context) error {
	now := s.o.Store.Now()
	// Jobs of ended windows that never started move on first, so that the
	// reports name them.
	if err := s.Promote(ctx, now); err != nil {
		return err
	}
	ws, err := s.o.Store.Windows(ctx, true)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if now.Before(s.o.Windows.End(w.Start)) {
			continue
		}
		if err := s.close(ctx, w, now); err != nil {
			return fmt.Errorf("close window %s: %w", w.Start.Format(time.RFC3339), err)
		}
	}
	return nil
}

func (s *Scheduler) close(ctx context.Context, w store.Window, now time.Time) error {
	moved := map[string]bool{}
	for _, m := range w.Moved {
		moved[m.JobID] = true
	}
	running := false
	for _, id := range w.Jobs {
		if moved[id] {
			continue
		}
		j, err := s.o.Store.Get(ctx, id)
		if err != nil {
			return err
		}
		switch j.State {
		case job.StateQueued, job.StateScheduled:
			reason := store.ReasonWindowOver
			if !j.ScheduledFor.IsZero() && j.Reason != "" {
				reason = j.Reason // waiting for the daily token budget
			}
			if _, err := s.o.Store.MoveToWindow(ctx, id, w.Start, s.o.Windows.Next(now), reason); err != nil {
				return err
			}
			s.log.Info("overnight job moved to the next window", "job_id", id, "repo", j.Repo.FullName(), "issue", j.Issue, "reason", reason)
		case job.StateRunning:
			running = true
		default:
			if err := s.announce(ctx, j); err != nil {
				s.log.Warn("post overnight outcome", "job_id", id, "err", err)
			}
		}
	}
	if running {
		return nil // each job is bounded by SELFCODE_OVERNIGHT_MAX_DURATION
	}
	all, err := s.o.Store.Windows(ctx, true)
	if err != nil {
		return err
	}
	for _, x := range all {
		if x.Start.Equal(w.Start) {
			w = x
		}
	}
	rep, err := s.Build(ctx, w)
	if err != nil {
		return err
	}
	if rep == nil {
		s.log.Info("overnight window closed with no jobs; no report", "window", w.Start)
		return s.o.Store.CloseWindow(ctx, w.Start, nil)
	}
	payload, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	stored := &store.Report{Payload: payload}
	if err := s.o.Store.CloseWindow(ctx, w.Start, stored); err != nil {
		return err
	}
	s.log.Info("morning report stored", "report_id", stored.ID, "window", w.Start, "runs", len(rep.Runs))
	return s.deliver(ctx, stored.ID)
}

// Build assembles a window's report; nil when the window ran no job.
// Jobs withdrawn before they started (label removed, superseded) are left
// out.
func (s *Scheduler) Build(ctx context.Context, w store.Window) (*MorningReport, error) {
	moved := map[string]*store.MovedJob{}
	for i := range w.Moved {
		moved[w.Moved[i].JobID] = &w.Moved[i]
	}
	var runs []Run
	seen := map[string]bool{}
	add := func(id string) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		j, err := s.o.Store.Get(ctx, id)
		if err != nil {
			return err
		}
		m := moved[id]
		if m == nil && j.StartedAt.IsZero() && (j.State == job.StateCanceled || j.State == job.StateSuperseded) {
			return nil
		}
		runs = append(runs, BuildRun(ctx, s.o.Store, j, m, s.o.Location))
		return nil
	}
	for _, id := range w.Jobs {
		if err := add(id); err != nil {
			return nil, err
		}
	}
	for _, m := range w.Moved {
		if err := add(m.JobID); err != nil {
			return nil, err
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	start := w.Start.In(s.o.Location)
	return &MorningReport{RunDate: start.Format(time.RFC3339), Narrative: s.narrative(ctx, start, runs), Runs: runs}, nil
}

var spaces = regexp.MustCompile(`\s+`)

// narrative asks the reporter model for 2 to 5 sentences about the runs and
// falls back to FallbackNarrative when it fails or answers out of bounds.
func (s *Scheduler) narrative(ctx context.Context, start time.Time, runs []Run) string {
	fallback := FallbackNarrative(start, runs)
	if s.o.Model == nil {
		return fallback
	}
	data, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		return fallback
	}
	sys, err1 := s.o.Prompts.Render(prompts.ReporterSystem, nil)
	user, err2 := s.o.Prompts.Render(prompts.ReporterUser, map[string]any{"RunsJSON": string(data)})
	if err := errors.Join(err1, err2); err != nil {
		s.log.Error("render reporter prompts", "err", err)
		return fallback
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := s.o.Model.Chat(ctx, chat.Request{Role: chat.RoleReporter, MaxTokens: 600,
		Messages: []chat.Message{{Role: chat.System, Content: sys}, {Role: chat.User, Content: user}}})
	var spent *chat.BudgetError
	if errors.As(err, &spent) {
		s.log.Info("the daily budget is spent; the report gets the plain narrative", "budget", spent.Limit, "used", spent.Detail)
		return fallback
	}
	if err != nil {
		s.log.Warn("reporter model failed; using the plain narrative", "err", err)
		return fallback
	}
	text := strings.TrimSpace(spaces.ReplaceAllString(resp.Message.Content, " "))
	if !validNarrative(text) {
		s.log.Warn("reporter narrative out of bounds (2-5 sentences); using the plain narrative", "chars", len(text))
		return fallback
	}
	return text
}

// deliver POSTs a stored report, retrying with backoff, and records each
// attempt on the stored report.
func (s *Scheduler) deliver(ctx context.Context, id string) error {
	if s.o.ReportURL == "" {
		s.log.Info("SELFCODE_REPORT_WEBHOOK_URL is not set; the report is only stored", "report_id", id)
		return nil
	}
	rep, err := s.o.Store.GetReport(ctx, id)
	if err != nil {
		return err
	}
	wait := s.o.Backoff
	for attempt := 1; ; attempt++ {
		perr := s.post(ctx, rep)
		now := s.o.Store.Now().UTC()
		if _, err := s.o.Store.UpdateReport(context.Background(), id, func(r *store.Report) error {
			r.Attempts++
			r.LastError = ""
			if perr != nil {
				r.LastError = perr.Error()
			} else {
				r.Delivered, r.DeliveredAt = true, now
			}
			return nil
		}); err != nil {
			return err
		}
		if perr == nil {
			s.log.Info("morning report delivered", "report_id", id, "attempt", attempt)
			return nil
		}
		s.log.Warn("morning report delivery failed", "report_id", id, "attempt", attempt, "err", perr)
		if errs.Is(perr, errs.KindPermanent) || attempt >= s.o.Attempts {
			return nil // kept undelivered, with the error, for the admin API
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if wait *= 2; wait > time.Minute {
			wait = time.Minute
		}
	}
}

// post sends one report. Errors never carry the URL (it may hold a token).
func (s *Scheduler) post(ctx context.Context, rep *store.Report) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.o.ReportURL, bytes.NewReader(rep.Payload))
	if err != nil {
		return errs.E(errs.KindPermanent, "SELFCODE_REPORT_WEBHOOK_URL is not a valid URL", nil)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "selfcode")
	req.Header.Set("X-Selfcode-Report-Id", rep.ID)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return errs.E(errs.KindTransient, "POST report", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return errs.E(errs.KindTransient, fmt.Sprintf("report receiver answered %s", resp.Status), nil)
	}
	return errs.E(errs.KindPermanent, fmt.Sprintf("report receiver answered %s", resp.Status), nil)
}

// redeliver retries reports a previous run could not deliver.
func (s *Scheduler) redeliver(ctx context.Context) {
	if s.o.ReportURL == "" {
		return
	}
	reps, err := s.o.Store.ListReports(ctx, 100)
	if err != nil {
		s.log.Error("list stored reports", "err", err)
		return
	}
	for _, r := range reps {
		if r.Delivered || r.Attempts >= 3*s.o.Attempts {
			continue
		}
		if err := s.deliver(ctx, r.ID); err != nil {
			s.log.Error("deliver stored report", "report_id", r.ID, "err", err)
		}
	}
}
