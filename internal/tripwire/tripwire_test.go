package tripwire

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The wire records each run with its arguments, from PATH and as a hook.
func TestWireRecordsARun(t *testing.T) {
	w := New(t)
	if _, err := os.Stat(w.Marker); err == nil {
		t.Fatal("a marker before any run")
	}
	w.OnPath(t, "go")
	if out, err := exec.Command("go", "list", "./...").CombinedOutput(); err != nil {
		t.Fatalf("the wire failed: %v %s", err, out)
	}
	if out, err := exec.Command(filepath.Join(w.Hooks(t), "post-commit")).CombinedOutput(); err != nil {
		t.Fatalf("the hook failed: %v %s", err, out)
	}
	b, err := os.ReadFile(w.Marker)
	if err != nil || !strings.Contains(string(b), "go list ./...") || !strings.Contains(string(b), "post-commit") {
		t.Fatalf("marker %q (%v)", b, err)
	}
}
