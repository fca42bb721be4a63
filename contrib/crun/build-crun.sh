#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds Debian bookworm's crun (1.8.1) from its Debian source package,
# either as Debian ships it (--stock) or with every contrib/crun/*.patch
# applied and linked against libexecaff through pkg-config (--patched).
#
# Usage: build-crun.sh [--stock|--patched] [options] OUTDIR
#
#   --stock                  Debian's crun as is (default)
#   --patched                plus every *.patch of the patch dir, in name
#                            order, linked statically against libexecaff
#                            (pkg-config --static libexecaff-static)
#   --pkg-config-path DIRS   where libexecaff-static's .pc lives: a meson
#                            build dir's libexecaff/ or PREFIX/lib/.../pkgconfig
#                            (default $EXECAFF_PKG_CONFIG_PATH); prepended to
#                            PKG_CONFIG_PATH
#   --patch-dir DIR          take *.patch from DIR (default: this script's dir)
#   --jobs N                 make -jN (default $JOBS or nproc)
#
# Leaves OUTDIR/crun and OUTDIR/tests/init (crun's test init), plus
# OUTDIR/timings.txt (seconds per step), OUTDIR/build-info.txt, and the
# source under OUTDIR/work (src/: Debian's source package, tree/: the build).
#
# Environment:
#   EXECAFF_PKG_CONFIG_PATH  see --pkg-config-path
#   EXECAFF_PC_NAME          pkg-config module name (default: libexecaff-static)
#   CRUN_CONFIGURE_FLAGS     extra ./configure flags
#   CRUN_DEBIAN_BUILDFLAGS=0 configure with autoconf's default -g -O2 instead
#                            of Debian's hardening flags (dpkg-buildflags)
#   JOBS                     see --jobs
#   NO_APT=1                 never touch apt (sources, build deps); fail
#                            instead if something is missing
#
# Idempotent: a second run with the same inputs redoes nothing but the
# (no-op) make; a changed patch set re-extracts the source tree.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_dir=$here
mode=stock
jobs=${JOBS:-$(nproc)}
pc_path=${EXECAFF_PKG_CONFIG_PATH:-}
outdir=

usage() { sed -n '/^# Usage:/,/^# Idempotent/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    --stock) mode=stock ;;
    --patched) mode=patched ;;
    --pkg-config-path) pc_path=$2; shift ;;
    --pkg-config-path=*) pc_path=${1#*=} ;;
    --patch-dir) patch_dir=$(cd "$2" && pwd); shift ;;
    --jobs) jobs=$2; shift ;;
    -h | --help) usage ;;
    -*) echo "build-crun.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$outdir" ] || usage; outdir=$1 ;;
    esac
    shift
done
[ -n "$outdir" ] || usage
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$outdir/work
mkdir -p "$work"
timings=$outdir/timings.txt
: >"$timings"

log() { printf 'build-crun: %s\n' "$*" >&2; }
die() { printf 'build-crun: error: %s\n' "$*" >&2; exit 1; }

# step NAME CMD...: runs CMD (errexit applies inside it), prints and records
# how long it took; a step that ends the script is named by the EXIT trap.
current_step=
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
step() {
    local name=$1 t0
    shift
    current_step=$name
    log "== $name"
    t0=$(now)
    "$@"
    printf '%-24s %7s s\n' "$name" "$(elapsed "$t0" "$(now)")" | tee -a "$timings" >&2
    current_step=
}
on_exit() {
    local rc=$1
    [ "$rc" -eq 0 ] || [ -z "$current_step" ] ||
        printf '%-24s failed (rc=%s)\n' "$current_step" "$rc" | tee -a "$timings" >&2
}
trap 'on_exit $?' EXIT

# The extracted Debian source tree (work/src/crun-VERSION/), or nothing.
source_tree() {
    local trees=("$work"/src/crun-*/)
    [ -d "${trees[0]}" ] && echo "${trees[0]%/}"
}

apt_ok() { [ "${NO_APT:-0}" != 1 ]; }

