package fakegithub

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// apiErr is a failed validation, renderable as GitHub's 422 body.
type apiErr struct {
	msg  string
	errs []fieldError
}

func (e *apiErr) describe() string {
	var parts []string
	for _, fe := range e.errs {
		if fe.Message != "" {
			parts = append(parts, fe.Message)
		} else {
			parts = append(parts, fe.Field+" "+fe.Code)
		}
	}
	return e.msg + ": " + strings.Join(parts, "; ")
}

func (e *apiErr) write(w http.ResponseWriter) { writeValidation(w, e.errs...) }

func invalid(resource, field, code, msg string) *apiErr {
	return &apiErr{msg: "Validation Failed", errs: []fieldError{{Resource: resource, Field: field, Code: code, Message: msg}}}
}

// createPullLocked validates like GitHub (missing fields, unknown head/base, nothing
// to merge, an open PR for the same head already) and stores the pull request.
func (s *Server) createPullLocked(rp *repo, in PullRequest) (*PullRequest, *apiErr) {
	switch {
	case in.Title == "":
		return nil, invalid("PullRequest", "title", "missing_field", "")
	case in.Head == "":
		return nil, invalid("PullRequest", "head", "missing_field", "")
	case in.Base == "":
		return nil, invalid("PullRequest", "base", "missing_field", "")
	}
	headOwner, branch, hasOwner := strings.Cut(in.Head, ":")
	if !hasOwner {
		headOwner, branch = in.HeadOwner, in.Head
	}
	if headOwner == "" {
		headOwner = rp.owner
	}
	headRepo := rp
	if !strings.EqualFold(headOwner, rp.owner) {
		fork, ok := s.repos[repoKey(headOwner, rp.name)]
		if !ok || fork.parent != repoKey(rp.owner, rp.name) {
			return nil, invalid("PullRequest", "head", "invalid", "")
		}
		headRepo = fork
	}
	baseSHA, ok := s.branchSHAs(rp.dir)[in.Base]
	if !ok {
		return nil, invalid("PullRequest", "base", "invalid", "")
	}
	headSHA, ok := s.branchSHAs(headRepo.dir)[branch]
	if !ok {
		return nil, invalid("PullRequest", "head", "invalid", "")
	}
	for _, is := range rp.issues {
		pr := is.pr
		if pr == nil || pr.State != "open" || pr.Base != in.Base || pr.Head != branch {
			continue
		}
		if strings.EqualFold(s.headRepoLocked(rp, pr).owner, headRepo.owner) {
			return nil, &apiErr{msg: "Validation Failed", errs: []fieldError{{Resource: "PullRequest", Code: "custom",
				Message: fmt.Sprintf("A pull request already exists for %s:%s.", headRepo.owner, branch)}}}
		}
	}
	number := rp.nextNumber + 1
	if headRepo != rp {
		if _, err := s.runGit(rp.dir, "fetch", "--quiet", headRepo.dir, fmt.Sprintf("+refs/heads/%s:refs/pull/%d/head", branch, number)); err != nil {
			return nil, invalid("PullRequest", "head", "invalid", "")
		}
	}
	if headSHA == baseSHA || s.isAncestor(rp.dir, headSHA, baseSHA) {
		return nil, &apiErr{msg: "Validation Failed", errs: []fieldError{{Resource: "PullRequest", Code: "custom",
			Message: fmt.Sprintf("No commits between %s and %s", in.Base, branch)}}}
	}
	is := s.newIssueLocked(rp, Issue{Title: in.Title, Body: in.Body, User: in.User, IsPullRequest: true})
	headOwnerName := ""
	if headRepo != rp {
		headOwnerName = headRepo.owner
	}
	pr := &PullRequest{
		Number: is.Number, ID: s.newIDLocked(), Title: in.Title, Body: in.Body, State: "open", Draft: in.Draft,
		Head: branch, HeadOwner: headOwnerName, Base: in.Base, User: is.User, CreatedAt: is.CreatedAt, UpdatedAt: is.UpdatedAt,
	}
	is.pr = pr
	return pr, nil
}

