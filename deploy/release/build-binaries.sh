#!/usr/bin/env bash
# build-binaries.sh builds the release binaries of selfcode and their
# checksums: what the release workflow (.github/workflows/release.yml)
# attaches to a GitHub release, and what `make release-dry-run` builds
# locally to prove it works.
#
# Usage: deploy/release/build-binaries.sh VERSION OUTDIR
#
# OUTDIR gets selfcode-<os>-<arch> for linux and darwin on amd64 and arm64
# (static, CGO_ENABLED=0, so cross-compiling needs nothing but Go) and
# SHA256SUMS, which is checked after it is written. TARGETS overrides the
# list ("linux/amd64 darwin/arm64 …").
set -euo pipefail

version="${1:?usage: build-binaries.sh VERSION OUTDIR}"
out="${2:?usage: build-binaries.sh VERSION OUTDIR}"
targets="${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"
cd "$(dirname "$0")/../.."

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then sha256sum "$@"; else shasum -a 256 "$@"; fi
}

mkdir -p "$out"
names=()
for target in $targets; do
	os=${target%/*}
	arch=${target#*/}
	name="selfcode-$os-$arch"
	echo "building $name ($version)"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X main.version=$version" -o "$out/$name" ./cmd/selfcode
	names+=("$name")
done
(cd "$out" && sha256 "${names[@]}" >SHA256SUMS && sha256 -c SHA256SUMS >/dev/null)
echo "checksums in $out/SHA256SUMS:"
cat "$out/SHA256SUMS"
