package sandbox

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/pkg/stdcopy"

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

// A deadline on a connection through a forwarder behaves as on any
// net.Conn: once passed, Read and Write say so; once lifted or moved on,
// the connection goes on. (A read deadline on the exec's own connection
// would end the goroutine that demultiplexes it, and the connection with
// it.) The exec's stream is a net.Pipe standing in for the engine.
func TestExecConnDeadlines(t *testing.T) {
	t.Parallel()
	engine, hijacked := net.Pipe()
	c := newExecConn(types.HijackedResponse{Conn: hijacked, Reader: bufio.NewReader(hijacked)})
	defer c.Close()
	stdout, stderr := stdcopy.NewStdWriter(engine, stdcopy.Stdout), stdcopy.NewStdWriter(engine, stdcopy.Stderr)
	if _, err := stderr.Write([]byte("ok\n")); err != nil {
		t.Fatal(err)
	}
	if w := <-c.word; w != "ok" {
		t.Fatalf("word %q", w)
	}
	timedOut := func(what string, err error) {
		t.Helper()
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%s past its deadline: %v, want a timeout", what, err)
		}
	}
	// The engine's side: what the forwarder prints, and what it is sent.
	served := func(b string) {
		go stdout.Write([]byte(b))
	}
	sent := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := engine.Read(buf)
			if err != nil {
				close(sent)
				return
			}
			sent <- string(buf[:n])
		}
	}()
	read := func(want string) {
		t.Helper()
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(c, buf, len(want))
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("Read %q, %v; want %q", buf[:n], err, want)
		}
	}
	write := func(b string) {
		t.Helper()
		if n, err := c.Write([]byte(b)); err != nil || n != len(b) {
			t.Fatalf("Write: %d, %v", n, err)
		}
		if got := <-sent; got != b {
			t.Fatalf("the forwarder got %q, want %q", got, b)
		}
	}

	past := time.Now().Add(-time.Second)
	for _, tt := range []struct {
		name    string
		set     func(time.Time) error
		r, w    bool // which of Read and Write it bounds
		payload string
	}{
		{"read deadline", c.SetReadDeadline, true, false, "HTTP/1.1 200 OK\r\n"},
		{"write deadline", c.SetWriteDeadline, false, true, "GET / HTTP/1.1\r\n"},
		{"deadline", c.SetDeadline, true, true, "ok"},
	} {
		if err := tt.set(past); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if tt.r {
			_, err := c.Read(buf)
			timedOut(tt.name+": Read", err)
		}
		if tt.w {
			_, err := c.Write([]byte("x"))
			timedOut(tt.name+": Write", err)
		}
		if err := tt.set(time.Time{}); err != nil {
			t.Fatal(err)
		}
		served(tt.payload)
		read(tt.payload)
		write(tt.payload)
	}

	// The forwarder's end is the connection's.
	engine.Close()
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the stream ended: %d, %v; want EOF", n, err)
	}
}
