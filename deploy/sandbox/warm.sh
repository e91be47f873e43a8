#!/bin/sh
# warm.sh fills /cache, the directory each repository's cache volume starts
# from (selfcode mounts a per-repository volume there and the engine copies
# this content into a new one): the standard library packages most Go
# repositories import, compiled, vetted and tested the way `go build`, `go
# vet` and `go test` do it, so a repository's first job compiles mostly its
# own packages. About 100 MiB, where all of std would be nearly 1 GiB to copy
# into every repository's cache. Runs as the sandbox user, offline.
set -eu
export HOME=/tmp GOPATH=/tmp/go GOCACHE=/cache/go-build GOMODCACHE=/cache/gomod GOTOOLCHAIN=local GOFLAGS= GOPROXY=off
mod=$(mktemp -d)
cd "$mod"
printf 'module warm\n\ngo 1.21\n' >go.mod
{
	printf 'package warm\n\nimport (\n'
	for p in bufio bytes context crypto/sha256 encoding/json errors flag fmt io log log/slog math \
		net/http net/http/httptest os os/exec os/signal path/filepath reflect regexp sort strconv \
		strings sync sync/atomic time unicode; do
		printf '\t_ "%s"\n' "$p"
	done
	printf ')\n'
} >warm.go
printf 'package warm\n\nimport "testing"\n\nfunc TestWarm(t *testing.T) {}\n' >warm_test.go
go build ./...
go vet ./...
go test ./... >/dev/null
go test -json ./... >/dev/null
cd /
rm -rf "$mod" /tmp/go
go clean -testcache
