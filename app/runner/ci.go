package runner

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/utf8cut"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
)

// A follow-up for a failing check (job.SourceCI) runs only on selfcode's
// own pull request, on the commit the check failed on, when nobody else
// pushed after selfcode, at most limits.ci_fix_attempts times per pull
// request, and never twice for the same failure.

// ciStop says why a CI follow-up must not run ("" when it may).
func (x *run) ciStop(ctx context.Context, w *workspace, cfg *repoconfig.Config) (string, error) {
	t := x.j.Trigger
	switch {
	case !strings.HasPrefix(w.pr.HeadRef, "selfcode/"):
		return "selfcode fixes failing checks by itself only on its own pull requests.", nil
	case t.HeadSHA != "" && !strings.EqualFold(w.pr.HeadSHA, t.HeadSHA):
		return fmt.Sprintf("The check %q failed on %.12s, but this pull request has moved on to %.12s since; nothing to fix for that run.",
			t.Check, t.HeadSHA, w.pr.HeadSHA), nil
	}
	authors, err := w.git.Authors(ctx, w.ws, w.pr.HeadSHA+"~1", w.pr.HeadSHA)
	if err != nil {
		return "", err
	}
	if foreign(authors, w.git.Identity().Email) {
		return fmt.Sprintf("The check %q failed, but someone else pushed to `%s` after selfcode: leaving it to them (comment `%s` to ask for a fix).",
			t.Check, w.pr.HeadRef, x.r.o.CommandWord), nil
	}
	if x.r.o.History == nil {
		return "", nil
	}
	earlier, _, err := x.r.o.History.List(ctx, store.ListOptions{Key: x.j.Key(), Limit: 1000})
	if err != nil {
		return "", err
	}
	ran := 0
	for _, e := range earlier {
		if e.ID == x.j.ID || e.Trigger.Source != job.SourceCI || e.State == job.StateCanceled {
			continue
		}
		if t.Signature != "" && e.Trigger.Signature == t.Signature {
			return fmt.Sprintf("The check %q failed again the same way after selfcode's fix (job `%s`); stopping here: this needs a human.", t.Check, e.ID), nil
		}
		ran++
	}
	if ran >= cfg.Limits.CIFixAttempts {
		return fmt.Sprintf("The check %q failed, but selfcode already tried to fix failing checks %d time(s) on this pull request (`limits.ci_fix_attempts: %d`); stopping here.",
			t.Check, ran, cfg.Limits.CIFixAttempts), nil
	}
	return "", nil
}

// ciOutput is what a CI follow-up's failing check printed — its output
// and, for a GitHub Actions job, its log cut to the failing step — for
// the model as CI output (untrusted data, never instructions).
func (x *run) ciOutput(ctx context.Context, client *gh.Client) string {
	t := x.j.Trigger
	out := fmt.Sprintf("The check %q", t.Check)
	if t.CheckApp != "" {
		out += " (from the app " + t.CheckApp + ")"
	}
	out += " printed:\n\n" + t.CheckOutput
	if id := t.ActionsJobID; id != 0 {
		// Without the log the check's own output still is there.
		if log, err := client.ActionsJobLog(ctx, x.j.Repo.Owner, x.j.Repo.Name, id, 4<<20); err != nil {
			x.log.Warn("read the failed Actions job's log", "actions_job", id, "err", err)
		} else if step := failingStep(log, 8000); step != "" {
			out += "\n\nThe failing step's log (GitHub Actions, trimmed):\n\n" + step
		}
	}
	return strings.TrimSpace(out)
}

// failingChecks is what `/selfcode fix-ci` works from: the task naming
// the checks of the CI apps (Options.CIApps) that failed on the pull
// request's head, and their output (untrusted, bounded), which the model
// gets as CI output. "" when none failed.
func (x *run) failingChecks(ctx context.Context, client *gh.Client, w *workspace) (task, output string, err error) {
	runs, err := client.CheckRunsFor(ctx, x.j.Repo.Owner, x.j.Repo.Name, w.pr.HeadSHA)
	if err != nil {
		return "", "", ghapp.MapError(err)
	}
	var names []string
	var b strings.Builder
	for _, cr := range runs {
		if cr.Name == CheckRunName || (cr.Conclusion != "failure" && cr.Conclusion != "timed_out") || !slices.Contains(x.r.o.CIApps, strings.ToLower(cr.App)) {
			continue
		}
		names = append(names, fmt.Sprintf("%q (%s)", cr.Name, cr.Conclusion))
		fmt.Fprintf(&b, "The check %q %s on this pull request's head commit %.12s:\n", cr.Name, cr.Conclusion, w.pr.HeadSHA)
		for _, part := range []string{cr.Title, cr.Summary, cr.Text} {
			if part = strings.TrimSpace(part); part != "" {
				b.WriteString(utf8cut.Cut(part, 4000) + "\n")
			}
		}
		b.WriteString("\n")
		if b.Len() > 16000 {
			break
		}
	}
	if len(names) == 0 {
		return "", "", nil
	}
	return "Make these failing CI checks pass without weakening them: " + strings.Join(names, ", ") + ". Their output is given as CI output.", b.String(), nil
}

// actionsLogLine matches the timestamp GitHub Actions puts before each
// log line.
var actionsLogLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z `)

// failingStep cuts an Actions job log down to the step that failed: from
// that step's start ("##[group]Run …") to its first error and a little
// after, timestamps removed, at most max bytes (the end kept).
func failingStep(log string, max int) string {
	lines := strings.Split(strings.ReplaceAll(log, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = actionsLogLine.ReplaceAllString(l, "")
	}
	errAt := -1
	for i, l := range lines {
		if strings.Contains(l, "##[error]") {
			errAt = i
			break
		}
	}
	if errAt < 0 {
		errAt = len(lines) - 1
	}
	start := 0
	for i := errAt; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "##[group]Run ") {
			start = i
			break
		}
	}
	end := min(len(lines), errAt+20)
	out := strings.TrimSpace(strings.Join(lines[start:end], "\n"))
	if len(out) > max {
		out = "…\n" + strings.ToValidUTF8(out[len(out)-max:], "")
	}
	return out
}
