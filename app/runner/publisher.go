package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/selfcode/selfcode/app/command"
	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/templates"
)

// CheckRunName is the name of selfcode's check run.
const CheckRunName = "selfcode"

// saver persists a job's publication state (worker.Runtime does).
type saver interface {
	Update(ctx context.Context, fn func(*job.Job) error) (*job.Job, error)
}

// publisher publishes one job on GitHub. Every step is idempotent: re-running
// the job (same id) edits the same progress comment, finds the same pull
// request by its head, and reuses the check run of the same head commit.
type publisher struct {
	c   *gh.Client
	j   *job.Job
	tm  *templates.Renderer
	sv  saver
	log *slog.Logger
}

func (p *publisher) save(ctx context.Context, fn func(pub *job.Publication)) error {
	fn(&p.j.Publication)
	_, err := p.sv.Update(ctx, func(j *job.Job) error { fn(&j.Publication); return nil })
	return err
}

// React adds a reaction to the triggering comment, if there is one.
func (p *publisher) React(ctx context.Context, content string) error {
	t := p.j.Trigger
	if t.CommentID == 0 {
		return nil
	}
	var err error
	switch t.Source {
	case job.SourceReviewComment:
		err = p.c.ReactToReviewComment(ctx, p.j.Repo.Owner, p.j.Repo.Name, t.CommentID, content)
	case job.SourceIssueComment:
		err = p.c.ReactToIssueComment(ctx, p.j.Repo.Owner, p.j.Repo.Name, t.CommentID, content)
	default:
		return nil
	}
	return ghapp.MapError(err)
}

// Progress creates or edits the job's one progress comment. The comment
// carries the hidden marker, so a job that crashed before it could save the
// comment id finds its comment again instead of posting a second one.
func (p *publisher) Progress(ctx context.Context, rep templates.Report) error {
	body, err := p.tm.Progress(rep)
	if err != nil {
		return fmt.Errorf("render progress comment: %w", err)
	}
	marker, err := templates.Marker(p.j.ID)
	if err != nil {
		return err
	}
	id, err := p.upsertComment(ctx, marker, p.j.Publication.ProgressCommentID, body)
	if err != nil {
		return err
	}
	return p.save(ctx, func(pub *job.Publication) { pub.ProgressCommentID = id })
}

// upsertComment edits the job's comment that begins with marker — id when
// known, else found among the issue's comments, so that a job that crashed
// before it saved the id finds it again — or posts body when there is none
// (or a human deleted it). body must begin with marker. It returns the id.
func (p *publisher) upsertComment(ctx context.Context, marker string, id int64, body string) (int64, error) {
	o, r := p.j.Repo.Owner, p.j.Repo.Name
	if id == 0 {
		comments, err := p.c.ListIssueComments(ctx, o, r, p.j.Issue)
		if err != nil {
			return 0, ghapp.MapError(err)
		}
		for _, c := range comments {
			if strings.HasPrefix(strings.TrimSpace(c.Body), marker) {
				id = c.ID
				break
			}
		}
	}
	if id != 0 {
		_, err := p.c.UpdateIssueComment(ctx, o, r, id, body)
		if err == nil {
			return id, nil
		}
		if !gh.IsNotFound(err) {
			return 0, ghapp.MapError(err)
		}
	}
	c, err := p.c.CreateIssueComment(ctx, o, r, p.j.Issue, body)
	if err != nil {
		return 0, ghapp.MapError(err)
	}
	return c.ID, nil
}

// Comment posts a plain comment on the job's issue (plans, failure reports).
func (p *publisher) Comment(ctx context.Context, body string) error {
	_, err := p.c.CreateIssueComment(ctx, p.j.Repo.Owner, p.j.Repo.Name, p.j.Issue, body)
	return ghapp.MapError(err)
}

// Report posts the job's report as its own comment on the issue, or edits
// that comment in place when the job already posted it.
func (p *publisher) Report(ctx context.Context, body string) error {
	marker, err := templates.ReportMarker(p.j.ID)
	if err != nil {
		return err
	}
	id, err := p.upsertComment(ctx, marker, p.j.Publication.ReportCommentID, marker+"\n"+body)
	if err != nil {
		return err
	}
	return p.save(ctx, func(pub *job.Publication) { pub.ReportCommentID = id })
}

