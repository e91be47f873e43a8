#!/bin/sh
# Regenerates the captured `go test -json`, `go build` and `go vet` outputs
# in testdata/gotest from the throwaway modules in testdata/modules. Each
# module is copied to a temporary directory first, so the outputs hold /tmp
# paths like a checkout in a sandbox would. Run from pipeline/verify:
#   sh testdata/gen.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
out="$here/gotest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOTOOLCHAIN=local GOPROXY=off GOWORK=off GOFLAGS=
mkdir -p "$out"
for m in mix mixhead broken brokenbase hang vetfail; do
	cp -R "$here/modules/$m" "$tmp/$m"
done
(cd "$tmp/mix" && go test -json ./... >"$out/mix.jsonl" 2>&1)
(cd "$tmp/mixhead" && go test -json ./... >"$out/mixhead.jsonl" 2>&1)
(cd "$tmp/broken" && go test -json ./... >"$out/broken.jsonl" 2>&1)
# Go before 1.24 printed build errors as text on stderr.
(cd "$tmp/broken" && GODEBUG=gotestjsonbuildtext=1 go test -json ./... >"$out/broken-text.jsonl" 2>&1)
(cd "$tmp/broken" && go build ./... >"$out/broken-build.txt" 2>&1)
(cd "$tmp/broken" && go vet ./... >"$out/broken-vet.txt" 2>&1)
(cd "$tmp/brokenbase" && go test -json ./... >"$out/brokenbase.jsonl" 2>&1)
(cd "$tmp/hang" && go test -json -timeout 2s ./... >"$out/hang.jsonl" 2>&1)
(cd "$tmp/vetfail" && go test -json ./... >"$out/vetfail.jsonl" 2>&1)
exit 0
