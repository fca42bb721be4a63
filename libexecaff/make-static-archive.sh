#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make-static-archive.sh OUT.a IN.a CXX...
#
# libexecaff-static.a for C programs that link libexecaff statically (the
# forked crun, contrib/crun): one relocatable object holding IN.a (the whole
# library) and the members of libstdc++, libgcc_eh and libgcc it uses, with
# every symbol but execaff_* made local.  Its users need a C linker and
# -lyajl, nothing C++; nothing of libstdc++ can clash with theirs.  Why
# static at all: a shared library costs a C program's every start the
# loader's mmaps and page faults (contrib/crun/DESIGN.md, 8).
set -eu
out=$1 in=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runtime=
for lib in libstdc++.a libgcc_eh.a libgcc.a; do
    path=$("$@" -print-file-name=$lib)
    [ -f "$path" ] || { echo "make-static-archive: $* has no $lib" >&2; exit 1; }
    runtime="$runtime $path"
done
# shellcheck disable=SC2086
ld -r -o "$tmp/all.o" --whole-archive "$in" --no-whole-archive $runtime
nm --defined-only "$tmp/all.o" | awk '$2 ~ /^[A-Z]$/ && $3 ~ /^execaff_/ { print $3 }' >"$tmp/keep"
[ -s "$tmp/keep" ] || { echo "make-static-archive: no execaff_ symbol in $in" >&2; exit 1; }
objcopy --keep-global-symbols="$tmp/keep" --strip-debug "$tmp/all.o" "$tmp/libexecaff.o"
leaked=$(nm --defined-only "$tmp/libexecaff.o" | awk '$2 ~ /^[A-Z]$/ && $3 !~ /^execaff_/ { print $3 }')
[ -z "$leaked" ] || { echo "make-static-archive: global symbols besides execaff_*: $leaked" >&2; exit 1; }
rm -f "$out"
ar rcs "$out" "$tmp/libexecaff.o"
