package poll

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	Until(t, "three checks", time.Minute, func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times", n.Load())
	}
	// A condition that never holds fails the test with what it waited for.
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(ft, "never", 30*time.Millisecond, func() bool { return false }, func() string { return "logs here" })
	}()
	<-done
	if ft.msg == "" || !strings.Contains(ft.msg, "never") || !strings.Contains(ft.msg, "logs here") {
		t.Fatalf("failure message %q", ft.msg)
	}
}

type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
