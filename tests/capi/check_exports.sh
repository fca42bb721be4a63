#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fails when libexecaff.so exports anything but execaff_* (C++ internals,
# yajl or libstdc++ symbols leaking through the ABI wall), or, given the
# version script, when a symbol it names in a version node is not exported
# at that version (usage: check_exports.sh LIB [MAP]).
set -eu
lib=$1
map=${2:-}
leaked=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | grep -v '^execaff_' || true)
if [ -n "$leaked" ]; then
  echo "libexecaff exports symbols outside execaff_*:" >&2
  echo "$leaked" >&2
  exit 1
fi
count=$(nm -D --defined-only "$lib" | grep -c ' execaff_' || true)
if [ "$count" -lt 20 ]; then
  echo "only $count execaff_ symbols exported; the ABI is missing functions" >&2
  exit 1
fi
echo "libexecaff exports $count symbols, all execaff_*"
[ -n "$map" ] || exit 0
# Each symbol named in a node after 1.0 (whose wildcard covers the rest).
missing=$(awk '/^EXECAFF_[0-9.]+ *\{/ { node = $1; next }
    node != "" && node != "EXECAFF_1.0" && $1 ~ /^execaff_[a-z0-9_]+;$/ { sub(/;$/, "", $1); print $1 "@@" node }' "$map" |
    while read -r want; do
        nm -D --defined-only "$lib" | awk '{print $3}' | grep -qxF "$want" || echo "$want"
    done)
if [ -n "$missing" ]; then
  echo "libexecaff does not export, at the version its map names:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "every symbol of $(basename "$map")'s versioned nodes is exported at its version"
