package testreport

import (
	"os"
	"strings"
	"testing"
)

// checkTests compares a report's tests with want.
func checkTests(t *testing.T, rep *Report, want map[ID]Status) {
	t.Helper()
	if rep == nil {
		t.Fatal("report is nil")
	}
	for id, st := range want {
		if got, ok := rep.Tests[id]; !ok || got != st {
			t.Errorf("%s: %q (present %v), want %q", id, got, ok, st)
		}
	}
	for id, st := range rep.Tests {
		if _, ok := want[id]; !ok {
			t.Errorf("unexpected test %s: %s", id, st)
		}
	}
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// checkWellFormed holds for every report a parser returns, whatever its
// input: no unnamed test, output only for failing tests, bounded lists.
func checkWellFormed(t *testing.T, rep *Report) {
	t.Helper()
	if rep == nil {
		return
	}
	for id := range rep.Tests {
		if strings.TrimSpace(id.Name) == "" {
			t.Fatalf("test with an empty name: %+v", id)
		}
	}
	for id, lines := range rep.Output {
		if rep.Tests[id] != Fail {
			t.Fatalf("output kept for %s, which did not fail", id)
		}
		if len(lines) > MaxTestOutputLines {
			t.Fatalf("%d output lines for %s", len(lines), id)
		}
	}
	if len(rep.Errors) > MaxErrorLines {
		t.Fatalf("%d error lines", len(rep.Errors))
	}
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
