package fakegithub

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The render functions build GitHub-shaped JSON objects (see
// internal/fixtures/testdata/github/api-examples). They run with s.mu held.

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func nodeID(kind string, id int64) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "0%d:%s%d", len(kind), kind, id))
}

func (s *Server) api(path string) string { return s.baseURL + strings.TrimPrefix(path, "/") }

func (s *Server) userJSONLocked(login string) map[string]any {
	u := s.ensureUserLocked(login)
	return map[string]any{
		"login":       u.login,
		"id":          u.id,
		"node_id":     nodeID("User", u.id),
		"avatar_url":  "",
		"gravatar_id": "",
		"url":         s.api("users/" + u.login),
		"html_url":    s.api(u.login),
		"type":        u.typ,
		"site_admin":  false,
	}
}

func (s *Server) repoJSONLocked(rp *repo) map[string]any {
	full := rp.owner + "/" + rp.name
	visibility := "public"
	if rp.private {
		visibility = "private"
	}
	m := map[string]any{
		"id":             rp.id,
		"node_id":        nodeID("Repository", rp.id),
		"name":           rp.name,
		"full_name":      full,
		"owner":          s.userJSONLocked(rp.owner),
		"private":        rp.private,
		"visibility":     visibility,
		"html_url":       s.api(full),
		"description":    rp.description,
		"fork":           rp.parent != "",
		"url":            s.api("repos/" + full),
		"clone_url":      s.GitURL(rp.owner, rp.name),
		"git_url":        s.GitURL(rp.owner, rp.name),
		"default_branch": rp.defaultBranch,
		"archived":       false,
		"disabled":       false,
		"has_issues":     true,
		"open_issues":    0,
		"created_at":     ts(time.Unix(0, 0)),
		"updated_at":     ts(s.now()),
		"pushed_at":      ts(s.now()),
	}
	if parent, ok := s.repos[rp.parent]; ok {
		pj := s.repoJSONLocked(parent)
		m["parent"], m["source"] = pj, pj
	}
	return m
}

func (s *Server) labelJSONLocked(rp *repo, name string) map[string]any {
	l, ok := rp.labels[strings.ToLower(name)]
	if !ok {
		l = &label{name: name, color: "ededed"}
	}
	return map[string]any{
		"id":          l.id,
		"node_id":     nodeID("Label", l.id),
		"url":         s.api("repos/" + rp.owner + "/" + rp.name + "/labels/" + l.name),
		"name":        l.name,
		"description": "",
		"color":       l.color,
		"default":     false,
	}
}

func (s *Server) labelsJSONLocked(rp *repo, is *Issue) []any {
	out := []any{}
	for _, l := range is.Labels {
		out = append(out, s.labelJSONLocked(rp, l))
	}
	return out
}

func (s *Server) association(rp *repo, login string) string {
	if strings.EqualFold(login, rp.owner) {
		return "OWNER"
	}
	if p, ok := rp.perms[strings.ToLower(login)]; ok && p.permission != "none" {
		return "COLLABORATOR"
	}
	return "NONE"
}

func (s *Server) issueJSONLocked(rp *repo, is *Issue) map[string]any {
	full := rp.owner + "/" + rp.name
	kind := "issues"
	if is.pr != nil {
		kind = "pull"
	}
	m := map[string]any{
		"id":                 is.ID,
		"node_id":            nodeID("Issue", is.ID),
		"url":                s.api(fmt.Sprintf("repos/%s/issues/%d", full, is.Number)),
		"repository_url":     s.api("repos/" + full),
		"comments_url":       s.api(fmt.Sprintf("repos/%s/issues/%d/comments", full, is.Number)),
		"html_url":           s.api(fmt.Sprintf("%s/%s/%d", full, kind, is.Number)),
		"number":             is.Number,
		"state":              is.State,
		"title":              is.Title,
		"body":               is.Body,
		"user":               s.userJSONLocked(is.User),
		"labels":             s.labelsJSONLocked(rp, is),
		"locked":             false,
		"comments":           len(s.commentsLocked(repoKey(rp.owner, rp.name), is.Number)),
		"created_at":         ts(is.CreatedAt),
		"updated_at":         ts(is.UpdatedAt),
		"closed_at":          nil,
		"author_association": s.association(rp, is.User),
	}
	if is.pr != nil {
		m["pull_request"] = map[string]any{
			"url":       s.api(fmt.Sprintf("repos/%s/pulls/%d", full, is.Number)),
			"html_url":  s.api(fmt.Sprintf("%s/pull/%d", full, is.Number)),
			"diff_url":  s.api(fmt.Sprintf("%s/pull/%d.diff", full, is.Number)),
			"patch_url": s.api(fmt.Sprintf("%s/pull/%d.patch", full, is.Number)),
		}
	}
	return m
}

