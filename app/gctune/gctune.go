// Package gctune sets the garbage collector for selfcode's workload: a small
// live heap (jobs live in bbolt, not in memory) and bursts of webhook
// deliveries whose JSON decoding allocates heavily. With Go's default target
// of 100 %, the collector runs after every few megabytes and takes a third
// of intake's CPU (docs/benchmarks.md); 400 % keeps the heap small in
// absolute terms and most of that CPU for work.
package gctune

import (
	"os"
	"runtime/debug"
)

// Percent is the GC target applied when GOGC is not set.
const Percent = 400

// Apply sets the GC target to Percent unless the operator set GOGC, and
// returns the target in effect. GOMEMLIMIT, when set, still bounds the heap.
func Apply() int {
	if v := os.Getenv("GOGC"); v != "" {
		return -1
	}
	debug.SetGCPercent(Percent)
	return Percent
}