func (s *Server) pullForRequestLocked(w http.ResponseWriter, p params) (*repo, *Issue, bool) {
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return nil, nil, false
	}
	if is.pr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil, false
	}
	return rp, is, true
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	headOwner, headBranch, headHasOwner := strings.Cut(q.Get("head"), ":")
	issues := sortedIssues(rp)
	sort.SliceStable(issues, func(i, j int) bool { return issues[i].Number > issues[j].Number })
	out := []any{}
	for _, is := range issues {
		pr := is.pr
		if pr == nil || (state != "all" && pr.State != state) {
			continue
		}
		if b := q.Get("base"); b != "" && pr.Base != b {
			continue
		}
		if q.Get("head") != "" {
			if !headHasOwner || pr.Head != headBranch || !strings.EqualFold(s.headRepoLocked(rp, pr).owner, headOwner) {
				continue
			}
		}
		// List items are GitHub's "pull-request-simple": no merge details.
		item := s.pullJSONLocked(rp, is)
		delete(item, "merged")
		delete(item, "maintainer_can_modify")
		out = append(out, item)
	}
	writeJSON(w, http.StatusOK, page(w, r, out))
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	var in struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	pr, verr := s.createPullLocked(rp, PullRequest{Title: in.Title, Head: in.Head, Base: in.Base, Body: in.Body, Draft: in.Draft, User: s.botLogin})
	if verr != nil {
		verr.write(w)
		return
	}
	writeJSON(w, http.StatusCreated, s.pullJSONLocked(rp, rp.issues[pr.Number]))
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.pullForRequestLocked(w, p)
	if !ok {
		return
	}
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "diff") || strings.Contains(accept, "patch") {
		s.writePullDiffLocked(w, rp, is.pr, strings.Contains(accept, "patch"))
		return
	}
	writeJSON(w, http.StatusOK, s.pullJSONLocked(rp, is))
}

