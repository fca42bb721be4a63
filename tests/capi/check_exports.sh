#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fails when libexecaff.so exports anything but execaff_* (C++ internals,
# yajl or libstdc++ symbols leaking through the ABI wall).
set -eu
lib=$1
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
