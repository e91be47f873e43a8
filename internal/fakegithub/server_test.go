package fakegithub

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/testclock"
)

// testKeyPEM is generated once per test binary so that each fake starts fast.
var testKeyPEM = sync.OnceValue(func() []byte {
	s, err := New(Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	return s.PrivateKeyPEM()
})

func newServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.PrivateKeyPEM == nil {
		opts.PrivateKeyPEM = testKeyPEM()
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.AddInstallation(7, "octo")
	if err := s.AddRepo("octo", "hello", RepoOptions{Files: map[string]string{"main.go": "package main\n"}}); err != nil {
		t.Fatalf("AddRepo: %v", err)
	}
	return s
}

func do(t *testing.T, method, url, auth string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp.Header
}

// signWith builds an app JWT by hand so the fake's verifier is tested independently
// of the client library.
func signWith(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestAppJWT(t *testing.T) {
	clk := testclock.New(time.Unix(1_800_000_000, 0))
	s := newServer(t, Options{Now: clk.Now})
	now := clk.Now().Unix()
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		token  string
		status int
	}{
		{"valid", signWith(t, s.key, map[string]any{"iss": "1", "iat": now - 30, "exp": now + 90}), 200},
		{"numeric iss", signWith(t, s.key, map[string]any{"iss": 1, "iat": now - 30, "exp": now + 90}), 200},
		{"wrong app", signWith(t, s.key, map[string]any{"iss": "2", "iat": now - 30, "exp": now + 90}), 401},
		{"expired", signWith(t, s.key, map[string]any{"iss": "1", "iat": now - 300, "exp": now - 1}), 401},
		{"too long", signWith(t, s.key, map[string]any{"iss": "1", "iat": now, "exp": now + 3600}), 401},
		{"future iat", signWith(t, s.key, map[string]any{"iss": "1", "iat": now + 300, "exp": now + 400}), 401},
		{"other key", signWith(t, other, map[string]any{"iss": "1", "iat": now - 30, "exp": now + 90}), 401},
		{"garbage", "not.a.jwt", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := do(t, "GET", s.URL()+"app", "Bearer "+tt.token, nil)
			if status != tt.status {
				t.Fatalf("status %d, want %d (%v)", status, tt.status, body)
			}
			if status == 200 && body["slug"] != "selfcode-test" {
				t.Fatalf("slug %v", body["slug"])
			}
		})
	}
}

func TestTokensExpireAndUnknownRoutes(t *testing.T) {
	clk := testclock.New(time.Unix(1_800_000_000, 0))
	s := newServer(t, Options{Now: clk.Now, TokenTTL: 10 * time.Minute})
	now := clk.Now().Unix()
	jwt := signWith(t, s.key, map[string]any{"iss": "1", "iat": now - 30, "exp": now + 90})

	status, body, _ := do(t, "POST", s.URL()+"app/installations/7/access_tokens", "Bearer "+jwt, nil)
	if status != 201 {
		t.Fatalf("mint: %d %v", status, body)
	}
	tok := body["token"].(string)
	if !strings.HasPrefix(tok, "ghs_") || body["expires_at"] != clk.Now().Add(10*time.Minute).UTC().Format(time.RFC3339) {
		t.Fatalf("token body %v", body)
	}
	if status, _, _ := do(t, "POST", s.URL()+"app/installations/99/access_tokens", "Bearer "+jwt, nil); status != 404 {
		t.Fatalf("unknown installation: %d", status)
	}

	cases := []struct {
		name, method, path, auth string
		status                   int
	}{
		{"token works", "GET", "repos/octo/hello", "token " + tok, 200},
		{"bearer works, case-insensitive names", "GET", "repos/OCTO/Hello", "Bearer " + tok, 200},
		{"missing token", "GET", "repos/octo/hello", "", 401},
		{"unknown token", "GET", "repos/octo/hello", "token ghs_nope", 401},
		{"unknown repo", "GET", "repos/octo/nope", "token " + tok, 404},
		{"unknown route", "GET", "repos/octo/hello/frobnicate", "token " + tok, 404},
		{"unknown top-level route", "GET", "nothing/here", "", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := do(t, c.method, s.URL()+c.path, c.auth, nil)
			if status != c.status {
				t.Fatalf("status %d want %d: %v", status, c.status, body)
			}
			if status == 404 && (body["message"] != "Not Found" || body["documentation_url"] == nil) {
				t.Fatalf("404 body %v", body)
			}
		})
	}

	clk.Add(10 * time.Minute)
	if status, body, _ := do(t, "GET", s.URL()+"repos/octo/hello", "token "+tok, nil); status != 401 || body["message"] != "Bad credentials" {
		t.Fatalf("expired token: %d %v", status, body)
	}
}