func (s *Server) commentJSONLocked(rp *repo, c *Comment) map[string]any {
	full := rp.owner + "/" + rp.name
	return map[string]any{
		"id":                 c.ID,
		"node_id":            nodeID("IssueComment", c.ID),
		"url":                s.api(fmt.Sprintf("repos/%s/issues/comments/%d", full, c.ID)),
		"html_url":           s.api(fmt.Sprintf("%s/issues/%d#issuecomment-%d", full, c.Issue, c.ID)),
		"issue_url":          s.api(fmt.Sprintf("repos/%s/issues/%d", full, c.Issue)),
		"body":               c.Body,
		"user":               s.userJSONLocked(c.User),
		"created_at":         ts(c.CreatedAt),
		"updated_at":         ts(c.UpdatedAt),
		"author_association": s.association(rp, c.User),
	}
}

func (s *Server) reviewCommentJSONLocked(rp *repo, c *ReviewComment) map[string]any {
	full := rp.owner + "/" + rp.name
	m := map[string]any{
		"id":                     c.ID,
		"node_id":                nodeID("PullRequestReviewComment", c.ID),
		"url":                    s.api(fmt.Sprintf("repos/%s/pulls/comments/%d", full, c.ID)),
		"pull_request_review_id": c.ReviewID,
		"diff_hunk":              c.DiffHunk,
		"path":                   c.Path,
		"line":                   c.Line,
		"side":                   "RIGHT",
		"commit_id":              c.CommitID,
		"original_commit_id":     c.CommitID,
		"user":                   s.userJSONLocked(c.User),
		"body":                   c.Body,
		"created_at":             ts(c.CreatedAt),
		"updated_at":             ts(c.UpdatedAt),
		"html_url":               s.api(fmt.Sprintf("%s/pull/%d#discussion_r%d", full, c.PullNumber, c.ID)),
		"pull_request_url":       s.api(fmt.Sprintf("repos/%s/pulls/%d", full, c.PullNumber)),
		"author_association":     s.association(rp, c.User),
	}
	if c.InReplyTo != 0 {
		m["in_reply_to_id"] = c.InReplyTo
	}
	return m
}

func (s *Server) reactionJSONLocked(r *Reaction) map[string]any {
	return map[string]any{
		"id":         r.ID,
		"node_id":    nodeID("Reaction", r.ID),
		"user":       s.userJSONLocked(r.User),
		"content":    r.Content,
		"created_at": ts(r.CreatedAt),
	}
}

// branchJSONLocked renders a pull request's head or base.
func (s *Server) branchJSONLocked(rp *repo, branch, sha string) map[string]any {
	return map[string]any{
		"label": rp.owner + ":" + branch,
		"ref":   branch,
		"sha":   sha,
		"user":  s.userJSONLocked(rp.owner),
		"repo":  s.repoJSONLocked(rp),
	}
}

