package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// Client makes the REST calls selfcode needs, as one installation. Safe for
// concurrent use; obtain it from Factory.Installation.
type Client struct {
	id     int64
	gh     *gh.Client
	tokens *installationTransport
}

// InstallationID is the installation this client acts as.
func (c *Client) InstallationID() int64 { return c.id }

// Token returns a valid installation token for git over HTTPS (user
// "x-access-token"). It is refreshed when it has less than a minute left, so ask
// again before each git command. Never log it.
func (c *Client) Token(ctx context.Context) (string, error) {
	t, err := c.tokens.Token(ctx)
	if err != nil {
		return "", classify(fmt.Sprintf("installation %d token", c.id), err)
	}
	return t, nil
}

// maxPages bounds every paginated listing (100 per page).
const maxPages = 50

// Repository is the part of a repository selfcode uses.
type Repository struct {
	ID            int64
	Owner         string
	Name          string
	FullName      string
	DefaultBranch string
	CloneURL      string
	HTMLURL       string
	Private       bool
	Archived      bool
	Fork          bool
	// ParentFullName is "owner/name" of the repository this one was forked from.
	ParentFullName string
}

// Repo gets a repository.
func (c *Client) Repo(ctx context.Context, owner, repo string) (Repository, error) {
	r, _, err := c.gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return Repository{}, classify("get repository "+owner+"/"+repo, err)
	}
	return Repository{
		ID: r.GetID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(), FullName: r.GetFullName(),
		DefaultBranch: r.GetDefaultBranch(), CloneURL: r.GetCloneURL(), HTMLURL: r.GetHTMLURL(),
		Private: r.GetPrivate(), Archived: r.GetArchived(), Fork: r.GetFork(), ParentFullName: r.GetParent().GetFullName(),
	}, nil
}

// PermissionLevel is a user's access to a repository as the API reports it.
type PermissionLevel struct {
	// Permission is the legacy base role: admin, write, read or none.
	Permission string
	// RoleName is the assigned role (admin, maintain, write, triage, read, or a custom role).
	RoleName string
}

// CollaboratorPermission gets a user's permission on a repository.
func (c *Client) CollaboratorPermission(ctx context.Context, owner, repo, user string) (PermissionLevel, error) {
	u := fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(user))
	req, err := c.gh.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return PermissionLevel{}, fmt.Errorf("build permission request: %w", err)
	}
	var out struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.gh.Do(ctx, req, &out); err != nil {
		return PermissionLevel{}, classify(fmt.Sprintf("get permission of %s on %s/%s", user, owner, repo), err)
	}
	return PermissionLevel{Permission: out.Permission, RoleName: out.RoleName}, nil
}

// Issue is an issue or, when IsPullRequest, a pull request's issue side.
type Issue struct {
	Number        int
	Title         string
	Body          string
	State         string
	User          string
	HTMLURL       string
	Labels        []string
	IsPullRequest bool
}

// Issue gets an issue (or a pull request's issue side).
func (c *Client) Issue(ctx context.Context, owner, repo string, number int) (Issue, error) {
	is, _, err := c.gh.Issues.Get(ctx, owner, repo, number)
	if err != nil {
		return Issue{}, classify(fmt.Sprintf("get issue %s/%s#%d", owner, repo, number), err)
	}
	out := Issue{
		Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), State: is.GetState(),
		User: is.GetUser().GetLogin(), HTMLURL: is.GetHTMLURL(), IsPullRequest: is.IsPullRequest(),
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out, nil
}

