#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One-time, idempotent host preparation for the real-container tests.
#
# On a hybrid cgroup host (v1 controllers + cgroup2 at /sys/fs/cgroup/unified)
# crun 1.8.1 refuses to run containers ("cgroups in hybrid mode not supported,
# drop all controllers from cgroupv2") while any controller is still bound to
# cgroup2.  On Debian 12 that controller is hugetlb; binding it to its own v1
# hierarchy moves it off cgroup2.  runc 1.1.5 keeps working afterwards.
#
# Exit status: 0 when the host is ready (or nothing was needed), 1 on failure.
# Safe to run any number of times; prints what it did on stderr.
set -eu

CGROOT=/sys/fs/cgroup
UNIFIED=$CGROOT/unified

log() { echo "prepare-host: $*" >&2; }

if [ "$(id -u)" != 0 ]; then
    log "not root, nothing done"
    exit 1
fi

# Pure cgroup v2 (no hybrid): nothing to do.
if [ -f "$CGROOT/cgroup.controllers" ]; then
    log "pure cgroup v2 host, nothing to do"
    exit 0
fi

if [ ! -f "$UNIFIED/cgroup.controllers" ]; then
    log "no cgroup2 hierarchy at $UNIFIED (legacy v1), nothing to do"
    exit 0
fi

controllers=$(cat "$UNIFIED/cgroup.controllers")
if [ -z "$controllers" ]; then
    log "no controllers on $UNIFIED, nothing to do"
    exit 0
fi

for c in $controllers; do
    target=$CGROOT/$c
    # Already a v1 hierarchy of that controller there? (a controller on cgroup2
    # cannot be on a v1 hierarchy at the same time, so this is mostly paranoia)
    if awk -v t="$target" '$5 == t && $0 ~ / - cgroup /' /proc/self/mountinfo | grep -q .; then
        log "$target already mounted"
        continue
    fi
    log "moving controller '$c' off cgroup2: mount -t cgroup -o $c cgroup $target"
    mkdir -p "$target"
    mount -t cgroup -o "$c" cgroup "$target"
done

left=$(cat "$UNIFIED/cgroup.controllers")
if [ -n "$left" ]; then
    log "controllers still on cgroup2: $left"
    exit 1
fi
log "host ready (no controllers left on $UNIFIED)"
exit 0