func (s *Server) pullJSONLocked(rp *repo, is *Issue) map[string]any {
	pr := is.pr
	full := rp.owner + "/" + rp.name
	headRepo := s.headRepoLocked(rp, pr)
	headSHA := s.branchSHAs(headRepo.dir)[pr.Head]
	baseSHA := s.branchSHAs(rp.dir)[pr.Base]
	var closed, merged any
	if pr.State == "closed" {
		closed = ts(pr.UpdatedAt)
	}
	if pr.Merged {
		merged = ts(pr.UpdatedAt)
	}
	return map[string]any{
		"url":                   s.api(fmt.Sprintf("repos/%s/pulls/%d", full, pr.Number)),
		"id":                    pr.ID,
		"node_id":               nodeID("PullRequest", pr.ID),
		"html_url":              s.api(fmt.Sprintf("%s/pull/%d", full, pr.Number)),
		"diff_url":              s.api(fmt.Sprintf("%s/pull/%d.diff", full, pr.Number)),
		"patch_url":             s.api(fmt.Sprintf("%s/pull/%d.patch", full, pr.Number)),
		"issue_url":             s.api(fmt.Sprintf("repos/%s/issues/%d", full, pr.Number)),
		"number":                pr.Number,
		"state":                 pr.State,
		"locked":                false,
		"title":                 pr.Title,
		"user":                  s.userJSONLocked(pr.User),
		"body":                  pr.Body,
		"labels":                s.labelsJSONLocked(rp, is),
		"created_at":            ts(pr.CreatedAt),
		"updated_at":            ts(pr.UpdatedAt),
		"closed_at":             closed,
		"merged_at":             merged,
		"head":                  s.branchJSONLocked(headRepo, pr.Head, headSHA),
		"base":                  s.branchJSONLocked(rp, pr.Base, baseSHA),
		"draft":                 pr.Draft,
		"merged":                pr.Merged,
		"maintainer_can_modify": false,
		"author_association":    s.association(rp, pr.User),
	}
}

func (s *Server) headRepoLocked(rp *repo, pr *PullRequest) *repo {
	if pr.HeadOwner == "" || strings.EqualFold(pr.HeadOwner, rp.owner) {
		return rp
	}
	if fork, ok := s.repos[repoKey(pr.HeadOwner, rp.name)]; ok {
		return fork
	}
	return rp
}

func (s *Server) appJSONLocked() map[string]any {
	return map[string]any{
		"id":                  s.opts.AppID,
		"slug":                s.opts.AppSlug,
		"node_id":             nodeID("Integration", s.opts.AppID),
		"owner":               s.userJSONLocked("selfcode-owner"),
		"name":                s.opts.AppName,
		"description":         "",
		"external_url":        s.baseURL,
		"html_url":            s.api("apps/" + s.opts.AppSlug),
		"created_at":          ts(time.Unix(0, 0)),
		"updated_at":          ts(time.Unix(0, 0)),
		"permissions":         maps.Clone(s.opts.Permissions),
		"events":              slices.Clone(s.opts.Events),
		"installations_count": len(s.installations),
	}
}

func (s *Server) checkRunJSONLocked(c *CheckRun) map[string]any {
	checkRunApp := s.appJSONLocked()
	delete(checkRunApp, "installations_count")
	if c.App != "" {
		checkRunApp = map[string]any{"id": len(c.App), "slug": c.App, "name": c.App}
	}
	full := c.Owner + "/" + c.Repo
	var conclusion any
	if c.Conclusion != "" {
		conclusion = c.Conclusion
	}
	return map[string]any{
		"id":           c.ID,
		"head_sha":     c.HeadSHA,
		"node_id":      nodeID("CheckRun", c.ID),
		"external_id":  c.ExternalID,
		"url":          s.api(fmt.Sprintf("repos/%s/check-runs/%d", full, c.ID)),
		"html_url":     s.api(fmt.Sprintf("%s/runs/%d", full, c.ID)),
		"details_url":  c.DetailsURL,
		"status":       c.Status,
		"conclusion":   conclusion,
		"started_at":   ts(c.StartedAt),
		"completed_at": ts(c.CompletedAt),
		"output": map[string]any{
			"title":             c.Title,
			"summary":           c.Summary,
			"text":              c.Text,
			"annotations_count": 0,
			"annotations_url":   s.api(fmt.Sprintf("repos/%s/check-runs/%d/annotations", full, c.ID)),
		},
		"name":          c.Name,
		"check_suite":   map[string]any{"id": c.ID},
		"app":           checkRunApp,
		"pull_requests": []any{},
	}
}
