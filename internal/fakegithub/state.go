package fakegithub

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

type user struct {
	login string
	id    int64
	typ   string // "User", "Bot" or "Organization"
}

type permission struct {
	permission string // legacy base role: admin, write, read, none
	role       string // role_name
}

type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	private       bool
	description   string
	parent        string // repoKey of the parent when this is a fork
	dir           string
	nextNumber    int
	issues        map[int]*Issue
	perms         map[string]permission
	labels        map[string]*label
	protected     map[string]bool // branch protection, by branch name
}

type label struct {
	id    int64
	name  string
	color string
}

// Issue is an issue or pull request's issue side, as the fake stores it.
type Issue struct {
	Number        int
	ID            int64
	Title         string
	Body          string
	State         string // "open" or "closed"; default open
	User          string
	Labels        []string
	IsPullRequest bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
	pr            *PullRequest
}

// PullRequest is a pull request as the fake stores it.
type PullRequest struct {
	Number int
	ID     int64
	Title  string
	Body   string
	State  string // "open" or "closed"
	Draft  bool
	Merged bool
	// Head is the head branch name; HeadOwner the owner of the head repository (a
	// fork when it differs from the base repository's owner; empty means same repo).
	Head      string
	HeadOwner string
	Base      string
	User      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Comment is an issue (or pull request conversation) comment.
type Comment struct {
	ID        int64
	Owner     string
	Repo      string
	Issue     int
	User      string
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ReviewComment is a pull request review (diff) comment.
type ReviewComment struct {
	ID         int64
	Owner      string
	Repo       string
	PullNumber int
	ReviewID   int64
	InReplyTo  int64
	User       string
	Body       string
	Path       string
	Line       int
	CommitID   string
	DiffHunk   string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Reaction subject types.
const (
	SubjectIssueComment  = "issue_comment"
	SubjectReviewComment = "pull_request_review_comment"
)

// Reaction is an emoji reaction on a comment.
type Reaction struct {
	ID          int64
	SubjectType string // SubjectIssueComment or SubjectReviewComment
	SubjectID   int64
	User        string
	Content     string
	CreatedAt   time.Time
}

// CheckRun is a check run as the fake stores it.
type CheckRun struct {
	ID    int64
	Owner string
	Repo  string
	// App is the slug of the app that made the check run; empty: the
	// fake's own app (check runs created through the API).
	App         string
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	DetailsURL  string
	ExternalID  string
	Title       string
	Summary     string
	Text        string
	StartedAt   time.Time
	CompletedAt time.Time
	Actions     []CheckRunAction // the buttons the app asked for
}

// CheckRunAction is a button on a check run.
type CheckRunAction struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// ManifestApp is what a manifest conversion returns for a code registered with
// AddManifestCode. Empty fields default to the fake's own app (id, slug, name, key),
// so credentials obtained through the flow work against this fake.
type ManifestApp struct {
	ID            int64
	Slug          string
	Name          string
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PEM           string
	Owner         string
}

func (s *Server) newIDLocked() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) ensureUserLocked(login string) *user {
	k := strings.ToLower(login)
	if u, ok := s.users[k]; ok {
		return u
	}
	typ := "User"
	if strings.HasSuffix(k, "[bot]") {
		typ = "Bot"
	}
	u := &user{login: login, id: s.newIDLocked(), typ: typ}
	s.users[k] = u
	return u
}

// AddUser registers a user (or, with typ "Organization"/"Bot", another account type).
// Users are also created implicitly by every helper that names one.
func (s *Server) AddUser(login, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.ensureUserLocked(login)
	if typ != "" {
		u.typ = typ
	}
}

func (s *Server) repoLocked(owner, name string) (*repo, error) {
	rp, ok := s.repos[repoKey(owner, name)]
	if !ok {
		return nil, fmt.Errorf("repository %s/%s: %w", owner, name, ErrNotFound)
	}
	return rp, nil
}

// legacyPermission maps a standard role_name to the legacy permission the API
// reports beside it.
func legacyPermission(role string) (string, bool) {
	switch role {
	case "admin", "write", "read", "none":
		return role, true
	case "maintain":
		return "write", true
	case "triage":
		return "read", true
	}
	return "", false
}

// SetPermission gives user a standard role on a repository: admin, maintain, write,
// triage, read or none.
func (s *Server) SetPermission(owner, repoName, login, role string) error {
	base, ok := legacyPermission(role)
	if !ok {
		return fmt.Errorf("unknown role %q (use SetRole for custom roles)", role)
	}
	return s.SetRole(owner, repoName, login, base, role)
}

// SetRole gives user a role with an explicit legacy permission (admin, write, read,
// none) and role_name, e.g. a custom role "deployer" based on write.
func (s *Server) SetRole(owner, repoName, login, legacyPermission, roleName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return err
	}
	s.ensureUserLocked(login)
	rp.perms[strings.ToLower(login)] = permission{permission: legacyPermission, role: roleName}
	return nil
}

func (s *Server) newIssueLocked(rp *repo, in Issue) *Issue {
	rp.nextNumber++
	now := s.now()
	is := in
	is.Number = rp.nextNumber
	is.ID = s.newIDLocked()
	if is.State == "" {
		is.State = "open"
	}
	if is.User == "" {
		is.User = rp.owner
	}
	s.ensureUserLocked(is.User)
	is.Labels = nil
	for _, l := range in.Labels {
		s.addLabelLocked(rp, &is, l)
	}
	is.CreatedAt, is.UpdatedAt = now, now
	rp.issues[is.Number] = &is
	return &is
}

func (s *Server) addLabelLocked(rp *repo, is *Issue, name string) {
	k := strings.ToLower(name)
	l, ok := rp.labels[k]
	if !ok {
		l = &label{id: s.newIDLocked(), name: name, color: "ededed"}
		rp.labels[k] = l
	}
	for _, have := range is.Labels {
		if strings.EqualFold(have, name) {
			return
		}
	}
	is.Labels = append(is.Labels, l.name)
}

// AddIssue creates an issue (Title, Body, User, Labels, State are used) and returns its number.
func (s *Server) AddIssue(owner, repoName string, in Issue) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return 0, err
	}
	in.IsPullRequest = false
	return s.newIssueLocked(rp, in).Number, nil
}

