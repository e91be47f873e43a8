package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/selfcode/selfcode/internal/keyedlock"
)

// scripted is a base round tripper that plays back a list of outcomes and records
// the bodies it was sent.
type scripted struct {
	outcomes []func() (*http.Response, error)
	bodies   []string
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	s.bodies = append(s.bodies, string(b))
	i := len(s.bodies) - 1
	if i >= len(s.outcomes) {
		return nil, fmt.Errorf("unexpected attempt %d", i+1)
	}
	return s.outcomes[i]()
}

func status(code int) func() (*http.Response, error) {
	return func() (*http.Response, error) {
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"message":"x"}`))}, nil
	}
}

func fail(err error) func() (*http.Response, error) {
	return func() (*http.Response, error) { return nil, err }
}

var (
	refused  = &net.OpError{Op: "dial", Net: "tcp", Err: &net.OpError{Op: "connect", Err: syscall.ECONNREFUSED}}
	midway   = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	eofError = io.ErrUnexpectedEOF
)

func TestTransportNetworkErrorPolicy(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		path     string
		outcomes []func() (*http.Response, error)
		attempts int
		wantErr  error
	}{
		{"POST retried when the connection was refused", "POST", "/repos/o/r/issues/1/comments", []func() (*http.Response, error){fail(refused), status(201)}, 2, nil},
		{"POST not retried after a reset mid-request", "POST", "/repos/o/r/issues/1/comments", []func() (*http.Response, error){fail(midway)}, 1, ErrTransient},
		{"POST not retried after an unexpected EOF", "POST", "/repos/o/r/pulls", []func() (*http.Response, error){fail(eofError)}, 1, ErrTransient},
		{"POST reaction is idempotent", "POST", "/repos/o/r/issues/comments/5/reactions", []func() (*http.Response, error){fail(midway), status(500), status(201)}, 3, nil},
		{"token minting is idempotent", "POST", "/app/installations/1/access_tokens", []func() (*http.Response, error){status(504), status(201)}, 2, nil},
		{"GET retried after a reset", "GET", "/repos/o/r", []func() (*http.Response, error){fail(midway), fail(eofError), status(200)}, 3, nil},
		{"GET gives up after MaxAttempts", "GET", "/repos/o/r", []func() (*http.Response, error){fail(midway), fail(midway), fail(midway)}, 3, ErrTransient},
		{"DELETE retried on 502", "DELETE", "/repos/o/r/issues/1/labels/x", []func() (*http.Response, error){status(502), status(200)}, 2, nil},
		{"422 not retried", "POST", "/repos/o/r/pulls", []func() (*http.Response, error){status(422)}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := &scripted{outcomes: tt.outcomes}
			tr := testTransport(base)
			req, _ := http.NewRequest(tt.method, "https://api.example.com"+tt.path, io.NopCloser(strings.NewReader(`{"body":"x"}`)))
			req.GetBody = nil // force the transport to buffer the body itself
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if len(base.bodies) != tt.attempts {
				t.Fatalf("%d attempts, want %d", len(base.bodies), tt.attempts)
			}
			for i, b := range base.bodies {
				if b != `{"body":"x"}` {
					t.Fatalf("attempt %d sent body %q", i+1, b)
				}
			}
		})
	}
}

func testTransport(base http.RoundTripper) *transport {
	return &transport{
		base: base, attemptTimeout: 5 * time.Second, maxAttempts: 3, maxRLRetries: 2, maxRLWait: time.Hour,
		baseBackoff: time.Millisecond, now: time.Now, sleep: func(context.Context, time.Duration) error { return nil },
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)), locks: &keyedlock.Locks{},
	}
}

func TestWriteRepoKey(t *testing.T) {
	tests := []struct {
		method, path string
		key          string
		ok           bool
	}{
		{"POST", "/repos/Octo/Hello/issues/1/comments", "octo/hello", true},
		{"PATCH", "/api/v3/repos/o/r/pulls/1", "o/r", true},
		{"DELETE", "/repos/o/r/issues/1/labels/a", "o/r", true},
		{"GET", "/repos/o/r", "", false},
		{"POST", "/app/installations/1/access_tokens", "", false},
		{"POST", "/repos/o", "", false},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, "https://x"+tt.path, nil)
		key, ok := writeRepoKey(req)
		if key != tt.key || ok != tt.ok {
			t.Errorf("%s %s: (%q, %v), want (%q, %v)", tt.method, tt.path, key, ok, tt.key, tt.ok)
		}
	}
}

func TestMessageOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"message":"You have exceeded a secondary rate limit"}`, "You have exceeded a secondary rate limit"},
		{`{"documentation_url":"x", "message" : "a \"quoted\" word"}`, `a "quoted" word`},
		{`{"message": 5}`, ""},
		{`Bad Gateway`, "Bad Gateway"},
		{``, ""},
	}
	for _, tt := range tests {
		if got := messageOf([]byte(tt.in)); got != tt.want {
			t.Errorf("messageOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzMessageOf(f *testing.F) {
	f.Add([]byte(`{"message":"API rate limit exceeded"}`))
	f.Add([]byte(`{"message":"\u00e9\"`))
	f.Add([]byte(`"message"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = messageOf(b)
	})
}

func FuzzRateLimitWait(f *testing.F) {
	f.Add("1", "", "", 1)
	f.Add("", "0", "1700000000", 2)
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT", "", "", 3)
	f.Add("-5", "0", "garbage", 40)
	f.Add("99999999999", "", "", 1)
	f.Add("", "0", "9223372036854775807", 1)
	tr := testTransport(nil)
	f.Fuzz(func(t *testing.T, retryAfter, remaining, reset string, n int) {
		if n < 1 || n > 1000 {
			return
		}
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		if d := tr.rateLimitWait(&http.Response{Header: h}, n); d < 0 || d > 25*time.Hour {
			t.Fatalf("wait %v out of range", d)
		}
	})
}
