package samplerepo

import (
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockerfile"
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
	f := ServiceFiles("")
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

// The service builds from the sandbox image it is given, as the engine's
// classic builder and selfcode's base-image check read the Dockerfile
// (no build arguments passed).
func TestServiceFilesBuildFromTheSandboxImage(t *testing.T) {
	t.Parallel()
	if DefaultSandboxImage != sandbox.DefaultImage {
		t.Fatalf("DefaultSandboxImage %q is not the sandbox's default %q", DefaultSandboxImage, sandbox.DefaultImage)
	}
	for _, image := range []string{"", "registry.example:5000/team/sandbox:2.1", "sandbox@sha256:" + strings.Repeat("a", 64)} {
		want := image
		if want == "" {
			want = DefaultSandboxImage
		}
		bases, err := dockerfile.BaseImages([]byte(ServiceFiles(image)["Dockerfile"]), nil)
		if err != nil || !slices.Equal(bases, []string{want}) {
			t.Errorf("ServiceFiles(%q) builds from %v (%v), want %s", image, bases, err, want)
		}
	}
}