func TestIssuesCommentsReactionsLabels(t *testing.T) {
	s := newServer(t, Options{})
	tok, err := s.MintToken(7)
	if err != nil {
		t.Fatal(err)
	}
	auth := "token " + tok
	n, err := s.AddIssue("octo", "hello", Issue{Title: "Bug", Body: "It breaks", User: "alice", Labels: []string{"bug"}})
	if err != nil {
		t.Fatal(err)
	}
	human, err := s.AddIssueComment("octo", "hello", n, "alice", "/selfcode fix it")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("%srepos/octo/hello/", s.URL())

	status, body, _ := do(t, "POST", fmt.Sprintf("%sissues/%d/comments", base, n), auth, map[string]string{"body": "working on it"})
	if status != 201 || body["body"] != "working on it" || body["user"].(map[string]any)["login"] != "selfcode-test[bot]" {
		t.Fatalf("create comment: %d %v", status, body)
	}
	id := int64(body["id"].(float64))
	if status, _, _ := do(t, "POST", fmt.Sprintf("%sissues/%d/comments", base, n), auth, map[string]string{}); status != 422 {
		t.Fatalf("empty comment: %d", status)
	}
	if status, body, _ := do(t, "PATCH", fmt.Sprintf("%sissues/comments/%d", base, id), auth, map[string]string{"body": "done"}); status != 200 || body["body"] != "done" {
		t.Fatalf("update: %d %v", status, body)
	}
	if got := s.Comments("octo", "hello", n); len(got) != 2 || got[1].Body != "done" || got[0].User != "alice" {
		t.Fatalf("comments %+v", got)
	}

	for i, want := range []int{201, 200} {
		status, _, _ := do(t, "POST", fmt.Sprintf("%sissues/comments/%d/reactions", base, human.ID), auth, map[string]string{"content": "eyes"})
		if status != want {
			t.Fatalf("reaction %d: status %d want %d", i, status, want)
		}
	}
	if status, _, _ := do(t, "POST", fmt.Sprintf("%sissues/comments/%d/reactions", base, human.ID), auth, map[string]string{"content": "party"}); status != 422 {
		t.Fatalf("bad reaction: %d", status)
	}
	if r := s.Reactions(SubjectIssueComment, human.ID); len(r) != 1 || r[0].Content != "eyes" {
		t.Fatalf("reactions %+v", r)
	}

	if status, _, _ := do(t, "POST", fmt.Sprintf("%sissues/%d/labels", base, n), auth, map[string]any{"labels": []string{"selfcode"}}); status != 200 {
		t.Fatalf("add label: %d", status)
	}
	if status, _, _ := do(t, "DELETE", fmt.Sprintf("%sissues/%d/labels/bug", base, n), auth, nil); status != 200 {
		t.Fatalf("remove label: %d", status)
	}
	if status, body, _ := do(t, "DELETE", fmt.Sprintf("%sissues/%d/labels/bug", base, n), auth, nil); status != 404 || body["message"] != "Label does not exist" {
		t.Fatalf("remove missing label: %d %v", status, body)
	}
	if l := s.Labels("octo", "hello", n); len(l) != 1 || l[0] != "selfcode" {
		t.Fatalf("labels %v", l)
	}
}

func TestPullRequestValidation(t *testing.T) {
	s := newServer(t, Options{})
	tok, _ := s.MintToken(7)
	auth := "token " + tok
	url := s.URL() + "repos/octo/hello/pulls"
	if _, err := s.CommitFiles("octo", "hello", "feature", "Add feature", map[string]string{"f.txt": "x\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitFiles("octo", "hello", "empty", "nothing", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.runGit(s.repos["octo/hello"].dir, "update-ref", "refs/heads/same", "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"missing title", map[string]any{"head": "feature", "base": "main"}, 422, ""},
		{"unknown head", map[string]any{"title": "t", "head": "nope", "base": "main"}, 422, ""},
		{"unknown base", map[string]any{"title": "t", "head": "feature", "base": "nope"}, 422, ""},
		{"no commits", map[string]any{"title": "t", "head": "same", "base": "main"}, 422, "No commits between main and same"},
		{"created", map[string]any{"title": "t", "head": "octo:feature", "base": "main", "draft": true}, 201, ""},
		{"duplicate", map[string]any{"title": "t2", "head": "feature", "base": "main"}, 422, "A pull request already exists for octo:feature."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := do(t, "POST", url, auth, c.body)
			if status != c.status {
				t.Fatalf("status %d want %d: %v", status, c.status, body)
			}
			if c.msg != "" {
				errs, _ := body["errors"].([]any)
				if len(errs) != 1 || errs[0].(map[string]any)["message"] != c.msg {
					t.Fatalf("errors %v, want %q", body["errors"], c.msg)
				}
			}
		})
	}
	prs := s.PullRequests("octo", "hello")
	if len(prs) != 1 || !prs[0].Draft || prs[0].Head != "feature" {
		t.Fatalf("prs %+v", prs)
	}
	for _, q := range []struct {
		query string
		n     int
	}{{"?head=octo:feature", 1}, {"?head=OCTO:feature&state=open", 1}, {"?head=octo:other", 0}, {"?state=closed", 0}, {"?state=all", 1}} {
		req, _ := http.NewRequest("GET", url+q.query, nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var list []map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list) != q.n {
			t.Fatalf("list %s: %d PRs, want %d", q.query, len(list), q.n)
		}
	}
}

