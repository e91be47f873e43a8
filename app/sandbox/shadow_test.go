package sandbox

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/selfcode/selfcode/pipeline/smoke"
)

// The forwarder's first stderr line arrives in pieces, or not at all.
func TestFirstLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"whole", []string{"ok\n"}, "ok"},
		{"in pieces, more after", []string{"E1", "11 Connection ", "refused\nTraceback\n"}, "E111 Connection refused"},
		{"no newline before the end", []string{"OCI runtime exec failed: python3: not found "}, "OCI runtime exec failed: python3: not found"},
		{"nothing", nil, ""},
		{"endless", []string{strings.Repeat("x", maxWordBytes+10)}, strings.Repeat("x", maxWordBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			word := make(chan string, 1)
			f := &firstLine{word: word}
			for _, w := range tt.writes {
				if n, err := f.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			f.end()
			if got := <-word; got != tt.want {
				t.Errorf("word %q, want %q", got, tt.want)
			}
		})
	}
}

// What the forwarder says becomes the service's error (an errno) or the
// engine's (anything else).
func TestDialError(t *testing.T) {
	t.Parallel()
	s := &shadow{port: 8080}
	tests := []struct {
		word   string
		errno  syscall.Errno
		engine bool
		text   string
	}{
		{"E111 Connection refused", syscall.ECONNREFUSED, false, "connect to port 8080 in the shadow container: connection refused"},
		{"E0 timed out", 0, false, "connect to port 8080 in the shadow container: timed out"},
		{"", 0, true, `the forwarder did not run: ""`},
		{"exec failed: python3: not found", 0, true, "python3: not found"},
	}
	for _, tt := range tests {
		err := s.dialError(tt.word)
		if tt.errno != 0 && !errors.Is(err, tt.errno) {
			t.Errorf("%q: %v is not %v", tt.word, err, tt.errno)
		}
		if errors.Is(err, smoke.ErrEngine) != tt.engine || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%q: %v (engine %v, want %v, text %q)", tt.word, err, errors.Is(err, smoke.ErrEngine), tt.engine, tt.text)
		}
	}
}
