package errs

import (
	"context"
	"errors"
	"net/http"
)

// Kind classifies an error for the code that must react to it.
type Kind int

// Error kinds.
const (
	KindUnknown      Kind = iota
	KindInvalid           // malformed input: bad JSON, missing fields, bad usage
	KindUnauthorized      // signature missing or wrong
	KindTooLarge          // request body over the cap
	KindNotFound          // no such job, repository, file
	KindConflict          // the operation does not fit the current state
	KindUnavailable       // the store or another dependency cannot serve now; retry later
	KindPermanent         // the job cannot succeed by retrying (e.g. repository gone)
	KindTransient         // the job may succeed if retried
	KindCanceled          // stopped on request
	KindBudget            // a token, step or time budget ran out
	KindDenied            // the sender or the path policy forbids it
)

var kindNames = map[Kind]string{
	KindUnknown: "unknown", KindInvalid: "invalid", KindUnauthorized: "unauthorized",
	KindTooLarge: "too_large", KindNotFound: "not_found", KindConflict: "conflict",
	KindUnavailable: "unavailable", KindPermanent: "permanent", KindTransient: "transient",
	KindCanceled: "canceled", KindBudget: "budget", KindDenied: "denied",
}

func (k Kind) String() string { return kindNames[k] }

// Error carries a Kind alongside a wrapped cause.
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Kind.String()
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an error of kind k with message msg wrapping err (which may be nil).
func E(k Kind, msg string, err error) error { return &Error{Kind: k, Msg: msg, Err: err} }

// KindOf returns the kind of the outermost classified error in err's chain;
// context cancellation counts as KindCanceled.
func KindOf(err error) Kind {
	if err == nil {
		return KindUnknown
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.Canceled) {
		return KindCanceled
	}
	return KindUnknown
}

// Is reports whether err is of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// HTTPStatus maps an error to the status an HTTP handler answers with.
func HTTPStatus(err error) int {
	switch KindOf(err) {
	case KindInvalid:
		return http.StatusBadRequest
	case KindUnauthorized:
		return http.StatusUnauthorized
	case KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case KindNotFound:
		return http.StatusNotFound
	case KindConflict:
		return http.StatusConflict
	case KindUnavailable:
		return http.StatusServiceUnavailable
	case KindDenied:
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// Retryable reports whether a job that failed with err should be tried again.
func Retryable(err error) bool {
	switch KindOf(err) {
	case KindTransient, KindUnavailable:
		return true
	}
	return false
}
