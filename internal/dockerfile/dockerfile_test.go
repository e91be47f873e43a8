package dockerfile

import (
	"errors"
	"slices"
	"strings"
	"testing"
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
		{name: "an ARG without default", file: "ARG BASE\nFROM ${BASE:-debian:12}\n", want: []string{"debian:12"}},
		{name: "stage is not an image", file: "FROM golang:1 AS go\nFROM debian:12\nCOPY --from=go /usr/local/go /usr/local/go\n",
			want: []string{"golang:1", "debian:12"}},
		{name: "stages in any case and by number", file: "FROM golang:1.23 AS Build\nRUN x\nFROM build\nFROM scratch\nCOPY --from=BUILD /a /a\nCOPY --from=0 /b /b\n",
			want: []string{"golang:1.23"}},
		{name: "COPY and ADD --from an image", file: "FROM alpine:3\nCOPY --from=nginx:1 /etc/nginx /etc/nginx\nADD --from=alpine:3 /x /y\n",
			want: []string{"alpine:3", "nginx:1"}},
		{name: "scratch and repeats", file: "FROM scratch AS a\nFROM debian:12 AS b\nFROM debian:12\n", want: []string{"debian:12"}},
		{name: "scratch alone", file: "FROM scratch\nCOPY x /x\n", want: nil},
		{name: "from a stage", file: "FROM debian:12 AS base\nFROM base\n", want: []string{"debian:12"}},
		{name: "stage arg does not reach FROM", file: "ARG B=debian:12\nFROM $B\nARG B=other:1\nFROM $B\n", want: []string{"debian:12"}},
		{name: "continuation and comments", file: "# c\nARG \\\n  B=debian:12\nFROM \\\n  ${B} \\\n  AS x\n", want: []string{"debian:12"}},
		{name: "escape directive", file: "# escape=`\nFROM windows `\n  AS w\n", want: []string{"windows"}},
		{name: "platform flag", file: "FROM --platform=linux/amd64 debian:12\n", want: []string{"debian:12"}},
		{name: "an image named by an unset argument", file: "ARG BASE\nFROM $BASE\n", err: "names no image"},
		{name: "no from", file: "ARG A=1\n", err: "no FROM"},
		{name: "empty", file: "", err: "not a valid Dockerfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BaseImages([]byte(tt.file), tt.args)
			if tt.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want ErrInvalid saying %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("BaseImages = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func FuzzBaseImages(f *testing.F) {
	f.Add("ARG B=debian:12\nFROM ${B} AS x\nCOPY --from=x /a /b\n", "B", "x:1")
	f.Add("FROM scratch\n", "", "")
	f.Add("FROM $A$B${C:-d}\n", "A", "")
	f.Fuzz(func(t *testing.T, file, k, v string) {
		images, err := BaseImages([]byte(file), map[string]string{k: v})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		for _, im := range images {
			if im == "" || strings.EqualFold(im, "scratch") {
				t.Fatalf("base %q in %q", im, images)
			}
		}
	})
}
