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
