package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// GitHub's web side of the App Manifest flow, as a browser meets it (not part
// of the REST API): POST /settings/apps/new or
// /organizations/{org}/settings/apps/new with the form field "manifest" (a
// JSON manifest) and an optional ?state=. Real GitHub shows a confirmation
// page first; the fake registers the app at once: it checks the manifest's
// required keys, registers a one-time code with AddManifestCode (name from
// the manifest, owner the organisation or "selfcode-owner") and redirects
// the browser to redirect_url?code=…&state=…. The form's body stays in
// Requests() for assertions.
func (s *Server) newAppFromManifest(w http.ResponseWriter, r *http.Request, p params) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing the form")
		return
	}
	raw := r.PostForm.Get("manifest")
	if raw == "" {
		writeError(w, http.StatusUnprocessableEntity, "Manifest is required")
		return
	}
	var m struct {
		Name           string `json:"name"`
		URL            string `json:"url"`
		RedirectURL    string `json:"redirect_url"`
		HookAttributes struct {
			URL string `json:"url"`
		} `json:"hook_attributes"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Manifest is not valid JSON")
		return
	}
	switch {
	case m.URL == "":
		writeError(w, http.StatusUnprocessableEntity, "Validation failed: url can't be blank")
		return
	case m.HookAttributes.URL == "":
		writeError(w, http.StatusUnprocessableEntity, "Validation failed: hook_attributes.url can't be blank")
		return
	}
	code, err := randomToken("", 40)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	slug := strings.ToLower(strings.Join(strings.Fields(m.Name), "-"))
	owner := p.str("org")
	s.AddManifestCode(code, ManifestApp{Name: m.Name, Slug: slug, Owner: owner})
	if m.RedirectURL == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "GitHub App registered; code %s\n", code)
		return
	}
	to, err := url.Parse(m.RedirectURL)
	if err != nil || (to.Scheme != "http" && to.Scheme != "https") {
		writeError(w, http.StatusUnprocessableEntity, "Validation failed: redirect_url is not a URL")
		return
	}
	q := to.Query()
	q.Set("code", code)
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	to.RawQuery = q.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}
