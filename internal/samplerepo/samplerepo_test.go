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

func TestServiceFiles(t *testing.T) {
	f := ServiceFiles()
	for _, name := range []string{"go.mod", "main.go", "items.go", "items_test.go", "Dockerfile", ".dockerignore", ".selfcode.yml"} {
		if f[name] == "" {
			t.Fatalf("missing %s (have %d files)", name, len(f))
		}
	}
	if !strings.Contains(f["items.go"], ItemsLine) || !strings.Contains(f["main.go"], AddrLine) {
		t.Fatal("the lines the tests edit are not in the service")
	}
	if _, ok := Files()["main.go"]; ok {
		t.Fatal("the service's files leak into the greeting repository")
	}
}
