package overnight

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/shortlist"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/stage"
)

// MorningReport is the JSON POSTed after each window (contract section 9).
type MorningReport struct {
	RunDate   string `json:"runDate"`
	Narrative string `json:"narrative"`
	Runs      []Run  `json:"runs"`
}

// Run is one job of the window.
type Run struct {
	Repository          string   `json:"repository"`
	Issue               int      `json:"issue"`
	Outcome             string   `json:"outcome"` // PASS, FAIL or SKIPPED
	DeficiencyAddressed string   `json:"deficiencyAddressed"`
	TargetFiles         []string `json:"targetFiles"`
	BranchName          string   `json:"branchName"`
	PRURL               string   `json:"prUrl"`
	Steps               []Step   `json:"steps"`
	Narrative           string   `json:"narrative"`
	NextSuggestedTarget string   `json:"nextSuggestedTarget"`
	// Added after contract section 9's first fields (which stay as they
	// are): the job's model tokens, their cost in dollars (null when a
	// model has no price: unknown, not zero), and the limit it stopped at
	// (max_tokens, daily_tokens, daily_cost, job_timeout, overtime;
	// absent when none).
	Tokens  int      `json:"tokens"`
	CostUSD *float64 `json:"costUsd"`
	Limit   job.Stop `json:"limit,omitempty"`
}

// Step is one pipeline step of a run.
type Step struct {
	Step       stage.Name   `json:"step"`   // plan, edit, verify, fix, publish
	Status     stage.Status `json:"status"` // pass, fail, skipped
	Summary    string       `json:"summary"`
	DurationMs int64        `json:"durationMs"`
}

// Report outcomes.
const (
	Pass    = "PASS"
	Fail    = "FAIL"
	Skipped = "SKIPPED"
)

var reportSteps = []stage.Name{stage.Plan, stage.Edit, stage.Verify, stage.Fix, stage.Publish}

// Artifacts reads a job's artifacts (*store.Store does).
type Artifacts interface {
	Artifact(ctx context.Context, id, name string) ([]byte, error)
}

// Outcome maps how a job ended to the report's outcome: a pull request or a
// posted plan passes; a failure fails; everything that made no change on
// purpose (canceled, superseded, nothing to change, moved on) is skipped.
func Outcome(j *job.Job) string {
	switch j.State {
	case job.StateSucceeded:
		switch j.Outcome {
		case job.OutcomePROpened, job.OutcomePRUpdated, job.OutcomePlanPosted:
			return Pass
		}
		return Skipped
	case job.StateFailed:
		return Fail
	}
	return Skipped
}

// BuildRun describes one job for the report. moved is set for a job the
// window moved on to a later window.
func BuildRun(ctx context.Context, arts Artifacts, j *job.Job, moved *store.MovedJob, loc *time.Location) Run {
	r := Run{
		Repository: j.Repo.FullName(), Issue: j.Issue, Outcome: Outcome(j),
		DeficiencyAddressed: strings.TrimSpace(j.IssueTitle),
		TargetFiles:         []string{}, BranchName: j.Publication.Branch, PRURL: j.Publication.PRURL,
		Tokens: j.Tokens, CostUSD: jobCost(j), Limit: j.Stop,
	}
	if r.DeficiencyAddressed == "" {
		r.DeficiencyAddressed = fmt.Sprintf("issue #%d", j.Issue)
	}
	var plan pipeline.Plan
	if b, err := arts.Artifact(ctx, j.ID, "plan.json"); err == nil && json.Unmarshal(b, &plan) == nil {
		r.TargetFiles = append(r.TargetFiles, plan.Files()...)
		if s := strings.TrimSpace(plan.Summary); s != "" {
			r.DeficiencyAddressed += " — " + firstLine(s)
		}
	}
	var scope *pipeline.Scope
	if b, err := arts.Artifact(ctx, j.ID, pipeline.ScopeArtifact); err == nil {
		scope = &pipeline.Scope{}
		if json.Unmarshal(b, scope) != nil {
			scope = nil
		}
	}
	if len(r.TargetFiles) == 0 && scope != nil {
		r.TargetFiles = append(r.TargetFiles, scope.Files...)
	}
	r.Steps = steps(j, moved != nil)
	if moved != nil {
		r.Outcome = Skipped
	}
	r.Narrative, r.NextSuggestedTarget = explain(j, r, scope, moved, loc)
	return r
}