func (s *Server) writePullDiffLocked(w http.ResponseWriter, rp *repo, pr *PullRequest, patch bool) {
	head := "refs/heads/" + pr.Head
	if hr := s.headRepoLocked(rp, pr); hr != rp {
		head = fmt.Sprintf("refs/pull/%d/head", pr.Number)
		if _, err := s.runGit(rp.dir, "fetch", "--quiet", hr.dir, "+refs/heads/"+pr.Head+":"+head); err != nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
	}
	var out string
	var err error
	if patch {
		out, err = s.runGit(rp.dir, "format-patch", "--stdout", "refs/heads/"+pr.Base+".."+head)
	} else {
		out, err = s.gitDiff(rp.dir, "refs/heads/"+pr.Base, head)
	}
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	kind := "diff"
	if patch {
		kind = "patch"
	}
	w.Header().Set("Content-Type", "application/vnd.github.v3."+kind+"; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(out))
}

func (s *Server) updatePull(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.pullForRequestLocked(w, p)
	if !ok {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	pr := is.pr
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		writeValidation(w, fieldError{Resource: "PullRequest", Field: "state", Code: "invalid"})
		return
	}
	if in.Base != nil {
		if _, ok := s.branchSHAs(rp.dir)[*in.Base]; !ok {
			writeValidation(w, fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
			return
		}
		pr.Base = *in.Base
	}
	if in.Title != nil {
		pr.Title, is.Title = *in.Title, *in.Title
	}
	if in.Body != nil {
		pr.Body, is.Body = *in.Body, *in.Body
	}
	if in.State != nil {
		pr.State, is.State = *in.State, *in.State
	}
	pr.UpdatedAt, is.UpdatedAt = s.now(), s.now()
	writeJSON(w, http.StatusOK, s.pullJSONLocked(rp, is))
}

// SetPullRequestState closes, reopens or merges (state "merged") a pull request, as a
// person would.
func (s *Server) SetPullRequestState(owner, repoName string, number int, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return err
	}
	is, ok := rp.issues[number]
	if !ok || is.pr == nil {
		return fmt.Errorf("pull request %d: %w", number, ErrNotFound)
	}
	switch state {
	case "open", "closed":
		is.pr.State, is.State = state, state
	case "merged":
		is.pr.State, is.State, is.pr.Merged = "closed", "closed", true
	default:
		return fmt.Errorf("unknown pull request state %q", state)
	}
	is.pr.UpdatedAt = s.now()
	return nil
}

func (s *Server) listPullReviewComments(w http.ResponseWriter, r *http.Request, p params) {
	s.listReviewCommentsWhere(w, r, p, func(*ReviewComment) bool { return true })
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request, p params) {
	review, _ := p.id("review")
	s.listReviewCommentsWhere(w, r, p, func(c *ReviewComment) bool { return c.ReviewID == review })
}

func (s *Server) listReviewCommentsWhere(w http.ResponseWriter, r *http.Request, p params, keep func(*ReviewComment) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.pullForRequestLocked(w, p)
	if !ok {
		return
	}
	var list []*ReviewComment
	for _, c := range s.reviewComms {
		if repoKey(c.Owner, c.Repo) == repoKey(rp.owner, rp.name) && c.PullNumber == is.Number && keep(c) {
			list = append(list, c)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	out := []any{}
	for _, c := range list {
		out = append(out, s.reviewCommentJSONLocked(rp, c))
	}
	writeJSON(w, http.StatusOK, page(w, r, out))
}

func (s *Server) replyReviewComment(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.pullForRequestLocked(w, p)
	if !ok {
		return
	}
	id, _ := p.id("id")
	parent, ok := s.reviewComms[id]
	if !ok || repoKey(parent.Owner, parent.Repo) != repoKey(rp.owner, rp.name) || parent.PullNumber != is.Number {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var in bodyInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeValidation(w, fieldError{Resource: "PullRequestReviewComment", Field: "body", Code: "missing_field"})
		return
	}
	// Replies to a reply attach to the thread's first comment, as on GitHub.
	root := parent.ID
	if parent.InReplyTo != 0 {
		root = parent.InReplyTo
	}
	c := s.newReviewCommentLocked(rp, ReviewComment{
		PullNumber: is.Number, ReviewID: s.newIDLocked(), InReplyTo: root, User: s.botLogin, Body: *in.Body,
		Path: parent.Path, Line: parent.Line, CommitID: parent.CommitID, DiffHunk: parent.DiffHunk,
	})
	writeJSON(w, http.StatusCreated, s.reviewCommentJSONLocked(rp, c))
}

type checkRunInput struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
	Actions *[]CheckRunAction `json:"actions"`
}

func validCheckStatus(s string) bool {
	return s == "queued" || s == "in_progress" || s == "completed"
}

func validConclusion(c string) bool {
	switch c {
	case "action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out":
		return true
	}
	return false
}

// applyCheckRun validates and applies create/update input to c.
func (s *Server) applyCheckRun(c *CheckRun, in checkRunInput) *apiErr {
	if in.Actions != nil {
		if len(*in.Actions) > 3 {
			return invalid("CheckRun", "actions", "invalid", "at most 3 actions")
		}
		for _, a := range *in.Actions {
			if a.Label == "" || len(a.Label) > 20 || len(a.Description) > 40 || a.Identifier == "" || len(a.Identifier) > 20 {
				return invalid("CheckRun", "actions", "invalid", "label (max 20), description (max 40) and identifier (max 20) are required")
			}
		}
		c.Actions = append([]CheckRunAction(nil), (*in.Actions)...)
	}
	if in.Name != nil {
		c.Name = *in.Name
	}
	if in.DetailsURL != nil {
		c.DetailsURL = *in.DetailsURL
	}
	if in.ExternalID != nil {
		c.ExternalID = *in.ExternalID
	}
	if in.Status != nil {
		if !validCheckStatus(*in.Status) {
			return invalid("CheckRun", "status", "invalid", "")
		}
		c.Status = *in.Status
	}
	if in.Conclusion != nil {
		if !validConclusion(*in.Conclusion) {
			return invalid("CheckRun", "conclusion", "invalid", "")
		}
		c.Conclusion = *in.Conclusion
		c.Status = "completed"
	}
	if c.Status == "completed" && c.Conclusion == "" {
		return invalid("CheckRun", "conclusion", "missing_field", "Conclusion is required when status is completed")
	}
	if in.StartedAt != nil {
		c.StartedAt = in.StartedAt.UTC()
	}
	if in.CompletedAt != nil {
		c.CompletedAt = in.CompletedAt.UTC()
	}
	if c.Status == "completed" && c.CompletedAt.IsZero() {
		c.CompletedAt = s.now()
	}
	if o := in.Output; o != nil {
		if o.Summary == nil || o.Title == nil {
			return invalid("CheckRun", "output", "missing_field", "output requires title and summary")
		}
		c.Title, c.Summary = *o.Title, *o.Summary
		if o.Text != nil {
			c.Text = *o.Text
		}
	}
	return nil
}

func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	var in checkRunInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Name == nil || *in.Name == "" {
		writeValidation(w, fieldError{Resource: "CheckRun", Field: "name", Code: "missing_field"})
		return
	}
	if in.HeadSHA == nil || *in.HeadSHA == "" {
		writeValidation(w, fieldError{Resource: "CheckRun", Field: "head_sha", Code: "missing_field"})
		return
	}
	if _, err := s.revParse(rp.dir, *in.HeadSHA); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"message": "No commit found for SHA: " + *in.HeadSHA, "documentation_url": docsURL, "status": "422"})
		return
	}
	c := &CheckRun{Owner: rp.owner, Repo: rp.name, HeadSHA: *in.HeadSHA, Status: "queued", StartedAt: s.now()}
	if verr := s.applyCheckRun(c, in); verr != nil {
		verr.write(w)
		return
	}
	c.ID = s.newIDLocked()
	s.checkRuns[c.ID] = c
	writeJSON(w, http.StatusCreated, s.checkRunJSONLocked(c))
}

