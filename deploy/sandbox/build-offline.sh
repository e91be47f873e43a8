#!/usr/bin/env bash
# build-offline.sh builds the selfcode sandbox image without any container
# registry: a minimal Debian root filesystem from the machine's configured apt
# mirror (debootstrap), the host's Go toolchain copied in, then `docker import`.
#
# Usage: deploy/sandbox/build-offline.sh [--force] [--image NAME:TAG]
#
# When the image already exists and was built from this recipe (by this
# script, or by docker build from the Dockerfile beside it: both make the
# same image) this is a fast no-op; --force rebuilds it.
# Environment overrides:
#   SELFCODE_SANDBOX_IMAGE   image name (default selfcode-sandbox:latest)
#   SELFCODE_DEBIAN_MIRROR   Debian archive URL (default: read from apt's sources)
#   SELFCODE_DEBIAN_SUITE    Debian suite (default: the host's codename)
#   GOROOT                   Go toolchain to copy (default: `go env GOROOT`, /usr/local/go)
set -euo pipefail

image="${SELFCODE_SANDBOX_IMAGE:-selfcode-sandbox:latest}"
force=0
while [ $# -gt 0 ]; do
	case "$1" in
	--force) force=1 ;;
	--image) shift; image="${1:?--image needs a value}" ;;
	-h | --help) sed -n '2,14p' "$0"; exit 0 ;;
	*) echo "build-offline.sh: unknown argument: $1" >&2; exit 2 ;;
	esac
	shift
done

sandbox_uid=10001
sandbox_gid=10001
packages="ca-certificates,git,make,gcc,libc6-dev"
# Installed with apt-get after debootstrap (debootstrap's resolver is not
# meant for trees as deep as npm's). Debian's node finds the global modules
# (typescript, jest, mocha) in /usr/share/nodejs without any registry.
toolchains="python3 python3-venv python3-pip python3-pytest nodejs npm node-typescript jest mocha"
started=$(date +%s)

say() { printf '[sandbox-image %3ss] %s\n' "$(($(date +%s) - started))" "$*"; }
die() { printf 'build-offline.sh: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker CLI not found"
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || die "the Docker engine is not reachable"

# --- Go toolchain ------------------------------------------------------------
goroot="${GOROOT:-}"
if [ -z "$goroot" ]; then
	if command -v go >/dev/null 2>&1; then
		goroot=$(go env GOROOT)
	else
		goroot=/usr/local/go
	fi
fi
[ -x "$goroot/bin/go" ] || die "no Go toolchain at $goroot (set GOROOT)"
goversion=$("$goroot/bin/go" env GOVERSION)

warm="$(dirname "$0")/warm.sh"
[ -r "$warm" ] || die "warm.sh not found beside $0"
recipe=$( (cat "$0" "$warm"; echo "$goversion") | sha256sum | cut -c1-16)
# The label `selfcode image build` gives an image it builds from the
# Dockerfile: "dockerfile-" and the hash of the Dockerfile and warm.sh.
dockerfile_recipe=none
if [ -r "$(dirname "$0")/Dockerfile" ]; then
	dockerfile_recipe=dockerfile-$(cat "$(dirname "$0")/Dockerfile" "$warm" | sha256sum | cut -c1-16)
fi
old_id=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
if [ "$force" = 0 ] && [ -n "$old_id" ]; then
	old_recipe=$(docker image inspect --format '{{index .Config.Labels "io.selfcode.recipe"}}' "$image" 2>/dev/null || true)
	if [ "$old_recipe" = "$recipe" ] || [ "$old_recipe" = "$dockerfile_recipe" ]; then
		say "$image is built from this recipe ($old_recipe); nothing to do (use --force to rebuild)"
		exit 0
	fi
	say "$image was built from recipe '${old_recipe:-none}', not $recipe: rebuilding"
fi

# Root is needed by debootstrap (device nodes, chroot, file ownership).
sudo=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || die "run as root (debootstrap needs it)"
	sudo="sudo"
fi

# --- Debian suite and mirror -------------------------------------------------
suite="${SELFCODE_DEBIAN_SUITE:-}"
if [ -z "$suite" ] && [ -r /etc/os-release ]; then
	suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
fi
[ -n "$suite" ] || die "cannot tell the Debian suite; set SELFCODE_DEBIAN_SUITE"

mirror="${SELFCODE_DEBIAN_MIRROR:-}"
keyring=""
mirror_source="SELFCODE_DEBIAN_MIRROR"
if [ -z "$mirror" ]; then
	# deb822 files: the first enabled "deb" stanza listing $suite and "main".
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		found=$(awk -v suite="$suite" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") &&
				    (" " comps " ") ~ / main / && enabled != "no" && uri != "") {
					print uri "\t" signed; exit
				}
				types = ""; suites = ""; comps = ""; uri = ""; signed = ""; enabled = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
				if (key == "types") types = $0
				else if (key == "suites") suites = $0
				else if (key == "components") comps = $0
				else if (key == "uris") { split($0, u, " "); uri = u[1] }
				else if (key == "signed-by") signed = $0
				else if (key == "enabled") enabled = tolower($0)
			}
			END { flush() }' "$f")
		if [ -n "$found" ]; then
			mirror=${found%%$'\t'*}
			keyring=${found#*$'\t'}
			mirror_source="$f"
			break
		fi
	done
fi
if [ -z "$mirror" ]; then
	# One-line format: deb [options] URI suite components...
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		found=$(awk -v suite="$suite" '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
				if ($(i + 1) != suite) next
				for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit }
			}' "$f")
		if [ -n "$found" ]; then
			mirror="$found"
			mirror_source="$f"
			break
		fi
	done
