package job

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// State is where a job is in its life.
type State string

// Job states (contract section 5).
const (
	StateQueued     State = "queued"
	StateScheduled  State = "scheduled"
	StateRunning    State = "running"
	StateSucceeded  State = "succeeded"
	StateFailed     State = "failed"
	StateCanceled   State = "canceled"
	StateSuperseded State = "superseded"
)

// States lists every state, in display order.
var States = []State{StateQueued, StateScheduled, StateRunning, StateSucceeded, StateFailed, StateCanceled, StateSuperseded}

// Terminal reports whether a job in state s will never run again on its own.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateCanceled, StateSuperseded:
		return true
	}
	return false
}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, v := range States {
		if v == s {
			return true
		}
	}
	return false
}

// Outcome is what a finished job achieved.
type Outcome string

// Job outcomes (contract section 5).
const (
	OutcomeNone               Outcome = ""
	OutcomePROpened           Outcome = "pr_opened"
	OutcomePRUpdated          Outcome = "pr_updated"
	OutcomePlanPosted         Outcome = "plan_posted"
	OutcomeNoChange           Outcome = "no_change"
	OutcomeVerificationFailed Outcome = "verification_failed"
	// OutcomeUnverified: a change was made but nothing shows it works
	// (setup failed, a command is missing or timed out, nothing ran, or
	// a command fails on the base too and its tests are unknown).
	OutcomeUnverified Outcome = "unverified"
	OutcomeError      Outcome = "error"
	// OutcomeLimitReached: the job stopped at a limit (Job.Stop says
	// which); the work so far is published as a draft marked unfinished
	// (or, with nothing worth a pull request, as a comment), and
	// `/selfcode retry` resumes from it. The job's state is failed.
	OutcomeLimitReached Outcome = "limit_reached"
)

// Kind says what a job does when it runs.
type Kind string

// Job kinds. Run and Plan occupy the (repository, issue) single-flight slot;
// Control jobs (cancel, status, help) are quick replies that never do.
const (
	KindRun     Kind = "run"
	KindPlan    Kind = "plan"
	KindControl Kind = "control"
)

// Source says what kind of GitHub event created the job.
type Source string

// Trigger sources.
const (
	SourceIssueComment  Source = "issue_comment"
	SourceReviewComment Source = "pull_request_review_comment"
	SourceReview        Source = "pull_request_review"
	SourceLabel         Source = "label"
	SourceOvernight     Source = "overnight_label"
	SourceCheckRun      Source = "check_run"
	// SourceCI: another check (the repository's CI) failed on selfcode's
	// own pull request.
	SourceCI    Source = "ci"
	SourceLocal Source = "local"
)

// Trigger records who asked for the job and from where.
type Trigger struct {
	Source     Source `json:"source"`
	DeliveryID string `json:"delivery_id,omitempty"`
	Sender     string `json:"sender"`
	SenderType string `json:"sender_type,omitempty"`
	CommentID  int64  `json:"comment_id,omitempty"`
	CommentURL string `json:"comment_url,omitempty"`
	Command    string `json:"command,omitempty"` // run, plan, cancel, retry, status, help
	Label      string `json:"label,omitempty"`
	ReviewID   int64  `json:"review_id,omitempty"`
	Path       string `json:"path,omitempty"` // review comment file
	Line       int    `json:"line,omitempty"`
	StartLine  int    `json:"start_line,omitempty"`
	DiffHunk   string `json:"diff_hunk,omitempty"`
	// CI failures (SourceCI): the failing check, the commit it failed on,
	// and the failure's signature (check name and normalised output), so
	// that one failure is never handled twice.
	Check     string `json:"check,omitempty"`
	HeadSHA   string `json:"head_sha,omitempty"`
	Signature string `json:"signature,omitempty"`
	// CheckApp is the slug of the app that ran the failing check (one of
	// SELFCODE_CI_APPS); CheckOutput is what the check printed (title,
	// summary, text): untrusted, given to the model as CI output, never
	// as instructions.
	CheckApp    string `json:"check_app,omitempty"`
	CheckOutput string `json:"check_output,omitempty"`
	// ActionsJobID is the GitHub Actions job the failing check is, whose
	// log the follow-up reads (0: another app's check).
	ActionsJobID int64     `json:"actions_job_id,omitempty"`
	ReceivedAt   time.Time `json:"received_at"`
}

