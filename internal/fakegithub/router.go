package fakegithub

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

const docsURL = "https://docs.github.com/rest"

// authKind is what a route requires in the Authorization header.
type authKind int

const (
	authNone authKind = iota
	authJWT
	authToken
	authPublic // anyone; an installation token in private mode
)

type handlerFunc func(w http.ResponseWriter, r *http.Request, p params)

type route struct {
	method  string
	pattern []string
	auth    authKind
	h       handlerFunc
}

// params holds the path wildcards of a matched route and the caller's identity.
type params struct {
	vals map[string]string
	// installation is the installation whose token authenticated the request (authToken routes).
	installation *installation
}

func (p params) str(name string) string { return p.vals[name] }

func (p params) int(name string) (int, bool) {
	n, err := strconv.Atoi(p.vals[name])
	return n, err == nil && n > 0
}

func (p params) id(name string) (int64, bool) {
	n, err := strconv.ParseInt(p.vals[name], 10, 64)
	return n, err == nil && n > 0
}

// matchRoute matches escaped path segments against a pattern such as
// "repos/{owner}/{repo}/git/ref/{ref...}" (a trailing "..." wildcard takes the rest).
func matchRoute(pattern, segs []string) (map[string]string, bool) {
	vals := map[string]string{}
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "...}") {
			if i >= len(segs) {
				return nil, false
			}
			rest := make([]string, 0, len(segs)-i)
			for _, s := range segs[i:] {
				u, err := url.PathUnescape(s)
				if err != nil {
					return nil, false
				}
				rest = append(rest, u)
			}
			vals[strings.TrimSuffix(p[1:], "...}")] = strings.Join(rest, "/")
			return vals, true
		}
		if i >= len(segs) {
			return nil, false
		}
		seg, err := url.PathUnescape(segs[i])
		if err != nil {
			return nil, false
		}
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if seg == "" {
				return nil, false
			}
			vals[p[1:len(p)-1]] = seg
			continue
		}
		if p != seg {
			return nil, false
		}
	}
	if len(segs) != len(pattern) {
		return nil, false
	}
	return vals, true
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for _, rt := range s.routes {
		if rt.method != r.Method {
			continue
		}
		vals, ok := matchRoute(rt.pattern, segs)
		if !ok {
			continue
		}
		p := params{vals: vals}
		s.setRateHeaders(w)
		switch rt.auth {
		case authJWT:
			if err := s.verifyAppJWT(r); err != nil {
				writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
				return
			}
		case authToken:
			inst, ok := s.installationForRequest(r)
			if !ok {
				writeError(w, http.StatusUnauthorized, "Bad credentials")
				return
			}
			p.installation = inst
		case authPublic:
			if _, ok := s.installationForRequest(r); s.opts.PrivateMode && !ok {
				writeError(w, http.StatusUnauthorized, "Must authenticate to access this API.")
				return
			}
		}
		rt.h(w, r, p)
		return
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

func (s *Server) setRateHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "4999")
	h.Set("X-RateLimit-Used", "1")
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.now().Add(time.Hour).Unix(), 10))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{
		"message":           msg,
		"documentation_url": docsURL,
		"status":            strconv.Itoa(status),
	})
}

// fieldError is one entry of a 422 validation-error body.
type fieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func writeValidation(w http.ResponseWriter, errs ...fieldError) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            errs,
		"documentation_url": docsURL,
		"status":            "422",
	})
}

// decodeBody decodes a JSON request body; on failure it answers 400 and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

// pathMatch is path.Match, plus a trailing "/**" that matches any remainder.
func pathMatch(pattern, name string) (bool, error) {
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		n := strings.Count(prefix, "/") + 1
		parts := strings.Split(name, "/")
		if len(parts) < n {
			return false, nil
		}
		return path.Match(prefix, strings.Join(parts[:n], "/"))
	}
	return path.Match(pattern, name)
}

// page applies per_page/page query parameters and sets a Link header when more remain.
func page[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	if per > 100 {
		per = 100
	}
	pg, err := strconv.Atoi(q.Get("page"))
	if err != nil || pg <= 0 {
		pg = 1
	}
	start := (pg - 1) * per
	if start >= len(items) {
		return []T{}
	}
	end := min(start+per, len(items))
	if end < len(items) {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(pg+1))
		nq.Set("per_page", strconv.Itoa(per))
		next.RawQuery = nq.Encode()
		next.Scheme, next.Host = "http", r.Host
		w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
	}
	return items[start:end]
}