func TestFaultInjection(t *testing.T) {
	s := newServer(t, Options{})
	s.InjectFault(Fault{Method: "GET", PathPattern: "/repos/*/*", Status: 502, Times: 2})
	var reached []string
	s.InjectFault(Fault{PathPattern: "/users/**", Status: 403, Headers: map[string]string{"Retry-After": "1"}, Body: `{"message":"You have exceeded a secondary rate limit"}`, Times: 1,
		Reached: func(method, path string) { reached = append(reached, method+" "+path) }})
	tok, _ := s.MintToken(7)
	for i, want := range []int{502, 502, 200} {
		if status, _, _ := do(t, "GET", s.URL()+"repos/octo/hello", "token "+tok, nil); status != want {
			t.Fatalf("request %d: %d want %d", i, status, want)
		}
	}
	status, body, hdr := do(t, "GET", s.URL()+"users/octo", "", nil)
	if status != 403 || hdr.Get("Retry-After") != "1" || !strings.Contains(body["message"].(string), "secondary rate limit") {
		t.Fatalf("secondary: %d %v %v", status, hdr, body)
	}
	if status, _, _ := do(t, "GET", s.URL()+"users/octo", "", nil); status != 200 {
		t.Fatalf("after fault: %d", status)
	}
	if len(reached) != 1 || reached[0] != "GET /users/octo" {
		t.Fatalf("Reached saw %v, want the one request the fault applied to", reached)
	}
	if got := len(s.RequestsMatching("GET", "/repos/octo/hello")); got != 3 {
		t.Fatalf("recorded %d requests", got)
	}
}

func git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestGitSmartHTTP(t *testing.T) {
	s := newServer(t, Options{})
	tok, err := s.MintToken(7)
	if err != nil {
		t.Fatal(err)
	}
	authed := strings.Replace(s.GitURL("octo", "hello"), "http://", "http://x-access-token:"+tok+"@", 1)
	dir := t.TempDir()

	// Without credentials git cannot prompt, so the 401 challenge ends the clone.
	if out, err := git(t, dir, "clone", s.GitURL("octo", "hello"), "anon"); err == nil {
		t.Fatalf("anonymous clone succeeded: %s", out)
	}
	probe := s.RequestsMatching("GET", "/octo/hello.git/info/refs")
	if len(probe) == 0 || probe[0].Status != 401 {
		t.Fatalf("probe not answered 401: %+v", probe)
	}
	bad := strings.Replace(authed, tok, "ghs_wrong", 1)
	if out, err := git(t, dir, "clone", bad, "bad"); err == nil || !strings.Contains(out, "Authentication failed") {
		t.Fatalf("bad token clone: %v %s", err, out)
	}

	s.ResetRequests()
	if out, err := git(t, dir, "clone", authed, "work"); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	reqs := s.RequestsMatching("GET", "/octo/hello.git/info/refs")
	if len(reqs) < 2 || reqs[0].Status != 401 || reqs[0].Header.Get("Authorization") != "" || reqs[len(reqs)-1].Status != 200 {
		t.Fatalf("want unauthenticated probe (401) then authenticated retry: %+v", reqs)
	}
	work := filepath.Join(dir, "work")
	if b, err := os.ReadFile(filepath.Join(work, "main.go")); err != nil || string(b) != "package main\n" {
		t.Fatalf("cloned content %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(work, "new.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "new.txt"}, {"commit", "-q", "-m", "Add new"}, {"push", "-q", "origin", "HEAD:refs/heads/selfcode/issue-1"}} {
		if out, err := git(t, work, args...); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	head, _ := git(t, work, "rev-parse", "HEAD")
	sha, err := s.BranchSHA("octo", "hello", "selfcode/issue-1")
	if err != nil || sha != strings.TrimSpace(head) {
		t.Fatalf("BranchSHA %q %v, want %q", sha, err, head)
	}
	log, err := s.Log("octo", "hello", "selfcode/issue-1")
	if err != nil || len(log) != 2 || log[0].Subject != "Add new" || log[0].AuthorEmail != "t@example.com" {
		t.Fatalf("Log %+v %v", log, err)
	}
	if _, err := s.BranchSHA("octo", "hello", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing branch: %v", err)
	}

	// An expired token stops working for git too.
	s.ExpireTokens()
	if out, err := git(t, work, "fetch", "-q", "origin"); err == nil {
		t.Fatalf("fetch with expired token succeeded: %s", out)
	}
}
