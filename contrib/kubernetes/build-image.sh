#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds the node installer image (Containerfile next to this script) with
# podman from the built, statically linked execaff-shim and Debian's
# busybox-static; pulls nothing.
#   build-image.sh [--shim FILE] [--busybox FILE] [--tag TAG]
# Defaults: build/shim/execaff-shim, /bin/busybox,
# localhost/execaff/node-installer:dev.  Then push TAG to your registry and
# set it in daemonset.yaml.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
shim=$src/build/shim/execaff-shim
busybox=/bin/busybox
tag=localhost/execaff/node-installer:dev
while [ $# -gt 0 ]; do
  case $1 in
    --shim) shim=${2:?}; shift ;;
    --busybox) busybox=${2:?}; shift ;;
    --tag) tag=${2:?}; shift ;;
    *) echo "build-image: unknown argument \"$1\"" >&2; exit 2 ;;
  esac
  shift
done
for f in "$shim" "$busybox"; do
  [ -x "$f" ] || { echo "build-image: \"$f\": no such executable" >&2; exit 1; }
  # The image has no libraries: both must be static (no ELF interpreter).
  if readelf -l "$f" | grep -q 'Requesting program interpreter'; then
    echo "build-image: \"$f\" is dynamically linked; the image needs static binaries" >&2
    exit 1
  fi
done
stage=$(mktemp -d "${TMPDIR:-/tmp}/execaff-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cp "$busybox" "$stage/busybox"
cp "$shim" "$stage/execaff-shim"
cp "$here/install-node.sh" "$stage/"
cp "$src/contrib/crio/99-execaff.conf" "$src/contrib/containerd/execaff-runtime.toml" "$stage/"
chmod 0755 "$stage/busybox" "$stage/execaff-shim" "$stage/install-node.sh"
chmod 0644 "$stage/99-execaff.conf" "$stage/execaff-runtime.toml"
podman build --pull=never --network=none -f "$here/Containerfile" -t "$tag" "$stage"
