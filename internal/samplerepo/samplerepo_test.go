package samplerepo

import (
	"strings"
	"testing"
)

func TestFiles(t *testing.T) {
	f := Files()
	for _, name := range []string{"go.mod", "greet.go", "greet_test.go", "README.md"} {
		if f[name] == "" {
			t.Fatalf("missing %s (have %d files)", name, len(f))
		}
	}
	lines := strings.Split(f["greet.go"], "\n")
	if len(lines) < BuggyLineNumber || lines[BuggyLineNumber-1] != BuggyLine {
		t.Fatalf("greet.go line %d is not the buggy line", BuggyLineNumber)
	}
}
