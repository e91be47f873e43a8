package llm

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error kinds. Errors from Chat wrap one of these so callers can branch with
// errors.Is; the retryable ones have already been retried.
var (
	ErrRateLimited  = errors.New("rate limited")          // HTTP 429
	ErrServer       = errors.New("server error")          // HTTP 5xx
	ErrBadRequest   = errors.New("request rejected")      // HTTP 4xx other than 401, 403, 408, 429
	ErrUnauthorized = errors.New("not authorised")        // HTTP 401, 403: check the API key
	ErrTimeout      = errors.New("timed out")             // HTTP 408, or no answer within HTTPTimeout
	ErrConnection   = errors.New("connection failed")     // refused, reset, DNS, TLS…
	ErrBadReply     = errors.New("unusable reply")        // body not JSON, or no choices
	ErrUnknownRole  = errors.New("no model for the role") // Options.Models lacks the request's role
)

// StatusError is an HTTP error answer from the API.
type StatusError struct {
	Kind       error         // one of the Err* kinds
	Status     int           // HTTP status code
	Message    string        // the API's error message, if it sent one
	RetryAfter time.Duration // from Retry-After, 0 when absent
	Err        error         // the go-openai error
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%v: HTTP %d: %s", e.Kind, e.Status, msg)
}

// Unwrap exposes both the kind and the underlying go-openai error.
func (e *StatusError) Unwrap() []error { return []error{e.Kind, e.Err} }

// kindError tags a transport or decoding error with its kind.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return fmt.Sprintf("%v: %v", e.kind, e.err) }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }
