package fakegithub

import (
	"maps"
	"net/http"
	"sort"
	"strings"
)

func (s *Server) buildRoutes() []route {
	r := func(method, pattern string, auth authKind, h handlerFunc) route {
		return route{method: method, pattern: strings.Split(pattern, "/"), auth: auth, h: h}
	}
	get, post, patch, del := http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	return []route{
		// App (JWT) and public endpoints.
		r(get, "app", authJWT, s.getApp),
		r(get, "app/installations", authJWT, s.listInstallations),
		r(get, "app/hook/config", authJWT, s.getHookConfig),
		r(get, "app/installations/{id}", authJWT, s.getInstallation),
		r(post, "app/installations/{id}/access_tokens", authJWT, s.createAccessToken),
		r(get, "repos/{owner}/{repo}/installation", authJWT, s.getRepoInstallation),
		r(post, "app-manifests/{code}/conversions", authNone, s.convertManifest),
		// GitHub's web form of the manifest flow (handlers_manifest_form.go).
		r(post, "settings/apps/new", authNone, s.newAppFromManifest),
		r(post, "organizations/{org}/settings/apps/new", authNone, s.newAppFromManifest),
		r(get, "users/{login}", authPublic, s.getUser),

		// Repository endpoints (installation token).
		r(get, "repos/{owner}/{repo}", authToken, s.getRepo),
		r(get, "repos/{owner}/{repo}/collaborators/{user}/permission", authToken, s.getPermission),
		r(get, "repos/{owner}/{repo}/git/ref/{ref...}", authToken, s.getRef),
		r(get, "repos/{owner}/{repo}/branches/{branch...}", authToken, s.getBranch),
		r(get, "repos/{owner}/{repo}/actions/jobs/{id}/logs", authToken, s.getJobLogs),
		r(get, "_job-logs/{id}", authNone, s.downloadJobLog),

		r(get, "repos/{owner}/{repo}/issues/comments/{id}", authToken, s.getComment),
		r(patch, "repos/{owner}/{repo}/issues/comments/{id}", authToken, s.updateComment),
		r(post, "repos/{owner}/{repo}/issues/comments/{id}/reactions", authToken, s.reactIssueComment),
		r(get, "repos/{owner}/{repo}/issues/{number}", authToken, s.getIssue),
		r(get, "repos/{owner}/{repo}/issues/{number}/comments", authToken, s.listComments),
		r(post, "repos/{owner}/{repo}/issues/{number}/comments", authToken, s.createComment),
		r(get, "repos/{owner}/{repo}/issues/{number}/labels", authToken, s.listLabels),
		r(post, "repos/{owner}/{repo}/issues/{number}/labels", authToken, s.addLabels),
		r(del, "repos/{owner}/{repo}/issues/{number}/labels/{name}", authToken, s.removeLabel),

		r(get, "repos/{owner}/{repo}/pulls", authToken, s.listPulls),
		r(post, "repos/{owner}/{repo}/pulls", authToken, s.createPull),
		r(post, "repos/{owner}/{repo}/pulls/comments/{id}/reactions", authToken, s.reactReviewComment),
		r(get, "repos/{owner}/{repo}/pulls/{number}", authToken, s.getPull),
		r(patch, "repos/{owner}/{repo}/pulls/{number}", authToken, s.updatePull),
		r(get, "repos/{owner}/{repo}/pulls/{number}/comments", authToken, s.listPullReviewComments),
		r(post, "repos/{owner}/{repo}/pulls/{number}/comments/{id}/replies", authToken, s.replyReviewComment),
		r(get, "repos/{owner}/{repo}/pulls/{number}/reviews/{review}/comments", authToken, s.listReviewComments),

		r(post, "repos/{owner}/{repo}/check-runs", authToken, s.createCheckRun),
		r(get, "repos/{owner}/{repo}/check-runs/{id}", authToken, s.getCheckRun),
		r(patch, "repos/{owner}/{repo}/check-runs/{id}", authToken, s.updateCheckRun),
		r(get, "repos/{owner}/{repo}/commits/{ref}/check-runs", authToken, s.listCheckRunsForRef),
	}
}

func (s *Server) getApp(w http.ResponseWriter, _ *http.Request, _ params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.appJSONLocked())
}

func (s *Server) installationJSONLocked(inst *installation) map[string]any {
	acct := s.ensureUserLocked(inst.account)
	target := "User"
	if acct.typ == "Organization" {
		target = "Organization"
	}
	perms := s.appJSONLocked()["permissions"]
	if inst.permissions != nil {
		perms = maps.Clone(inst.permissions)
	}
	return map[string]any{
		"id":                   inst.id,
		"account":              s.userJSONLocked(inst.account),
		"app_id":               s.opts.AppID,
		"app_slug":             s.opts.AppSlug,
		"target_type":          target,
		"repository_selection": "all",
		"access_tokens_url":    s.api("app/installations/" + itoa64(inst.id) + "/access_tokens"),
		"html_url":             s.api("settings/installations/" + itoa64(inst.id)),
		"permissions":          perms,
		"events":               s.appJSONLocked()["events"],
	}
}

// getHookConfig answers GET /app/hook/config: the webhook URL, and the
// secret masked as GitHub masks it.
func (s *Server) getHookConfig(w http.ResponseWriter, _ *http.Request, _ params) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.opts.WebhookURL, "content_type": "json", "insecure_ssl": "0", "secret": "********"})
}

func (s *Server) listInstallations(w http.ResponseWriter, r *http.Request, _ params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.installations))
	for id := range s.installations {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := []any{}
	for _, id := range ids {
		out = append(out, s.installationJSONLocked(s.installations[id]))
	}
	writeJSON(w, http.StatusOK, page(w, r, out))
}

func (s *Server) getInstallation(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := p.id("id")
	inst, ok := s.installations[id]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSONLocked(inst))
}

func (s *Server) getRepoInstallation(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.repoLocked(p.str("owner"), p.str("repo")); err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	for _, inst := range s.installations {
		if strings.EqualFold(inst.account, p.str("owner")) {
			writeJSON(w, http.StatusOK, s.installationJSONLocked(inst))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func (s *Server) createAccessToken(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := p.id("id")
	t, err := s.mintLocked(id)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":                t.value,
		"expires_at":           ts(t.expires),
		"permissions":          s.appJSONLocked()["permissions"],
		"repository_selection": "all",
	})
}

func (s *Server) convertManifest(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	app, ok := s.manifestCodes[p.str("code")]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	delete(s.manifestCodes, p.str("code"))
	writeJSON(w, http.StatusCreated, map[string]any{
		"id":             app.ID,
		"slug":           app.Slug,
		"node_id":        nodeID("Integration", app.ID),
		"owner":          s.userJSONLocked(app.Owner),
		"name":           app.Name,
		"description":    "",
		"external_url":   s.baseURL,
		"html_url":       s.api("apps/" + app.Slug),
		"created_at":     ts(s.now()),
		"updated_at":     ts(s.now()),
		"permissions":    s.appJSONLocked()["permissions"],
		"events":         s.appJSONLocked()["events"],
		"client_id":      app.ClientID,
		"client_secret":  app.ClientSecret,
		"webhook_secret": app.WebhookSecret,
		"pem":            app.PEM,
	})
}

func (s *Server) getUser(w http.ResponseWriter, _ *http.Request, p params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[strings.ToLower(p.str("login"))]; !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.userJSONLocked(p.str("login")))
}
