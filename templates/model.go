package templates

import (
	"time"

	"github.com/selfcode/selfcode/pipeline/stage"
)

// Report is the view of one job that most templates render.
type Report struct {
	JobID      string
	Repository string // owner/name
	// Issue is the issue the work resolves; the PR body says "Closes #Issue"
	// when it is not 0. For a selfcode PR updated from a command on the PR,
	// pass the original issue, not the PR number.
	Issue      int
	IssueTitle string // untrusted
	Summary    string // untrusted (model-written)
	Plan       *Plan

	FilesChanged   []FileChange
	Verification   []VerifyRow
	FixAttempts    int
	MaxFixAttempts int // 0: unknown, not shown
	Tokens         TokenUsage
	// Cost is what the job's model calls cost.
	Cost     Cost
	Duration time.Duration
	// FailedCheck, when set, is the check (the repository's CI) whose
	// failure this job fixes (untrusted: another app names it).
	FailedCheck string
	// Guidance names the repository's instructions files for agents the
	// model was given (AGENTS.md, .github/copilot-instructions.md); paths
	// are untrusted.
	Guidance []string
	// Time is where the job's time went, part by part (queue, checkout,
	// sandbox start, setup, baseline, model, verify, fix, publish); parts
	// may overlap.
	Time    []TimeSpan
	State   string // job state, e.g. "running", "succeeded"
	Outcome string // job outcome, e.g. "pr_opened", "verification_failed"
	Draft   bool   // the PR is a draft because the change is not verified
	// Verdict is verification's judgement: "verified", "failed" or
	// "unverified"; empty when the job ended before verification.
	Verdict string
	// Reasons say why a change is unverified and what to configure so it
	// can be (untrusted: they quote repository commands).
	Reasons []Reason
	// Regressions name what the change broke (untrusted).
	Regressions []string
	// Tests are the test-level differences between the base and the change.
	Tests       TestChanges
	BlastRadius []string
	// BlastRadiusNote says why the blast radius could not be computed.
	BlastRadiusNote string
	Iterations      []Iteration // earlier iterations, rendered collapsed
	Iteration       int         // this report's iteration number (0: not shown)
	Logs            string      // transcript excerpts and other free-form log text
	// Smoke, when set, says why the repository's smoke stage did not run
	// (untrusted: it may quote the engine).
	Smoke       string
	Stages      []Stage
	Branch      string
	PRURL       string
	Error       string // for job-failed comments; untrusted (may quote tools)
	CommandWord string // e.g. "/selfcode"
	// Unfinished, when set, says the job stopped at a limit: what is
	// published is its work so far.
	Unfinished *Unfinished
	// Diff is the change as a unified diff, for a comment that stands in
	// for a pull request (untrusted; trimmed like the logs).
	Diff string
}

// Unfinished describes a job stopped at a limit.
type Unfinished struct {
	// Limit names the limit with its setting, e.g. "the job's token limit
	// (limits.max_tokens)"; Detail says how much of it was used.
	Limit, Detail string
	During        string   // the step it stopped in, e.g. "edit"; empty when unknown
	Done          []string // plan steps done (untrusted: model text)
	Left          []string // plan steps left (untrusted)
}

// Cost is what a job's model calls cost in dollars. Known is false when a
// call's model has no price (Unpriced names them): the cost is unknown.
type Cost struct {
	Dollars  float64
	Known    bool
	Unpriced []string
}

// Plan is the planner's structured output (contract section 8).
type Plan struct {
	Summary   string
	Steps     []PlanStep
	Risks     []string
	Questions []string
}

// PlanStep is one step of a plan.
type PlanStep struct {
	ID         string
	Title      string
	Files      []PlanFile
	Acceptance []string
}

// PlanFile is a file a plan step touches.
type PlanFile struct {
	Path    string
	Action  string // create, modify, delete
	Purpose string
}

// FileChange is one file changed by the job.
type FileChange struct {
	Path    string
	Action  string // added, modified, deleted
	Added   int
	Deleted int
	Binary  bool
}

// VerifyRow is one verification command's (or setup step's) result.
type VerifyRow struct {
	Name    string
	Command string
	Passed  bool
	// Status is what happened: "passed", "failed", "could not run" or
	// "not run"; empty means Passed decides.
	Status   string
	Duration time.Duration
	Baseline string // e.g. "also failed on base"
	// BaseTests and Tests count the command's tests on the base commit and
	// on the change, when its runner named them.
	BaseTests *TestCount
	Tests     *TestCount
	Output    string // trimmed first when a body is too long
}

// TestCount counts tests by result.
type TestCount struct {
	Pass, Fail, Skip int
}

// Reason says why a change could not be verified and what would let it be.
type Reason struct {
	Why  string
	Next string
}

// TestChanges are the test-level differences between base and change
// (names untrusted).
type TestChanges struct {
	Fixed        []string      // failed on the base, pass now
	NewlyFailing []TestFailure // passed on the base (or did not exist), fail now
	StillFailing []string      // fail as on the base
	Flaky        []string      // failed, then passed when run again alone
}

// TestFailure is a newly failing test with the first lines of its output.
type TestFailure struct {
	Name   string
	Output string
}

// TokenUsage counts model tokens.
type TokenUsage struct {
	Total   int
	ByPhase map[string]int // phase name → tokens; rendered sorted by name
}

// Iteration is an earlier attempt at the same job, e.g. the previous update
// of the same pull request.
type Iteration struct {
	Number       int
	Summary      string
	Outcome      string
	FilesChanged []FileChange
	Verification []VerifyRow
}

// TimeSpan is the time a job spent in one part.
type TimeSpan struct {
	Part stage.Part
	Took time.Duration
}

// Stage is one line of the progress checklist.
type Stage struct {
	Name     stage.Name
	Status   stage.Status
	Summary  string
	Duration time.Duration
}

// StatusView answers "/selfcode status".
type StatusView struct {
	CommandWord string
	Found       bool // false: no job for this issue yet
	JobID       string
	State       string
	Outcome     string
	Attempts    int
	Stages      []Stage
	PRURL       string
	Error       string
	// QueuedBehind is how many jobs are ahead of this one when it is queued.
	QueuedBehind int
	UpdatedAt    time.Time
}

// HelpView answers "/selfcode help".
type HelpView struct {
	CommandWord    string
	Label          string
	OvernightLabel string
}

// DeniedView answers a sender without write permission.
type DeniedView struct {
	CommandWord string
	Sender      string
	Permission  string // what GitHub reported, e.g. "read"; may be empty
}
