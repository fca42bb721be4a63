#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs everything execaff needs to build and to run its whole test suite
# on Debian 12 (bookworm), as root, and prepares the host's cgroups.
# Idempotent: a second run installs nothing and changes nothing.
set -eu

PACKAGES="
  meson ninja-build pkg-config g++ python3
  libboost1.81-dev libboost-filesystem1.81-dev
  libyajl-dev libcmocka-dev libgtest-dev googletest libbenchmark-dev
  clang libclang-rt-14-dev
  runc crun podman conmon busybox-static
  containerd python3-grpcio python3-grpc-tools python3-yaml
  qemu-system-x86 cpio
  hyperfine time gnuplot-nox
  libseccomp-dev libseccomp2 libcap-dev libcap2
  scdoc groff-base man-db
  patchelf binutils
  golang-go libsqlite3-dev make xz-utils patch
"

if [ "$(id -u)" != 0 ]; then
  echo "setup-debian: run as root (it installs packages and mounts cgroups)" >&2
  exit 1
fi

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# kubectl for tests/clients' manifest checks: Debian's 1.20 unless one is
# already there (google-cloud-cli's kubectl conflicts with the package).
command -v kubectl >/dev/null 2>&1 || missing="$missing kubernetes-client"
if [ -n "$missing" ]; then
  echo "setup-debian: installing:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q $missing
fi

# crun 1.8.1 refuses a hybrid cgroup host until no controller is left on
# cgroup2 (MACHINE.md); runc does not care.
"$(dirname "$0")/../tests/integration/prepare-host.sh"
