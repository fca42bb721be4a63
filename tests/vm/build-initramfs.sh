#!/bin/bash
# build-initramfs.sh — build the test VM's initramfs (gzip'd newc cpio).
#
# Usage: build-initramfs.sh OUT.cpio.gz [--add HOSTPATH[:GUESTPATH]]...
#                           [--script FILE]
#
# Contents (usr-merged layout like Debian 12: /bin, /sbin, /lib, /lib64 are
# symlinks into /usr):
#   /init                      tests/vm/init
#   /usr/bin/busybox + applet symlinks   (Debian busybox-static)
#   /usr/sbin/runc, /usr/bin/crun        (Debian runc, crun) + their libraries
#   /usr/local/bin/oci-config  tests/vm/oci-config.sh
#   /bundle/config.json        busybox bundle: cpuset 1-3, mems 0, `sleep 1000`
#   /bundle/rootfs/            busybox-static + applet symlinks (read-only root)
#   /scenario.sh               --script FILE (default: a script that says so)
#   every --add HOSTPATH at GUESTPATH (default: the same path); a directory is
#   copied recursively; every dynamic ELF added (in a directory: every
#   executable one) gets its ldd libraries.
# Libraries are copied to the path ldd resolves them to on the host (so RPATHs
# keep working) and an /etc/ld.so.cache is generated for the image.
#
# Deterministic: same inputs give a byte-identical OUT (sorted file list,
# fixed mtimes from SOURCE_DATE_EPOCH or 0, owner 0:0, cpio --reproducible,
# gzip -n). Writes only OUT (through OUT.tmp.PID, renamed) and a temporary
# directory that is removed on exit.
set -euo pipefail
umask 022

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=build-initramfs

die() { echo "$prog: error: $*" >&2; exit 1; }
usage() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}

out=
script=
adds=()
while [ $# -gt 0 ]; do
    case $1 in
    --add) [ $# -ge 2 ] || die "--add needs HOSTPATH[:GUESTPATH]"; adds+=("$2"); shift 2 ;;
    --add=*) adds+=("${1#--add=}"); shift ;;
    --script) [ $# -ge 2 ] || die "--script needs a FILE"; script=$2; shift 2 ;;
    --script=*) script=${1#--script=}; shift ;;
    -h|--help) usage ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$out" ] || die "more than one OUT given: $out, $1"; out=$1; shift ;;
    esac
done
[ -n "$out" ] || usage
[ -z "$script" ] || [ -f "$script" ] || die "scenario script not found: $script"

# Host tools and the Debian binaries that go into the image.
need_cmd() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found (Debian package: $2)"; }
need_cmd cpio cpio
need_cmd gzip gzip
need_cmd ldd libc-bin
need_cmd ldconfig libc-bin
busybox=/usr/bin/busybox
runc=/usr/sbin/runc
crun=/usr/bin/crun
[ -x $busybox ] || die "$busybox missing (apt-get install busybox-static)"
[ -x $runc ] || die "$runc missing (apt-get install runc)"
[ -x $crun ] || die "$crun missing (apt-get install crun)"
if ldd $busybox >/dev/null 2>&1 && ldd $busybox | grep '=>' >/dev/null; then
    die "$busybox is dynamically linked; install busybox-static (not busybox)"
fi

epoch=${SOURCE_DATE_EPOCH:-0}
stage=$(mktemp -d "${TMPDIR:-/tmp}/execaff-initramfs.XXXXXX")
tmpout="$out.tmp.$$"
cleanup() { rm -rf -- "$stage"; rm -f -- "$tmpout"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
root=$stage/root
mkdir -p "$root"

# --- skeleton: usr-merged like the host ------------------------------------
mkdir -p "$root"/usr/{bin,sbin,lib,lib64,local/bin} "$root"/{dev,proc,sys,run,tmp,etc,root,newroot}
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
# An initial console for the kernel to open before /init runs (needs root;
# /init reopens /dev/console after mounting devtmpfs anyway).
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

# guest_path PATH: PATH as seen through the usr-merge symlinks, for messages.
libdirs_file=$stage/libdirs
: >"$libdirs_file"

# copy_file HOSTFILE GUESTPATH: copy following symlinks, make parents.
copy_file() {
    local src=$1 dst=$root$2
    mkdir -p -- "$(dirname -- "$dst")"
    rm -f -- "$dst"
    cp -L --preserve=mode -- "$src" "$dst"
}

# is_dynamic_elf FILE
is_dynamic_elf() {
    [ -f "$1" ] || return 1
    [ "$(head -c 4 -- "$1" | od -An -c | tr -d ' ')" = '177ELF' ] || return 1
    ldd -- "$1" 2>/dev/null | grep -e '=>' -e 'ld-linux' >/dev/null
}

# copy_libs FILE: copy FILE's ldd libraries (and the loader) to the paths
# they resolve to on the host.
copy_libs() {
    local f=$1 line lib
    is_dynamic_elf "$f" || return 0
    local lddout
    lddout=$(ldd -- "$f") || die "ldd failed on $f"
    if grep -q 'not found' <<<"$lddout"; then
        die "ldd: unresolved libraries for $f:"$'\n'"$(grep 'not found' <<<"$lddout")"
    fi
    while read -r line; do
        lib=
        case $line in
        *'=> /'*) lib=${line#*=> }; lib=${lib%% (*} ;;
        /*) lib=${line%% (*} ;;
        esac
        [ -n "$lib" ] || continue
        # A glibc-hwcaps variant (x86-64-v3...) may not run on the guest's
        # TCG CPU (qemu64): take the baseline build beside it instead.
        case $lib in
        */glibc-hwcaps/*/*)
            local base=${lib%%/glibc-hwcaps/*}/${lib##*/}
            [ -e "$base" ] || die "$lib has no baseline build at $base"
            lib=$base ;;
        esac
        [ -e "$root$lib" ] && continue
        copy_file "$lib" "$lib"
        dirname -- "$lib" >>"$libdirs_file"
    done <<<"$lddout"
}

