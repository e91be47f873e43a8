#!/usr/bin/env bash
# The test's stand-in for deploy/sandbox/build-offline.sh: the same arguments
# (--image NAME [--force]), a progress line, and a `docker import` of a
# one-file root file system with the cache label, in a second rather than
# the real debootstrap's minutes.
set -euo pipefail
image=""
while [ $# -gt 0 ]; do
	case "$1" in
	--image) shift; image="$1" ;;
	--force) ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[ -r "$(dirname "$0")/warm.sh" ] || { echo "warm.sh is not beside $0" >&2; exit 1; }
echo "[sandbox-image   0s] test offline build of $image"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo offline >"$root/built-offline"
tar -C "$root" -cf - . | docker import --change 'LABEL io.selfcode.cache=/cache' - "$image" >/dev/null
echo "[sandbox-image   0s] done: $image"