// AddIssueComment adds a comment by user on an issue or pull request, as a person
// would; use the returned ID in the webhook payload that announces it.
func (s *Server) AddIssueComment(owner, repoName string, number int, login, body string) (Comment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return Comment{}, err
	}
	if _, ok := rp.issues[number]; !ok {
		return Comment{}, fmt.Errorf("issue %d: %w", number, ErrNotFound)
	}
	return *s.newCommentLocked(rp, number, login, body), nil
}

// AddIssueCommentAt is AddIssueComment with the comment created at at
// (GitHub's clock), e.g. after a job was triggered.
func (s *Server) AddIssueCommentAt(owner, repoName string, number int, login, body string, at time.Time) (Comment, error) {
	c, err := s.AddIssueComment(owner, repoName, number, login, body)
	if err != nil {
		return c, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := s.comments[c.ID]
	stored.CreatedAt, stored.UpdatedAt = at.UTC().Truncate(time.Second), at.UTC().Truncate(time.Second)
	return *stored, nil
}

// EditIssueComment replaces a comment's body as its author would, at at
// (GitHub's clock), which becomes its updated_at.
func (s *Server) EditIssueComment(id int64, body string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.comments[id]
	if !ok {
		return fmt.Errorf("comment %d: %w", id, ErrNotFound)
	}
	c.Body, c.UpdatedAt = body, at.UTC().Truncate(time.Second)
	return nil
}

func (s *Server) newCommentLocked(rp *repo, number int, login, body string) *Comment {
	now := s.now()
	s.ensureUserLocked(login)
	c := &Comment{ID: s.newIDLocked(), Owner: rp.owner, Repo: rp.name, Issue: number, User: login, Body: body, CreatedAt: now, UpdatedAt: now}
	s.comments[c.ID] = c
	return c
}

// AddPullRequest opens a pull request as a person would (Title, Body, Head, HeadOwner,
// Base, User, Draft are used; Base defaults to the default branch). The head branch
// must exist (see CommitFiles).
func (s *Server) AddPullRequest(owner, repoName string, in PullRequest) (PullRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return PullRequest{}, err
	}
	if in.Base == "" {
		in.Base = rp.defaultBranch
	}
	if in.User == "" {
		in.User = rp.owner
	}
	pr, verr := s.createPullLocked(rp, in)
	if verr != nil {
		return PullRequest{}, fmt.Errorf("add pull request: %s", verr.describe())
	}
	return *pr, nil
}

// AddReviewComment adds a review comment on a pull request's diff, as a reviewer would
// (PullNumber, ReviewID, InReplyTo, User, Body, Path, Line are used).
func (s *Server) AddReviewComment(owner, repoName string, in ReviewComment) (ReviewComment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return ReviewComment{}, err
	}
	is, ok := rp.issues[in.PullNumber]
	if !ok || is.pr == nil {
		return ReviewComment{}, fmt.Errorf("pull request %d: %w", in.PullNumber, ErrNotFound)
	}
	if in.ReviewID == 0 {
		in.ReviewID = s.newIDLocked()
	}
	return *s.newReviewCommentLocked(rp, in), nil
}

func (s *Server) newReviewCommentLocked(rp *repo, in ReviewComment) *ReviewComment {
	now := s.now()
	c := in
	c.ID = s.newIDLocked()
	c.Owner, c.Repo = rp.owner, rp.name
	c.CreatedAt, c.UpdatedAt = now, now
	s.ensureUserLocked(c.User)
	s.reviewComms[c.ID] = &c
	return &c
}

