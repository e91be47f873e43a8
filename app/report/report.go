package report

import (
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/testreport"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/templates"
)

// Fill writes what the pipeline produced into rep, the one report of a
// job: summary, plan, verification table, verdict and reasons, test
// changes, fix rounds, tokens and cost, and the logs worth reading. What the caller
// set (job, repository, issue, state, files, branch) is kept, and so is
// its summary when the pipeline has none.
func Fill(rep *templates.Report, out *pipeline.Output, cfg *repoconfig.Config) {
	if out.Summary != "" {
		rep.Summary = out.Summary
	}
	rep.FixAttempts, rep.MaxFixAttempts = out.FixAttempts, cfg.Limits.MaxFixAttempts
	rep.Tokens = templates.TokenUsage{Total: out.Tokens, ByPhase: out.ByPhase}
	dollars, known := out.Cost()
	rep.Cost = templates.Cost{Dollars: dollars, Known: known, Unpriced: out.Spend.Unpriced}
	rep.Duration = out.Duration
	rep.Guidance = out.Guidance
	rep.Smoke = out.Smoke
	if out.Scope != nil {
		rep.BlastRadius, rep.BlastRadiusNote = out.Scope.BlastRadius, out.Scope.Note
	}
	if out.Plan != nil {
		p := &templates.Plan{Summary: out.Plan.Summary, Risks: out.Plan.Risks, Questions: out.Plan.Questions}
		for _, st := range out.Plan.Steps {
			ps := templates.PlanStep{ID: st.ID, Title: st.Title, Acceptance: st.Acceptance}
			for _, f := range st.Files {
				ps.Files = append(ps.Files, templates.PlanFile{Path: f.Path, Action: f.Action, Purpose: f.Purpose})
			}
			p.Steps = append(p.Steps, ps)
		}
		rep.Plan = p
		if out.Summary == "" && out.Plan.Summary != "" {
			rep.Summary = out.Plan.Summary
		}
	}
	if n := len(out.Verify); n > 0 {
		rep.Verification = rows(out.Verify[n-1].Run, out.Base, out.Comparison)
		for _, v := range out.Verify[:n-1] {
			rep.Iterations = append(rep.Iterations, templates.Iteration{Number: v.Round + 1,
				Summary: fmt.Sprintf("verification round %d", v.Round), Outcome: passFail(v.Run.Passed),
				Verification: rows(v.Run, out.Base, nil)})
		}
	}
	if c := out.Comparison; c != nil {
		rep.Verdict, rep.Regressions = string(c.Verdict), c.Regressions
		for _, r := range c.Reasons {
			rep.Reasons = append(rep.Reasons, templates.Reason{Why: r.Why, Next: r.Next})
		}
		if n := len(out.Verify); n > 0 {
			rep.Tests = testChanges(*c, out.Verify[n-1].Run)
		}
	}
	var logs []string
	if out.Skipped != "" {
		logs = append(logs, out.Skipped)
	}
	if out.StopReason != "" {
		logs = append(logs, "Stopped: "+out.StopReason)
	}
	if out.Comparison != nil && !out.Verified && len(out.Verify) > 0 {
		logs = append(logs, verify.Summarize(*out.Comparison, out.Verify[len(out.Verify)-1].Run, verify.SummaryOptions{MaxTokens: 3000, WorkDir: "/work"}))
	}
	rep.Logs = strings.Join(logs, "\n\n")
}

// rows are the verification table: setup steps that ran on the change,
// then each command with its result, its tests on the base and on the
// change, and how it compares with the base.
func rows(head verify.Run, base *verify.Run, cmp *verify.Comparison) []templates.VerifyRow {
	var out []templates.VerifyRow
	for _, s := range head.Setup {
		row := templates.VerifyRow{Name: "setup: " + s.Run, Command: s.Run, Passed: s.Passed, Status: status(s), Duration: s.Duration}
		if !s.Passed {
			row.Output = s.Output
		}
		out = append(out, row)
	}
	for i, c := range head.Commands {
		row := templates.VerifyRow{Name: c.Name, Command: c.Run, Passed: c.Passed, Status: status(c), Duration: c.Duration, Output: c.Output,
			Tests: counts(c.Tests)}
		if base != nil {
			for _, b := range base.Commands {
				if b.Name != c.Name {
					continue
				}
				row.BaseTests = counts(b.Tests)
				switch {
				case b.Passed || b.Skipped || b.Error != "":
				case c.Passed:
					row.Baseline = "fixed: failed on the base commit"
				default:
					row.Baseline = "also failed on the base commit"
				}
			}
		}
		if cmp != nil && i < len(cmp.Commands) && cmp.Commands[i].Name == c.Name && cmp.Commands[i].Class == verify.ClassRegression && !c.Passed {
			row.Baseline = "new failures"
		}
		out = append(out, row)
	}
	return out
}

// status is a command's result in words.
func status(c verify.CommandResult) string {
	switch {
	case c.Skipped:
		return "not run"
	case c.Error != "" || c.Missing:
		return "could not run"
	case c.Passed:
		return "passed"
	}
	return "failed"
}

func counts(r *testreport.Report) *templates.TestCount {
	if r == nil {
		return nil
	}
	p, f, s := r.Counts()
	return &templates.TestCount{Pass: p, Fail: f, Skip: s}
}

// maxTestOutputLines bounds the output shown per newly failing test.
const maxTestOutputLines = 12

// testChanges lists the tests fixed, newly failing (with the first lines
// of their output), still failing and flaky.
func testChanges(cmp verify.Comparison, head verify.Run) templates.TestChanges {
	var tc templates.TestChanges
	output := func(f verify.Finding) string {
		for _, c := range head.Commands {
			if c.Name == f.Command && c.Tests != nil {
				lines := c.Tests.Output[f.Test]
				return strings.Join(lines[:min(len(lines), maxTestOutputLines)], "\n")
			}
		}
		return ""
	}
	for _, cc := range cmp.Commands {
		for _, f := range cc.Fixed {
			if f.Kind == verify.KindTest {
				tc.Fixed = append(tc.Fixed, f.Test.String())
			}
		}
		for _, f := range cc.Regressions {
			if f.Kind == verify.KindTest || f.Kind == verify.KindPackage {
				tc.NewlyFailing = append(tc.NewlyFailing, templates.TestFailure{Name: findingName(f), Output: output(f)})
			}
		}
		for _, f := range cc.PreExisting {
			if f.Kind == verify.KindTest || f.Kind == verify.KindPackage {
				tc.StillFailing = append(tc.StillFailing, findingName(f))
			}
		}
		for _, f := range cc.Flaky {
			tc.Flaky = append(tc.Flaky, f.Test.String())
		}
	}
	return tc
}

func findingName(f verify.Finding) string {
	if f.Kind == verify.KindTest {
		return f.Test.String()
	}
	return f.Subject
}

func passFail(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}
