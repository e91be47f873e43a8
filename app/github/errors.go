package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"
)

// Error kinds. Test for them with errors.Is (or the Is… helpers); errors.As with
// *Error gives the status, GitHub's message and, for rate limits, when to retry.
var (
	// ErrNotFound: 404/410 — the repository, issue, installation… does not exist or
	// the app cannot see it. Permanent; never retried.
	ErrNotFound = errors.New("github: not found")
	// ErrPermissionDenied: 403 that is not a rate limit (missing app permission,
	// blocked, archived repository…). Permanent.
	ErrPermissionDenied = errors.New("github: permission denied")
	// ErrUnauthorized: 401 — bad app key/JWT, or a token GitHub no longer accepts.
	ErrUnauthorized = errors.New("github: unauthorized")
	// ErrValidation: 422 — GitHub rejected the request's content (e.g. a pull request
	// for this head already exists).
	ErrValidation = errors.New("github: validation failed")
	// ErrRateLimited: a primary or secondary rate limit that outlasted the retry
	// budget or whose wait is longer than Options.MaxRateLimitWait.
	ErrRateLimited = errors.New("github: rate limited")
	// ErrTransient: 5xx or network failures that persisted through every retry.
	ErrTransient = errors.New("github: transient failure, retries exhausted")
	// ErrForeignHost: a download (an Actions job's log) was sent to a host
	// that is not GitHub's; nothing was requested from it.
	ErrForeignHost = errors.New("github: not one of GitHub's hosts")
)

// Error is a failed GitHub call.
type Error struct {
	// Kind is one of the Err… sentinels, or nil for an unclassified status.
	Kind error
	// Op names the call, e.g. "create issue comment octo/hello#3".
	Op string
	// Status is the HTTP status (0 when no response was received).
	Status int
	// Message is GitHub's message, with validation details appended.
	Message string
	// RetryAt is, for ErrRateLimited, the earliest moment worth trying again.
	RetryAt time.Time
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	switch {
	case e.Kind != nil:
		b.WriteString(e.Kind.Error())
	default:
		b.WriteString("github: request failed")
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if !e.RetryAt.IsZero() {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAt.UTC().Format(time.RFC3339))
	}
	if e.Err != nil && e.Message == "" {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is matches the error's kind.
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// IsNotFound reports whether err is (or wraps) ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPermissionDenied reports whether err is (or wraps) ErrPermissionDenied.
func IsPermissionDenied(err error) bool { return errors.Is(err, ErrPermissionDenied) }

// IsRateLimited reports whether err is (or wraps) ErrRateLimited.
func IsRateLimited(err error) bool { return errors.Is(err, ErrRateLimited) }

// IsTransient reports whether err is (or wraps) ErrTransient.
func IsTransient(err error) bool { return errors.Is(err, ErrTransient) }

// IsValidation reports whether err is (or wraps) ErrValidation.
func IsValidation(err error) bool { return errors.Is(err, ErrValidation) }

// IsPermanent reports whether retrying the same call later cannot help: not found,
// permission denied, unauthorized or a validation error.
func IsPermanent(err error) bool {
	return IsNotFound(err) || IsPermissionDenied(err) || errors.Is(err, ErrUnauthorized) || IsValidation(err)
}

func kindForStatus(status int) error {
	switch {
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusForbidden:
		return ErrPermissionDenied
	case status == http.StatusNotFound || status == http.StatusGone:
		return ErrNotFound
	case status == http.StatusUnprocessableEntity:
		return ErrValidation
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status >= 500:
		return ErrTransient
	}
	return nil
}

// classify turns whatever go-github, ghinstallation or the transport returned into
// an *Error (context cancellation is passed through, wrapped with op).
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var own *Error
	if errors.As(err, &own) {
		c := *own
		if c.Op == "" {
			c.Op = op
		} else {
			c.Op = op + ": " + c.Op
		}
		return &c
	}
	var rle *gh.RateLimitError
	if errors.As(err, &rle) {
		return &Error{Kind: ErrRateLimited, Op: op, Status: statusOf(rle.Response), Message: rle.Message, RetryAt: rle.Rate.Reset.Time, Err: err}
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		e := &Error{Kind: ErrRateLimited, Op: op, Status: statusOf(abuse.Response), Message: abuse.Message, Err: err}
		if abuse.RetryAfter != nil {
			e.RetryAt = time.Now().Add(*abuse.RetryAfter)
		}
		return e
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		status := statusOf(er.Response)
		return &Error{Kind: kindForStatus(status), Op: op, Status: status, Message: errorMessage(er), Err: err}
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		status := he.Response.StatusCode
		return &Error{Kind: kindForStatus(status), Op: op + ": installation token", Status: status, Err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

func errorMessage(er *gh.ErrorResponse) string {
	parts := []string{er.Message}
	for _, fe := range er.Errors {
		switch {
		case fe.Message != "":
			parts = append(parts, fe.Message)
		case fe.Field != "":
			parts = append(parts, fe.Field+" "+fe.Code)
		}
	}
	return strings.Join(parts, ": ")
}
