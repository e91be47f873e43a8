package image

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/deploy"
)

func TestBaseImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		args map[string]string
		want []string
		err  string
	}{
		{name: "plain", file: "FROM debian:bookworm-slim\nRUN true\n", want: []string{"debian:bookworm-slim"}},
		{name: "arg default", file: "ARG V=1.26\nFROM golang:${V}-bookworm\n", want: []string{"golang:1.26-bookworm"}},
		{name: "arg from arg", file: "ARG S=bookworm\nARG B=debian:${S}-slim\nFROM $B\n", want: []string{"debian:bookworm-slim"}},
		{name: "build arg wins", file: "ARG S=bookworm\nARG B=debian:${S}-slim\nFROM ${B}\n",
			args: map[string]string{"B": "127.0.0.1:5000/base:1"}, want: []string{"127.0.0.1:5000/base:1"}},
		{name: "build arg feeds a default", file: "ARG S=bookworm\nARG B=debian:${S}-slim\nFROM ${B}\n",
			args: map[string]string{"S": "trixie"}, want: []string{"debian:trixie-slim"}},
		{name: "stage is not an image", file: "FROM golang:1 AS go\nFROM debian:12\nCOPY --from=go /usr/local/go /usr/local/go\n",
			want: []string{"golang:1", "debian:12"}},
		{name: "stage by index", file: "FROM golang:1\nFROM debian:12\nCOPY --from=0 /a /b\n", want: []string{"golang:1", "debian:12"}},
		{name: "copy from an image", file: "FROM debian:12\nCOPY --from=busybox:1 /bin/busybox /bin/\n", want: []string{"debian:12", "busybox:1"}},
		{name: "scratch and repeats", file: "FROM scratch AS a\nFROM debian:12 AS b\nFROM debian:12\n", want: []string{"debian:12"}},
		{name: "from a stage", file: "FROM debian:12 AS base\nFROM base\n", want: []string{"debian:12"}},
		{name: "stage arg does not reach FROM", file: "ARG B=debian:12\nFROM $B\nARG B=other:1\nFROM $B\n", want: []string{"debian:12"}},
		{name: "continuation and comments", file: "# c\nARG \\\n  B=debian:12\nFROM \\\n  ${B} \\\n  AS x\n", want: []string{"debian:12"}},
		{name: "platform flag", file: "FROM --platform=linux/amd64 debian:12\n", want: []string{"debian:12"}},
		{name: "no from", file: "ARG A=1\n", err: "no FROM"},
		{name: "empty", file: "", err: "Dockerfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BaseImages([]byte(tt.file), tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("BaseImages = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The real Dockerfile builds from Debian and the Go image, both pinned by
// ARGs a mirror can replace.
func TestBaseImagesOfTheSandboxDockerfile(t *testing.T) {
	t.Parallel()
	df, err := fs.ReadFile(deploy.SandboxContext(), Dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := BaseImages(df, nil)
	if err != nil || !slices.Equal(got, []string{"golang:1.26-bookworm", "debian:bookworm-slim"}) {
		t.Fatalf("bases %q, %v", got, err)
	}
	got, _ = BaseImages(df, map[string]string{"BASE_IMAGE": "mirror.example/debian:12", "GO_IMAGE": "mirror.example/golang:1"})
	if !slices.Equal(got, []string{"mirror.example/golang:1", "mirror.example/debian:12"}) {
		t.Fatalf("mirrored bases %q", got)
	}
}

func FuzzBaseImages(f *testing.F) {
	f.Add("ARG B=debian:12\nFROM ${B} AS x\nCOPY --from=x /a /b\n", "B", "x:1")
	f.Add("FROM scratch\n", "", "")
	f.Add("FROM $A$B${C:-d}\n", "A", "")
	f.Fuzz(func(t *testing.T, file, k, v string) {
		images, err := BaseImages([]byte(file), map[string]string{k: v})
		if err != nil {
			return
		}
		for _, im := range images {
			if im == "" || strings.EqualFold(im, "scratch") {
				t.Fatalf("base %q in %q", im, images)
			}
		}
	})
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
