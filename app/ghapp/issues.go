package ghapp

import (
	"context"
	"fmt"

	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/job"
)

// Issues comments on and relabels a job's issue.
type Issues struct {
	Clients Clients
}

// Comment posts body as a new comment on the job's issue or pull request.
func (i Issues) Comment(ctx context.Context, j *job.Job, body string) error {
	c, err := i.Clients.Installation(ctx, j.InstallationID)
	if err != nil {
		return fmt.Errorf("installation client: %w", MapError(err))
	}
	if _, err := c.CreateIssueComment(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, body); err != nil {
		return fmt.Errorf("comment on %s#%d: %w", j.Repo.FullName(), j.Issue, MapError(err))
	}
	return nil
}

// SwapLabel adds the label add and then removes remove; a label to remove
// that is no longer there is not an error.
func (i Issues) SwapLabel(ctx context.Context, j *job.Job, remove, add string) error {
	c, err := i.Clients.Installation(ctx, j.InstallationID)
	if err != nil {
		return fmt.Errorf("installation client: %w", MapError(err))
	}
	if add != "" {
		if err := c.AddLabels(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, add); err != nil {
			return fmt.Errorf("label %s#%d %q: %w", j.Repo.FullName(), j.Issue, add, MapError(err))
		}
	}
	if remove != "" {
		if err := c.RemoveLabel(ctx, j.Repo.Owner, j.Repo.Name, j.Issue, remove); err != nil && !gh.IsNotFound(err) {
			return fmt.Errorf("unlabel %s#%d %q: %w", j.Repo.FullName(), j.Issue, remove, MapError(err))
		}
	}
	return nil
}