func steps(j *job.Job, moved bool) []Step {
	out := make([]Step, 0, len(reportSteps))
	for _, name := range reportSteps {
		st := Step{Step: name, Status: stage.Skipped, Summary: "not run"}
		if moved {
			st.Summary = "not started: moved to the next window"
		}
		for _, s := range j.Stages {
			if s.Name != name || moved {
				continue
			}
			switch s.Status {
			case stage.Pass, stage.Fail, stage.Skipped:
				st.Status = s.Status
			case stage.Running:
				st.Status = stage.Fail // the job ended while it ran
			}
			st.Summary = s.Summary
			if st.Summary == "" {
				st.Summary = string(st.Status)
			}
			if !s.StartedAt.IsZero() && s.FinishedAt.After(s.StartedAt) {
				st.DurationMs = s.FinishedAt.Sub(s.StartedAt).Milliseconds()
			}
		}
		out = append(out, st)
	}
	return out
}

// explain writes a run's narrative and the suggested next step, from the
// job's facts alone.
func explain(j *job.Job, r Run, scope *pipeline.Scope, moved *store.MovedJob, loc *time.Location) (string, string) {
	ref := fmt.Sprintf("%s#%d", r.Repository, r.Issue)
	var b strings.Builder
	next := ""
	switch {
	case moved != nil:
		fmt.Fprintf(&b, "Not started in this window: %s. It moved to the window of %s.", strings.TrimSuffix(moved.Reason, "."), moved.To.In(loc).Format("2006-01-02 15:04 MST"))
		next = fmt.Sprintf("%s runs in the next window (%s).", ref, moved.To.In(loc).Format("2006-01-02 15:04 MST"))
	case r.Outcome == Pass && r.PRURL != "":
		verb := "Opened"
		if j.Outcome == job.OutcomePRUpdated {
			verb = "Updated"
		}
		fmt.Fprintf(&b, "%s pull request %s from branch %s; verification passed.", verb, r.PRURL, r.BranchName)
		next = "Review and merge " + r.PRURL + "."
	case r.Outcome == Pass:
		b.WriteString("Posted a plan on the issue.")
		next = fmt.Sprintf("Review the plan on %s.", ref)
	case j.Stop != "":
		fmt.Fprintf(&b, "Stopped at %s after %s", j.Stop.Describe(), j.Duration().Round(time.Second))
		if r.PRURL != "" {
			b.WriteString("; the draft pull request " + r.PRURL + " holds the work so far")
		}
		b.WriteString(".")
		next = fmt.Sprintf("Comment `/selfcode retry` on %s to resume from the saved work once %s allows, or split it into smaller issues.", ref, j.Stop.Describe())
	case r.Outcome == Fail && j.Outcome == job.OutcomeUnverified:
		b.WriteString("The change could not be verified")
		if r.PRURL != "" {
			b.WriteString("; the draft pull request " + r.PRURL + " says why")
		}
		b.WriteString(".")
		next = fmt.Sprintf("Configure verification for %s as the draft's report says, then label it again.", ref)
	case r.Outcome == Fail && j.Outcome == job.OutcomeVerificationFailed:
		b.WriteString("Verification still failed after the fix attempts")
		if r.PRURL != "" {
			b.WriteString("; the draft pull request " + r.PRURL + " has the failure report")
		}
		b.WriteString(".")
		next = fmt.Sprintf("Read the failure report on %s and narrow the issue before labelling it again.", ref)
	case r.Outcome == Fail:
		fmt.Fprintf(&b, "The job failed: %s.", strings.TrimSuffix(firstLine(orDefault(j.Error, "unknown error")), "."))
		next = fmt.Sprintf("Look at the failure on %s and label it again once it is addressed.", ref)
	default:
		why := orDefault(j.Reason, "nothing to change")
		fmt.Fprintf(&b, "Skipped: %s.", strings.TrimSuffix(strings.TrimPrefix(firstLine(why), "Skipped: "), "."))
		next = fmt.Sprintf("Check %s: %s.", ref, strings.TrimSuffix(firstLine(why), "."))
	}
	if scope != nil {
		switch {
		case scope.TooWide != "":
			next = fmt.Sprintf("Split %s into narrower issues: the plan reached %d dependent package(s) (limit %d) and %d file(s) (max %d).",
				ref, len(scope.BlastRadius), scope.Limit, len(scope.Files), scope.MaxFiles)
		case len(scope.BlastRadius) > 0:
			fmt.Fprintf(&b, " Blast radius: %d package(s) depend on the change (%s).", len(scope.BlastRadius), strings.Join(shortlist.Abbreviate(scope.BlastRadius, 5), ", "))
		}
		if scope.Narrowed && scope.TooWide == "" && scope.First != nil {
			fmt.Fprintf(&b, " The first plan was too wide (%s); it was narrowed.", scope.First.TooWide)
		}
	}
	return b.String(), next
}