add_binary() { # HOSTPATH GUESTPATH
    [ -e "$1" ] || die "not found: $1"
    copy_file "$1" "$2"
    copy_libs "$1"
}

# --- busybox and applets -----------------------------------------------------
copy_file $busybox /usr/bin/busybox
applets=$($busybox --list) || die "$busybox --list failed"
for a in $applets; do
    case $a in busybox|init|linuxrc) continue ;; esac
    ln -sf busybox "$root/usr/bin/$a"
done

# --- runtimes ----------------------------------------------------------------
add_binary $runc /usr/sbin/runc
add_binary $crun /usr/bin/crun

# --- bundle --------------------------------------------------------------------
b=$root/bundle
mkdir -p "$b/rootfs"/{bin,dev,proc,sys,tmp,etc,root}
cp -L --preserve=mode $busybox "$b/rootfs/bin/busybox"
for a in $applets; do
    case $a in busybox) continue ;; esac
    ln -sf busybox "$b/rootfs/bin/$a"
done
ln -s bin "$b/rootfs/sbin"
mkdir -p "$b/rootfs/usr"
ln -s ../bin "$b/rootfs/usr/bin"
ln -s ../bin "$b/rootfs/usr/sbin"
cp "$root/etc/passwd" "$root/etc/group" "$b/rootfs/etc/"
chmod 1777 "$b/rootfs/tmp"
sh "$here/oci-config.sh" --cpus 1-3 --mems 0 --root /bundle/rootfs -- sleep 1000 >"$b/config.json"

# --- our scripts -------------------------------------------------------------
install -m 0755 "$here/init" "$root/init"
install -m 0755 "$here/oci-config.sh" "$root/usr/local/bin/oci-config"
if [ -n "$script" ]; then
    install -m 0755 "$script" "$root/scenario.sh"
else
    printf '#!/bin/sh\necho "no scenario: build the initramfs with --script FILE"\nexit 3\n' >"$root/scenario.sh"
    chmod 0755 "$root/scenario.sh"
fi

# --- extra files -------------------------------------------------------------
for spec in "${adds[@]}"; do
    case $spec in
    *:*) hp=${spec%%:*}; gp=${spec#*:} ;;
    *) hp=$spec; gp=$spec ;;
    esac
    [ -e "$hp" ] || die "--add: not found: $hp"
    case $gp in /*) ;; *) die "--add: guest path must be absolute: $gp" ;; esac
    if [ -d "$hp" ]; then
        mkdir -p "$root$gp"
        cp -a --no-preserve=ownership -L -- "$hp/." "$root$gp/"
        # Only the directory's executables: its shared libraries are there
        # for its programs (their ldd finds them), and a private glibc's
        # (contrib/install-peers.sh's lib/) cannot be resolved by the
        # host's ldd at all.
        while IFS= read -r -d '' f; do copy_libs "$f"; done \
            < <(find "$hp" -type f -perm /111 -print0 | LC_ALL=C sort -z)
    else
        add_binary "$hp" "$gp"
    fi
done

# --- loader cache for the image (covers libraries outside the default path) --
{
    echo /usr/local/lib
    LC_ALL=C sort -u "$libdirs_file"
} >"$root/etc/ld.so.conf"
ldconfig -r "$root" -X 2>/dev/null || ldconfig -r "$root" -X \
    || die "ldconfig -r failed"

# --- archive -------------------------------------------------------------------
find "$root" -exec touch -h -d "@$epoch" {} +
(
    cd "$root"
    find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
        cpio --quiet -o -H newc -R 0:0 --reproducible
) | gzip -n -6 >"$tmpout"
mv -f -- "$tmpout" "$out"
echo "$out"
