#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds Debian's crun from its source, either as Debian ships it (--stock)
# or as execaff's fork (--patched): every contrib/crun/BASE/*.patch applied
# (the hooks into crun's own files), the fork's own sources in
# contrib/crun/src/ copied into src/libcrun/, compiled with
# -DEXECAFF_CRUN_VERSION (10801 for 1.8.1, 12100 for 1.21: what differs
# between the bases in those sources is behind it) and linked statically
# against libexecaff through pkg-config.  Two bases:
#
#   1.8.1  Debian bookworm's crun 1.8.1-1+deb12u1, the host's own source
#          package (apt-get source through a deb-src twin of the host's
#          bookworm sources).
#   1.21   Debian trixie's crun 1.21-1, the first Debian crun that applies
#          process.execCPUAffinity itself.  Fetched through a private trixie
#          deb-src list (contrib/private-apt.sh: the host's sources are not
#          touched).  The mirror may serve only the upstream tarball
#          (crun_1.21.orig.tar.gz) and 404 the .dsc and .debian.tar.xz:
#          then the tarball's SHA-256 is checked against trixie's signed
#          Sources index and upstream 1.21 is built from it, without
#          Debian's patches (build-info.txt says which).
#
# Usage: build-crun.sh [--stock|--patched] [--base 1.8.1|1.21] [options] OUTDIR
#
#   --stock                  Debian's crun as is (default)
#   --patched                plus every *.patch of the patch dir, in name
#                            order, and contrib/crun/src/, linked statically
#                            against libexecaff (pkg-config --static
#                            libexecaff-static)
#   --base VERSION           1.8.1 (default) or 1.21
#   --pkg-config-path DIRS   where libexecaff-static's .pc lives: a meson
#                            build dir's libexecaff/ or PREFIX/lib/.../pkgconfig
#                            (default $EXECAFF_PKG_CONFIG_PATH); prepended to
#                            PKG_CONFIG_PATH
#   --patch-dir DIR          take *.patch from DIR (default: BASE/ beside
#                            this script)
#   --jobs N                 make -jN (default $JOBS or nproc)
#
# Leaves OUTDIR/crun and OUTDIR/tests/init (crun's test init), plus
# OUTDIR/timings.txt (seconds per step), OUTDIR/build-info.txt, and the
# source under OUTDIR/work (src/: Debian's source package, tree/: the build).
# One OUTDIR holds one base: a different --base on the same OUTDIR is refused.
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
#   PRIVATE_APT_MIRROR       the Debian mirror of the private trixie list
#                            (--base 1.21; contrib/private-apt.sh)
#
# Idempotent: a second run with the same inputs redoes nothing but the
# (no-op) make; a changed patch set re-extracts the source tree.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_dir=
base=1.8.1
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
    --base) base=$2; shift ;;
    --base=*) base=${1#*=} ;;
    --jobs) jobs=$2; shift ;;
    -h | --help) usage ;;
    -*) echo "build-crun.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$outdir" ] || usage; outdir=$1 ;;
    esac
    shift
done
[ -n "$outdir" ] || usage
log() { printf 'build-crun: %s\n' "$*" >&2; }
die() { printf 'build-crun: error: %s\n' "$*" >&2; exit 1; }

# What each base is: the Debian version, and for 1.21 the suite it comes
# from (bookworm's is the host's own).
case $base in
1.8.1) debian_version= version_number=10801 ;;  # whatever bookworm's sources carry (1.8.1-1+deb12u1)
1.21) debian_version=1.21-1 suite=trixie version_number=12100 ;;
*) echo "build-crun.sh: unknown --base $base (1.8.1 or 1.21)" >&2; usage ;;
esac
patch_dir=${patch_dir:-$here/$base}

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$outdir/work
mkdir -p "$work"
if [ -f "$work/base" ] && [ "$(cat "$work/base")" != "$base" ]; then
    die "$outdir holds a crun $(cat "$work/base") build; use another OUTDIR for --base $base"
fi
echo "$base" >"$work/base"
timings=$outdir/timings.txt
: >"$timings"

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

# The extracted Debian source tree (work/src/crun-BASE/), or nothing.
source_tree() {
    [ -d "$work/src/crun-$base" ] && echo "$work/src/crun-$base"
}

apt_ok() { [ "${NO_APT:-0}" != 1 ]; }
# shellcheck source=contrib/private-apt.sh
. "$here/../private-apt.sh"

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

# --- 1-3 for --base 1.21: trixie's source through a private list ----------
# work/apt: a private deb-src list of trixie (contrib/private-apt.sh), used
# only when the source is not there yet.
trixie_apt=$work/apt
ensure_private_src_list() {
    source_tree >/dev/null && { log "source already in $work/src"; return 0; }
    apt_ok || die "no crun $base source in $work/src and NO_APT=1"
    private_apt_update "$trixie_apt" "$suite" deb-src ||
        die "apt-get update of the private $suite deb-src list ($trixie_apt/sources.list) failed"
    showsrc_stanza | grep '^Package: crun' >/dev/null ||
        die "$suite's Sources index has no crun $debian_version"
}

