package sandboxprobe

import (
	"os"
	"testing"
)

func TestSum(t *testing.T) {
	if got := Sum(1, 2, 3); got != 6 {
		t.Fatalf("Sum(1, 2, 3) = %d, want 6", got)
	}
}

func TestWorkTreeWritable(t *testing.T) {
	f, err := os.CreateTemp(".", "probe-*")
	if err != nil {
		t.Fatalf("cannot write in the work tree: %v", err)
	}
	f.Close()
	os.Remove(f.Name())
}
