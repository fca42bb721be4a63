#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the released runtimes that apply process.execCPUAffinity
# themselves (the "peers" of tests/runtimes.txt) under
# ${EXECAFF_PEERS:-/var/tmp/execaff-peers}:
#   runc-1.3.6/runc   Debian sid     runc 1.3.6+ds1-1
#   crun-1.21/crun    Debian trixie  crun 1.21-1
#   crun-1.28/crun    Debian sid     crun 1.28-1
# Each beside a private lib/ holding the newer glibc (>= 2.38; bookworm has
# 2.36) and every library the binary loads, from the same suite, at pinned
# versions; the binary is rebound to them with patchelf (its own loader,
# DT_RPATH).  The host's apt sources are never touched: a private list per
# suite under PREFIX/apt.  Root; idempotent (a runtime whose .stamp matches
# is left alone); a runtime is built in a temp dir and renamed into place,
# so a failed run leaves none half-installed.
set -euo pipefail

PREFIX=${EXECAFF_PEERS:-/var/tmp/execaff-peers}
ME=install-peers
# shellcheck source=contrib/private-apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/private-apt.sh"

# Per runtime: the suite it comes from, the packages (exact versions: the
# runtime first, then the libraries its binary loads, found with readelf -d
# NEEDED transitively — check_closure below fails when one is missing), the
# binary inside the runtime's package, and what its --version must say.
RUNTIMES=(runc-1.3.6 crun-1.21 crun-1.28)
declare -A SUITE PACKAGES BINARY VERSION
SUITE[runc-1.3.6]=sid
PACKAGES[runc-1.3.6]="runc=1.3.6+ds1-1 libc6=2.43-7 libseccomp2=2.6.1-1+b2"
BINARY[runc-1.3.6]=usr/sbin/runc
VERSION[runc-1.3.6]="runc version 1.3.6"
SUITE[crun-1.21]=trixie
PACKAGES[crun-1.21]="crun=1.21-1 libc6=2.41-12+deb13u5 libseccomp2=2.6.0-2
  libsystemd0=257.13-1~deb13u1 libcap2=1:2.75-10+deb13u1+b3 libyajl2=2.1.0-5+b2"
BINARY[crun-1.21]=usr/bin/crun
VERSION[crun-1.21]="crun version 1.21"
SUITE[crun-1.28]=sid
PACKAGES[crun-1.28]="crun=1.28-1 libc6=2.43-7 libseccomp2=2.6.1-1+b2 libsystemd0=262.1-1
  libcap2=1:2.78-1+b1 libblake3-0=1.8.2-1 libjson-c5=0.19+ds-1"
BINARY[crun-1.28]=usr/bin/crun
VERSION[crun-1.28]="crun version 1.28"

die() {
  echo "$ME: $*" >&2
  exit 1
}

case "${1:-}" in
  "") ;;
  *)
    echo "usage: $0   (installs ${RUNTIMES[*]} under \$EXECAFF_PEERS, now $PREFIX)" >&2
    exit 2
    ;;
esac

[ "$(id -u)" = 0 ] || die "run as root (apt-get download and the rebinding write under $PREFIX)"
for tool in apt-get dpkg-deb patchelf readelf flock; do
  command -v "$tool" >/dev/null || die "$tool not found: run contrib/setup-debian.sh first"
done
case "$PREFIX" in /*) ;; *) die "EXECAFF_PEERS=$PREFIX: not an absolute path" ;; esac

# What a runtime's .stamp holds: everything that decides its files.
stamp_text() {
  local name=$1
  printf 'suite %s\nbinary %s\nprefix %s\n' "${SUITE[$name]}" "${BINARY[$name]}" "$PREFIX"
  local p
  for p in ${PACKAGES[$name]}; do echo "package $p"; done
}

installed() {
  local name=$1 dir=$PREFIX/$1
  [ -x "$dir/${BINARY[$name]##*/}" ] && [ -f "$dir/.stamp" ] &&
    [ "$(cat "$dir/.stamp")" = "$(stamp_text "$name")" ]
}

mkdir -p "$PREFIX"
exec 9>"$PREFIX/.lock"
flock 9 # two runs at once would build the same runtime twice
rm -rf "$PREFIX"/.work.* # a killed run's leftovers (never at a runtime's name)

todo=()
for name in "${RUNTIMES[@]}"; do
  if installed "$name"; then
    echo "$ME: $name up to date ($PREFIX/$name)"
  else
    todo+=("$name")
  fi
