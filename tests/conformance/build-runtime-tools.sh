#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds OCI runtime-tools' validation suite (the runtimetest binary and one
# program per validation/*/NAME.go) from the upstream tarball in
# ../shared/third_party/ with execaff's patches applied (contrib/runtime-tools/
# *.patch, in name order: the process.execCPUAffinity programs), and prints
# the directory that holds it.
#
# Usage: build-runtime-tools.sh [--tarball FILE] [--cache-parent DIR] [--print-cached]
#
#   --tarball FILE       the source (default $EXECAFF_RTOOLS_TARBALL, else
#                        ../shared/third_party/runtime-tools-260e151.tar.xz
#                        beside the checkout)
#   --cache-parent DIR   where the built tree is kept (default
#                        $EXECAFF_RTOOLS_CACHE_PARENT, else /var/tmp)
#   --print-cached       build nothing: print the directory if it is already
#                        complete, else exit 1
#
# The result is DIR/execaff-rtools-<first 16 hex of the key>, the key being
# the sha256 of the tarball's sha256 and the patches' (tests/third-party-build.sh):
# a cache keyed by the source, so a changed tarball or patch builds anew and
# an unchanged one is built once per machine.  It holds runtimetest,
# rootfs-<arch>.tar.gz, validation/NAME/NAME.t, programs.txt (the program
# names, one a line) and SOURCE (what it was built from: tarball, patches,
# key, and with which Go).
# The validation programs expect to run in that directory (they copy
# ./runtimetest and untar ./rootfs-<arch>.tar.gz into each bundle).
#
# The build runs in a temporary directory beside the cache, which is renamed
# into place only when complete: an interrupted build leaves no half cache
# (and a later run removes what a killed one left).  Concurrent runs wait
# for each other (flock on the cache parent).  Needs Go >= 1.19 (Debian 12's golang-go,
# installed by contrib/setup-debian.sh); GOPROXY=off and -mod=vendor: the
# tarball's vendor/ is the only source of modules.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/third-party-build.sh
. "$here/../third-party-build.sh"

die() { echo "build-runtime-tools: $*" >&2; exit 1; }

third_party_args build-runtime-tools \
    "${EXECAFF_RTOOLS_TARBALL:-$here/../../../shared/third_party/runtime-tools-260e151.tar.xz}" \
    "${EXECAFF_RTOOLS_CACHE_PARENT:-/var/tmp}" "$@"
patch_dir=$here/../../contrib/runtime-tools
patches=()
for p in "$patch_dir"/*.patch; do
    [ -f "$p" ] && patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done
[ ${#patches[@]} -gt 0 ] || die "no patch in '$patch_dir' (the execCPUAffinity programs)"
third_party_out execaff-rtools "${patches[@]}"

# Complete: SOURCE names this tarball's hash and every listed program is
# there.  SOURCE is written last, so a tree without it was never finished.
complete() {
    local dir=$1 name
    grep -qx "sha256 $sha" "$dir/SOURCE" 2>/dev/null || return 1
    grep -qx "key $key" "$dir/SOURCE" || return 1
    [ -x "$dir/runtimetest" ] && [ -s "$dir/programs.txt" ] || return 1
    while read -r name; do
        [ -x "$dir/validation/$name/$name.t" ] || return 1
    done <"$dir/programs.txt"
}

if complete "$out"; then
    echo "$out"
    exit 0
fi
[ "$print_cached" = 1 ] && die "no complete build in '$out' (run $0)"

command -v go >/dev/null || die "go not found: install golang-go (contrib/setup-debian.sh does)"
command -v make >/dev/null || die "make not found: install make"

# The lock is the cache parent itself (a lock file would be left behind).
exec 9<"$cache_parent"
flock 9
if complete "$out"; then            # built by whoever held the lock
    echo "$out"
    exit 0
fi
# Under the lock nobody else is building: what is left is a killed run's.
rm -rf "$out" "$out".tmp.*

tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

echo "build-runtime-tools: building $(basename "$tarball") (sha256 $sha) in $tmp" >&2
start=$SECONDS
mkdir "$tmp/src" "$tmp/out"
tar -xJf "$tarball" -C "$tmp/src" --strip-components=1 \
    || die "cannot extract '$tarball'"
[ -f "$tmp/src/Makefile" ] && [ -d "$tmp/src/validation" ] && [ -d "$tmp/src/vendor" ] \
    || die "'$tarball' is not a runtime-tools tree with vendor/ (no Makefile, validation/ or vendor/ at its top)"
command -v patch >/dev/null || die "patch not found: install patch"
for p in "${patches[@]}"; do
    patch -d "$tmp/src" -p1 --forward --batch --quiet <"$p" >"$tmp/patch.log" 2>&1 \
        || { cat "$tmp/patch.log" >&2; die "'$p' does not apply to '$tarball'"; }
done

# The build's own caches stay in the temporary directory: nothing in $HOME,
# nothing fetched (GOTOOLCHAIN=local: a newer go must not try to download
# the toolchain go.mod names).
export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on \
    GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOTMPDIR=$tmp
# A failed build's log is kept beside the cache, until a build succeeds.
rm -f "$out.build.log"
if ! make -C "$tmp/src" runtimetest validation-executables >"$tmp/build.log" 2>&1; then
    tail -n 30 "$tmp/build.log" >&2
    cp "$tmp/build.log" "$out.build.log"
    die "make runtimetest validation-executables failed with $(go version) (whole log: $out.build.log)"
fi

arch=$(go env GOARCH)
[ -f "$tmp/src/rootfs-$arch.tar.gz" ] || die "the tarball has no rootfs-$arch.tar.gz for this machine's architecture"
cp "$tmp/src/runtimetest" "$tmp/src/rootfs-$arch.tar.gz" "$tmp/src/LICENSE" "$tmp/out/"
# The programs the Makefile builds: every validation/**/*.go but util's.
(cd "$tmp/src" && find validation -name '*.go' -not -path 'validation/util/*') | sort |
while read -r go_file; do
    name=$(basename "$go_file" .go)
    [ "$(dirname "$go_file")" = "validation/$name" ] \
        || die "unexpected layout: $go_file is not validation/NAME/NAME.go"
    [ -x "$tmp/src/validation/$name/$name.t" ] || die "make did not build validation/$name/$name.t"
    mkdir -p "$tmp/out/validation/$name"
    cp "$tmp/src/validation/$name/$name.t" "$tmp/out/validation/$name/"
    echo "$name"
done >"$tmp/out/programs.txt"
count=$(wc -l <"$tmp/out/programs.txt")
[ "$count" -gt 0 ] || die "no validation program found in '$tarball'"
{
    echo "tarball $(basename "$tarball")"
    echo "sha256 $sha"
    for p in "${patches[@]}"; do
        echo "patch $(basename "$p") $(sha256sum "$p" | cut -d' ' -f1)"
    done
    echo "key $key"
    echo "go $(go version | cut -d' ' -f3-)"
    echo "programs $count"
} >"$tmp/out/SOURCE"

mv -T "$tmp/out" "$out"
echo "build-runtime-tools: $count programs in $out ($((SECONDS - start)) s)" >&2
echo "$out"
