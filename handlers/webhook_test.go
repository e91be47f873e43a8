package handlers

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/selfcode/selfcode/app/intake"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/internal/fixtures"
)

var secret = []byte("test-secret")

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

type server struct {
	st  *store.Store
	url string
}

func newServer(t *testing.T) *server {
	t.Helper()
	st, err := store.Open(store.Options{Path: filepath.Join(t.TempDir(), "selfcode.db")})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := NewPublic(PublicOptions{
		Webhook: WebhookOptions{Secret: secret, Router: intake.New(intake.Options{}), Store: st},
		Ready:   []ReadyCheck{{Name: "store", Check: func(ctx context.Context) error { return st.Ping() }}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng)
	t.Cleanup(func() { srv.Close(); st.Close() })
	return &server{st: st, url: srv.URL}
}

type delivery struct {
	event, id string
	body      []byte
	sig       string // "" = correct; "none" = omitted
	sha1      bool   // add an X-Hub-Signature (SHA-1) header too
	ctype     string
}

func (s *server) send(t *testing.T, d delivery) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/webhook", bytes.NewReader(d.body))
	ct := d.ctype
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-GitHub-Event", d.event)
	req.Header.Set("X-GitHub-Delivery", d.id)
	req.Header.Set("User-Agent", "GitHub-Hookshot/test")
	switch d.sig {
	case "":
		req.Header.Set("X-Hub-Signature-256", fixtures.Sign(secret, d.body))
	case "none":
	default:
		req.Header.Set("X-Hub-Signature-256", d.sig)
	}
	if d.sha1 {
		m := hmac.New(sha1.New, secret)
		m.Write(d.body)
		req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m.Sum(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func (s *server) jobCount(t *testing.T) int {
	t.Helper()
	jobs, _, err := s.st.List(context.Background(), store.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs)
}

// Every published payload, correctly signed, gets the contract's status; the
// same payload wrongly signed, unsigned or SHA-1-signed gets 401 and stores
// nothing.
func TestEveryFixture(t *testing.T) {
	names, err := fixtures.Payloads()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			s := newServer(t)
			body := fixtures.Load(t, n)
			ev := fixtures.Event(n)
			for _, bad := range []delivery{
				{event: ev, id: "bad-1", body: body, sig: "sha256=" + hex.EncodeToString(make([]byte, 32))},
				{event: ev, id: "bad-2", body: body, sig: "none"},
				{event: ev, id: "bad-3", body: body, sig: "none", sha1: true},
				{event: ev, id: "bad-4", body: body, sig: fixtures.Sign([]byte("other secret"), body)},
			} {
				if code, _ := s.send(t, bad); code != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want 401", bad.id, code)
				}
			}
			if ok, _ := s.st.HasDelivery(context.Background(), "bad-1"); ok {
				t.Fatal("unauthenticated delivery recorded")
			}
			code, out := s.send(t, delivery{event: ev, id: "good", body: body})
			// None of the published payloads is a selfcode command: each
			// needs no job.
			if code != http.StatusOK || out["ignored"] == nil {
				t.Fatalf("status %d body %v, want 200 ignored", code, out)
			}
			if s.jobCount(t) != 0 {
				t.Fatal("job stored for a payload that needs none")
			}
			code, out = s.send(t, delivery{event: ev, id: "good", body: body})
			if code != http.StatusOK || out["duplicate"] != true {
				t.Fatalf("redelivery: %d %v", code, out)
			}
		})
	}
}

func TestCommandDeliveries(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		sets   []any
		status int
		pr     bool
		kind   job.Kind
	}{
		{"issue command", "issue_comment.created.with-installation.json", []any{"comment.body", "/selfcode fix the bug"}, 202, false, job.KindRun},
		{"PR comment (derived)", "issue_comment.created.on-pull-request.json", []any{"comment.body", "/selfcode rename the helper"}, 202, true, job.KindRun},
		{"review comment", "pull_request_review_comment.created.json", []any{"comment.body", "/selfcode use fmt.Sprintf"}, 202, true, job.KindRun},
		{"plan", "issue_comment.created.with-installation.json", []any{"comment.body", "/selfcode plan"}, 202, false, job.KindPlan},
		{"status", "issue_comment.created.with-installation.json", []any{"comment.body", "/selfcode status"}, 202, false, job.KindControl},
		{"selfcode label", "issues.labeled.json", []any{"label.name", "selfcode"}, 202, false, job.KindRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			code, out := s.send(t, delivery{event: fixtures.Event(tt.file), id: "d1", body: fixtures.Load(t, tt.file, tt.sets...)})
			if code != tt.status {
				t.Fatalf("status %d body %v", code, out)
			}
			id, _ := out["job_id"].(string)
			if id == "" || out["status"] != "queued" {
				t.Fatalf("body %v", out)
			}
			j, err := s.st.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if j.IsPR != tt.pr || j.Kind != tt.kind {
				t.Fatalf("job pr=%v kind=%s", j.IsPR, j.Kind)
			}
		})
	}
}