done
[ ${#todo[@]} -ne 0 ] || exit 0

work=$(mktemp -d "$PREFIX/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The private list of one suite (contrib/private-apt.sh): its package
# lists and caches under PREFIX/apt/SUITE, the host's untouched.
declare -A updated
update_suite() {
  local suite=$1 dir=$PREFIX/apt/$1
  [ -z "${updated[$suite]:-}" ] || return 0
  private_apt_update "$dir" "$suite" ||
    die "apt-get update of the private $suite list ($dir/sources.list) failed"
  updated[$suite]=1
}

# Every NEEDED of the binary and, transitively, of the libraries it loads
# must be in lib/: a library left to the host would be bookworm's, too old.
check_closure() {
  local name=$1 binary=$2 lib=$3
  local -a queue=("$binary")
  local -A seen=()
  local missing="" file soname
  while [ ${#queue[@]} -ne 0 ]; do
    file=${queue[0]}
    queue=("${queue[@]:1}")
    for soname in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [ -z "${seen[$soname]:-}" ] || continue
      seen[$soname]=1
      if [ -e "$lib/$soname" ]; then
        queue+=("$lib/$soname")
      else
        missing="$missing $soname (needed by ${file##*/})"
      fi
    done
  done
  [ -z "$missing" ] || die "$name: no package in its list provides:$missing; add it to PACKAGES[$name]"
}

install_runtime() {
  local name=$1 suite=${SUITE[$1]} final=$PREFIX/$1
  local bin=${BINARY[$name]##*/}
  local tmp=$work/$name
  mkdir -p "$tmp/debs" "$tmp/root" "$tmp/stage/lib"
  update_suite "$suite"
  local -a packages
  read -r -d '' -a packages <<<"${PACKAGES[$name]}" || true
  if ! private_apt_download "$PREFIX/apt/$suite" "$tmp/debs" "${packages[@]}"; then
    die "$name: cannot download ${packages[*]} from Debian $suite" \
      "(a pinned version gone from the archive? see apt-cache policy with the list $PREFIX/apt/$suite/sources.list)"
  fi
  local deb
  for deb in "$tmp"/debs/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done

  # The libraries, symlinks kept (they are relative, within the directory).
  local d
  for d in usr/lib/x86_64-linux-gnu lib/x86_64-linux-gnu; do
    [ -d "$tmp/root/$d" ] || continue
    find "$tmp/root/$d" -maxdepth 1 -name '*.so*' \( -type f -o -type l \) \
      -exec cp -P -t "$tmp/stage/lib" {} +
  done
  [ -f "$tmp/stage/lib/ld-linux-x86-64.so.2" ] || die "$name: no ld-linux-x86-64.so.2 in libc6"
  [ -f "$tmp/root/${BINARY[$name]}" ] || die "$name: no ${BINARY[$name]} in its package"
  cp "$tmp/root/${BINARY[$name]}" "$tmp/stage/$bin"
  check_closure "$name" "$tmp/stage/$bin" "$tmp/stage/lib"
  # DT_RPATH, not DT_RUNPATH: RUNPATH covers only the binary's own NEEDED,
  # not a library's (libsystemd's libm would come from the host).
  patchelf --set-interpreter "$final/lib/ld-linux-x86-64.so.2" --force-rpath \
    --set-rpath "$final/lib" "$tmp/stage/$bin"

  # Before the rename: the binary runs on its libraries (named explicitly,
  # the interpreter path is the final one).
  local got
  got=$("$tmp/stage/lib/ld-linux-x86-64.so.2" --library-path "$tmp/stage/lib" \
    "$tmp/stage/$bin" --version 2>&1) || die "$name: --version fails: $got"
  case "$got" in *"${VERSION[$name]}"*) ;; *) die "$name: --version says '$got', not '${VERSION[$name]}'" ;; esac
  stamp_text "$name" >"$tmp/stage/.stamp"
  printf '%s\n' "$got" >"$tmp/stage/VERSION"

  # Into place: the old tree aside first, so the name never holds a mix.
  [ ! -e "$final" ] || mv "$final" "$tmp/old"
  mv "$tmp/stage" "$final"
  # After it: started as tests start it, and every library it loads ours.
  local list
  if ! got=$("$final/$bin" --version 2>&1) || ! list=$("$final/lib/ld-linux-x86-64.so.2" --list "$final/$bin" 2>&1); then
    rm -rf "$final"
    die "$name: the installed binary does not start: $got $list"
  fi
  local foreign
  foreign=$(printf '%s\n' "$list" | grep '=>' | grep -v "=> $final/lib/" || true)
  if [ -n "$foreign" ]; then
    rm -rf "$final"
    die "$name: loads libraries from outside $final/lib: $foreign"
  fi
  echo "$ME: $name installed: $final/$bin (${got%%$'\n'*})"
}

for name in "${todo[@]}"; do install_runtime "$name"; done
