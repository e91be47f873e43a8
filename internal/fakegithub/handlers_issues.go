package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// repoForRequestLocked resolves {owner}/{repo} for a token-authenticated request; a
// repository the installation cannot see is answered 404, as GitHub does.
func (s *Server) repoForRequestLocked(w http.ResponseWriter, p params) (*repo, bool) {
	rp, err := s.repoLocked(p.str("owner"), p.str("repo"))
	if err != nil || p.installation == nil || !strings.EqualFold(p.installation.account, rp.owner) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return rp, true
}

// issueForRequestLocked resolves {number} within the request's repository.
func (s *Server) issueForRequestLocked(w http.ResponseWriter, p params) (*repo, *Issue, bool) {
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return nil, nil, false
	}
	n, ok := p.int("number")
	is := rp.issues[n]
	if !ok || is == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil, false
	}
	return rp, is, true
}

func (s *Server) getRepo(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.repoJSONLocked(rp))
}

func (s *Server) getPermission(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	login := p.str("user")
	if _, known := s.users[strings.ToLower(login)]; !known {
		writeError(w, http.StatusNotFound, login+" is not a user")
		return
	}
	perm, ok := rp.perms[strings.ToLower(login)]
	switch {
	case ok:
	case strings.EqualFold(login, rp.owner):
		perm = permission{permission: "admin", role: "admin"}
	case rp.private:
		perm = permission{permission: "none", role: "none"}
	default:
		perm = permission{permission: "read", role: "read"}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"permission": perm.permission,
		"role_name":  perm.role,
		"user":       s.userJSONLocked(login),
	})
}

// getJobLogs answers as GitHub does: a redirect to a short-lived download
// URL that needs no credentials.
func (s *Server) getJobLogs(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.repoForRequestLocked(w, p); !ok {
		return
	}
	id, _ := p.id("id")
	if _, ok := s.jobLogs[id]; !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	to := s.api(fmt.Sprintf("_job-logs/%d", id))
	if u, ok := s.logURL[id]; ok {
		to = u
	}
	http.Redirect(w, r, to, http.StatusFound)
}

func (s *Server) downloadJobLog(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := p.id("id")
	if u, ok := s.logHop[id]; ok {
		http.Redirect(w, r, u, http.StatusFound)
		return
	}
	text, ok := s.jobLogs[id]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(text))
}

func (s *Server) getBranch(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	branch := p.str("branch")
	sha, err := s.revParse(rp.dir, "refs/heads/"+branch)
	if err != nil {
		writeError(w, http.StatusNotFound, "Branch not found")
		return
	}
	full := rp.owner + "/" + rp.name
	writeJSON(w, http.StatusOK, map[string]any{
		"name":      branch,
		"commit":    map[string]any{"sha": sha, "url": s.api("repos/" + full + "/commits/" + sha)},
		"protected": rp.protected[branch],
		"_links":    map[string]any{"self": s.api("repos/" + full + "/branches/" + branch)},
	})
}

func (s *Server) getRef(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	ref := "refs/" + p.str("ref")
	if len(s.branchSHAs(rp.dir)) == 0 {
		writeError(w, http.StatusConflict, "Git Repository is empty.")
		return
	}
	sha, err := s.revParse(rp.dir, ref)
	if err != nil || !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/tags/") {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	full := rp.owner + "/" + rp.name
	writeJSON(w, http.StatusOK, map[string]any{
		"ref":     ref,
		"node_id": nodeID("Ref", rp.id),
		"url":     s.api("repos/" + full + "/git/" + ref),
		"object": map[string]any{
			"type": "commit",
			"sha":  sha,
			"url":  s.api("repos/" + full + "/git/commits/" + sha),
		},
	})
}

func (s *Server) getIssue(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.issueJSONLocked(rp, is))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return
	}
	out := []any{}
	for _, c := range s.commentsLocked(repoKey(rp.owner, rp.name), is.Number) {
		out = append(out, s.commentJSONLocked(rp, c))
	}
	writeJSON(w, http.StatusOK, page(w, r, out))
}

type bodyInput struct {
	Body *string `json:"body"`
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return
	}
	var in bodyInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeValidation(w, fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
		return
	}
	c := s.newCommentLocked(rp, is.Number, s.botLogin, *in.Body)
	writeJSON(w, http.StatusCreated, s.commentJSONLocked(rp, c))
}

