package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/ctxsleep"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/testclock"
)

var testKey = sync.OnceValue(func() []byte {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
})

// sleeps records the waits the transport asked for.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
	clock *testclock.Clock
	real  bool
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	if s.real {
		return ctxsleep.Sleep(ctx, d)
	}
	if s.clock != nil {
		s.clock.Add(d)
	}
	return ctx.Err()
}

func (s *sleeps) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

type env struct {
	fake    *fakegithub.Server
	factory *Factory
	sleeps  *sleeps
	clock   *testclock.Clock
}

const instID = 42

func setup(t *testing.T, fopts fakegithub.Options, mod func(*Options)) *env {
	t.Helper()
	// The JWT from ghinstallation uses the real clock, so the fake's clock starts
	// at real time; tests advance it.
	clock := testclock.New(time.Now().Truncate(time.Second))
	if fopts.Now == nil {
		fopts.Now = clock.Now
	}
	fopts.PrivateKeyPEM = testKey()
	fake, err := fakegithub.New(fopts)
	if err != nil {
		t.Fatalf("fake: %v", err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	fake.AddInstallation(instID, "octo")
	if err := fake.AddRepo("octo", "hello", fakegithub.RepoOptions{Files: map[string]string{"main.go": "package main\n"}}); err != nil {
		t.Fatalf("AddRepo: %v", err)
	}
	sl := &sleeps{clock: clock}
	opts := Options{
		AppID: fake.AppID(), PrivateKeyPEM: fake.PrivateKeyPEM(), BaseURL: fake.URL(),
		HTTPTimeout: 10 * time.Second, Now: clock.Now, Sleep: sl.Sleep, BaseBackoff: time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &env{fake: fake, factory: f, sleeps: sl, clock: clock}
}

func (e *env) client(t *testing.T) *Client {
	t.Helper()
	c, err := e.factory.Installation(context.Background(), instID)
	if err != nil {
		t.Fatalf("Installation: %v", err)
	}
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestAppIdentityUsesJWT(t *testing.T) {
	e := setup(t, fakegithub.Options{AppSlug: "selfcode-x"}, nil)
	id, err := e.factory.App(ctxT(t))
	if err != nil {
		t.Fatalf("App: %v", err)
	}
	want := AppIdentity{
		ID: e.fake.AppID(), Slug: "selfcode-x", Name: "selfcode (test)", HTMLURL: e.fake.URL() + "apps/selfcode-x",
		BotLogin: "selfcode-x[bot]", BotUserID: e.fake.BotUserID(), BotEmail: e.fake.BotEmail(),
	}
	if id != want {
		t.Fatalf("App = %+v\nwant %+v", id, want)
	}
	if want.BotEmail != fmt.Sprintf("%d+selfcode-x[bot]@users.noreply.github.com", want.BotUserID) {
		t.Fatalf("bot email %q", want.BotEmail)
	}
	appReqs := func() []fakegithub.Request {
		var out []fakegithub.Request
		for _, r := range e.fake.RequestsMatching("GET", "/app") {
			if r.Path == "/app" {
				out = append(out, r)
			}
		}
		return out
	}
	reqs := appReqs()
	if len(reqs) != 1 || reqs[0].Status != 200 || strings.Count(strings.TrimPrefix(reqs[0].Header.Get("Authorization"), "Bearer "), ".") != 2 {
		t.Fatalf("GET /app not JWT-authenticated: %+v", reqs)
	}
	// Cached: no second round trip.
	if _, err := e.factory.App(ctxT(t)); err != nil || len(appReqs()) != 1 {
		t.Fatalf("App not cached: %v", err)
	}
}

// The bot user is read with an installation's token, so the identity
// resolves on GitHub Enterprise Server in private mode, where anonymous
// reads are refused; an app installed nowhere says so.
func TestAppIdentityInPrivateMode(t *testing.T) {
	e := setup(t, fakegithub.Options{AppSlug: "selfcode-x", PrivateMode: true}, nil)
	if status, _, _ := getAnon(t, e.fake.URL()+"users/selfcode-x[bot]"); status != http.StatusUnauthorized {
		t.Fatalf("anonymous read in private mode: %d, want 401", status)
	}
	id, err := e.factory.App(ctxT(t))
	if err != nil || id.BotUserID != e.fake.BotUserID() || id.BotEmail != e.fake.BotEmail() {
		t.Fatalf("App in private mode: %+v, %v", id, err)
	}
	for _, r := range e.fake.RequestsMatching("GET", "/users/") {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "token ") && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && r.Status == 200 {
			t.Errorf("the bot user was read anonymously: %+v", r)
		}
	}

	bare, err := fakegithub.New(fakegithub.Options{PrivateMode: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bare.Close() })
	f, err := New(Options{AppID: bare.AppID(), PrivateKeyPEM: bare.PrivateKeyPEM(), BaseURL: bare.URL(), BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.App(ctxT(t)); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("App of an app installed nowhere: %v", err)
	}
}

func getAnon(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestWrongKeyIsUnauthorized(t *testing.T) {
	e := setup(t, fakegithub.Options{}, func(o *Options) { o.AppID = 999 })
	_, err := e.factory.App(ctxT(t))
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("want ErrUnauthorized, got %v", err)
	}
	c := e.client(t)
	if _, err := c.Repo(ctxT(t), "octo", "hello"); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("repo with bad app id: want ErrUnauthorized, got %v", err)
	}
}

func TestTokenMintedOnceAndReused(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	for range 3 {
		if _, err := c.Repo(ctxT(t), "octo", "hello"); err != nil {
			t.Fatalf("Repo: %v", err)
		}
	}
	tok, err := c.Token(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	mints := e.fake.RequestsMatching("POST", fmt.Sprintf("/app/installations/%d/access_tokens", instID))
	if len(mints) != 1 {
		t.Fatalf("%d token mints, want 1", len(mints))
	}
	if issued := e.fake.IssuedTokens(); len(issued) != 1 || issued[0] != tok {
		t.Fatalf("Token() = %q, issued %v", tok, issued)
	}
	for _, r := range e.fake.RequestsMatching("GET", "/repos/") {
		if r.Header.Get("Authorization") != "token "+tok {
			t.Fatalf("request %s not authenticated with the installation token", r.Path)
		}
	}
	// The same client comes back from the factory.
	if again := e.client(t); again != c {
		t.Fatal("installation client not cached")
	}
}

func TestExpiringTokenRefreshed(t *testing.T) {
	// ghinstallation refreshes a token with less than a minute left; a 30 s TTL
	// makes every call mint a fresh one.
	e := setup(t, fakegithub.Options{TokenTTL: 30 * time.Second}, nil)
	c := e.client(t)
	for range 2 {
		if _, err := c.Repo(ctxT(t), "octo", "hello"); err != nil {
			t.Fatalf("Repo: %v", err)
		}
	}
	if issued := e.fake.IssuedTokens(); len(issued) != 2 || issued[0] == issued[1] {
		t.Fatalf("want two distinct tokens, got %v", issued)
	}
}

func TestRejectedTokenReplacedOnce(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	if _, err := c.Repo(ctxT(t), "octo", "hello"); err != nil {
		t.Fatal(err)
	}
	// The server expires the token while the client still trusts it.
	e.fake.ExpireTokens()
	if _, err := c.CreateIssueComment(ctxT(t), "octo", "hello", mustIssue(t, e), "hi"); err != nil {
		t.Fatalf("after server-side expiry: %v", err)
	}
	if n := len(e.fake.IssuedTokens()); n != 2 {
		t.Fatalf("%d tokens minted, want 2", n)
	}
	posts := e.fake.RequestsMatching("POST", "/repos/octo/hello/issues/")
	if len(posts) != 2 || posts[0].Status != 401 || posts[1].Status != 201 || string(posts[0].Body) != string(posts[1].Body) {
		t.Fatalf("want one 401 then one 201 with the same body: %+v", posts)
	}
	// An installation that is gone stays an error: a fresh token cannot be minted.
	e.fake.RemoveInstallation(instID)
	e.fake.ExpireTokens()
	_, err := c.Repo(ctxT(t), "octo", "hello")
	if !IsNotFound(err) {
		t.Fatalf("removed installation: want ErrNotFound, got %v", err)
	}
}

func mustIssue(t *testing.T, e *env) int {
	t.Helper()
	n, err := e.fake.AddIssue("octo", "hello", fakegithub.Issue{Title: "Bug", Body: "broken", User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTransientFailures(t *testing.T) {
	tests := []struct {
		name     string
		fault    fakegithub.Fault
		call     func(ctx context.Context, c *Client, issue int) error
		wantErr  error
		requests int // requests that reached the faulty path
		comments int
	}{
		{
			name:  "POST comment 502 twice then success, one effect",
			fault: fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/issues/*/comments", Status: 502, Times: 2},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.CreateIssueComment(ctx, "octo", "hello", n, "progress")
				return err
			},
			requests: 3, comments: 1,
		},
		{
			name:  "POST comment 503 then success",
			fault: fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/issues/*/comments", Status: 503, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.CreateIssueComment(ctx, "octo", "hello", n, "progress")
				return err
			},
			requests: 2, comments: 1,
		},
		{
			name:  "POST comment 500 is not retried (content may exist)",
			fault: fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/issues/*/comments", Status: 500, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.CreateIssueComment(ctx, "octo", "hello", n, "progress")
				return err
			},
			wantErr: ErrTransient, requests: 1, comments: 0,
		},
		{
			name:  "POST comment 504 is not retried",
			fault: fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/issues/*/comments", Status: 504, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.CreateIssueComment(ctx, "octo", "hello", n, "progress")
				return err
			},
			wantErr: ErrTransient, requests: 1, comments: 0,
		},
		{
			name:  "GET 500 then success",
			fault: fakegithub.Fault{Method: "GET", PathPattern: "/repos/*/*/issues/*", Status: 500, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.Issue(ctx, "octo", "hello", n)
				return err
			},
			requests: 2,
		},
		{
			name:  "GET 502 forever exhausts attempts",
			fault: fakegithub.Fault{Method: "GET", PathPattern: "/repos/*/*/issues/*", Status: 502},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.Issue(ctx, "octo", "hello", n)
				return err
			},
			wantErr: ErrTransient, requests: 4,
		},
		{
			name:  "PATCH 504 retried (idempotent)",
			fault: fakegithub.Fault{Method: "PATCH", PathPattern: "/repos/*/*/pulls/*", Status: 504, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.UpdatePullRequest(ctx, "octo", "hello", n, PullRequestUpdate{Title: ptr("x")})
				if IsNotFound(err) { // n is an issue, not a PR: reached the handler after the retry
					return nil
				}
				return err
			},
			requests: 2,
		},
		{
			name:  "permanent 404 not retried",
			fault: fakegithub.Fault{Method: "GET", PathPattern: "/repos/*/*/issues/*", Status: 404, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.Issue(ctx, "octo", "hello", n)
				return err
			},
			wantErr: ErrNotFound, requests: 1,
		},
		{
			name:  "403 without rate-limit signs is permission denied, not retried",
			fault: fakegithub.Fault{Method: "GET", PathPattern: "/repos/*/*/issues/*", Status: 403, Body: `{"message":"Resource not accessible by integration"}`, Times: 1},
			call: func(ctx context.Context, c *Client, n int) error {
				_, err := c.Issue(ctx, "octo", "hello", n)
				return err
			},
			wantErr: ErrPermissionDenied, requests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, fakegithub.Options{}, nil)
			c := e.client(t)
			n := mustIssue(t, e)
			if _, err := c.Token(ctxT(t)); err != nil { // mint first so only the call is counted
				t.Fatal(err)
			}
			e.fake.ResetRequests()
			e.fake.InjectFault(tt.fault)
			err := tt.call(ctxT(t), c, n)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if got := len(e.fake.RequestsMatching(tt.fault.Method, "/repos/")); got != tt.requests {
				t.Fatalf("%d requests, want %d", got, tt.requests)
			}
			if got := len(e.fake.Comments("octo", "hello", n)); got != tt.comments {
				t.Fatalf("%d comments, want %d", got, tt.comments)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestNotFoundIsTypedAndNotRetried(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	c := e.client(t)
	_, err := c.Repo(ctxT(t), "octo", "missing")
	var ge *Error
	if !IsNotFound(err) || !errors.As(err, &ge) || ge.Status != 404 || !IsPermanent(err) {
		t.Fatalf("want typed 404, got %#v", err)
	}
	if n := len(e.fake.RequestsMatching("GET", "/repos/octo/missing")); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if len(e.sleeps.Waits()) != 0 {
		t.Fatalf("waited %v", e.sleeps.Waits())
	}
}

func TestRateLimits(t *testing.T) {
	secondary := `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest"}`
	tests := []struct {
		name      string
		faults    func(now time.Time) []fakegithub.Fault
		wantErr   error
		wantWaits []time.Duration
	}{
		{
			name: "primary: remaining 0 waits until reset",
			faults: func(now time.Time) []fakegithub.Fault {
				return []fakegithub.Fault{{Status: 403, Times: 1, PathPattern: "/repos/**", Headers: map[string]string{
					"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(120*time.Second).Unix(), 10)},
					Body: `{"message":"API rate limit exceeded for installation ID 42."}`}}
			},
			wantWaits: []time.Duration{121 * time.Second},
		},
		{
			name: "429 with Retry-After",
			faults: func(time.Time) []fakegithub.Fault {
				return []fakegithub.Fault{{Status: 429, Times: 1, PathPattern: "/repos/**", Headers: map[string]string{"Retry-After": "7"}}}
			},
			wantWaits: []time.Duration{7 * time.Second},
		},
		{
			name: "secondary without headers: a minute, then doubling",
			faults: func(time.Time) []fakegithub.Fault {
				return []fakegithub.Fault{{Status: 403, Times: 2, PathPattern: "/repos/**", Body: secondary}}
			},
			wantWaits: []time.Duration{time.Minute, 2 * time.Minute},
		},
		{
			name: "gives up after the retry budget",
			faults: func(time.Time) []fakegithub.Fault {
				return []fakegithub.Fault{{Status: 403, PathPattern: "/repos/**", Body: secondary}}
			},
			wantErr:   ErrRateLimited,
			wantWaits: []time.Duration{time.Minute, 2 * time.Minute},
		},
		{
			name: "a wait beyond MaxRateLimitWait fails at once",
			faults: func(now time.Time) []fakegithub.Fault {
				return []fakegithub.Fault{{Status: 403, Times: 1, PathPattern: "/repos/**", Headers: map[string]string{
					"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}}}
			},
			wantErr: ErrRateLimited,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, fakegithub.Options{}, func(o *Options) { o.MaxRateLimitRetries = 2; o.MaxRateLimitWait = 10 * time.Minute })
			c := e.client(t)
			if _, err := c.Token(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.faults(e.clock.Now()) {
				e.fake.InjectFault(f)
			}
			_, err := c.Repo(ctxT(t), "octo", "hello")
			if tt.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != nil {
				var ge *Error
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &ge) || ge.RetryAt.IsZero() {
					t.Fatalf("error %#v, want %v with RetryAt", err, tt.wantErr)
				}
			}
			if got := e.sleeps.Waits(); fmt.Sprint(got) != fmt.Sprint(tt.wantWaits) && !(len(got) == 0 && len(tt.wantWaits) == 0) {
				t.Fatalf("waits %v, want %v", got, tt.wantWaits)
			}
		})
	}
}

func TestRetryAfterOneSecondReallyWaits(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	e.sleeps.real = true
	c := e.client(t)
	n := mustIssue(t, e)
	e.fake.InjectFault(fakegithub.Fault{Method: "POST", PathPattern: "/repos/*/*/issues/*/comments", Status: 403, Times: 1,
		Headers: map[string]string{"Retry-After": "1"},
		Body:    `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation."}`})
	if _, err := c.CreateIssueComment(ctxT(t), "octo", "hello", n, "hello"); err != nil {
		t.Fatalf("CreateIssueComment: %v", err)
	}
	if w := e.sleeps.Waits(); len(w) != 1 || w[0] != time.Second {
		t.Fatalf("waits %v, want [1s]", w)
	}
	if got := len(e.fake.Comments("octo", "hello", n)); got != 1 {
		t.Fatalf("%d comments, want 1", got)
	}
}

func TestWaitsHonourContext(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	e.sleeps.real = true
	c := e.client(t)
	if _, err := c.Token(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	e.fake.InjectFault(fakegithub.Fault{PathPattern: "/repos/**", Status: 429, Headers: map[string]string{"Retry-After": "600"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Repo(ctx, "octo", "hello")
		done <- err
	}()
	deadline := time.After(30 * time.Second)
	for len(e.sleeps.Waits()) == 0 {
		select {
		case <-deadline:
			t.Fatal("transport never started waiting")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	case <-deadline:
		t.Fatal("cancellation did not end the wait")
	}
}

func TestWritesToOneRepoAreSerialised(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	if err := e.fake.AddRepo("octo", "other", fakegithub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	c := e.client(t)
	n := mustIssue(t, e)
	m, err := e.fake.AddIssue("octo", "other", fakegithub.Issue{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// Every write is held 20 ms by the fake, so unserialised writers would overlap.
	e.fake.InjectFault(fakegithub.Fault{Method: "POST", PathPattern: "/repos/**", Delay: 20 * time.Millisecond})
	tok, err := c.Token(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}

	const writers = 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for i := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := c.CreateIssueComment(ctxT(t), "octo", "hello", n, fmt.Sprint("comment ", i))
			errs <- err
		}()
		go func() {
			defer wg.Done()
			// Same repository, different spelling: still the same lock.
			_, err := c.CreateIssueComment(ctxT(t), "OCTO", "Hello", n, fmt.Sprint("COMMENT ", i))
			errs <- err
		}()
	}
	// Control: raw concurrent writes to another repository (no client) do overlap,
	// which shows the fake's measurement can see concurrency.
	var raw sync.WaitGroup
	for range writers {
		raw.Add(1)
		go func() {
			defer raw.Done()
			req, _ := http.NewRequest("POST", fmt.Sprintf("%srepos/octo/other/issues/%d/comments", e.fake.URL(), m), strings.NewReader(`{"body":"raw"}`))
			req.Header.Set("Authorization", "token "+tok)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	raw.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(e.fake.Comments("octo", "hello", n)); got != 2*writers {
		t.Fatalf("%d comments, want %d", got, 2*writers)
	}
	if got := e.fake.MaxConcurrentWrites("octo", "hello"); got != 1 {
		t.Fatalf("max concurrent writes to octo/hello = %d, want 1", got)
	}
	if got := e.fake.MaxConcurrentWrites("octo", "other"); got < 2 {
		t.Fatalf("control: unserialised writers reached concurrency %d; the measurement is blind", got)
	}
}

func TestPermissionLevels(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	set := func(user, role string) {
		if err := e.fake.SetPermission("octo", "hello", user, role); err != nil {
			t.Fatal(err)
		}
	}
	set("ada", "admin")
	set("max", "maintain")
	set("wes", "write")
	set("tri", "triage")
	set("rea", "read")
	set("non", "none")
	if err := e.fake.SetRole("octo", "hello", "cus", "write", "deployer"); err != nil {
		t.Fatal(err)
	}
	clock := e.clock
	pc := NewPermissionChecker(PermissionCheckerOptions{Clients: e.factory, TTL: time.Minute, Now: clock.Now})
	tests := []struct {
		user    string
		want    Permission
		allowed bool
	}{
		{"ada", PermissionAdmin, true},
		{"max", PermissionMaintain, true},
		{"wes", PermissionWrite, true},
		{"tri", PermissionTriage, false},
		{"rea", PermissionRead, false},
		{"non", PermissionNone, false},
		{"cus", PermissionWrite, true},  // custom role: its base permission
		{"octo", PermissionAdmin, true}, // the owner
		{"ghost-user-404", PermissionNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			got, err := pc.Check(ctxT(t), instID, "octo", "hello", tt.user)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if got != tt.want || got.Allowed() != tt.allowed {
				t.Fatalf("Check = %q (allowed %v), want %q (%v)", got, got.Allowed(), tt.want, tt.allowed)
			}
		})
	}

	count := func() int {
		return len(e.fake.RequestsMatching("GET", "/repos/octo/hello/collaborators/wes/permission"))
	}
	before := count()
	if p, _ := pc.Check(ctxT(t), instID, "Octo", "Hello", "WES"); p != PermissionWrite || count() != before {
		t.Fatalf("cached answer not used: %q, %d requests", p, count()-before)
	}
	set("wes", "read") // access revoked: seen once the TTL passes
	clock.Add(time.Minute)
	if p, _ := pc.Check(ctxT(t), instID, "octo", "hello", "wes"); p != PermissionRead || count() != before+1 {
		t.Fatalf("after TTL: %q, %d requests", p, count()-before)
	}
	// Errors other than 404 are returned, not cached as "none".
	e.fake.InjectFault(fakegithub.Fault{PathPattern: "/repos/*/*/collaborators/**", Status: 403, Times: 1})
	clock.Add(time.Minute)
	if _, err := pc.Check(ctxT(t), instID, "octo", "hello", "wes"); !IsPermissionDenied(err) {
		t.Fatalf("want ErrPermissionDenied, got %v", err)
	}
}

func TestFromLevel(t *testing.T) {
	tests := []struct {
		in   PermissionLevel
		want Permission
	}{
		{PermissionLevel{"admin", "admin"}, PermissionAdmin},
		{PermissionLevel{"write", "maintain"}, PermissionMaintain},
		{PermissionLevel{"write", "write"}, PermissionWrite},
		{PermissionLevel{"read", "triage"}, PermissionTriage},
		{PermissionLevel{"read", "read"}, PermissionRead},
		{PermissionLevel{"none", "none"}, PermissionNone},
		{PermissionLevel{"write", ""}, PermissionWrite},
		{PermissionLevel{"write", "release-manager"}, PermissionWrite},
		{PermissionLevel{"read", "auditor"}, PermissionRead},
		{PermissionLevel{"", ""}, PermissionNone},
		{PermissionLevel{"superuser", "root"}, PermissionNone},
	}
	for _, tt := range tests {
		if got := FromLevel(tt.in); got != tt.want {
			t.Errorf("FromLevel(%+v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A repository known only by name is read through the installation that
// reaches it; one the App is not installed on is not found, typed.
func TestRepoInstallation(t *testing.T) {
	e := setup(t, fakegithub.Options{}, nil)
	n, err := e.fake.AddIssue("octo", "hello", fakegithub.Issue{Title: "Add drops the carry", Body: "2+2 is 3"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.factory.RepoInstallation(ctxT(t), "octo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if c.InstallationID() != instID {
		t.Fatalf("installation %d, want %d", c.InstallationID(), instID)
	}
	is, err := c.Issue(ctxT(t), "octo", "hello", n)
	if err != nil || is.Title != "Add drops the carry" || is.Body != "2+2 is 3" {
		t.Fatalf("issue %+v, %v", is, err)
	}
	if err := e.fake.AddRepo("stranger", "other", fakegithub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.factory.RepoInstallation(ctxT(t), "stranger", "other"); !IsNotFound(err) {
		t.Fatalf("a repository the App is not installed on: %v, want not found", err)
	}
	noApp, err := New(Options{BaseURL: e.fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noApp.RepoInstallation(ctxT(t), "octo", "hello"); !errors.Is(err, errNoCredentials) {
		t.Fatalf("without credentials: %v", err)
	}
}
