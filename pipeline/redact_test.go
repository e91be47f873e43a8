package pipeline

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, keep string }{
		{"token ghs_16C7e42F292c6912E7710c838347Ae178B4a here", "token [redacted] here"},
		{"key sk-proj-abcdefghijklmnopqrstuvwx", "key [redacted]"},
		{"Authorization: Bearer abcdefghijklmnop1234", "Authorization: [redacted]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[redacted]"},
		{"plain text stays", "plain text stays"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.keep {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.keep)
		}
	}
	if strings.Contains(Redact("x ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), "ghp_") {
		t.Fatal("personal access token kept")
	}
}
