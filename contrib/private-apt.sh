# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Sourced (bash): apt-get over a private package list of one Debian suite,
# for the scripts that fetch packages newer than the host's bookworm
# (contrib/install-peers.sh: runtimes; tests/clients/build-crio.sh: Go;
# contrib/crun/build-crun.sh --base 1.21: trixie's crun source).
# The host's sources, lists and caches are never touched: each private
# list lives in its own directory DIR (DIR/sources.list, DIR/lists,
# DIR/cache).  Functions return non-zero with apt's output on stderr; the
# caller says what it was fetching and why.

PRIVATE_APT_MIRROR=${PRIVATE_APT_MIRROR:-http://deb.debian.org/debian}

# private_apt DIR ARG...: apt-get with DIR's list as its only source.
private_apt() {
  local dir=$1
  shift
  apt-get -q -o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
    -o Dir::Cache::archives="$dir/cache/archives" "$@"
}

# private_apt_update DIR SUITE [TYPE]: DIR's list names SUITE's main
# component only, as TYPE (deb, the default, or deb-src for apt-get source),
# and its package lists are fetched.  A warning counts as a failure (a list
# apt could not fetch would leave an old or empty one).
private_apt_update() {
  local dir=$1 suite=$2 type=${3:-deb} log
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" || return 1
  echo "$type $PRIVATE_APT_MIRROR $suite main" >"$dir/sources.list" || return 1
  if ! log=$(private_apt "$dir" update 2>&1) || grep -q '^[WE]:' <<<"$log"; then
    printf '%s\n' "$log" >&2
    return 1
  fi
}

# private_apt_download DIR DEST PACKAGE=VERSION...: the .deb files into
# DEST (which apt's download method, running as _apt, must be able to
# write: it is chowned to _apt when that user exists).
private_apt_download() {
  local dir=$1 dest=$2 log
  shift 2
  id _apt >/dev/null 2>&1 && chown _apt "$dest"
  if ! log=$(cd "$dest" && private_apt "$dir" download "$@" 2>&1); then
    printf '%s\n' "$log" >&2
    return 1
  fi
}

# private_apt_cache DIR ARG...: apt-cache with DIR's list (showsrc, policy).
private_apt_cache() {
  local dir=$1
  shift
  apt-cache -o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=- \
    -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" "$@"
}