// AddManifestCode registers a temporary code for POST /app-manifests/{code}/conversions
// and returns what the conversion will answer (defaults filled in). A code works once.
func (s *Server) AddManifestCode(code string, app ManifestApp) ManifestApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	if app.ID == 0 {
		app.ID = s.opts.AppID
	}
	if app.Slug == "" {
		app.Slug = s.opts.AppSlug
	}
	if app.Name == "" {
		app.Name = s.opts.AppName
	}
	if app.PEM == "" {
		app.PEM = string(s.keyPEM)
	}
	if app.ClientID == "" {
		app.ClientID = fmt.Sprintf("Iv1.fake%08d", app.ID)
	}
	if app.ClientSecret == "" {
		app.ClientSecret, _ = randomToken("", 40)
	}
	if app.WebhookSecret == "" {
		app.WebhookSecret, _ = randomToken("", 40)
	}
	if app.Owner == "" {
		app.Owner = "selfcode-owner"
	}
	s.manifestCodes[code] = app
	return app
}

// --- accessors for assertions ---

// Issue returns an issue or pull request's issue side.
func (s *Server) Issue(owner, repoName string, number int) (Issue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return Issue{}, err
	}
	is, ok := rp.issues[number]
	if !ok {
		return Issue{}, fmt.Errorf("issue %d: %w", number, ErrNotFound)
	}
	out := *is
	out.Labels = slices.Clone(is.Labels)
	out.pr = nil
	return out, nil
}

// Comments returns the comments of an issue or pull request, oldest first.
func (s *Server) Comments(owner, repoName string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.commentsLocked(repoKey(owner, repoName), number) {
		out = append(out, *c)
	}
	return out
}

func (s *Server) commentsLocked(key string, number int) []*Comment {
	var out []*Comment
	for _, c := range s.comments {
		if repoKey(c.Owner, c.Repo) == key && c.Issue == number {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ReviewComments returns the review comments of a pull request, oldest first.
func (s *Server) ReviewComments(owner, repoName string, pull int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := repoKey(owner, repoName)
	var out []ReviewComment
	for _, c := range s.reviewComms {
		if repoKey(c.Owner, c.Repo) == key && c.PullNumber == pull {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Reactions returns the reactions on a comment; subjectType is SubjectIssueComment or
// SubjectReviewComment.
func (s *Server) Reactions(subjectType string, commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Reaction
	for _, r := range s.reactions {
		if r.SubjectType == subjectType && r.SubjectID == commentID {
			out = append(out, *r)
		}
	}
	return out
}

// PullRequests returns a repository's pull requests, by number.
func (s *Server) PullRequests(owner, repoName string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return nil
	}
	var out []PullRequest
	for _, is := range sortedIssues(rp) {
		if is.pr != nil {
			out = append(out, *is.pr)
		}
	}
	return out
}

func sortedIssues(rp *repo) []*Issue {
	out := make([]*Issue, 0, len(rp.issues))
	for _, is := range rp.issues {
		out = append(out, is)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// ProtectBranch marks a branch protected (GET /repos/{o}/{r}/branches/{b}
// then says so).
func (s *Server) ProtectBranch(owner, name, branch string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, name)
	if err != nil {
		return err
	}
	if rp.protected == nil {
		rp.protected = map[string]bool{}
	}
	rp.protected[branch] = true
	return nil
}

// SetJobLog sets the log of GitHub Actions job id (GET
// /repos/{o}/{r}/actions/jobs/{id}/logs redirects to it).
func (s *Server) SetJobLog(id int64, log string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobLogs[id] = log
}

// SetJobLogURL makes GitHub's answer for the log of Actions job id a
// redirect to url instead of the fake's own download (the job needs a
// log set with SetJobLog all the same).
func (s *Server) SetJobLogURL(id int64, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logURL[id] = url
}

// SetJobLogRedirect makes the fake's own download of the log of Actions
// job id redirect on to url.
func (s *Server) SetJobLogRedirect(id int64, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logHop[id] = url
}

// AddCheckRun records a check run another app (the repository's CI) made
// on a commit, and returns it with its id.
func (s *Server) AddCheckRun(c CheckRun) CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Status == "" {
		c.Status = "completed"
	}
	c.ID = s.newIDLocked()
	s.checkRuns[c.ID] = &c
	return c
}

// CheckRuns returns a repository's check runs, oldest first.
func (s *Server) CheckRuns(owner, repoName string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := repoKey(owner, repoName)
	var out []CheckRun
	for _, c := range s.checkRuns {
		if repoKey(c.Owner, c.Repo) == key {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Labels returns the labels on an issue or pull request.
func (s *Server) Labels(owner, repoName string, number int) []string {
	is, err := s.Issue(owner, repoName, number)
	if err != nil {
		return nil
	}
	return is.Labels
}
