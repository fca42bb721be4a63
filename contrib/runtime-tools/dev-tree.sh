#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Unpacks runtime-tools 260e151 into DIR with exec-cpu-affinity.patch
# applied, as a git repository whose first commit is the unpatched source:
# edit the programs there, then write the patch back with --update.
#
# Usage: dev-tree.sh DIR             unpack and patch into DIR (must not exist)
#        dev-tree.sh --update DIR    DIR's changes since its first commit
#                                    become contrib/runtime-tools/exec-cpu-affinity.patch
#
# The patch's leading description (up to the first "diff --git") is kept.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_file=$here/exec-cpu-affinity.patch
tarball=${EXECAFF_RTOOLS_TARBALL:-$here/../../../shared/third_party/runtime-tools-260e151.tar.xz}
die() { echo "dev-tree: $*" >&2; exit 1; }
git_() { git -C "$dir" -c user.name=dev-tree -c user.email=dev-tree@execaff.invalid "$@"; }

update=0
[ "${1-}" = --update ] && { update=1; shift; }
[ $# -eq 1 ] || { sed -n '/^# Usage:/,/^# The patch/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
dir=$1

if [ "$update" = 1 ]; then
    base=$(git_ rev-list --max-parents=0 HEAD 2>/dev/null) || die "'$dir' is not a tree dev-tree.sh made"
    git_ add -A validation
    header=$(sed '/^ .* | /,$d; /^diff --git/,$d' "$patch_file")
    { printf '%s\n\n' "$header"; git_ diff --cached --stat "$base"; git_ diff --cached "$base"; } >"$patch_file.tmp"
    mv "$patch_file.tmp" "$patch_file"
    echo "dev-tree: wrote $patch_file" >&2
    exit 0
fi

[ -f "$tarball" ] || die "tarball '$tarball' not found"
[ -e "$dir" ] && die "'$dir' exists"
mkdir -p "$dir"
tar -xJf "$tarball" -C "$dir" --strip-components=1
git_ init -q
git_ add -A >/dev/null
git_ commit -qm "runtime-tools 260e151, unmodified"
patch -d "$dir" -p1 --forward --batch --quiet <"$patch_file" || die "the patch does not apply"
echo "dev-tree: $dir is runtime-tools 260e151 with the patch applied (uncommitted)" >&2