// Repo identifies a repository on GitHub.
type Repo struct {
	Owner         string `json:"owner"`
	Name          string `json:"name"`
	ID            int64  `json:"id,omitempty"`
	DefaultBranch string `json:"default_branch,omitempty"`
	CloneURL      string `json:"clone_url,omitempty"`
	Private       bool   `json:"private,omitempty"`
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Stage is one step of a job's timeline.
type Stage struct {
	Name       stage.Name   `json:"name"`
	Status     stage.Status `json:"status"`
	Summary    string       `json:"summary,omitempty"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt time.Time    `json:"finished_at,omitempty"`
}

// Publication is what has been published on GitHub for the job so far; it is
// what makes re-running a job update instead of duplicate.
type Publication struct {
	ProgressCommentID int64  `json:"progress_comment_id,omitempty"`
	ReportCommentID   int64  `json:"report_comment_id,omitempty"` // a human's PR: the report, as selfcode's comment
	Branch            string `json:"branch,omitempty"`
	PRNumber          int    `json:"pr_number,omitempty"`
	PRURL             string `json:"pr_url,omitempty"`
	CheckRunID        int64  `json:"check_run_id,omitempty"`
	HeadSHA           string `json:"head_sha,omitempty"`
	Reacted           bool   `json:"reacted,omitempty"`
}

// Stop is the limit a run was stopped at.
type Stop string

// Stops.
const (
	// StopOvertime: an overnight job reached SELFCODE_OVERNIGHT_MAX_DURATION.
	StopOvertime Stop = "overtime"
	// StopJobTimeout: the job reached its repository's limits.job_timeout
	// (checkout to publish).
	StopJobTimeout Stop = "job_timeout"
	// StopMaxTokens: the job used its repository's limits.max_tokens.
	StopMaxTokens Stop = "max_tokens"
	// StopDailyTokens: the installation used SELFCODE_DAILY_TOKEN_BUDGET
	// for the day.
	StopDailyTokens Stop = "daily_tokens"
	// StopDailyCost: the installation spent SELFCODE_DAILY_COST_BUDGET for
	// the day.
	StopDailyCost Stop = "daily_cost"
)

// Describe names the limit for people, with the setting that sets it.
func (s Stop) Describe() string {
	switch s {
	case StopOvertime:
		return "the overnight time limit (SELFCODE_OVERNIGHT_MAX_DURATION)"
	case StopJobTimeout:
		return "the job's time limit (limits.job_timeout)"
	case StopMaxTokens:
		return "the job's token limit (limits.max_tokens)"
	case StopDailyTokens:
		return "the installation's daily token budget (SELFCODE_DAILY_TOKEN_BUDGET)"
	case StopDailyCost:
		return "the installation's daily cost budget (SELFCODE_DAILY_COST_BUDGET)"
	}
	return string(s)
}

// StopError is a run stopped at a limit: the cause the worker cancels a
// run's context with when time is up, and what the runner reports once
// it has saved the work so far.
type StopError struct {
	Stop   Stop
	Detail string // e.g. "45m0s", "1000 of 1000 tokens today"
}

func (e *StopError) Error() string {
	if e.Detail == "" {
		return "stopped at " + e.Stop.Describe()
	}
	return "stopped at " + e.Stop.Describe() + ": " + e.Detail
}

// Usage is what a job's model calls used, by token kind, and what they
// cost. It describes the last run, like Tokens.
type Usage struct {
	PromptTokens       int `json:"prompt_tokens"`
	CachedPromptTokens int `json:"cached_prompt_tokens"`
	CompletionTokens   int `json:"completion_tokens"`
	// CostUSD is the cost in dollars; null when a call's model has no
	// price (UnpricedModels names them): unknown, never a made-up zero.
	CostUSD        *float64 `json:"cost_usd"`
	UnpricedModels []string `json:"unpriced_models,omitempty"`
}

// Job is one unit of work, stored as JSON under its ID.
type Job struct {
	ID         string  `json:"id"`
	Kind       Kind    `json:"kind"`
	State      State   `json:"state"`
	Outcome    Outcome `json:"outcome"`
	Repo       Repo    `json:"repo"`
	Repository string  `json:"repository"` // owner/name, for API readers
	Issue      int     `json:"issue"`
	IsPR       bool    `json:"is_pr,omitempty"`
	IssueTitle string  `json:"issue_title,omitempty"`
	IssueBody  string  `json:"issue_body,omitempty"`
	// IssueAuthor wrote the issue or pull request (as the delivery had it).
	IssueAuthor    string    `json:"issue_author,omitempty"`
	IssueURL       string    `json:"issue_url,omitempty"`
	Instructions   string    `json:"instructions,omitempty"`
	InstallationID int64     `json:"installation_id,omitempty"`
	Trigger        Trigger   `json:"trigger"`
	Overnight      bool      `json:"overnight,omitempty"`
	Attempts       int       `json:"attempts"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	StartedAt      time.Time `json:"started_at,omitempty"`
	FinishedAt     time.Time `json:"finished_at,omitempty"`
	ScheduledFor   time.Time `json:"scheduled_for,omitempty"`
	Error          string    `json:"error,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	// Stop says why the worker stopped the run before it ended by itself
	// (empty: it did not), so reports tell it without reading Error.
	Stop            Stop   `json:"stop,omitempty"`
	SupersededBy    string `json:"superseded_by,omitempty"`
	CancelRequested bool   `json:"cancel_requested,omitempty"`
	TargetJobID     string `json:"target_job_id,omitempty"` // control jobs: the job acted on
	Tokens          int    `json:"tokens"`
	// Usage is the last run's tokens by kind and their cost (nil before a
	// run made a model call).
	Usage  *Usage  `json:"usage,omitempty"`
	Stages []Stage `json:"stages,omitempty"`
	// Time is where the last run's time went, part by part (queue wait,
	// checkout, sandbox start, setup, baseline, model, verify, fix,
	// publish); parts may overlap.
	Time        []stage.Span `json:"time,omitempty"`
	Publication Publication  `json:"publication"`
	QueueSeq    uint64       `json:"queue_seq,omitempty"`
}

// Key is the single-flight key of the job's (repository, issue).
func (j *Job) Key() string { return IssueKey(j.Repo.FullName(), j.Issue) }

// IssueKey builds the single-flight key "owner/name#N", lower-cased because
// GitHub owner and repository names are case-insensitive.
func IssueKey(fullName string, issue int) string {
	return strings.ToLower(fullName) + "#" + strconv.Itoa(issue)
}

// Duration is how long the job ran, zero if it never started.
func (j *Job) Duration() time.Duration {
	if j.StartedAt.IsZero() {
		return 0
	}
	end := j.FinishedAt
	if end.IsZero() {
		end = time.Now()
	}
	return end.Sub(j.StartedAt)
}

// IDs makes job identifiers that sort by creation time (ULIDs with monotonic
// entropy, so two made in the same millisecond still sort in order).
type IDs struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// NewIDs returns a generator of sortable job ids.
func NewIDs() *IDs {
	return &IDs{entropy: ulid.Monotonic(rand.Reader, 0)}
}

// New returns a fresh id for time t.
func (g *IDs) New(t time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), g.entropy)
	if err != nil {
		// Monotonic entropy overflows only after 2^80 ids in one millisecond;
		// fall back to fresh randomness rather than failing a delivery.
		id = ulid.MustNew(ulid.Timestamp(t), rand.Reader)
	}
	return strings.ToLower(id.String())
}

// ParseID checks that s looks like an id made by IDs.
func ParseID(s string) error {
	if _, err := ulid.ParseStrict(strings.ToUpper(s)); err != nil {
		return fmt.Errorf("invalid job id %q: %w", s, err)
	}
	return nil
}
