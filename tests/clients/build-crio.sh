#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds CRI-O (crio and pinns) from the unmodified upstream tarball in
# ../shared/third_party/, for tests/clients/test_crio_live.py, and prints
# the directory that holds it.
#
# Usage: build-crio.sh [--tarball FILE] [--cache-parent DIR] [--print-cached]
#
#   --tarball FILE       the source (default $EXECAFF_CRIO_TARBALL, else
#                        ../shared/third_party/cri-o-1.34.11.tar.xz beside
#                        the checkout)
#   --cache-parent DIR   where the built tree is kept (default
#                        $EXECAFF_CRIO_CACHE_PARENT, else /var/tmp)
#   --print-cached       build nothing: print the directory if it is already
#                        complete, else exit 1
#
# The result is DIR/execaff-crio-<first 16 hex of the tarball's sha256>: a
# cache keyed by the source, so a changed tarball builds anew and an
# unchanged one is built once per machine.  It holds bin/crio, bin/pinns,
# VERSION (crio --version) and SOURCE (the tarball, its hash, the Go and
# the build tags), written last.
#
# Go: the tarball's go.mod says go 1.24.6, newer than bookworm's 1.19 and
# trixie's 1.24.4, so the build fetches Debian sid's golang-1.26 (statically
# linked, it runs on bookworm) with a private apt list
# (contrib/private-apt.sh) and unpacks it in the build directory; the host's
# apt sources are never touched and nothing of it is kept.  GOPROXY=off,
# -mod=vendor and GOTOOLCHAIN=local: the tarball's vendor/ is the only
# source of modules, and no toolchain is downloaded.  cgo needs gcc,
# libseccomp-dev and libsqlite3-dev (the tarball leaves out go-sqlite3's
# bundled amalgamation, hence the libsqlite3 tag); pinns is linked
# statically (libc6-dev).  All from contrib/setup-debian.sh.
#
# The build runs in a temporary directory beside the cache, renamed into
# place only when complete: an interrupted build leaves no half cache (and
# the next run removes what a killed one left).  Concurrent runs wait for
# each other (a flock on the tarball).  2 to 4.5 minutes on this 2-CPU machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src_root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/third-party-build.sh
. "$src_root/tests/third-party-build.sh"

# The Go toolchain: Debian sid's golang-1.26, whichever 1.26.x sid has
# (1.26.10 when this was written): a pinned Debian revision would vanish
# from sid within weeks and fail every fresh machine.  What matters is
# checked instead: at least the go.mod's version, and the two packages alike.
GO_SUITE=sid
GO_PACKAGES=(golang-1.26-go golang-1.26-src)
GO_ROOT=usr/lib/go-1.26
# What CRI-O's Makefile would pick on a Debian host without btrfs,
# apparmor, selinux or libsubid headers, plus the system libsqlite3 (the
# tarball has no sqlite3-binding.c).
BUILD_TAGS="containers_image_ostree_stub libsqlite3 seccomp containers_image_openpgp exclude_graphdriver_btrfs"

die() { echo "build-crio: $*" >&2; exit 1; }

third_party_args build-crio \
  "${EXECAFF_CRIO_TARBALL:-$src_root/../shared/third_party/cri-o-1.34.11.tar.xz}" \
  "${EXECAFF_CRIO_CACHE_PARENT:-/var/tmp}" "$@"
third_party_out execaff-crio

complete() {
  grep -qx "sha256 $sha" "$out/SOURCE" 2>/dev/null &&
    [ -x "$out/bin/crio" ] && [ -x "$out/bin/pinns" ] && [ -s "$out/VERSION" ]
}

if complete; then
  echo "$out"
  exit 0
fi
[ "$print_cached" = 1 ] && die "no complete build in '$out' (run $0)"

[ "$(id -u)" = 0 ] || die "run as root (apt-get download of the Go toolchain)"
for tool in apt-get dpkg-deb gcc make xz flock; do
  command -v "$tool" >/dev/null || die "$tool not found: run contrib/setup-debian.sh first"
done
# shellcheck source=contrib/private-apt.sh
. "$src_root/contrib/private-apt.sh"

# The lock is the tarball itself (readable is enough for flock; a lock file
# would be left behind).
exec 9<"$tarball"
flock 9
if complete; then # built by whoever held the lock
  echo "$out"
  exit 0
