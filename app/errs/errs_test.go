package errs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{E(KindInvalid, "bad json", nil), http.StatusBadRequest},
		{fmt.Errorf("outer: %w", E(KindUnauthorized, "sig", nil)), http.StatusUnauthorized},
		{E(KindTooLarge, "", nil), http.StatusRequestEntityTooLarge},
		{E(KindNotFound, "", nil), http.StatusNotFound},
		{E(KindConflict, "", nil), http.StatusConflict},
		{E(KindUnavailable, "", errors.New("disk")), http.StatusServiceUnavailable},
		{E(KindDenied, "", nil), http.StatusForbidden},
		{errors.New("plain"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if got := HTTPStatus(tt.err); got != tt.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	if KindOf(fmt.Errorf("x: %w", context.Canceled)) != KindCanceled {
		t.Error("context.Canceled should be KindCanceled")
	}
	if !Retryable(E(KindTransient, "502", nil)) || Retryable(E(KindPermanent, "404", nil)) {
		t.Error("Retryable misclassifies")
	}
	e := E(KindPermanent, "repository gone", errors.New("404"))
	if e.Error() != "repository gone: 404" {
		t.Errorf("Error() = %q", e.Error())
	}
	if KindOf(nil) != KindUnknown {
		t.Error("nil should be unknown")
	}
}