// Comment is an issue or pull request conversation comment.
type Comment struct {
	ID        int64
	Body      string
	User      string
	UserType  string // "User" or "Bot"
	HTMLURL   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func comment(c *gh.IssueComment) Comment {
	return Comment{
		ID: c.GetID(), Body: c.GetBody(), User: c.GetUser().GetLogin(), UserType: c.GetUser().GetType(),
		HTMLURL: c.GetHTMLURL(), CreatedAt: c.GetCreatedAt().Time, UpdatedAt: c.GetUpdatedAt().Time,
	}
}

// CreateIssueComment comments on an issue or pull request.
func (c *Client) CreateIssueComment(ctx context.Context, owner, repo string, number int, body string) (Comment, error) {
	out, _, err := c.gh.Issues.CreateComment(ctx, owner, repo, number, &gh.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, classify(fmt.Sprintf("create comment on %s/%s#%d", owner, repo, number), err)
	}
	return comment(out), nil
}

// UpdateIssueComment replaces a comment's body.
func (c *Client) UpdateIssueComment(ctx context.Context, owner, repo string, commentID int64, body string) (Comment, error) {
	out, _, err := c.gh.Issues.EditComment(ctx, owner, repo, commentID, &gh.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, classify(fmt.Sprintf("update comment %d on %s/%s", commentID, owner, repo), err)
	}
	return comment(out), nil
}

// ListIssueComments lists all comments of an issue or pull request, oldest first.
func (c *Client) ListIssueComments(ctx context.Context, owner, repo string, number int) ([]Comment, error) {
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var out []Comment
	for range maxPages {
		page, resp, err := c.gh.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, classify(fmt.Sprintf("list comments of %s/%s#%d", owner, repo, number), err)
		}
		for _, cm := range page {
			out = append(out, comment(cm))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// Reaction contents GitHub accepts.
const (
	ReactionPlusOne  = "+1"
	ReactionMinusOne = "-1"
	ReactionLaugh    = "laugh"
	ReactionConfused = "confused"
	ReactionHeart    = "heart"
	ReactionHooray   = "hooray"
	ReactionRocket   = "rocket"
	ReactionEyes     = "eyes"
)

// ReactToIssueComment adds a reaction to an issue comment. Reacting twice is fine
// (GitHub answers 200 with the existing reaction).
func (c *Client) ReactToIssueComment(ctx context.Context, owner, repo string, commentID int64, content string) error {
	if _, _, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, owner, repo, commentID, content); err != nil {
		return classify(fmt.Sprintf("react %q to comment %d on %s/%s", content, commentID, owner, repo), err)
	}
	return nil
}

// ReactToReviewComment adds a reaction to a pull request review comment.
func (c *Client) ReactToReviewComment(ctx context.Context, owner, repo string, commentID int64, content string) error {
	if _, _, err := c.gh.Reactions.CreatePullRequestCommentReaction(ctx, owner, repo, commentID, content); err != nil {
		return classify(fmt.Sprintf("react %q to review comment %d on %s/%s", content, commentID, owner, repo), err)
	}
	return nil
}

// AddLabels adds labels to an issue or pull request.
func (c *Client) AddLabels(ctx context.Context, owner, repo string, number int, labels ...string) error {
	if _, _, err := c.gh.Issues.AddLabelsToIssue(ctx, owner, repo, number, labels); err != nil {
		return classify(fmt.Sprintf("add labels to %s/%s#%d", owner, repo, number), err)
	}
	return nil
}

// RemoveLabel removes a label from an issue or pull request; ErrNotFound when the
// label is not on it.
func (c *Client) RemoveLabel(ctx context.Context, owner, repo string, number int, label string) error {
	if _, err := c.gh.Issues.RemoveLabelForIssue(ctx, owner, repo, number, label); err != nil {
		return classify(fmt.Sprintf("remove label %q from %s/%s#%d", label, owner, repo, number), err)
	}
	return nil
}

// BranchSHA returns the commit a branch points at; ErrNotFound when it does not exist.
func (c *Client) BranchSHA(ctx context.Context, owner, repo, branch string) (string, error) {
	ref, _, err := c.gh.Git.GetRef(ctx, owner, repo, "heads/"+branch)
	if err != nil {
		return "", classify(fmt.Sprintf("get branch %s of %s/%s", branch, owner, repo), err)
	}
	return ref.GetObject().GetSHA(), nil
}
