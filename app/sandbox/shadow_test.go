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
		{"in pieces, more after", []string{"E ECONN", "REFUSED Connection ", "refused\nTraceback\n"}, "E ECONNREFUSED Connection refused"},
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

// What the forwarder says becomes the service's error (an errno, this
// host's by its name: the forwarder runs on Linux, whose numbers macOS does
// not share) or the engine's (anything else).
func TestDialError(t *testing.T) {
	t.Parallel()
	s := &shadow{port: 8080}
	tests := []struct {
		word   string
		errno  syscall.Errno
		engine bool
		text   string
	}{
		{"E ECONNREFUSED Connection refused", syscall.ECONNREFUSED, false, "connect to port 8080 in the shadow container: " + syscall.ECONNREFUSED.Error()},
		{"E ECONNRESET Connection reset by peer", syscall.ECONNRESET, false, syscall.ECONNRESET.Error()},
		{"E ENETUNREACH Network is unreachable", syscall.ENETUNREACH, false, syscall.ENETUNREACH.Error()},
		{"E - timed out", 0, false, "connect to port 8080 in the shadow container: timed out"},
		{"E EPROTO Protocol error", 0, false, "connect to port 8080 in the shadow container: EPROTO: Protocol error"},
		// Linux's number is no longer read as this host's errno.
		{"E111 Connection refused", 0, true, "the forwarder did not run"},
		{"Error response from daemon: container is not running", 0, true, "container is not running"},
		{"", 0, true, `the forwarder did not run: ""`},
		{"exec failed: python3: not found", 0, true, "python3: not found"},
	}
	for _, tt := range tests {
		err := s.dialError(tt.word)
		var errno syscall.Errno
		if got := errors.As(err, &errno); got != (tt.errno != 0) || errno != tt.errno {
			t.Errorf("%q: %v is errno %d (%v), want %d", tt.word, err, errno, got, tt.errno)
		}
		if errors.Is(err, smoke.ErrEngine) != tt.engine || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%q: %v (engine %v, want %v, text %q)", tt.word, err, errors.Is(err, smoke.ErrEngine), tt.engine, tt.text)
		}
	}
}