func (s *Server) checkRunForRequestLocked(w http.ResponseWriter, p params) (*CheckRun, bool) {
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return nil, false
	}
	id, _ := p.id("id")
	c, ok := s.checkRuns[id]
	if !ok || repoKey(c.Owner, c.Repo) != repoKey(rp.owner, rp.name) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return c, true
}

func (s *Server) getCheckRun(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.checkRunForRequestLocked(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.checkRunJSONLocked(c))
}

func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.checkRunForRequestLocked(w, p)
	if !ok {
		return
	}
	var in checkRunInput
	if !decodeBody(w, r, &in) {
		return
	}
	updated := *c
	if verr := s.applyCheckRun(&updated, in); verr != nil {
		verr.write(w)
		return
	}
	*c = updated
	writeJSON(w, http.StatusOK, s.checkRunJSONLocked(c))
}

func (s *Server) listCheckRunsForRef(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	ref := p.str("ref")
	sha, err := s.revParse(rp.dir, ref)
	if err != nil {
		if sha, err = s.revParse(rp.dir, "refs/heads/"+ref); err != nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
	}
	var list []*CheckRun
	for _, c := range s.checkRuns {
		if repoKey(c.Owner, c.Repo) == repoKey(rp.owner, rp.name) && c.HeadSHA == sha {
			list = append(list, c)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	runs := []any{}
	for _, c := range list {
		runs = append(runs, s.checkRunJSONLocked(c))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": page(w, r, runs)})
}
