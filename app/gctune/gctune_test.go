package gctune

import (
	"runtime/debug"
	"testing"
)

func TestApply(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	t.Setenv("GOGC", "")
	if got := Apply(); got != Percent {
		t.Fatalf("Apply = %d", got)
	}
	if got := debug.SetGCPercent(100); got != Percent {
		t.Fatalf("GC percent %d after Apply, want %d", got, Percent)
	}
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	if got := Apply(); got != -1 {
		t.Fatalf("Apply with GOGC set = %d, want -1 (left alone)", got)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("GOGC=150 was overridden: %d", got)
	}
}