// commentForRequestLocked resolves an issue comment {id} within the request's repository.
func (s *Server) commentForRequestLocked(w http.ResponseWriter, p params) (*repo, *Comment, bool) {
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return nil, nil, false
	}
	id, _ := p.id("id")
	c, ok := s.comments[id]
	if !ok || repoKey(c.Owner, c.Repo) != repoKey(rp.owner, rp.name) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil, false
	}
	return rp, c, true
}

func (s *Server) getComment(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, c, ok := s.commentForRequestLocked(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.commentJSONLocked(rp, c))
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, c, ok := s.commentForRequestLocked(w, p)
	if !ok {
		return
	}
	var in bodyInput
	if !decodeBody(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeValidation(w, fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
		return
	}
	c.Body = *in.Body
	c.UpdatedAt = s.now()
	writeJSON(w, http.StatusOK, s.commentJSONLocked(rp, c))
}

func validReaction(content string) bool {
	switch content {
	case "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes":
		return true
	}
	return false
}

func (s *Server) reactIssueComment(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, _, ok := s.commentForRequestLocked(w, p); !ok {
		return
	}
	id, _ := p.id("id")
	s.reactLocked(w, r, SubjectIssueComment, id)
}

func (s *Server) reactReviewComment(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, ok := s.repoForRequestLocked(w, p)
	if !ok {
		return
	}
	id, _ := p.id("id")
	c, ok := s.reviewComms[id]
	if !ok || repoKey(c.Owner, c.Repo) != repoKey(rp.owner, rp.name) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.reactLocked(w, r, SubjectReviewComment, id)
}

// reactLocked answers 200 with the existing reaction when this user already reacted
// with this content, else creates one and answers 201.
func (s *Server) reactLocked(w http.ResponseWriter, r *http.Request, subject string, id int64) {
	var in struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	if !validReaction(in.Content) {
		writeValidation(w, fieldError{Resource: "Reaction", Field: "content", Code: "invalid"})
		return
	}
	for _, rc := range s.reactions {
		if rc.SubjectType == subject && rc.SubjectID == id && rc.Content == in.Content && strings.EqualFold(rc.User, s.botLogin) {
			writeJSON(w, http.StatusOK, s.reactionJSONLocked(rc))
			return
		}
	}
	rc := &Reaction{ID: s.newIDLocked(), SubjectType: subject, SubjectID: id, User: s.botLogin, Content: in.Content, CreatedAt: s.now()}
	s.reactions = append(s.reactions, rc)
	writeJSON(w, http.StatusCreated, s.reactionJSONLocked(rc))
}

func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, page(w, r, s.labelsJSONLocked(rp, is)))
}

func (s *Server) addLabels(w http.ResponseWriter, r *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return
	}
	// The API accepts {"labels": [...]} or a bare array of names.
	var raw json.RawMessage
	if !decodeBody(w, r, &raw) {
		return
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			writeValidation(w, fieldError{Resource: "Label", Field: "labels", Code: "invalid"})
			return
		}
		names = obj.Labels
	}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			writeValidation(w, fieldError{Resource: "Label", Field: "name", Code: "missing_field"})
			return
		}
		s.addLabelLocked(rp, is, n)
	}
	is.UpdatedAt = s.now()
	writeJSON(w, http.StatusOK, s.labelsJSONLocked(rp, is))
}

func (s *Server) removeLabel(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, ok := s.issueForRequestLocked(w, p)
	if !ok {
		return
	}
	name := p.str("name")
	for i, l := range is.Labels {
		if strings.EqualFold(l, name) {
			is.Labels = append(is.Labels[:i:i], is.Labels[i+1:]...)
			is.UpdatedAt = s.now()
			writeJSON(w, http.StatusOK, s.labelsJSONLocked(rp, is))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Label does not exist")
}

// AddLabel puts a label on an issue or pull request, as a person would.
func (s *Server) AddLabel(owner, repoName string, number int, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(owner, repoName)
	if err != nil {
		return err
	}
	is, ok := rp.issues[number]
	if !ok {
		return ErrNotFound
	}
	s.addLabelLocked(rp, is, name)
	return nil
}