func TestRedeliveryAndSupersede(t *testing.T) {
	s := newServer(t)
	first := fixtures.Load(t, "issue_comment.created.with-installation.json", "comment.body", "/selfcode first try")
	code, a := s.send(t, delivery{event: "issue_comment", id: "A", body: first})
	if code != 202 {
		t.Fatalf("first: %d", code)
	}
	if code, out := s.send(t, delivery{event: "issue_comment", id: "A", body: first}); code != 200 || out["duplicate"] != true {
		t.Fatalf("redelivery: %d %v", code, out)
	}
	if n := s.jobCount(t); n != 1 {
		t.Fatalf("%d jobs after redelivery", n)
	}
	second := fixtures.Load(t, "issue_comment.created.with-installation.json", "comment.body", "/selfcode second idea", "comment.id", 99)
	code, b := s.send(t, delivery{event: "issue_comment", id: "B", body: second})
	if code != 202 {
		t.Fatalf("second: %d", code)
	}
	jobs, _, _ := s.st.List(context.Background(), store.ListOptions{State: job.StateQueued})
	if len(jobs) != 1 || jobs[0].ID != b["job_id"] || jobs[0].Instructions != "second idea" {
		t.Fatalf("queued jobs %+v", jobs)
	}
	old, _ := s.st.Get(context.Background(), a["job_id"].(string))
	if old.State != job.StateSuperseded {
		t.Fatalf("first job %s", old.State)
	}
}

func TestBadRequests(t *testing.T) {
	s := newServer(t)
	valid := fixtures.Load(t, "issue_comment.created.json")
	tests := []struct {
		name   string
		d      delivery
		status int
	}{
		{"malformed JSON", delivery{event: "issue_comment", id: "m1", body: []byte(`{"action":`)}, 400},
		{"missing issue", delivery{event: "issue_comment", id: "m2", body: fixtures.MustSet(valid, "issue", nil)}, 400},
		{"missing event header", delivery{event: "", id: "m3", body: valid}, 400},
		{"unsupported content type", delivery{event: "issue_comment", id: "m4", body: valid, ctype: "text/plain"}, 400},
		{"unknown event", delivery{event: "star", id: "m5", body: []byte(`{"action":"created"}`)}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, out := s.send(t, tt.d); code != tt.status {
				t.Fatalf("status %d (%v), want %d", code, out, tt.status)
			}
		})
	}
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		if ok, _ := s.st.HasDelivery(context.Background(), id); ok {
			t.Fatalf("refused delivery %s recorded", id)
		}
	}
}

func TestFormEncodedDelivery(t *testing.T) {
	s := newServer(t)
	payload := fixtures.Load(t, "issue_comment.created.with-installation.json", "comment.body", "/selfcode via form")
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	code, out := s.send(t, delivery{event: "issue_comment", id: "f1", body: body, ctype: "application/x-www-form-urlencoded"})
	if code != 202 {
		t.Fatalf("form delivery: %d %v", code, out)
	}
}

func TestOversizedBody(t *testing.T) {
	s := newServer(t)
	big := bytes.Repeat([]byte(" "), MaxWebhookBody+1)
	big[0] = '{'
	code, _ := s.send(t, delivery{event: "issue_comment", id: "big", body: big})
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", code)
	}
	// Without Content-Length (chunked), the cap still holds.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/webhook", io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-Hub-Signature-256", fixtures.Sign(secret, big))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: status %d, want 413", resp.StatusCode)
	}
	if s.jobCount(t) != 0 {
		t.Fatal("oversized delivery stored")
	}
}

func TestStoreUnavailable(t *testing.T) {
	s := newServer(t)
	s.st.Close()
	body := fixtures.Load(t, "issue_comment.created.with-installation.json", "comment.body", "/selfcode x")
	if code, _ := s.send(t, delivery{event: "issue_comment", id: "u1", body: body}); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", code)
	}
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz %d with the store closed", resp.StatusCode)
	}
	resp, _ = http.Get(s.url + "/healthz")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
}

func TestEmptySecretRefused(t *testing.T) {
	if _, err := Webhook(WebhookOptions{Router: intake.New(intake.Options{}), Store: nil}); err == nil {
		t.Fatal("a webhook handler without a secret must not be built")
	}
}

func TestInstallationRecorded(t *testing.T) {
	s := newServer(t)
	code, _ := s.send(t, delivery{event: "installation", id: "i1", body: fixtures.Load(t, "installation.created.json")})
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	in, err := s.st.GetInstallation(context.Background(), 957387)
	if err != nil || in.Account == "" {
		t.Fatalf("installation %+v %v", in, err)
	}
}