fi
[ -n "$mirror" ] || die "no Debian mirror for '$suite' found in apt's sources; set SELFCODE_DEBIAN_MIRROR"
case "$keyring" in /*) [ -r "$keyring" ] || keyring="" ;; *) keyring="" ;; esac

# --- debootstrap ---------------------------------------------------------------
if ! command -v debootstrap >/dev/null 2>&1; then
	say "installing debootstrap with apt-get"
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/selfcode-sandbox.XXXXXX")
cleanup() {
	$sudo umount "$work/rootfs/proc" 2>/dev/null || true
	$sudo rm -rf --one-file-system "$work"
}
trap cleanup EXIT
rootfs="$work/rootfs"

say "building $image: Debian $suite (minbase) from the mirror configured in $mirror_source, $goversion from $goroot"
say "debootstrap: $packages (this takes a few minutes)"
keyring_arg=()
[ -n "$keyring" ] && keyring_arg=(--keyring="$keyring")
# The mirror's address is not echoed: logs of this script may be kept.
mirror_re=$(printf '%s' "$mirror" | sed 's/[][\.*^$|/]/\\&/g')
$sudo debootstrap --variant=minbase --include="$packages" "${keyring_arg[@]}" \
	"$suite" "$rootfs" "$mirror" 2>&1 | sed -u -e "s/$mirror_re/<apt mirror>/g" -e 's/^/    /'
[ "${PIPESTATUS[0]}" = 0 ] || die "debootstrap failed"

say "apt-get install: $toolchains"
# The mirror is written into the root file system only for this step and
# removed right after it: the image never names a host.
echo "deb $mirror $suite main" | $sudo tee "$rootfs/etc/apt/sources.list" >/dev/null
$sudo mount -t proc proc "$rootfs/proc"
$sudo chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
	sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends '"$toolchains"' >/dev/null' 2>&1 |
	sed -u -e "s/$mirror_re/<apt mirror>/g" -e 's/^/    /'
status=${PIPESTATUS[0]}
$sudo umount "$rootfs/proc"
[ "$status" = 0 ] || die "apt-get install in the root file system failed"
$sudo rm -f "$rootfs/etc/apt/sources.list"
$sudo find "$rootfs/etc/apt/sources.list.d" -mindepth 1 -delete 2>/dev/null || true

say "trimming caches, documentation and locales"
$sudo rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
	"$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
	"$rootfs"/usr/share/locale/* "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old \
	"$rootfs"/etc/resolv.conf "$rootfs"/etc/hostname

say "copying the Go toolchain ($goversion)"
$sudo mkdir -p "$rootfs/usr/local/go"
tar -C "$goroot" --exclude=./test --exclude=./doc --exclude=./misc --exclude=./api -cf - . |
	$sudo tar -C "$rootfs/usr/local/go" -xf -

say "adding the sandbox user (uid $sandbox_uid) and /work"
echo "sandbox:x:$sandbox_uid:$sandbox_gid:selfcode sandbox:/tmp:/bin/sh" | $sudo tee -a "$rootfs/etc/passwd" >/dev/null
echo "sandbox:x:$sandbox_gid:" | $sudo tee -a "$rootfs/etc/group" >/dev/null
$sudo mkdir -p "$rootfs/work" "$rootfs/cache"
$sudo chown "$sandbox_uid:$sandbox_gid" "$rootfs/work" "$rootfs/cache"

say "warming /cache: the Go standard library compiled, as the sandbox user, offline"
$sudo install -m 0755 "$warm" "$rootfs/tmp/warm.sh"
$sudo mount -t proc proc "$rootfs/proc"
$sudo chroot --userspec="$sandbox_uid:$sandbox_gid" "$rootfs" /usr/bin/env -i \
	PATH=/usr/local/go/bin:/usr/bin:/bin /tmp/warm.sh 2>&1 | sed -u 's/^/    /'
status=${PIPESTATUS[0]}
$sudo umount "$rootfs/proc"
$sudo rm -f "$rootfs/tmp/warm.sh"
[ "$status" = 0 ] || die "warming /cache failed"
say "/cache holds $($sudo du -sh "$rootfs/cache" | cut -f1)"
printf 'selfcode-sandbox\nrecipe=%s\ndebian=%s\ngo=%s\npython=%s\nnode=%s\nbuilt=%s\n' "$recipe" "$suite" "$goversion" \
	"$($sudo chroot "$rootfs" python3 --version 2>&1)" "$($sudo chroot "$rootfs" node --version 2>&1)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" |
	$sudo tee "$rootfs/etc/selfcode-sandbox-release" >/dev/null

say "importing into Docker as $image"
$sudo tar -C "$rootfs" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . |
	docker import \
		--change 'ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENV HOME=/tmp' \
		--change 'ENV GOPATH=/tmp/go' \
		--change 'ENV GOCACHE=/tmp/.cache/go-build' \
		--change 'ENV GOTOOLCHAIN=local' \
		--change 'ENV XDG_CACHE_HOME=/tmp/.cache' \
		--change 'ENV PIP_CACHE_DIR=/tmp/.cache/pip' \
		--change 'ENV PIP_DISABLE_PIP_VERSION_CHECK=1' \
		--change 'ENV npm_config_cache=/tmp/.npm' \
		--change 'ENV npm_config_update_notifier=false' \
		--change 'ENV npm_config_fund=false' \
		--change 'ENV npm_config_audit=false' \
		--change "LABEL io.selfcode.recipe=$recipe" \
		--change 'LABEL io.selfcode.cache=/cache' \
		--change "USER $sandbox_uid:$sandbox_gid" \
		--change 'WORKDIR /work' \
		--change 'CMD ["/bin/sh"]' \
		--message "selfcode sandbox: Debian $suite minbase + Python, Node.js + $goversion" \
		- "$image" >/dev/null

new_id=$(docker image inspect --format '{{.Id}}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
	docker image rm "$old_id" >/dev/null 2>&1 && say "removed the previous image ${old_id#sha256:}" ||
		say "previous image ${old_id#sha256:} is still in use; left in place"
fi
size=$(docker image inspect --format '{{.Size}}' "$image")
say "done: $image ($((size / 1024 / 1024)) MiB)"