# --- 1. deb-src entry ------------------------------------------------------
# A separate .sources file with Types: deb-src and the same URIs, suites and
# components as debian.sources; added only when no deb-src line exists yet.
have_deb_src() {
    grep -rqsE '^[[:space:]]*Types:.*\bdeb-src\b' /etc/apt/sources.list.d/*.sources ||
        grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list
}
ensure_deb_src() {
    local src=/etc/apt/sources.list.d/debian.sources
    local dst=/etc/apt/sources.list.d/execaff-deb-src.sources
    if ! have_deb_src; then
        apt_ok || die "no deb-src entry in /etc/apt and NO_APT=1"
        [ -r "$src" ] || die "$src not found: add a bookworm deb-src entry by hand"
        log "adding $dst (deb-src twin of $src)"
        { echo "# Added by execaff contrib/crun/build-crun.sh: source twin of debian.sources"
          sed -E 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/' "$src"; } >"$dst"
        apt-get update -q
    elif ! apt-cache showsrc crun 2>/dev/null | grep '^Package: crun' >/dev/null; then
        apt_ok || die "apt has no source index for crun and NO_APT=1"
        apt-get update -q
    fi
    apt-cache showsrc crun | grep '^Package: crun' >/dev/null || die "apt-cache showsrc crun finds nothing"
}

# --- 2. build dependencies -------------------------------------------------
ensure_build_deps() {
    local tools=(dpkg-dev python3 pkg-config autoconf automake libtool make gcc patch)
    local missing=()
    for p in "${tools[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        apt_ok || die "missing packages: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    # apt-get build-dep is a no-op when everything is there; skip even that
    # when dpkg-checkbuilddeps in an already extracted tree says so.
    local tree
    tree=$(source_tree || true)
    if [ -n "$tree" ] && (cd "$tree" && dpkg-checkbuilddeps >/dev/null 2>&1); then
        return 0
    fi
    apt_ok || { log "NO_APT=1: not checking build deps"; return 0; }
    DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q crun
}

# --- 3. source -------------------------------------------------------------
# work/src holds the pristine Debian source (orig tarball + Debian's quilt
# patches applied by dpkg-source); work/tree is the copy we configure and build.
fetch_source() {
    if source_tree >/dev/null; then
        log "source already in $work/src"
        return 0
    fi
    mkdir -p "$work/src"
    # apt-get source downloads as root "unsandboxed"; harmless here.
    (cd "$work/src" && apt-get source -q crun 2>&1 | { grep -v 'unsandboxed' >&2 || true; })
    source_tree >/dev/null || die "apt-get source crun left no crun-*/ tree"
}

patches=()
patch_set_id() {
    local id=$mode
    if [ "$mode" = patched ]; then
        id="$id $(cat "${patches[@]}" /dev/null | sha256sum | cut -c1-16)"
    fi
    echo "$id"
}

prepare_tree() {
    local src id
    src=$(source_tree)
    id=$(patch_set_id)
    if [ -f "$work/tree/.execaff-stamp" ] && [ "$(cat "$work/tree/.execaff-stamp")" = "$id" ]; then
        log "tree up to date ($id)"
        return 0
    fi
    rm -rf "$work/tree"
    cp -a "$src" "$work/tree"
    if [ "$mode" = patched ]; then
        for p in "${patches[@]}"; do
            log "applying $(basename "$p")"
            (cd "$work/tree" && patch -p1 --forward --batch --no-backup-if-mismatch <"$p") ||
                die "patch $p does not apply to $(basename "$src")"
        done
        # A patch that touches the autotools inputs needs them regenerated.
        if grep -qE '^\+\+\+ [^ ]*/(configure\.ac|Makefile\.am|m4/)' "${patches[@]}"; then
            log "patches touch autotools inputs: autoreconf"
            (cd "$work/tree" && autoreconf -fi >&2)
        fi
    fi
    echo "$id" >"$work/tree/.execaff-stamp"
}

# --- 4. configure ----------------------------------------------------------
execaff_pc=
resolve_execaff() {
    local name
    [ "$mode" = patched ] || return 0
    if [ -n "$pc_path" ]; then
        export PKG_CONFIG_PATH="$pc_path${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    fi
    for name in ${EXECAFF_PC_NAME:-libexecaff-static}; do
        if pkg-config --exists "$name"; then execaff_pc=$name; break; fi
    done
    [ -n "$execaff_pc" ] ||
        die "pkg-config finds no execaff (PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-}); build libexecaff and pass --pkg-config-path BUILDDIR/libexecaff"
    log "execaff: $execaff_pc $(pkg-config --modversion "$execaff_pc") from $(pkg-config --variable=pcfiledir "$execaff_pc")"
    export EXECAFF_PC_NAME=$execaff_pc
}

configure_flags() {
    # Debian's own flags (debian/rules) minus CRIU, which pulls protobuf.
    local flags=(--disable-criu --disable-silent-rules)
    # shellcheck disable=SC2206
    flags+=(${CRUN_CONFIGURE_FLAGS:-})
    printf '%s\n' "${flags[@]}"
}

