package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Backoff is the exponential backoff between retries: Base doubled per
// retry, capped at Max, with jitter (the wait is between half and all of it).
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// delay is the jittered wait before retry number n (0-based).
func (b Backoff) delay(n int) time.Duration {
	d := b.Base
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// maxRetryAfter caps how long a server's Retry-After can make a call wait.
const maxRetryAfter = 5 * time.Minute

// parseRetryAfter reads retry-after-ms (milliseconds, sent by some
// OpenAI-compatible servers) or Retry-After (seconds or an HTTP date). It
// returns 0 when neither is usable, and never more than maxRetryAfter.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampSeconds(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampSeconds(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampSeconds(t.Sub(now).Seconds())
	}
	return 0
}

// clampSeconds converts seconds to a duration in [0, maxRetryAfter]; NaN is 0.
func clampSeconds(s float64) time.Duration {
	switch {
	case !(s > 0):
		return 0
	case s >= maxRetryAfter.Seconds():
		return maxRetryAfter
	}
	return time.Duration(s * float64(time.Second))
}

// attemptInfo is what the transport saw of one HTTP exchange; headerDoer
// fills it in through the request context because go-openai drops the
// headers of error answers.
type attemptInfo struct {
	status     int
	retryAfter time.Duration
	requestID  string
}

type attemptKey struct{}

// headerDoer is the HTTP client handed to go-openai.
type headerDoer struct{ client *http.Client }

func (d headerDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return resp, err
	}
	if info, ok := req.Context().Value(attemptKey{}).(*attemptInfo); ok {
		info.status = resp.StatusCode
		info.retryAfter = parseRetryAfter(resp.Header, time.Now())
		info.requestID = resp.Header.Get("X-Request-Id")
	}
	return resp, nil
}

// retryClass says whether and how an error may be retried.
type retryClass int

const (
	noRetry        retryClass = iota
	retryTransient            // 429, 5xx, 408, timeouts, connection errors
	retryGarbage              // a 2xx answer that is not a usable completion
)

// maxBodyInError bounds how much of a non-JSON error body goes into an error.
const maxBodyInError = 500

// classify turns a go-openai error into one carrying an Err* kind and says
// whether to retry it.
func classify(err error, info *attemptInfo) (retryClass, error) {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0:
		return statusError(apiErr.HTTPStatusCode, apiErr.Message, fmt.Sprint(apiErr.Code), info, err)
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		msg := strings.TrimSpace(string(reqErr.Body))
		if len(msg) > maxBodyInError {
			msg = msg[:maxBodyInError] + "…"
		}
		return statusError(reqErr.HTTPStatusCode, msg, "", info, err)
	}

	var urlErr *url.Error
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return retryTransient, &kindError{ErrTimeout, err}
	case errors.As(err, &urlErr), errors.As(err, new(*net.OpError)):
		return retryTransient, &kindError{ErrConnection, err}
	case errors.Is(err, ErrBadReply):
		return retryGarbage, err
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return retryGarbage, &kindError{ErrBadReply, err}
	}
	return noRetry, err
}

func statusError(status int, msg, code string, info *attemptInfo, err error) (retryClass, error) {
	se := &StatusError{Status: status, Message: msg, RetryAfter: info.retryAfter, Err: err}
	class := noRetry
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		se.Kind = ErrUnauthorized
	case status == http.StatusRequestTimeout:
		se.Kind, class = ErrTimeout, retryTransient
	case status == http.StatusTooManyRequests:
		se.Kind = ErrRateLimited
		// An exhausted quota is a 429 that waiting does not cure.
		if code != "insufficient_quota" {
			class = retryTransient
		}
	case status >= 500:
		se.Kind, class = ErrServer, retryTransient
	default:
		se.Kind = ErrBadRequest
	}
	return class, se
}

// rejectsSchema reports an error that says the server does not take
// response_format json_schema.
func rejectsSchema(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) || (se.Status != http.StatusBadRequest && se.Status != http.StatusUnprocessableEntity) {
		return false
	}
	m := strings.ToLower(se.Message)
	for _, s := range []string{"response_format", "json_schema", "response format", "structured output"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