fi
# Under the lock nobody else is building: what is left is a killed run's.
rm -rf "$out" "$out".tmp.*

tmp=$(mktemp -d "$out.tmp.XXXXXX")
chmod 755 "$tmp" # apt's download method runs as _apt and writes below it
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

echo "build-crio: building $(basename "$tarball") (sha256 $sha) in $tmp" >&2
start=$SECONDS

# -- the source first: a wrong tarball fails before any download
mkdir "$tmp/src" "$tmp/out" "$tmp/out/bin"
tar -xJf "$tarball" -C "$tmp/src" --strip-components=1 || die "cannot extract '$tarball'"
if ! [ -f "$tmp/src/go.mod" ] || ! [ -d "$tmp/src/cmd/crio" ] || ! [ -d "$tmp/src/vendor" ] ||
  ! [ -f "$tmp/src/pinns/Makefile" ]; then
  die "'$tarball' is not a CRI-O tree with vendor/ (no go.mod, cmd/crio, vendor/ or pinns/ at its top)"
fi
go_min=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$tmp/src/go.mod")
[ -n "$go_min" ] || die "'$tarball': its go.mod has no 'go X.Y' line"

# -- the Go toolchain
mkdir -p "$tmp/debs" "$tmp/toolchain"
private_apt_update "$tmp/apt" "$GO_SUITE" ||
  die "apt-get update of a private $GO_SUITE list ($tmp/apt/sources.list) failed"
private_apt_download "$tmp/apt" "$tmp/debs" "${GO_PACKAGES[@]}" ||
  die "cannot download ${GO_PACKAGES[*]} from Debian $GO_SUITE (gone from $GO_SUITE? then name a newer golang-X.Y in GO_PACKAGES)"
versions=$(for deb in "$tmp"/debs/*.deb; do dpkg-deb -f "$deb" Version; done | sort -u)
[ "$(wc -l <<<"$versions")" = 1 ] ||
  die "${GO_PACKAGES[*]} came at different versions (${versions//$'\n'/, }): $GO_SUITE is mid-upload, retry later"
for deb in "$tmp"/debs/*.deb; do dpkg-deb -x "$deb" "$tmp/toolchain"; done
export GOROOT=$tmp/toolchain/$GO_ROOT
go=$GOROOT/bin/go
got=$("$go" version 2>&1) || die "the unpacked Go does not run: $got"
have=$(sed -n 's/^go version go\([0-9][0-9.]*\) .*/\1/p' <<<"$got")
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$go_min" "$have" | sort -V | head -n 1)" != "$go_min" ]; then
  die "the unpacked Go says '$got'; the tarball's go.mod needs go $go_min or newer"
fi

# The build's caches stay in the temporary directory: nothing in $HOME.
export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on CGO_ENABLED=1 \
  GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOTMPDIR=$tmp TMPDIR=$tmp
rm -f "$out.build.log" # a failed build's log is kept beside the cache until one succeeds
if ! (cd "$tmp/src" && "$go" build -trimpath -tags "$BUILD_TAGS" -o "$tmp/out/bin/crio" ./cmd/crio &&
  make -C pinns) >"$tmp/build.log" 2>&1; then
  tail -n 30 "$tmp/build.log" >&2
  cp "$tmp/build.log" "$out.build.log"
  die "the build failed with $got (whole log: $out.build.log)"
fi
[ -x "$tmp/src/bin/pinns" ] || die "make -C pinns built no bin/pinns"
cp "$tmp/src/bin/pinns" "$tmp/out/bin/"
cp "$tmp/src/LICENSE" "$tmp/out/"
"$tmp/out/bin/crio" --version >"$tmp/out/VERSION" 2>&1 ||
  die "the built crio does not run: $(cat "$tmp/out/VERSION")"
{
  echo "tarball $(basename "$tarball")"
  echo "sha256 $sha"
  echo "go ${got#go version }"
  echo "tags $BUILD_TAGS"
} >"$tmp/out/SOURCE"

mv -T "$tmp/out" "$out"
echo "build-crio: $(head -n 1 "$out/VERSION") in $out ($((SECONDS - start)) s)" >&2
echo "$out"