configure_tree() {
    local flags vars=() ldflags=
    mapfile -t flags < <(configure_flags)
    # Debian's compiler flags (debian/rules: hardening=+all), so that the
    # stock build is the package's binary in all but the libocispec schema.
    if [ "${CRUN_DEBIAN_BUILDFLAGS:-1}" = 1 ]; then
        debflags() { (cd "$work/tree" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"); }
        vars+=("CFLAGS=$(debflags CFLAGS)" "CPPFLAGS=$(debflags CPPFLAGS)")
        ldflags=$(debflags LDFLAGS)
    fi
    [ -z "$ldflags" ] || vars+=("LDFLAGS=${ldflags# }")
    local id="${flags[*]} ${vars[*]} PKG_CONFIG_PATH=${PKG_CONFIG_PATH:-}"
    if [ -f "$work/tree/config.status" ] && [ -f "$work/tree/.execaff-configured" ] &&
        [ "$(cat "$work/tree/.execaff-configured")" = "$id" ]; then
        log "already configured"
        return 0
    fi
    if [ -f "$work/tree/Makefile" ]; then
        # Objects do not depend on the flags: start clean after a reconfigure.
        log "configuration changed: make clean"
        make -C "$work/tree" clean >/dev/null 2>&1 || true
    fi
    (cd "$work/tree" && ./configure "${flags[@]}" "${vars[@]}" >configure.log 2>&1) ||
        { tail -n 30 "$work/tree/configure.log" >&2; die "configure failed (see $work/tree/configure.log)"; }
    echo "$id" >"$work/tree/.execaff-configured"
}

# --- 5. build --------------------------------------------------------------
relink_if_libexecaff_changed() {
    # make cannot see a change in the static archive, which lives outside
    # the tree: relink crun when the archive is newer.
    [ "$mode" = patched ] || return 0
    local lib
    lib=$(pkg-config --variable=libdir "$execaff_pc")/libexecaff-static.a
    [ -f "$lib" ] || die "$execaff_pc: no $lib"
    if [ -e "$work/tree/crun" ] && [ "$lib" -nt "$work/tree/crun" ]; then
        log "$lib changed: relinking crun"
        rm -f "$work/tree/crun"
    fi
}
build_crun() { relink_if_libexecaff_changed; make -C "$work/tree" -j"$jobs" >"$work/make.log" 2>&1 ||
    { tail -n 40 "$work/make.log" >&2; die "make failed (see $work/make.log)"; }; }
build_init() { make -C "$work/tree" -j"$jobs" tests/init >>"$work/make.log" 2>&1 ||
    { tail -n 40 "$work/make.log" >&2; die "make tests/init failed (see $work/make.log)"; }; }

install_outputs() {
    mkdir -p "$outdir/tests"
    # crun is a libtool wrapper only with --enable-shared; Debian's build is static.
    local bin=$work/tree/crun
    [ -x "$work/tree/.libs/crun" ] && bin=$work/tree/.libs/crun
    install -m 0755 "$bin" "$outdir/crun"
    install -m 0755 "$work/tree/tests/init" "$outdir/tests/init"
    {
        echo "mode: $mode"
        echo "source: $(basename "$(source_tree)")"
        echo "patches: ${patches[*]:-none}"
        echo "execaff: ${execaff_pc:-none}${execaff_pc:+ $(pkg-config --modversion "$execaff_pc")}"
        echo "configure: $(cat "$work/tree/.execaff-configured")"
        echo "tree: $work/tree"
        "$outdir/crun" --version
    } >"$outdir/build-info.txt"
    cat "$outdir/build-info.txt" >&2
}

check_outputs() {
    "$outdir/crun" --version >/dev/null || die "$outdir/crun --version fails"
    if [ "$mode" = patched ]; then
        "$outdir/crun" --version | grep '+EXECAFF' >/dev/null ||
            die "patched crun does not report +EXECAFF in --version"
        # Linked in statically, C++ runtime and all: a shared libexecaff
        # would be mapped into every crun command (DESIGN.md, 8).
        ! readelf -dW "$outdir/crun" | grep -E 'NEEDED.*(execaff|stdc\+\+)' >/dev/null ||
            die "patched crun loads libexecaff or libstdc++ as a shared library"
    else
        ! "$outdir/crun" --version | grep '+EXECAFF' >/dev/null || die "stock crun reports +EXECAFF?"
    fi
}

if [ "$mode" = patched ]; then
    shopt -s nullglob
    patches=("$patch_dir"/*.patch)
    shopt -u nullglob
    [ ${#patches[@]} -gt 0 ] || die "--patched: no $patch_dir/*.patch"
fi

total0=$(now)
step deb-src ensure_deb_src
step build-deps ensure_build_deps
step source fetch_source
step prepare-tree prepare_tree
step resolve-execaff resolve_execaff
step configure configure_tree
step make-crun build_crun
step make-tests-init build_init
step install install_outputs
step check check_outputs
printf '%-24s %7s s\n' total "$(elapsed "$total0" "$(now)")" | tee -a "$timings" >&2
log "done: $outdir/crun $outdir/tests/init"
