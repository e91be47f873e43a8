package runner

import (
	"strings"
	"testing"
)

// actionsLog is the shape of a GitHub Actions job log: timestamped lines,
// a group per step, ##[error] where a step failed.
const actionsLog = "2026-11-25T10:00:00.0000000Z ##[group]Run actions/checkout@v4\n" +
	"2026-11-25T10:00:01.0000000Z Fetching the repository\n" +
	"2026-11-25T10:00:02.0000000Z ##[endgroup]\n" +
	"2026-11-25T10:00:03.0000000Z ##[group]Run go test ./...\n" +
	"2026-11-25T10:00:03.1000000Z go test ./...\n" +
	"2026-11-25T10:00:04.0000000Z ##[endgroup]\n" +
	"2026-11-25T10:00:05.0000000Z --- FAIL: TestGreet (0.00s)\n" +
	"2026-11-25T10:00:05.1000000Z     greet_test.go:9: got \"Hello\", want \"Hello, world\"\n" +
	"2026-11-25T10:00:05.2000000Z FAIL\n" +
	"2026-11-25T10:00:05.3000000Z ##[error]Process completed with exit code 1.\n" +
	"2026-11-25T10:00:06.0000000Z Post job cleanup.\n"

func TestFailingStep(t *testing.T) {
	t.Parallel()
	got := failingStep(actionsLog, 8000)
	for _, want := range []string{"##[group]Run go test ./...", "--- FAIL: TestGreet", `want "Hello, world"`, "##[error]Process completed with exit code 1."} {
		if !strings.Contains(got, want) {
			t.Errorf("the failing step lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "actions/checkout") || strings.Contains(got, "2026-11-25T") {
		t.Errorf("other steps or timestamps kept:\n%s", got)
	}
	if short := failingStep(actionsLog, 40); len(short) > 40+len("…\n") || !strings.HasSuffix(short, "Post job cleanup.") {
		t.Errorf("cut to 40 bytes: %q", short)
	}
}

func FuzzFailingStep(f *testing.F) {
	f.Add(actionsLog, 100)
	f.Add("", 10)
	f.Add("##[error]é\r\nx", 3)
	f.Fuzz(func(t *testing.T, log string, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		if out := failingStep(log, max); len(out) > max+len("…\n") {
			t.Fatalf("%d bytes for max %d", len(out), max)
		}
	})
}
