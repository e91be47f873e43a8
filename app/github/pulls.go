package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// PullRequest is the part of a pull request selfcode uses.
type PullRequest struct {
	Number  int
	ID      int64
	Title   string
	Body    string
	State   string // "open" or "closed"
	Draft   bool
	Merged  bool
	User    string
	HTMLURL string
	HeadRef string
	HeadSHA string
	// HeadRepo and BaseRepo are "owner/name"; they differ for a pull request from a fork.
	HeadRepo string
	BaseRef  string
	BaseSHA  string
	BaseRepo string
}

// FromFork reports whether the head branch lives in another repository.
func (p PullRequest) FromFork() bool {
	return p.HeadRepo != "" && !strings.EqualFold(p.HeadRepo, p.BaseRepo)
}

func pullRequest(p *gh.PullRequest) PullRequest {
	return PullRequest{
		Number: p.GetNumber(), ID: p.GetID(), Title: p.GetTitle(), Body: p.GetBody(), State: p.GetState(),
		Draft: p.GetDraft(), Merged: p.GetMerged(), User: p.GetUser().GetLogin(), HTMLURL: p.GetHTMLURL(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(),
		BaseRef: p.GetBase().GetRef(), BaseSHA: p.GetBase().GetSHA(), BaseRepo: p.GetBase().GetRepo().GetFullName(),
	}
}

// ListPullRequestsByHead lists pull requests whose head is headOwner:branch, in the
// given state ("open", "closed" or "all"; empty means open), newest first.
func (c *Client) ListPullRequestsByHead(ctx context.Context, owner, repo, headOwner, branch, state string) ([]PullRequest, error) {
	if state == "" {
		state = "open"
	}
	opts := &gh.PullRequestListOptions{Head: headOwner + ":" + branch, State: state, ListOptions: gh.ListOptions{PerPage: 100}}
	var out []PullRequest
	for range maxPages {
		page, resp, err := c.gh.PullRequests.List(ctx, owner, repo, opts)
		if err != nil {
			return nil, classify(fmt.Sprintf("list pull requests of %s/%s for %s:%s", owner, repo, headOwner, branch), err)
		}
		for _, p := range page {
			out = append(out, pullRequest(p))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// PullRequest gets a pull request.
func (c *Client) PullRequest(ctx context.Context, owner, repo string, number int) (PullRequest, error) {
	p, _, err := c.gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return PullRequest{}, classify(fmt.Sprintf("get pull request %s/%s#%d", owner, repo, number), err)
	}
	return pullRequest(p), nil
}

// NewPullRequest is a pull request to open.
type NewPullRequest struct {
	Title string
	Body  string
	// Head is the branch ("branch" or "owner:branch"); Base the branch to merge into.
	Head  string
	Base  string
	Draft bool
}

// CreatePullRequest opens a pull request. ErrValidation when one already exists for
// the head, or the branches have nothing to merge.
func (c *Client) CreatePullRequest(ctx context.Context, owner, repo string, in NewPullRequest) (PullRequest, error) {
	p, _, err := c.gh.PullRequests.Create(ctx, owner, repo, &gh.NewPullRequest{
		Title: &in.Title, Body: &in.Body, Head: &in.Head, Base: &in.Base, Draft: &in.Draft,
	})
	if err != nil {
		return PullRequest{}, classify(fmt.Sprintf("create pull request %s/%s from %s", owner, repo, in.Head), err)
	}
	return pullRequest(p), nil
}

// PullRequestUpdate changes a pull request; nil fields are left alone. (Draft state
// cannot be changed through this REST endpoint.)
type PullRequestUpdate struct {
	Title *string
	Body  *string
	State *string // "open" or "closed"
}

// UpdatePullRequest edits a pull request.
func (c *Client) UpdatePullRequest(ctx context.Context, owner, repo string, number int, in PullRequestUpdate) (PullRequest, error) {
	p, _, err := c.gh.PullRequests.Edit(ctx, owner, repo, number, &gh.PullRequest{Title: in.Title, Body: in.Body, State: in.State})
	if err != nil {
		return PullRequest{}, classify(fmt.Sprintf("update pull request %s/%s#%d", owner, repo, number), err)
	}
	return pullRequest(p), nil
}

// PullRequestDiff returns a pull request's unified diff.
func (c *Client) PullRequestDiff(ctx context.Context, owner, repo string, number int) (string, error) {
	d, _, err := c.gh.PullRequests.GetRaw(ctx, owner, repo, number, gh.RawOptions{Type: gh.Diff})
	if err != nil {
		return "", classify(fmt.Sprintf("get diff of %s/%s#%d", owner, repo, number), err)
	}
	return d, nil
}

// ReviewComment is a pull request review (diff) comment.
type ReviewComment struct {
	ID        int64
	ReviewID  int64
	InReplyTo int64
	Body      string
	User      string
	Path      string
	Line      int
	DiffHunk  string
	CommitID  string
	HTMLURL   string
}

func reviewComment(p *gh.PullRequestComment) ReviewComment {
	return ReviewComment{
		ID: p.GetID(), ReviewID: p.GetPullRequestReviewID(), InReplyTo: p.GetInReplyTo(), Body: p.GetBody(),
		User: p.GetUser().GetLogin(), Path: p.GetPath(), Line: p.GetLine(), DiffHunk: p.GetDiffHunk(),
		CommitID: p.GetCommitID(), HTMLURL: p.GetHTMLURL(),
	}
}

// ReplyToReviewComment replies in a review comment's thread
// (POST /repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies).
func (c *Client) ReplyToReviewComment(ctx context.Context, owner, repo string, number int, commentID int64, body string) (ReviewComment, error) {
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", url.PathEscape(owner), url.PathEscape(repo), number, commentID)
	req, err := c.gh.NewRequest(http.MethodPost, u, map[string]string{"body": body})
	if err != nil {
		return ReviewComment{}, fmt.Errorf("build reply request: %w", err)
	}
	out := new(gh.PullRequestComment)
	if _, err := c.gh.Do(ctx, req, out); err != nil {
		return ReviewComment{}, classify(fmt.Sprintf("reply to review comment %d on %s/%s#%d", commentID, owner, repo, number), err)
	}
	return reviewComment(out), nil
}

// ListReviewComments lists the comments of one review of a pull request.
func (c *Client) ListReviewComments(ctx context.Context, owner, repo string, number int, reviewID int64) ([]ReviewComment, error) {
	opts := &gh.ListOptions{PerPage: 100}
	var out []ReviewComment
	for range maxPages {
		page, resp, err := c.gh.PullRequests.ListReviewComments(ctx, owner, repo, number, reviewID, opts)
		if err != nil {
			return nil, classify(fmt.Sprintf("list comments of review %d on %s/%s#%d", reviewID, owner, repo, number), err)
		}
		for _, p := range page {
			out = append(out, reviewComment(p))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// CheckRun is a check run as GitHub reports it.
type CheckRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	Status     string
	Conclusion string
	HTMLURL    string
	DetailsURL string
	ExternalID string
	// App is the slug of the app that made the check run.
	App string
	// Output, as the check's app wrote it (untrusted).
	Title, Summary, Text string
}

// CheckRunOptions creates or updates a check run. Empty strings are left out.
// Setting Conclusion completes the run. Summary (with Title, defaulting to Name)
// sets the output.
type CheckRunOptions struct {
	Name       string
	HeadSHA    string // create only
	Status     string // queued, in_progress or completed
	Conclusion string // success, failure, neutral, cancelled, skipped, timed_out, action_required
	DetailsURL string
	ExternalID string
	Title      string
	Summary    string
	Text       string
	// Actions are the buttons on the check run (at most 3); a press is
	// delivered as check_run.requested_action with the identifier. Nil
	// leaves them as they are on update.
	Actions []CheckRunAction
}

// CheckRunAction is a button on a check run.
type CheckRunAction struct {
	Label       string // at most 20 characters
	Description string // at most 40 characters
	Identifier  string // at most 20 characters
}

func (o CheckRunOptions) actions() []*gh.CheckRunAction {
	var out []*gh.CheckRunAction
	for _, a := range o.Actions {
		out = append(out, &gh.CheckRunAction{Label: a.Label, Description: a.Description, Identifier: a.Identifier})
	}
	return out
}

func (o CheckRunOptions) output() *gh.CheckRunOutput {
	if o.Summary == "" && o.Title == "" && o.Text == "" {
		return nil
	}
	title := o.Title
	if title == "" {
		title = o.Name
	}
	out := &gh.CheckRunOutput{Title: &title, Summary: &o.Summary}
	if o.Text != "" {
		out.Text = &o.Text
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func checkRun(c *gh.CheckRun) CheckRun {
	return CheckRun{
		ID: c.GetID(), Name: c.GetName(), HeadSHA: c.GetHeadSHA(), Status: c.GetStatus(), Conclusion: c.GetConclusion(),
		HTMLURL: c.GetHTMLURL(), DetailsURL: c.GetDetailsURL(), ExternalID: c.GetExternalID(), App: c.GetApp().GetSlug(),
		Title: c.GetOutput().GetTitle(), Summary: c.GetOutput().GetSummary(), Text: c.GetOutput().GetText(),
	}
}

// ActionsJobLog returns up to max bytes of the end of a GitHub Actions
// job's log (GitHub answers with a redirect to a short-lived download
// URL, which needs no credentials). The download goes, and follows
// redirects, only to GitHub's hosts (logHost); anywhere else it fails
// with ErrForeignHost before anything is sent there.
func (c *Client) ActionsJobLog(ctx context.Context, owner, repo string, jobID int64, max int64) (string, error) {
	u, _, err := c.gh.Actions.GetWorkflowJobLogs(ctx, owner, repo, jobID, 1)
	if err != nil {
		return "", classify(fmt.Sprintf("find the log of Actions job %d of %s/%s", jobID, owner, repo), err)
	}
	api := c.gh.BaseURL
	if !logHost(api, u) {
		return "", fmt.Errorf("download the log of Actions job %d: %w: %s", jobID, ErrForeignHost, u.Redacted())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: time.Minute, CheckRedirect: func(next *http.Request, via []*http.Request) error {
		switch {
		case len(via) >= 5:
			return errors.New("stopped after 5 redirects")
		case !logHost(api, next.URL):
			return fmt.Errorf("%w: redirected to %s", ErrForeignHost, next.URL.Redacted())
		}
		return nil
	}}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("download the log of Actions job %d: %w", jobID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download the log of Actions job %d: %s", jobID, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", fmt.Errorf("download the log of Actions job %d: %w", jobID, err)
	}
	if int64(len(b)) > max {
		b = b[int64(len(b))-max:]
	}
	return string(b), nil
}

// logHosts are where github.com keeps Actions logs, as its documentation
// for self-hosted runners lists the hosts for "job summaries, logs,
// workflow artifacts, and caches".
var logHosts = []string{".actions.githubusercontent.com", ".blob.core.windows.net"}

// logHost says whether an Actions log may be downloaded from u: the API's
// own scheme and host (GitHub Enterprise Server, the simulated GitHub),
// or, when the API is github.com's, https to one of logHosts. Never
// anything else: the download runs in the server, which can reach the
// admin listener, private networks and metadata endpoints.
func logHost(api, u *url.URL) bool {
	if u.User != nil {
		return false
	}
	if strings.EqualFold(u.Scheme, api.Scheme) && strings.EqualFold(u.Host, api.Host) {
		return true
	}
	if !strings.EqualFold(api.Hostname(), "api.github.com") || u.Scheme != "https" || (u.Port() != "" && u.Port() != "443") {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, suffix := range logHosts {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// BranchProtected reports whether branch has protection rules (readable
// with contents: read, unlike the rules themselves).
func (c *Client) BranchProtected(ctx context.Context, owner, repo, branch string) (bool, error) {
	b, _, err := c.gh.Repositories.GetBranch(ctx, owner, repo, branch, 1)
	if err != nil {
		return false, classify(fmt.Sprintf("read branch %s of %s/%s", branch, owner, repo), err)
	}
	return b.GetProtected(), nil
}

// CheckRunsFor lists the check runs on a commit (all apps'), up to 100.
func (c *Client) CheckRunsFor(ctx context.Context, owner, repo, sha string) ([]CheckRun, error) {
	res, _, err := c.gh.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, classify(fmt.Sprintf("list check runs of %s/%s@%.12s", owner, repo, sha), err)
	}
	var out []CheckRun
	for _, cr := range res.CheckRuns {
		out = append(out, checkRun(cr))
	}
	return out, nil
}

// CreateCheckRun creates a check run on a commit.
func (c *Client) CreateCheckRun(ctx context.Context, owner, repo string, o CheckRunOptions) (CheckRun, error) {
	opts := gh.CreateCheckRunOptions{
		Name: o.Name, HeadSHA: o.HeadSHA, DetailsURL: optional(o.DetailsURL), ExternalID: optional(o.ExternalID),
		Status: optional(o.Status), Conclusion: optional(o.Conclusion), Output: o.output(), Actions: o.actions(),
	}
	if o.Conclusion != "" {
		now := gh.Timestamp{Time: time.Now().UTC()}
		opts.CompletedAt = &now
	}
	cr, _, err := c.gh.Checks.CreateCheckRun(ctx, owner, repo, opts)
	if err != nil {
		return CheckRun{}, classify(fmt.Sprintf("create check run %q on %s/%s", o.Name, owner, repo), err)
	}
	return checkRun(cr), nil
}

// UpdateCheckRun updates a check run (HeadSHA is ignored; Name is required by the API).
func (c *Client) UpdateCheckRun(ctx context.Context, owner, repo string, id int64, o CheckRunOptions) (CheckRun, error) {
	if o.Name == "" {
		return CheckRun{}, fmt.Errorf("update check run %d on %s/%s: name is required", id, owner, repo)
	}
	opts := gh.UpdateCheckRunOptions{
		Name: o.Name, DetailsURL: optional(o.DetailsURL), ExternalID: optional(o.ExternalID),
		Status: optional(o.Status), Conclusion: optional(o.Conclusion), Output: o.output(), Actions: o.actions(),
	}
	if o.Conclusion != "" {
		now := gh.Timestamp{Time: time.Now().UTC()}
		opts.CompletedAt = &now
	}
	cr, _, err := c.gh.Checks.UpdateCheckRun(ctx, owner, repo, id, opts)
	if err != nil {
		return CheckRun{}, classify(fmt.Sprintf("update check run %d on %s/%s", id, owner, repo), err)
	}
	return checkRun(cr), nil
}