# The Sources stanza of crun $debian_version.  awk reads to the end: an
# early exit would kill apt-cache with SIGPIPE, and pipefail would fail.
showsrc_stanza() {
    private_apt_cache "$trixie_apt" showsrc crun 2>/dev/null |
        awk -v v="$debian_version" '/^Package:/ { keep = 0; buf = "" } { buf = buf $0 "\n" }
            /^Version:/ && $2 == v { keep = 1 } /^$/ && keep && !done { printf "%s", buf; done = 1 }
            END { if (keep && !done) printf "%s", buf }'
}

# The build needs of crun 1.21's debian/control (trixie's Build-Depends)
# that a configure --disable-criu from a release tarball uses, as bookworm
# packages: no go-md2man (the tarball has the man pages), no gperf (nor the
# generated mount_flags.c and signals.c), no CRIU, no WasmEdge.
ensure_build_deps_121() {
    local pkgs=(dpkg-dev python3 pkg-config autoconf automake libtool make gcc patch
        libcap-dev libseccomp-dev libsystemd-dev libyajl-dev)
    local missing=() p
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'ok installed' >/dev/null || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    apt_ok || die "missing packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The Checksums-Sha256 of FILE in trixie's Sources index for crun.
sources_sha256() {
    showsrc_stanza |
        awk -v f="$1" '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on && $3 == f { print $1; exit }'
}

# Debian's source package when the mirror has it all (dpkg-source applies
# Debian's patches), else the upstream tarball alone; either way each file
# downloaded is checked against the signed Sources index (apt does, and so
# does this function, for the tarball it extracts by hand).
fetch_source_121() {
    local dl=$work/src/download orig=crun_${base}.orig.tar.gz want got
    source_tree >/dev/null && return 0
    mkdir -p "$dl"
    id _apt >/dev/null 2>&1 && chown _apt "$dl"
    if (cd "$dl" && private_apt "$trixie_apt" source --download-only "crun=$debian_version" >"$dl/apt.log" 2>&1); then
        log "Debian's source package crun $debian_version: extracting with its patches"
        (cd "$work/src" && dpkg-source -x "$dl/crun_$debian_version.dsc" "crun-$base" >&2) ||
            die "dpkg-source -x crun_$debian_version.dsc failed"
        echo "Debian $debian_version (dpkg-source: upstream + debian/patches)" >"$work/src/origin"
        return 0
    fi
    grep -E '^(Err|E):' "$dl/apt.log" | sed 's/^/  /' >&2 || true
    log "the full source package is not downloadable: taking the upstream tarball alone"
    (cd "$dl" && private_apt "$trixie_apt" source --download-only --tar-only "crun=$debian_version" >>"$dl/apt.log" 2>&1) ||
        { tail -n 5 "$dl/apt.log" >&2; die "apt-get source --tar-only crun=$debian_version failed (see $dl/apt.log)"; }
    want=$(sources_sha256 "$orig")
    got=$(sha256sum "$dl/$orig" | cut -d' ' -f1)
    [ -n "$want" ] || die "$suite's Sources index lists no SHA-256 for $orig"
    [ "$want" = "$got" ] || die "$orig: SHA-256 $got, $suite's Sources index says $want"
    log "$orig: SHA-256 $got matches $suite's Sources index"
    rm -rf "$work/src/crun-$base.partial"
    mkdir -p "$work/src/crun-$base.partial"
    tar -xzf "$dl/$orig" -C "$work/src/crun-$base.partial" --strip-components=1 ||
        die "cannot extract $orig"
    mv "$work/src/crun-$base.partial" "$work/src/crun-$base"
    echo "upstream $base ($orig, sha256 $got, as in $suite's Sources for $debian_version); Debian's patches not applied: crun_$debian_version.debian.tar.xz not downloadable" >"$work/src/origin"
}

patches=()
patch_set_id() {
    local id=$mode  # one OUTDIR holds one base (work/base)
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

# The fork's own sources (contrib/crun/src/), copied into the tree's
# src/libcrun/ where the patches' Makefile.am names them; on every run, and
# only those that changed, so that make rebuilds just their objects.
fork_src=$here/src
copy_fork_sources() {
    local f dst
    [ "$mode" = patched ] || return 0
    for f in "$fork_src"/*.c "$fork_src"/*.h; do
        dst=$work/tree/src/libcrun/$(basename "$f")
        cmp -s "$f" "$dst" || install -m 0644 "$f" "$dst"
    done
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
    local flags vars=() ldflags= i
    mapfile -t flags < <(configure_flags)
    # Debian's compiler flags (debian/rules: hardening=+all), so that the
    # stock build is the package's binary in all but the libocispec schema.
    if [ "${CRUN_DEBIAN_BUILDFLAGS:-1}" = 1 ]; then
        debflags() { (cd "$work/tree" && DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"); }
        vars+=("CFLAGS=$(debflags CFLAGS)" "CPPFLAGS=$(debflags CPPFLAGS)")
        ldflags=$(debflags LDFLAGS)
    fi
    [ -z "$ldflags" ] || vars+=("LDFLAGS=${ldflags# }")
    if [ "$mode" = patched ]; then
        # The fork: its version macro and libexecaff's headers.  Its
        # libraries go to make (make_vars), not to configure: LIBS there
        # would fail libtool's check that -static links (no libyajl.a) and
        # leave crun's test init dynamic, which its tests' rootfs cannot run.
        local cppflags=
        for i in "${!vars[@]}"; do
            case ${vars[$i]} in CPPFLAGS=*) cppflags=${vars[$i]#CPPFLAGS=}; unset "vars[$i]" ;; esac
        done
        vars+=("CPPFLAGS=${cppflags:+$cppflags }-DEXECAFF_CRUN_VERSION=$version_number $(pkg-config --cflags --static "$execaff_pc")")
        vars=("${vars[@]}")
    fi
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
# The fork links libexecaff statically (its archive holds its own C++
# runtime, hidden) wherever crun links its other libraries: appended to
# crun's FOUND_LIBS (crun, libcrun, the unit tests), as the configure.ac
# hunk of the patches before issue 27 did.
make_vars() {
    [ "$mode" = patched ] || return 0
    echo "FOUND_LIBS=$(sed -n 's/^FOUND_LIBS = //p' "$work/tree/Makefile") $(pkg-config --libs --static "$execaff_pc")"
}
build_crun() {
    local vars
    relink_if_libexecaff_changed
    mapfile -t vars < <(make_vars)
    make -C "$work/tree" -j"$jobs" "${vars[@]}" >"$work/make.log" 2>&1 ||
        { tail -n 40 "$work/make.log" >&2; die "make failed (see $work/make.log)"; }
}
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
        echo "base: $base"
        echo "source: $(basename "$(source_tree)") ($(cat "$work/src/origin" 2>/dev/null || echo "Debian's source package"))"
        echo "patches: ${patches[*]:-none}"
        [ "$mode" != patched ] || echo "fork sources: $fork_src ($(cat "$fork_src"/*.[ch] | sha256sum | cut -c1-16))"
        echo "execaff: ${execaff_pc:-none}${execaff_pc:+ $(pkg-config --modversion "$execaff_pc")}"
        echo "configure: $(cat "$work/tree/.execaff-configured")"
        echo "tree: $work/tree"
        "$outdir/crun" --version
    } >"$outdir/build-info.txt"
    cat "$outdir/build-info.txt" >&2
}

check_outputs() {
    "$outdir/crun" --version >/dev/null || die "$outdir/crun --version fails"
    # crun's tests copy their init into a rootfs without a libc.
    ! readelf -lW "$outdir/tests/init" | grep -q 'INTERP' ||
        die "$outdir/tests/init is dynamically linked (libtool found -static not working at configure)"
    if [ "$mode" = patched ]; then
        "$outdir/crun" --version | grep '+EXECAFF' >/dev/null ||
            die "patched crun does not report +EXECAFF in --version"
        # execaff-shim detects the fork by its ELF note, not by --version.
        readelf -nW "$outdir/crun" | grep -E '^ +execaff +0x' >/dev/null ||
            die "patched crun has no execaff ELF note (readelf -n)"
        # Linked in statically, C++ runtime and all: a shared libexecaff
        # would be mapped into every crun command (DESIGN.md, 8).
        ! readelf -dW "$outdir/crun" | grep -E 'NEEDED.*(execaff|stdc\+\+)' >/dev/null ||
            die "patched crun loads libexecaff or libstdc++ as a shared library"
    else
        ! "$outdir/crun" --version | grep '+EXECAFF' >/dev/null || die "stock crun reports +EXECAFF?"
        ! readelf -nW "$outdir/crun" | grep -E '^ +execaff +0x' >/dev/null || die "stock crun has an execaff ELF note?"
    fi
}

if [ "$mode" = patched ]; then
    shopt -s nullglob
    patches=("$patch_dir"/*.patch)
    shopt -u nullglob
    [ ${#patches[@]} -gt 0 ] || die "--patched: no $patch_dir/*.patch"
fi

total0=$(now)
if [ "$base" = 1.8.1 ]; then
    step deb-src ensure_deb_src
    step build-deps ensure_build_deps
    step source fetch_source
else
    step deb-src ensure_private_src_list
    step build-deps ensure_build_deps_121
    step source fetch_source_121
fi
step prepare-tree prepare_tree
step fork-sources copy_fork_sources
step resolve-execaff resolve_execaff
step configure configure_tree
step make-crun build_crun
step make-tests-init build_init
step install install_outputs
step check check_outputs
printf '%-24s %7s s\n' total "$(elapsed "$total0" "$(now)")" | tee -a "$timings" >&2
log "done: $outdir/crun $outdir/tests/init"
