package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/issuetext"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/tools"
	"github.com/selfcode/selfcode/templates"
)

// Bounds on what a follow-up hands the model besides the feedback itself.
const (
	maxDiffChars   = 12000
	maxReportChars = 6000
)

// followUp gathers what the model needs for a command on a pull request:
// the original issue, the previous job's plan and report, the PR's diff
// against its base, and the feedback with its context.
func (x *run) followUp(ctx context.Context, client *gh.Client, pr gh.PullRequest, in *pipeline.Input) error {
	j := x.j
	o, r := j.Repo.Owner, j.Repo.Name
	var b strings.Builder
	orig := originalIssue(j)
	if orig != 0 {
		is, err := client.Issue(ctx, o, r, orig)
		if err != nil {
			return fmt.Errorf("original issue #%d: %w", orig, ghapp.MapError(err))
		}
		in.Issue, in.IssueTitle, in.IssueBody, in.IssueAuthor = orig, is.Title, is.Body, is.User
		fmt.Fprintf(&b, "This is a follow-up on pull request #%d (branch %s), which selfcode opened for issue #%d.\n", pr.Number, pr.HeadRef, orig)
	} else {
		in.Issue, in.IssueTitle, in.IssueBody, in.IssueAuthor = pr.Number, pr.Title, pr.Body, pr.User
		fmt.Fprintf(&b, "This is a follow-up on pull request #%d (branch %s), opened by @%s. Add commits on top of it.\n", pr.Number, pr.HeadRef, pr.User)
	}

	switch j.Trigger.Source {
	case job.SourceCI:
		// Selfcode's own words; what the check printed is CI output.
		b.WriteString("\nWhat to do: a CI fix. No person asked for it: a CI check failed on the pull request. " +
			strings.TrimSpace(j.Instructions) + "\n")
	case job.SourceReviewComment:
		b.WriteString("\nWhat the reviewer asks for:\n")
		b.WriteString(reviewComment(j.Trigger.Sender, j.Trigger.Path, j.Trigger.StartLine, j.Trigger.Line, j.Trigger.DiffHunk, j.Instructions))
	case job.SourceReview:
		b.WriteString("\nWhat the reviewer asks for:\n")
		fmt.Fprintf(&b, "A review by @%s: %s\n", j.Trigger.Sender, strings.TrimSpace(issuetext.Clean(j.Instructions)))
		comments, err := client.ListReviewComments(ctx, o, r, pr.Number, j.Trigger.ReviewID)
		if err != nil {
			return fmt.Errorf("comments of review %d: %w", j.Trigger.ReviewID, ghapp.MapError(err))
		}
		fmt.Fprintf(&b, "The review has %d comment(s); address all of them:\n", len(comments))
		for i, c := range comments {
			fmt.Fprintf(&b, "\n%d. ", i+1)
			b.WriteString(reviewComment(c.User, c.Path, 0, c.Line, c.DiffHunk, c.Body))
		}
	default:
		b.WriteString("\nWhat the reviewer asks for:\n")
		fmt.Fprintf(&b, "A comment by @%s: %s\n", j.Trigger.Sender, strings.TrimSpace(issuetext.Clean(j.Instructions)))
	}

	if plan := x.previousPlan(ctx, orig, pr.Number); plan != "" {
		b.WriteString("\nThe plan of the job that opened the pull request:\n" + plan + "\n")
	}
	if body := strings.TrimSpace(pr.Body); body != "" {
		b.WriteString("\nThe pull request's current description (the previous report):\n" + tools.Shorten(body, maxReportChars) + "\n")
	}
	diff, err := client.PullRequestDiff(ctx, o, r, pr.Number)
	if err != nil {
		return fmt.Errorf("diff of pull request #%d: %w", pr.Number, ghapp.MapError(err))
	}
	b.WriteString("\nThe pull request's diff against " + pr.BaseRef + ":\n" + tools.Shorten(diff, maxDiffChars) + "\n")
	in.Feedback = b.String()
	return nil
}

func reviewComment(author, path string, start, line int, hunk, body string) string {
	lines := strconv.Itoa(line)
	if start > 0 && start != line {
		lines = fmt.Sprintf("%d-%d", start, line)
	}
	return fmt.Sprintf("Review comment by @%s on %s, line %s:\n%s\n\n%s\n", author, path, lines, hunk, strings.TrimSpace(issuetext.Clean(body)))
}

