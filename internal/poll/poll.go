// Package poll is the one way tests wait for something another goroutine or
// process does: check a condition every few milliseconds, bounded by a
// limit, and fail the test naming what never happened.
package poll

import (
	"testing"
	"time"
)

// Every is how often Until checks.
const Every = 10 * time.Millisecond

// Until checks cond until it holds, failing t (with what, and whatever
// more() adds, e.g. logs) when limit passes first. more may be nil.
func Until(t testing.TB, what string, limit time.Duration, cond func() bool, more ...func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			extra := ""
			for _, m := range more {
				if m != nil {
					extra += "\n" + m()
				}
			}
			t.Fatalf("timed out after %s waiting for %s%s", limit, what, extra)
		}
		<-tick.C
	}
}
