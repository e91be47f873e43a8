package image

import (
	"io/fs"
	"slices"
	"testing"

	"github.com/selfcode/selfcode/deploy"
	"github.com/selfcode/selfcode/internal/dockerfile"
)

// The real Dockerfile builds from Debian and the Go image, both pinned by
// ARGs a mirror can replace.
func TestBaseImagesOfTheSandboxDockerfile(t *testing.T) {
	t.Parallel()
	df, err := fs.ReadFile(deploy.SandboxContext(), Dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dockerfile.BaseImages(df, nil)
	if err != nil || !slices.Equal(got, []string{"golang:1.26-bookworm", "debian:bookworm-slim"}) {
		t.Fatalf("bases %q, %v", got, err)
	}
	got, _ = dockerfile.BaseImages(df, map[string]string{"BASE_IMAGE": "mirror.example/debian:12", "GO_IMAGE": "mirror.example/golang:1"})
	if !slices.Equal(got, []string{"mirror.example/golang:1", "mirror.example/debian:12"}) {
		t.Fatalf("mirrored bases %q", got)
	}
}

func TestNamesRegistry(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]bool{
		"selfcode-sandbox:latest":                    false,
		"library/debian:12":                          false,
		"someone/selfcode-sandbox:latest":            false,
		"ghcr.io/selfcode/selfcode-sandbox:v1.2.0":   true,
		"ghcr.io/selfcode/selfcode-sandbox@sha256:0": true,
		"127.0.0.1:5000/sandbox:1":                   true,
		"localhost/sandbox:1":                        true,
		"docker.io/library/debian:12":                true,
	} {
		if got := namesRegistry(ref); got != want {
			t.Errorf("namesRegistry(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{}, {Image: "bad image!"}, {Image: "x:1", Mode: "sideways"}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}