// previousPlan is the plan of the newest job that published to the pull
// request, from its plan.json artifact.
func (x *run) previousPlan(ctx context.Context, issue, pr int) string {
	for _, j := range x.published(ctx, issue, pr, x.j.Publication.Branch) {
		raw, err := x.r.o.History.Artifact(ctx, j.ID, "plan.json")
		if err != nil {
			continue
		}
		var p struct {
			Summary string `json:"summary"`
			Steps   []struct {
				Title string `json:"title"`
			} `json:"steps"`
		}
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		out := p.Summary
		for i, s := range p.Steps {
			out += fmt.Sprintf("\n%d. %s", i+1, s.Title)
		}
		return out
	}
	return ""
}

// published lists the other jobs that published to a pull request, newest
// first.
func (x *run) published(ctx context.Context, issue, pr int, branch string) []*job.Job {
	if x.r.o.History == nil {
		return nil
	}
	seen := map[string]bool{x.j.ID: true}
	var out []*job.Job
	for _, n := range []int{issue, pr} {
		if n == 0 {
			continue
		}
		jobs, _, err := x.r.o.History.List(ctx, store.ListOptions{Key: job.IssueKey(x.j.Repo.FullName(), n), Limit: 200})
		if err != nil {
			x.log.Warn("list earlier jobs", "err", err)
			continue
		}
		for _, j := range jobs {
			if seen[j.ID] || j.Publication.PRNumber == 0 || (pr != 0 && j.Publication.PRNumber != pr) {
				continue
			}
			if branch != "" && j.Publication.Branch != branch {
				continue
			}
			seen[j.ID] = true
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].CreatedAt.After(out[b].CreatedAt) })
	return out
}

// iterations are the earlier reports published to the branch's pull
// request, oldest first, numbered from 1; it also numbers the current one.
func (x *run) iterations(ctx context.Context, branch string) []templates.Iteration {
	pr := x.j.Publication.PRNumber
	if x.j.IsPR {
		pr = x.j.Issue
	}
	jobs := x.published(ctx, x.rep.Issue, pr, branch)
	var its []templates.Iteration
	for i := len(jobs) - 1; i >= 0; i-- {
		j := jobs[i]
		if j.Outcome != job.OutcomePROpened && j.Outcome != job.OutcomePRUpdated && j.Outcome != job.OutcomeVerificationFailed &&
			j.Outcome != job.OutcomeUnverified && j.Outcome != job.OutcomeLimitReached {
			continue
		}
		it := templates.Iteration{Outcome: string(j.Outcome)}
		if raw, err := x.r.o.History.Artifact(ctx, j.ID, "report.json"); err == nil {
			var rep templates.Report
			if json.Unmarshal(raw, &rep) == nil {
				it.Summary, it.FilesChanged, it.Verification = rep.Summary, rep.FilesChanged, rep.Verification
			}
		}
		its = append(its, it)
	}
	for i := range its {
		its[i].Number = i + 1
	}
	x.mu.Lock()
	if len(its) > 0 {
		x.rep.Iteration = len(its) + 1
	}
	x.mu.Unlock()
	return its
}

// answer replies where the feedback was given: in the review thread for a
// review comment, as a PR comment for a submitted review. A command in the
// PR conversation is answered by the progress comment itself.
func (x *run) answer(ctx context.Context, client *gh.Client, sha string, verified bool) error {
	j := x.j
	if !j.IsPR {
		return nil
	}
	status := "verification passed"
	if !verified {
		status = "verification still fails; see the report"
	}
	summary := strings.TrimSpace(x.report().Summary)
	if len(summary) > 1500 {
		summary = summary[:1500] + "…"
	}
	body := strings.TrimSpace(fmt.Sprintf("Pushed %.12s to `%s` (%s).\n\n%s", sha, x.j.Publication.Branch, status, summary))
	switch j.Trigger.Source {
	case job.SourceReviewComment:
		_, err := client.ReplyToReviewComment(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, j.Trigger.CommentID, body)
		return ghapp.MapError(err)
	case job.SourceReview:
		return x.pub.Comment(ctx, body)
	}
	return nil
}