// publishedPR is the pull request a job published.
type publishedPR struct {
	Number  int
	URL     string
	Created bool
}

// EnsurePR opens the pull request for head → base, or updates the open one
// found by its head. A draft flag can only be set on creation (GitHub's REST
// API cannot toggle it).
func (p *publisher) EnsurePR(ctx context.Context, head, base, title, body string, draft bool) (publishedPR, error) {
	o, r := p.j.Repo.Owner, p.j.Repo.Name
	find := func() (*gh.PullRequest, error) {
		prs, err := p.c.ListPullRequestsByHead(ctx, o, r, o, head, "open")
		if err != nil || len(prs) == 0 {
			return nil, ghapp.MapError(err)
		}
		return &prs[0], nil
	}
	existing, err := find()
	if err != nil {
		return publishedPR{}, err
	}
	if existing == nil {
		created, err := p.c.CreatePullRequest(ctx, o, r, gh.NewPullRequest{Title: title, Head: head, Base: base, Body: body, Draft: draft})
		if err == nil {
			pr := publishedPR{Number: created.Number, URL: created.HTMLURL, Created: true}
			return pr, p.save(ctx, func(pub *job.Publication) { pub.PRNumber, pub.PRURL, pub.Branch = pr.Number, pr.URL, head })
		}
		if !gh.IsValidation(err) {
			return publishedPR{}, ghapp.MapError(err)
		}
		// "A pull request already exists": another attempt created it.
		if existing, err = find(); err != nil || existing == nil {
			return publishedPR{}, fmt.Errorf("create pull request for %s: %w", head, ghapp.MapError(err))
		}
	}
	if _, err := p.c.UpdatePullRequest(ctx, o, r, existing.Number, gh.PullRequestUpdate{Title: &title, Body: &body}); err != nil {
		return publishedPR{}, ghapp.MapError(err)
	}
	pr := publishedPR{Number: existing.Number, URL: existing.HTMLURL}
	return pr, p.save(ctx, func(pub *job.Publication) { pub.PRNumber, pub.PRURL, pub.Branch = pr.Number, pr.URL, head })
}

// checkRunButtons are the buttons on selfcode's check run: Cancel while
// the job waits or runs, Retry once it has ended. A press comes back as
// check_run.requested_action with the command's verb as identifier, and is
// permission-checked like a comment.
func checkRunButtons(status string) []gh.CheckRunAction {
	if status == "completed" {
		return []gh.CheckRunAction{{Label: "Retry", Description: "Run this selfcode job again", Identifier: string(command.VerbRetry)}}
	}
	return []gh.CheckRunAction{{Label: "Cancel", Description: "Stop this selfcode job", Identifier: string(command.VerbCancel)}}
}

// Check creates or updates the job's check run on headSHA. status is
// queued, in_progress or completed (then conclusion is required).
func (p *publisher) Check(ctx context.Context, headSHA, status, conclusion, title, summary string) error {
	o, r := p.j.Repo.Owner, p.j.Repo.Name
	opts := gh.CheckRunOptions{Name: CheckRunName, Status: status, Conclusion: conclusion, ExternalID: p.j.ID,
		Title: title, Summary: summary, DetailsURL: p.j.Publication.PRURL, Actions: checkRunButtons(status)}
	if p.j.Publication.CheckRunID != 0 && p.j.Publication.HeadSHA == headSHA {
		_, err := p.c.UpdateCheckRun(ctx, o, r, p.j.Publication.CheckRunID, opts)
		if err == nil || !gh.IsNotFound(err) {
			return ghapp.MapError(err)
		}
	}
	opts.HeadSHA = headSHA
	cr, err := p.c.CreateCheckRun(ctx, o, r, opts)
	if err != nil {
		return ghapp.MapError(err)
	}
	return p.save(ctx, func(pub *job.Publication) { pub.CheckRunID, pub.HeadSHA = cr.ID, headSHA })
}
