package runner

import (
	"context"

	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/issuetext"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/pipeline"
)

// issueContext fills in what people wrote on the issue (or pull request)
// as the model gets it (issuetext.Gather): the thread as it stood when
// selfcode received the trigger, hidden text removed, each author marked
// a maintainer or a third party (their permission looked up once per job,
// at most 20 lookups), bounded in size with what was left out stated; and
// the trigger's own text and the CI output cleaned the same way.
func (x *run) issueContext(ctx context.Context, client *gh.Client, in *pipeline.Input) {
	j := x.j
	o, r := j.Repo.Owner, j.Repo.Name
	if in.IssueAuthor == "" { // a job stored before the author was recorded
		if is, err := client.Issue(ctx, o, r, in.Issue); err == nil {
			in.IssueAuthor = is.User
		}
	}
	var thread []issuetext.Comment
	cs, err := client.ListIssueComments(ctx, o, r, j.Issue)
	if err != nil {
		x.log.Warn("list issue comments", "err", err)
	}
	for _, c := range cs {
		thread = append(thread, issuetext.Comment{Author: c.User, AuthorType: c.UserType, Body: c.Body, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt})
	}
	trigger := j.Trigger.Sender // the worker checked their permission
	if j.Trigger.Source == job.SourceCI {
		trigger = "" // an app, not a person
	}
	got := issuetext.Gather(ctx, issuetext.Thread{Author: in.IssueAuthor, Title: in.IssueTitle, Body: in.IssueBody, Comments: thread}, issuetext.Options{
		Cutoff: j.Trigger.ReceivedAt, Trigger: trigger, CommandWord: x.r.o.CommandWord,
		WriteAccess: func(ctx context.Context, user string) (bool, error) {
			l, err := client.CollaboratorPermission(ctx, o, r, user)
			if err != nil {
				return false, err
			}
			return gh.FromLevel(l).Allowed(), nil
		},
	})
	in.IssueTitle, in.IssueBody, in.IssueAuthorStanding = got.Title, got.Body, got.AuthorStanding
	in.Comments, in.ContextNote = got.Comments, got.Note
	in.Instructions = issuetext.Clean(in.Instructions)
	in.CIOutput = issuetext.Clean(in.CIOutput)
}
