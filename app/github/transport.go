package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/selfcode/selfcode/internal/keyedlock"
)

// Retry policy of the transport (shared by the app, installation and anonymous
// clients, so token minting is covered too):
//
//   - Rate limits (403/429 with Retry-After, X-RateLimit-Remaining: 0, or a
//     "rate limit" message) are waited out for every method — the request was
//     refused, so repeating it cannot duplicate anything. Retry-After wins, then
//     X-RateLimit-Reset, else a secondary-limit backoff of one minute doubling per
//     attempt. After MaxRateLimitRetries, or when one wait would exceed
//     MaxRateLimitWait, the call fails with ErrRateLimited (carrying RetryAt).
//   - Idempotent requests (GET, HEAD, OPTIONS, PUT, DELETE, PATCH — every PATCH
//     selfcode sends sets fields to values — plus POSTs GitHub defines as
//     idempotent: reactions, which answer 200 when they exist, and installation
//     token minting) are retried on 500/502/503/504 and on any network error.
//   - Other POSTs (comments, pull requests, check runs, replies) are retried only
//     when GitHub cannot have acted: connection refused or any dial/DNS failure
//     (the request never left), and 502/503 (the front end could not reach or was
//     shedding load for the application). They are NOT retried on 500 or 504 or on
//     an error after the request was sent, where GitHub may have created the
//     content: those surface as ErrTransient and the caller's idempotent
//     publishing (find-before-create, the comment marker) decides.
//   - Transient retries back off exponentially from BaseBackoff (capped at 10 s,
//     with jitter) for at most MaxAttempts attempts in all, then fail with
//     ErrTransient. 4xx other than rate limits are never retried.
//   - Every wait honours the request's context.
//
// Writes (POST/PATCH/PUT/DELETE) to one repository are serialised, as GitHub asks
// ("make requests serially"): the transport holds a per-repository lock (owner/repo
// from the /repos/{owner}/{repo}/… path, case-insensitive) for the whole call,
// retries and waits included. Waiting for the lock honours the context.
type transport struct {
	base           http.RoundTripper
	attemptTimeout time.Duration
	maxAttempts    int
	maxRLRetries   int
	maxRLWait      time.Duration
	baseBackoff    time.Duration
	now            func() time.Time
	sleep          func(context.Context, time.Duration) error
	logger         *slog.Logger

	locks *keyedlock.Locks // write lock per repository
}

// writeRepoKey returns "owner/repo" (lower case) for a write to a repository.
func writeRepoKey(req *http.Request) (string, bool) {
	switch req.Method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
	default:
		return "", false
	}
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i := 0; i+2 < len(segs); i++ {
		if segs[i] == "repos" && segs[i+1] != "" && segs[i+2] != "" {
			return strings.ToLower(segs[i+1] + "/" + segs[i+2]), true
		}
	}
	return "", false
}

func idempotent(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	case http.MethodPost:
		p := strings.TrimRight(req.URL.Path, "/")
		return strings.HasSuffix(p, "/reactions") || strings.HasSuffix(p, "/access_tokens")
	}
	return false
}

// neverSent reports whether a transport error proves the request did not reach GitHub.
func neverSent(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

func (t *transport) retryableStatus(req *http.Request, status int) bool {
	switch status {
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return true
	case http.StatusInternalServerError, http.StatusGatewayTimeout:
		return idempotent(req)
	}
	return false
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replay, err := replayable(req)
	if err != nil {
		return nil, err
	}
	if key, ok := writeRepoKey(req); ok {
		unlock, err := t.locks.Lock(ctx, key)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	transient, limited := 0, 0
	for {
		resp, err := t.attempt(replay)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			transient++
			if !idempotent(req) && !neverSent(err) {
				return nil, &Error{Kind: ErrTransient, Op: req.Method + " " + req.URL.Path, Err: err}
			}
			if transient >= t.maxAttempts {
				return nil, &Error{Kind: ErrTransient, Op: req.Method + " " + req.URL.Path, Err: err}
			}
			wait = t.backoff(transient)
			t.logger.Warn("github request failed, retrying", "method", req.Method, "path", req.URL.Path, "attempt", transient, "wait", wait, "error", err.Error())

		case isRateLimit(resp):
			limited++
			wait = t.rateLimitWait(resp, limited)
			msg := drain(resp)
			if limited > t.maxRLRetries || wait > t.maxRLWait {
				return nil, &Error{Kind: ErrRateLimited, Op: req.Method + " " + req.URL.Path, Status: resp.StatusCode, Message: msg, RetryAt: t.now().Add(wait)}
			}
			t.logger.Warn("github rate limit, waiting", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "attempt", limited, "wait", wait)

		case t.retryableStatus(req, resp.StatusCode):
			transient++
			if transient >= t.maxAttempts {
				msg := drain(resp)
				return nil, &Error{Kind: ErrTransient, Op: req.Method + " " + req.URL.Path, Status: resp.StatusCode, Message: msg}
			}
			drain(resp)
			wait = t.backoff(transient)
			t.logger.Warn("github server error, retrying", "method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "attempt", transient, "wait", wait)

		default:
			return resp, nil
		}
		if err := t.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// replayable returns a clone of req whose body can be produced again for each attempt.
func replayable(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		r.Body, r.GetBody = nil, nil
		return r, nil
	}
	if req.GetBody != nil {
		// Every attempt takes a fresh body from GetBody; the original is done with.
		_ = req.Body.Close()
		return r, nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("buffer request body: %w", err)
	}
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	return r, nil
}

// attempt sends one try, bounded by attemptTimeout (headers and body).
func (t *transport) attempt(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.attemptTimeout)
	r := req.Clone(ctx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			cancel()
			return nil, fmt.Errorf("replay request body: %w", err)
		}
		r.Body = body
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// drain reads (a bounded amount of) the body, closes it and returns GitHub's message.
func drain(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return messageOf(b)
}

func messageOf(b []byte) string {
	const key = `"message"`
	s := string(b)
	i := strings.Index(s, key)
	if i < 0 {
		return strings.TrimSpace(s)
	}
	rest := strings.TrimLeft(s[i+len(key):], " \t\r\n:")
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	if v, err := strconv.QuotedPrefix(rest); err == nil {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return ""
}

// isRateLimit decides whether a response is a primary or secondary rate limit. For
// a 403 it peeks at the body (restoring it) for GitHub's "rate limit" message.
func isRateLimit(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
	default:
		return false
	}
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0" {
		return true
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return strings.Contains(strings.ToLower(messageOf(b)), "rate limit")
}

// maxWaitSeconds caps a server-announced wait (a day) so it cannot overflow.
const maxWaitSeconds = 24 * 60 * 60

// secondaryBase is the documented minimum wait for a secondary limit without headers.
const secondaryBase = time.Minute

func (t *transport) rateLimitWait(resp *http.Response, n int) time.Duration {
	if v := strings.TrimSpace(resp.Header.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
			return time.Duration(min(secs, maxWaitSeconds)) * time.Second
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(t.now()), 0)
		}
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			// One extra second absorbs clock skew and the reset's second granularity.
			d := time.Unix(min(reset, t.now().Unix()+maxWaitSeconds), 0).Sub(t.now()) + time.Second
			return max(d, time.Second)
		}
	}
	d := secondaryBase
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	return d
}

func (t *transport) backoff(attempt int) time.Duration {
	d := t.baseBackoff
	for i := 1; i < attempt && d < 10*time.Second; i++ {
		d *= 2
	}
	d = min(d, 10*time.Second)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}