// jobCost is a job's cost in dollars: nil when unknown (a model without a
// price, or tokens counted without their kinds); zero without model use.
func jobCost(j *job.Job) *float64 {
	if j.Usage != nil {
		return j.Usage.CostUSD
	}
	if j.Tokens == 0 {
		zero := 0.0
		return &zero
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

func orDefault(s, d string) string {
	if strings.TrimSpace(s) == "" {
		return d
	}
	return s
}

// FallbackNarrative is the plain narrative used when the reporter model
// fails: two to five sentences computed from the runs.
func FallbackNarrative(start time.Time, runs []Run) string {
	var pass, fail, skip []Run
	repos := map[string]bool{}
	moved := 0
	for _, r := range runs {
		repos[r.Repository] = true
		switch r.Outcome {
		case Pass:
			pass = append(pass, r)
		case Fail:
			fail = append(fail, r)
		default:
			skip = append(skip, r)
			if strings.HasPrefix(r.Narrative, "Not started in this window") {
				moved++
			}
		}
	}
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	s := []string{fmt.Sprintf("The overnight window of %s handled %d %s in %d %s: %d passed, %d failed and %d %s skipped.",
		start.Format("2006-01-02"), len(runs), plural(len(runs), "job", "jobs"), len(repos), plural(len(repos), "repository", "repositories"),
		len(pass), len(fail), len(skip), plural(len(skip), "was", "were"))}
	if len(pass) > 0 {
		s = append(s, "Ready for review: "+refs(pass, true)+".")
	}
	if len(fail) > 0 {
		s = append(s, "Failed: "+refs(fail, false)+".")
	}
	if moved > 0 {
		s = append(s, fmt.Sprintf("%d %s moved to the next window because this one ended before %s could start.",
			moved, plural(moved, "job", "jobs"), plural(moved, "it", "they")))
	}
	if len(s) == 1 {
		s = append(s, "No pull request was opened.")
	}
	return strings.Join(s, " ")
}

func refs(runs []Run, withPR bool) string {
	var out []string
	for _, r := range runs {
		ref := fmt.Sprintf("%s#%d", r.Repository, r.Issue)
		if withPR && r.PRURL != "" {
			ref += " (" + r.PRURL + ")"
		}
		out = append(out, ref)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

var sentenceEnd = regexp.MustCompile(`[.!?]+(\s+|$)`)

// validNarrative accepts 2 to 5 sentences of reasonable length.
func validNarrative(s string) bool {
	if s == "" || len(s) > 2000 || strings.Contains(s, "```") {
		return false
	}
	n := len(sentenceEnd.FindAllStringIndex(s, -1))
	return n >= 2 && n <= 5
}
