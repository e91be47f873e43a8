package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/selfcode/selfcode/pipeline/verify"
)

// Summary adds up a report's tasks. Rates are fractions of the graded
// tasks (null when none was graded); fix rounds, edit calls, tokens, cost
// and seconds add up every pipeline run.
type Summary struct {
	Tasks        int      `json:"tasks"`
	Graded       int      `json:"graded"`
	Resolved     int      `json:"resolved"`
	ResolvedRate *float64 `json:"resolved_rate"`
	Skipped      int      `json:"skipped"`
	EnvErrors    int      `json:"env_errors"`
	Errors       int      `json:"errors"`
	// Agreed counts graded tasks whose verdict was "verified" exactly when
	// they are resolved; the two ways to disagree are counted apart.
	Agreed             int      `json:"verdict_agreed"`
	Agreement          *float64 `json:"verdict_agreement"`
	VerifiedUnresolved int      `json:"verified_unresolved"`
	ResolvedUnverified int      `json:"resolved_unverified"`
	FixRounds          int      `json:"fix_rounds"`
	EditCalls          int      `json:"edit_calls"`
	EditErrors         int      `json:"edit_errors"`
	EditErrorRate      *float64 `json:"edit_error_rate"`
	Tokens             int      `json:"tokens"`
	CostUSD            *float64 `json:"cost_usd"`
	Seconds            float64  `json:"seconds"`
}

func summarize(tasks []Task, priced bool) Summary {
	s := Summary{Tasks: len(tasks)}
	total, costKnown := 0.0, priced
	for _, t := range tasks {
		switch t.Status {
		case StatusResolved:
			s.Resolved++
		case StatusSkipped:
			s.Skipped++
		case StatusEnvError:
			s.EnvErrors++
		case StatusError:
			s.Errors++
		}
		if t.Graded() {
			s.Graded++
			verified := t.Verdict == string(verify.Verified)
			switch {
			case verified == t.Resolved:
				s.Agreed++
			case verified:
				s.VerifiedUnresolved++
			default:
				s.ResolvedUnverified++
			}
		}
		s.FixRounds += t.FixRounds
		s.EditCalls += t.EditCalls
		s.EditErrors += t.EditErrors
		s.Tokens += t.Tokens
		s.Seconds += t.Seconds
		if t.CostUSD == nil {
			costKnown = false
		} else {
			total += *t.CostUSD
		}
	}
	s.ResolvedRate = ratio(s.Resolved, s.Graded)
	s.Agreement = ratio(s.Agreed, s.Graded)
	s.EditErrorRate = ratio(s.EditErrors, s.EditCalls)
	if costKnown {
		s.CostUSD = &total
	}
	return s
}

func ratio(n, of int) *float64 {
	if of == 0 {
		return nil
	}
	r := float64(n) / float64(of)
	return &r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for a person: a row per task, newest
// first, why the ungraded ones were not graded, then the summary.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	if len(r.Tasks) == 0 {
		fmt.Fprintf(&b, "No commit of %s changes source and test files together: nothing to evaluate.\n", r.Repository)
		_, err := io.WriteString(w, b.String())
		return err
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMIT\tRESOLVED\tVERDICT\tFIXED/BROKEN\tFIX ROUNDS\tTOKENS\tCOST\tSECONDS\tSUBJECT")
	var notes []string
	for _, t := range r.Tasks {
		commit := short(t.Commit)
		if t.Resumed {
			commit += "*"
		}
		if !t.Graded() {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t%s\n", commit, resolvedText(t), t.Subject)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%.1f\t%s\n", commit, resolvedText(t), t.Verdict,
				len(t.Fixed), len(t.Broken), t.FixRounds, t.Tokens, dollars(t.CostUSD), t.Seconds, t.Subject)
		}
		if t.Reason != "" {
			notes = append(notes, fmt.Sprintf("%s %s: %s", short(t.Commit), resolvedText(t), t.Reason))
		}
		for _, x := range t.Broken {
			notes = append(notes, fmt.Sprintf("%s broke %s", short(t.Commit), x))
		}
	}
	tw.Flush()
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString(n + "\n")
		}
	}
	for _, t := range r.Tasks {
		if t.Resumed {
			b.WriteString("\n* kept from an earlier run (--fresh runs it again)\n")
			break
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "\nResolved %d of %d graded task(s)%s; %d skipped (held-back tests pass on the base), %d environment error(s), %d error(s).\n",
		s.Resolved, s.Graded, percent(s.ResolvedRate), s.Skipped, s.EnvErrors, s.Errors)
	fmt.Fprintf(&b, "selfcode's verdict agreed with the grade on %d of %d%s: %d verified but unresolved, %d resolved but not verified.\n",
		s.Agreed, s.Graded, percent(s.Agreement), s.VerifiedUnresolved, s.ResolvedUnverified)
	fmt.Fprintf(&b, "Fix rounds %d; edit-tool errors %d of %d call(s)%s; %d tokens; cost %s; %.1f s in the pipeline.\n",
		s.FixRounds, s.EditErrors, s.EditCalls, percent(s.EditErrorRate), s.Tokens, dollars(s.CostUSD), s.Seconds)
	fmt.Fprintf(&b, "Linked issues: %s.\n", r.LinkedIssues)
	_, err := io.WriteString(w, b.String())
	return err
}

func resolvedText(t Task) string {
	switch t.Status {
	case StatusResolved:
		return "yes"
	case StatusUnresolved:
		return "no"
	case StatusEnvError:
		return "env error"
	}
	return string(t.Status)
}

func percent(r *float64) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf(" (%.0f %%)", *r*100)
}

func dollars(c *float64) string {
	if c == nil {
		return "unknown"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// header says what the run is about to do.
func (e *evaluator) header(n, kept int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.o.Progress, "eval: %d task(s): the newest commits of %s that change source and test files together (limit %d; up to %d at once)",
		n, e.top, e.o.Limit, e.o.Workers)
	if kept > 0 {
		fmt.Fprintf(e.o.Progress, "; %d finished in an earlier run and are kept (--fresh runs them again)", kept)
	}
	fmt.Fprintln(e.o.Progress)
	e.total = n - kept
}

// started reports a task as it begins.
func (e *evaluator) started(ctx context.Context, c Candidate) {
	msg, err := message(ctx, e.top, c.Commit)
	if err != nil {
		msg = "" // the task itself reports it
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running++
	fmt.Fprintf(e.o.Progress, "eval: started %s (%d running): %s\n", short(c.Commit), e.running, firstLine(msg))
}

// finished reports a task as it ends.
func (e *evaluator) finished(t Task) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	e.done++
	what := resolvedText(t)
	if t.Graded() {
		what = string(t.Status) + ", verdict " + t.Verdict
	}
	fmt.Fprintf(e.o.Progress, "eval: [%d/%d] %s %s in %.1f s: %s\n", e.done, e.total, short(t.Commit), what, t.TotalSeconds, t.Subject)
}
