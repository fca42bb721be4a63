# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2034  # tarball, out, ...: the callers read them
# Sourced by the scripts that build a tool for the tests from an unmodified
# tarball in ../shared/third_party/ (tests/clients/build-crio.sh,
# tests/conformance/build-runtime-tools.sh): the command line they share and
# the cache directory keyed by the tarball's hash.
#
# third_party_args NAME TARBALL CACHE_PARENT [ARG...]
#   parses --tarball FILE, --cache-parent DIR (the defaults given), and
#   --print-cached; sets tarball and cache_parent (checked, absolute) and
#   print_cached (0 or 1).  Errors start with NAME; -h and a bad argument
#   print the calling script's "# Usage:" comment, up to "# The result".
# third_party_out PREFIX [PATCH...]
#   sets sha (the tarball's sha256), key and out, the cache directory:
#   CACHE_PARENT/PREFIX-<key's first 16 hex digits>.  key is sha without
#   patches, else the sha256 of sha and each patch's sha256, one a line:
#   a changed patch builds anew, as a changed tarball does.

third_party_usage() {
  sed -n '/^# Usage:/,/^# The result/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

third_party_args() {
  local name=$1
  tarball=$2 cache_parent=$3 print_cached=0
  shift 3
  while [ $# -gt 0 ]; do
    case $1 in
      --tarball) [ $# -ge 2 ] || third_party_usage; tarball=$2; shift ;;
      --tarball=*) tarball=${1#*=} ;;
      --cache-parent) [ $# -ge 2 ] || third_party_usage; cache_parent=$2; shift ;;
      --cache-parent=*) cache_parent=${1#*=} ;;
      --print-cached) print_cached=1 ;;
      -h | --help) third_party_usage ;;
      *) echo "$name: unknown argument '$1'" >&2; third_party_usage ;;
    esac
    shift
  done
  if [ ! -f "$tarball" ]; then
    echo "$name: tarball '$tarball' not found (the third-party sources live in ../shared/third_party/ beside the checkout)" >&2
    exit 1
  fi
  if [ ! -d "$cache_parent" ]; then
    echo "$name: cache parent '$cache_parent' is not a directory" >&2
    exit 1
  fi
  tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
  cache_parent=$(cd "$cache_parent" && pwd)
}

third_party_out() {
  local prefix=$1
  shift
  sha=$(sha256sum "$tarball" | cut -d' ' -f1)
  key=$sha
  if [ $# -gt 0 ]; then
    key=$({ echo "$sha"; sha256sum "$@" | cut -d' ' -f1; } | sha256sum | cut -d' ' -f1)
  fi
  out=$cache_parent/$prefix-${key:0:16}
}
