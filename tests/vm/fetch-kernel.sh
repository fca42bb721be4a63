#!/bin/bash
# fetch-kernel.sh — get Debian 12's 6.1 cloud kernel for the test VM.
#
# Usage: fetch-kernel.sh CACHE_DIR
#
# Resolves linux-image-cloud-amd64 (the metapackage) to the versioned
# linux-image-6.1.*-cloud-amd64 package it depends on, downloads that with
# `apt-get download`, extracts it with `dpkg-deb -x` and leaves
#   CACHE_DIR/<pkg>_<version>/vmlinuz      the kernel
#   CACHE_DIR/<pkg>_<version>/config       its build config
#   CACHE_DIR/<pkg>_<version>/VERSION      "<pkg> <version> <uname -r>"
# Prints the path of vmlinuz. Idempotent: a complete directory is reused
# without network access. Set EXECAFF_KERNEL_PKG=linux-image-6.1.0-NN-cloud-amd64
# (optionally =VERSION) to pin another package, or
# EXECAFF_KERNEL_PKG=linux-image-rt-amd64 for Debian 12's PREEMPT_RT kernel
# (linux-image-6.1.0-NN-rt-amd64: the same checks pass, CONFIG_PREEMPT_RT).
#
# Everything the VM uses is built into this kernel (no modules are loaded):
# cgroup v1 controllers, cgroup2, cpusets, namespaces, tmpfs, devtmpfs,
# tracefs and the 8250 serial console; the script checks the config for them.
set -euo pipefail

prog=fetch-kernel
die() { echo "$prog: error: $*" >&2; exit 1; }
[ $# -eq 1 ] || { echo "usage: $prog CACHE_DIR" >&2; exit 2; }
cache=$1
command -v apt-get >/dev/null || die "apt-get not found (a Debian host is needed)"
command -v apt-cache >/dev/null || die "apt-cache not found"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"
mkdir -p -- "$cache"
cache=$(cd -- "$cache" && pwd)

# Which package? The metapackage's candidate depends on exactly one image.
meta=linux-image-cloud-amd64
# EXECAFF_KERNEL_PKG may name another metapackage (linux-image-rt-amd64:
# Debian 12's PREEMPT_RT kernel), resolved the same way.
case ${EXECAFF_KERNEL_PKG:-} in
'') ;;
linux-image-6.1.*) ;;
*=*) ;;
*) meta=$EXECAFF_KERNEL_PKG; EXECAFF_KERNEL_PKG='' ;;
esac
if [ -n "${EXECAFF_KERNEL_PKG:-}" ]; then
    pkgspec=$EXECAFF_KERNEL_PKG
else
    flavour=${meta#linux-image-}
    flavour=${flavour%-amd64}
    dep=$(apt-cache depends --no-recommends --no-suggests "$meta" 2>/dev/null |
        sed -n "s/^ *Depends: \\(linux-image-6\\.1\\.[^ ]*-$flavour-amd64\\)\$/\\1/p" | head -n 1 || true)
    if [ -z "$dep" ]; then
        die "cannot resolve $meta to a linux-image-6.1.*-$flavour-amd64 package;" \
            "run 'apt-get update' (bookworm sources are needed) or set EXECAFF_KERNEL_PKG"
    fi
    pkgspec=$dep
fi
pkg=${pkgspec%%=*}
case $pkgspec in
*=*) version=${pkgspec#*=} ;;
*)
    version=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    if [ -z "$version" ] || [ "$version" = "(none)" ]; then
        die "no candidate version for $pkg; run 'apt-get update'"
    fi
    ;;
esac

dest=$cache/${pkg}_$version
if [ -f "$dest/vmlinuz" ] && [ -f "$dest/VERSION" ] && [ -f "$dest/config" ]; then
    echo "$dest/vmlinuz"
    exit 0
fi

work=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
# apt-get download writes to the current directory; _apt cannot enter a
# root-only mktemp dir, which only produces a warning, so make it readable.
chmod 755 "$work"
(cd "$work" && apt-get download -q "$pkg=$version" >"$work/apt.log" 2>&1) || {
    cat "$work/apt.log" >&2
    die "apt-get download $pkg=$version failed"
}
deb=$(find "$work" -maxdepth 1 -name '*.deb' | head -n 1)
[ -n "$deb" ] || die "apt-get download produced no .deb"
dpkg-deb -x "$deb" "$work/x" || die "dpkg-deb -x $deb failed"

vmlinuz=$(find "$work/x/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -n 1)
config=$(find "$work/x/boot" -maxdepth 1 -name 'config-*' 2>/dev/null | head -n 1)
[ -n "$vmlinuz" ] || die "no /boot/vmlinuz-* in $pkg"
[ -n "$config" ] || die "no /boot/config-* in $pkg"
kver=${vmlinuz##*/vmlinuz-}
case $kver in
6.1.*) ;;
*) die "$pkg holds kernel $kver, not 6.1 (pre-6.2 semantics are the point)" ;;
esac

missing=
for opt in CGROUPS CPUSETS CGROUP_SCHED CGROUP_CPUACCT MEMCG CGROUP_PIDS \
    CGROUP_DEVICE CGROUP_FREEZER CGROUP_HUGETLB CGROUP_BPF BPF_SYSCALL \
    NAMESPACES PID_NS NET_NS IPC_NS UTS_NS USER_NS SECCOMP \
    BLK_DEV_INITRD RD_GZIP TMPFS DEVTMPFS UNIX \
    TRACING EVENT_TRACING FTRACE SERIAL_8250 SERIAL_8250_CONSOLE \
    MEMFD_CREATE CPU_ISOLATION NO_HZ_FULL; do
    grep -q "^CONFIG_$opt=y\$" "$config" || missing="$missing CONFIG_$opt"
done
[ -z "$missing" ] || die "$pkg $version lacks built-in:$missing"

mkdir -p "$work/out"
cp "$vmlinuz" "$work/out/vmlinuz"
cp "$config" "$work/out/config"
echo "$pkg $version $kver" >"$work/out/VERSION"
rm -rf -- "$dest"
mv "$work/out" "$dest"
echo "$dest/vmlinuz"
