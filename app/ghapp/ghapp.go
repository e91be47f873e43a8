package ghapp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/selfcode/selfcode/app/errs"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/worker"
	"github.com/selfcode/selfcode/templates"
)

// Clients yields an installation's API client (*github.Factory does).
type Clients interface {
	Installation(ctx context.Context, id int64) (*gh.Client, error)
}

// PermissionSource answers a user's permission on a repository
// (*github.PermissionChecker does, with its short cache).
type PermissionSource interface {
	Check(ctx context.Context, installationID int64, owner, repo, user string) (gh.Permission, error)
}

// Permissions implements worker.PermissionChecker over GitHub's
// collaborator-permission API.
type Permissions struct {
	Source PermissionSource
	// BotLogin is the app's own user ("<slug>[bot]"); its triggers are refused.
	BotLogin string
}

// Allowed reports whether the job's sender has admin, maintain or write.
func (p Permissions) Allowed(ctx context.Context, j *job.Job) (bool, string, error) {
	if j.Trigger.Source == job.SourceCI {
		// Not a person's command: a check failed on selfcode's own pull
		// request, which a maintainer started. The runner confirms the pull
		// request is selfcode's and bounds the follow-ups.
		return true, "ci", nil
	}
	sender := j.Trigger.Sender
	if sender == "" {
		return false, "none", nil
	}
	if strings.EqualFold(sender, p.BotLogin) || j.Trigger.SenderType == "Bot" || strings.HasSuffix(sender, "[bot]") {
		return false, "bot", nil
	}
	perm, err := p.Source.Check(ctx, j.InstallationID, j.Repo.Owner, j.Repo.Name, sender)
	if err != nil {
		return false, "", MapError(err)
	}
	return perm.Allowed(), string(perm), nil
}

// MapError turns GitHub client errors into the job error kinds the worker
// understands: transient failures are retried, the rest fail the job. It
// is the one place a GitHub error becomes a job outcome.
func MapError(err error) error {
	switch {
	case err == nil:
		return nil
	case gh.IsTransient(err), gh.IsRateLimited(err):
		return errs.E(errs.KindTransient, "GitHub", err)
	case gh.IsNotFound(err):
		return errs.E(errs.KindPermanent, "GitHub: not found or not accessible to the app", err)
	case gh.IsPermissionDenied(err):
		return errs.E(errs.KindPermanent, "GitHub: the app lacks permission", err)
	}
	return err
}

// NotifierOptions configures a Notifier.
type NotifierOptions struct {
	Clients        Clients
	Templates      *templates.Renderer
	CommandWord    string
	Label          string
	OvernightLabel string
	Logger         *slog.Logger
}

// Notifier implements worker.Notifier by commenting on the issue or pull
// request the command came from.
type Notifier struct{ o NotifierOptions }

// NewNotifier builds a Notifier.
func NewNotifier(o NotifierOptions) *Notifier {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CommandWord == "" {
		o.CommandWord = "/selfcode"
	}
	return &Notifier{o: o}
}

// Denied posts the polite permission reply.
func (n *Notifier) Denied(ctx context.Context, j *job.Job, perm string) error {
	if perm == "bot" {
		return nil
	}
	body, err := n.o.Templates.PermissionDenied(templates.DeniedView{CommandWord: n.o.CommandWord, Sender: j.Trigger.Sender, Permission: perm})
	if err != nil {
		return fmt.Errorf("render permission reply: %w", err)
	}
	return n.reply(ctx, j, body)
}

// Control answers cancel, retry, status and help.
func (n *Notifier) Control(ctx context.Context, j *job.Job, r worker.ControlReply) error {
	c, err := n.o.Clients.Installation(ctx, j.InstallationID)
	if err != nil {
		return MapError(err)
	}
	if j.Trigger.CommentID != 0 && j.Trigger.Source == job.SourceIssueComment {
		if err := c.ReactToIssueComment(ctx, j.Repo.Owner, j.Repo.Name, j.Trigger.CommentID, "eyes"); err != nil {
			n.o.Logger.Warn("react to control command", "job_id", j.ID, "err", err)
		}
	}
	var body string
	switch r.Verb {
	case "help":
		body, err = n.o.Templates.Help(templates.HelpView{CommandWord: n.o.CommandWord, Label: n.o.Label, OvernightLabel: n.o.OvernightLabel})
	default:
		target := r.Target
		if target == nil && len(r.Affected) > 0 {
			target = r.Affected[len(r.Affected)-1]
		}
		v := templates.StatusView{CommandWord: n.o.CommandWord, Error: r.Err}
		if target != nil {
			v.Found = true
			v.JobID, v.State, v.Outcome, v.Attempts = target.ID, string(target.State), string(target.Outcome), target.Attempts
			v.PRURL, v.UpdatedAt = target.Publication.PRURL, target.UpdatedAt
			if target.CancelRequested {
				v.State = "canceling"
			}
			if v.Error == "" {
				v.Error = target.Error
			}
			for _, s := range target.Stages {
				v.Stages = append(v.Stages, templates.Stage{Name: s.Name, Status: s.Status, Summary: s.Summary})
			}
		}
		body, err = n.o.Templates.Status(v)
	}
	if err != nil {
		return fmt.Errorf("render %s reply: %w", r.Verb, err)
	}
	_, err = c.CreateIssueComment(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, body)
	return MapError(err)
}

func (n *Notifier) reply(ctx context.Context, j *job.Job, body string) error {
	c, err := n.o.Clients.Installation(ctx, j.InstallationID)
	if err != nil {
		return MapError(err)
	}
	if j.Trigger.Source == job.SourceReviewComment && j.Trigger.CommentID != 0 {
		_, err = c.ReplyToReviewComment(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, j.Trigger.CommentID, body)
		return MapError(err)
	}
	_, err = c.CreateIssueComment(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, body)
	return MapError(err)
}
