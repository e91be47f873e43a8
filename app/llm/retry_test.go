package llm

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 10 * time.Second}
	tests := []struct {
		retry    int
		min, max time.Duration
	}{
		{0, 500 * time.Millisecond, time.Second},
		{1, time.Second, 2 * time.Second},
		{2, 2 * time.Second, 4 * time.Second},
		{3, 4 * time.Second, 8 * time.Second},
		{4, 5 * time.Second, 10 * time.Second},
		{60, 5 * time.Second, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.retry), func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for range 200 {
				d := b.delay(tt.retry)
				if d < tt.min || d > tt.max {
					t.Fatalf("delay(%d) = %v, want within [%v, %v]", tt.retry, d, tt.min, tt.max)
				}
				seen[d] = true
			}
			if len(seen) < 2 {
				t.Errorf("delay(%d) has no jitter: %v", tt.retry, seen)
			}
		})
	}
	if d := (Backoff{}).delay(3); d != 0 {
		t.Errorf("zero backoff delay = %v", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"absent", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "3"}, 3 * time.Second},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"capped", map[string]string{"Retry-After": "86400"}, maxRetryAfter},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0},
		{"garbage", map[string]string{"Retry-After": "later please"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := parseRetryAfter(h, now); got != tt.want {
				t.Errorf("parseRetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "7", "1.5", "-1", "1e300", "NaN", "Inf", "Sun, 01 Mar 2026 12:01:30 GMT", "x"} {
		f.Add(s, s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, secs string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", secs)
		if d := parseRetryAfter(h, now); d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q, %q) = %v, out of [0, %v]", ms, secs, d, maxRetryAfter)
		}
	})
}

func TestClassifyStatus(t *testing.T) {
	tests := []struct {
		status int
		code   any
		kind   error
		class  retryClass
	}{
		{400, nil, ErrBadRequest, noRetry},
		{401, nil, ErrUnauthorized, noRetry},
		{403, nil, ErrUnauthorized, noRetry},
		{404, nil, ErrBadRequest, noRetry},
		{408, nil, ErrTimeout, retryTransient},
		{422, nil, ErrBadRequest, noRetry},
		{429, "rate_limit_exceeded", ErrRateLimited, retryTransient},
		{429, "insufficient_quota", ErrRateLimited, noRetry},
		{500, nil, ErrServer, retryTransient},
		{503, nil, ErrServer, retryTransient},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.code), func(t *testing.T) {
			in := &openai.APIError{HTTPStatusCode: tt.status, Message: "m", Code: tt.code}
			class, err := classify(in, &attemptInfo{retryAfter: time.Second})
			if !errors.Is(err, tt.kind) || class != tt.class {
				t.Errorf("classify(%d) = %v, %v; want %v, %v", tt.status, err, class, tt.kind, tt.class)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.RetryAfter != time.Second || !errors.Is(err, in) {
				t.Errorf("StatusError = %+v, want the go-openai error and Retry-After kept", se)
			}
		})
	}
}

func TestRejectsSchema(t *testing.T) {
	tests := []struct {
		status int
		msg    string
		want   bool
	}{
		{400, "response_format of type json_schema is not supported", true},
		{400, "Unrecognized request argument supplied: response_format", true},
		{422, "json_schema: extra inputs are not permitted", true},
		{400, "This model does not support Structured Outputs", true},
		{400, "maximum context length exceeded", false},
		{500, "response_format broke the server", false},
		{401, "json_schema", false},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", &StatusError{Kind: ErrBadRequest, Status: tt.status, Message: tt.msg})
			if got := rejectsSchema(err); got != tt.want {
				t.Errorf("rejectsSchema(%d %q) = %v, want %v", tt.status, tt.msg, got, tt.want)
			}
		})
	}
	if rejectsSchema(errors.New("response_format")) {
		t.Error("a non-HTTP error counted as a schema rejection")
	}
}
