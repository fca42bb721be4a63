#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# matrix.sh — issue 5, "Prove it": the kernel x cgroup x runtime matrix,
# traced by execaff-schedtrace.  One command for each run:
#
#   tests/proof/matrix.sh --short     CI: ~20 execs per cell, about 5 minutes
#   tests/proof/matrix.sh --full      200 execs per cell, about 50 minutes;
#                                     writes tests/proof/results/
#
# Usage: matrix.sh --short|--full [--host] [--vm v1|v2]... [--out DIR]
#                  [--execs N] [--vm-execs N] [--only CELL,CELL...]
#                  [--results DIR | --no-results] [--keep-traces]
#
#   --host, --vm v1, --vm v2  the parts to run (default: all three)
#                host: this machine (cgroup v1, its own kernel);
#                vm:   Debian 12's 6.1 kernel under QEMU (tests/vm), 4 vCPUs,
#                      isolcpus=domain,2-3 nohz_full=2-3, pure cgroup v1 or v2
#   --out DIR    keep everything there (default: a new /tmp/execaff-proof.*)
#   --execs N    execs per host cell (short 20, full 200)
#   --vm-execs N execs per VM cell (short 20, full 200)
#   --only LIST  only these cells (names from cells.txt)
#   --results DIR  where --full writes the table and the picture
#                (default tests/proof/results; --no-results: nowhere)
#   --keep-traces  keep every run's raw trace in DIR/<part>/traces (the
#                VM's come out over the serial console: use few execs)
#
# Needs root.  Uses the build's binaries: $EXECAFF_BUILD (default ./build)
# /tests/proof/execaff-schedtrace and /shim/execaff-shim, or the paths in
# $EXECAFF_SCHEDTRACE and $EXECAFF_SHIM.
#
# $EXECAFF_CRUN_FORK: the forked crun (contrib/crun) for the cells
# crun-fork and shim-crun-fork, e.g. /var/tmp/execaff-crun/patched/crun from
#   contrib/crun/build-crun.sh --patched \
#       --pkg-config-path build/libexecaff /var/tmp/execaff-crun/patched
# The host part runs that file; the VM image gets it as
# /usr/local/bin/crun-execaff (libexecaff is linked into it).  Unset:
# those cells SKIP; set to a missing file or one that is not the fork (no
# +EXECAFF in --version): an error (exit 2).
#
# The peers (runc-1.3.6, crun-1.21: the runtimes of tests/runtimes.txt
# that apply execCPUAffinity themselves, contrib/install-peers.sh) are the
# binaries tests/runtimes.py names; the VM image carries their whole
# directories at the same paths.  Not installed: their cells SKIP.
#
# Prints each part's table as it ends and the whole table at the end.
# Exit 0 when every cell of every part met its expectation, 1 otherwise,
# 2 on usage errors, 77 when no requested part could run (not root, no
# tracefs; for the VM parts: no qemu, or the kernel cannot be fetched) —
# the reason is printed.
set -uo pipefail

prog=matrix
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
say() { echo "$prog: $*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

mode='' parts=() out='' execs='' vm_execs='' only='' results='' no_results=0 keep=0
while [ $# -gt 0 ]; do
    case $1 in
    --short) mode=short; shift ;;
    --full) mode=full; shift ;;
    --host) parts+=(host); shift ;;
    --vm) [ $# -ge 2 ] || die "--vm needs v1 or v2"
        case $2 in v1|v2) parts+=("vm-$2") ;; *) die "--vm wants v1 or v2" ;; esac
        shift 2 ;;
    --out) out=${2?}; shift 2 ;;
    --execs) execs=${2?}; shift 2 ;;
    --vm-execs) vm_execs=${2?}; shift 2 ;;
    --only) only=${2?}; shift 2 ;;
    --results) results=${2?}; shift 2 ;;
    --no-results) no_results=1; shift ;;
    --keep-traces) keep=1; shift ;;
    -h|--help) usage ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$mode" ] || usage
[ ${#parts[@]} -gt 0 ] || parts=(host vm-v1 vm-v2)
# Sizes measured on a 2-CPU Debian 12 machine without KVM (README.md,
# "Timings"): a host cell of 20 execs takes 1-3 s; a VM cell of 15 execs
# 5-25 s (runc exec is ~1.2 s under TCG with two busy vCPUs), a VM part
# about 2 minutes with its boot.
if [ "$mode" = short ]; then
    execs=${execs:-20} vm_execs=${vm_execs:-20} vm_timeout=900
else
    execs=${execs:-200} vm_execs=${vm_execs:-200} vm_timeout=5400
    [ $no_results = 1 ] || results=${results:-$here/results}
fi
csv_runs=20

build=${EXECAFF_BUILD:-$repo/build}
schedtrace=${EXECAFF_SCHEDTRACE:-$build/tests/proof/execaff-schedtrace}
shim=${EXECAFF_SHIM:-$build/shim/execaff-shim}

if [ "$(id -u)" != 0 ]; then
    echo "$prog: SKIP: needs root (tracefs, cgroups, containers)"
    exit 77
fi
[ -x "$schedtrace" ] || die "$schedtrace not found: build first (ninja -C build)"
[ -x "$shim" ] || die "$shim not found: build first (ninja -C build)"
crun_fork=${EXECAFF_CRUN_FORK:-}
if [ -n "$crun_fork" ]; then
    [ -f "$crun_fork" ] && [ -x "$crun_fork" ] ||
        die "EXECAFF_CRUN_FORK=$crun_fork: no such executable (build it: contrib/crun/build-crun.sh --patched --pkg-config-path build/libexecaff /var/tmp/execaff-crun/patched)"
    crun_fork=$(readlink -f "$crun_fork")
    fork_version=$("$crun_fork" --version 2>&1) ||
        die "EXECAFF_CRUN_FORK=$crun_fork: --version fails: $fork_version"
    grep -q '+EXECAFF' <<<"$fork_version" ||
        die "EXECAFF_CRUN_FORK=$crun_fork is not the forked crun (no +EXECAFF in --version)"
elif [ -z "$only" ] || [[ ,$only, == *,crun-fork,* || ,$only, == *,shim-crun-fork,* ]]; then
    say "the forked crun's cells (crun-fork, shim-crun-fork) will SKIP: to run them, build the fork (contrib/crun/build-crun.sh --patched --pkg-config-path build/libexecaff /var/tmp/execaff-crun/patched) and set EXECAFF_CRUN_FORK=/var/tmp/execaff-crun/patched/crun (see --help)"
fi
if ! check=$("$schedtrace" check 2>&1); then
    echo "$prog: SKIP: cannot trace on this host: $check"
    exit 77
fi

if [ -z "$out" ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/execaff-proof.XXXXXX")
fi
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
echo "$prog: $mode run, parts: ${parts[*]}, output in $out"

# The installed peers that a cell names, "NAME PATH" a line, for
# cells-run.sh --runtimes (the VM image carries only those: each adds
# seconds to every boot).
peers=$out/runtimes.resolved
: >"$peers"
for name in $(python3 "$repo/tests/runtimes.py" --names --applies field); do
    grep -v '^#' "${PROOF_CELLS_FILE:-$here/cells.txt}" | awk '{ print $2 }' | grep -xF "$name" >/dev/null || continue
    path=$(python3 "$repo/tests/runtimes.py" --path "$name" 2>/dev/null) && echo "$name $path" >>"$peers"
done

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

# ---- host -------------------------------------------------------------------
part_host() {
    local dir=$out/host
    mkdir -p "$dir"
    local busybox=''
    for b in /usr/bin/busybox /bin/busybox; do
        if [ -x "$b" ] && ! ldd "$b" 2>/dev/null | grep '=>' >/dev/null; then busybox=$b; break; fi
    done
    if [ -z "$busybox" ]; then
        echo "$prog: SKIP host: no static busybox for the container (apt-get install busybox-static)"
        return 77
    fi
    # crun 1.8.1 refuses a hybrid host while a controller is on cgroup2
    # (tests/integration/FACTS.md): move those (hugetlb) to v1 hierarchies.
    if [ -s /sys/fs/cgroup/unified/cgroup.controllers ]; then
        if [ -x "$repo/tests/integration/prepare-host.sh" ]; then
            "$repo/tests/integration/prepare-host.sh" || say "prepare-host.sh failed: crun cells may fail"
        else
            for c in $(cat /sys/fs/cgroup/unified/cgroup.controllers); do
                mkdir -p "/sys/fs/cgroup/$c" && mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"
            done
        fi
    fi
    # The container's root: busybox and its applets, read-only.
    local rootfs=$dir/rootfs
    if [ ! -x "$rootfs/bin/busybox" ]; then
        mkdir -p "$rootfs"/{bin,dev,proc,sys,tmp,etc,root,usr}
        cp "$busybox" "$rootfs/bin/busybox"
        local a
        for a in $("$busybox" --list); do
            [ "$a" = busybox ] || ln -sf busybox "$rootfs/bin/$a"
        done
        ln -sfn bin "$rootfs/sbin"
        ln -sfn ../bin "$rootfs/usr/bin"
        ln -sfn ../bin "$rootfs/usr/sbin"
        printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
        printf 'root:x:0:\n' >"$rootfs/etc/group"
        chmod 1777 "$rootfs/tmp"
    fi
    local args=(--env host --set "$mode" --execs "$execs" --out "$dir" --rootfs "$rootfs"
        --oci-config "sh $repo/tests/vm/oci-config.sh" --csv-runs "$csv_runs"
        --schedtrace "$schedtrace" --shim "$shim" --runtimes "$peers")
    [ -z "$only" ] || args+=(--only "$only")
    [ $keep = 0 ] || args+=(--keep-traces "$dir/traces")
    [ -z "$crun_fork" ] || args+=(--crun-fork "$crun_fork")
    sh "$here/cells-run.sh" "${args[@]}"
}

# ---- VM -----------------------------------------------------------------------
vm_image=''
vm_kernel=''
vm_prepare() {
    [ -z "$vm_image" ] || return 0
    if ! command -v "${QEMU:-qemu-system-x86_64}" >/dev/null; then
        echo "$prog: SKIP vm: qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
        return 77
    fi
    if ! vm_kernel=$("$repo/tests/vm/fetch-kernel.sh" "${EXECAFF_VM_CACHE:-$HOME/.cache/execaff-vm}"); then
        echo "$prog: SKIP vm: Debian's 6.1 kernel could not be fetched (see above)"
        return 77
    fi
    vm_image=$out/vm/proof.cpio.gz
    mkdir -p "$out/vm"
    local extra_adds=() name path
    [ -z "$crun_fork" ] || extra_adds=(--add "$crun_fork:/usr/local/bin/crun-execaff")
    # A peer with its own loader and libraries: its whole directory.
    while read -r name path; do
        extra_adds+=(--add "$(dirname "$path")")
    done <"$peers"
    "$repo/tests/vm/build-initramfs.sh" "$vm_image" --script "$here/vm-scenario.sh" \
        --add "$schedtrace:/usr/local/bin/execaff-schedtrace" \
        --add "$shim:/usr/local/bin/execaff-shim" \
        --add "$here/cells-run.sh:/proof/cells-run.sh" \
        --add "$here/cells.txt:/proof/cells.txt" --add "$peers:/proof/runtimes.resolved" \
        "${extra_adds[@]}" >/dev/null ||
        { vm_image=''; die "build-initramfs.sh failed"; }
}

part_vm() { # v1|v2
    local cg=$1 rc
    vm_prepare || return $?
    local dir=$out/vm-$cg
    mkdir -p "$dir"
    # maxcpus=1: the guest starts with CPU 0 alone and its scenario brings
    # the others up after its tracing warm-up (vm-scenario.sh says why).
    local append="maxcpus=1 isolcpus=domain,2-3 nohz_full=2-3 execaff.proof_execs=$vm_execs"
    append+=" execaff.proof_set=$mode execaff.proof_csv_runs=$csv_runs"
    [ -z "$only" ] || append+=" execaff.proof_only=$only"
    [ $keep = 0 ] || append+=" execaff.proof_keep=1"
    # EXECAFF_VM_APPEND: more kernel arguments, to debug a guest by hand
    # (e.g. "execaff.printk=8").
    [ -z "${EXECAFF_VM_APPEND:-}" ] || append+=" $EXECAFF_VM_APPEND"
    local attempt
    for attempt in 1 2; do
        echo "== vm $cg: booting $(basename "$(dirname "$vm_kernel")") ($vm_execs execs per cell; no output until it ends)"
        "$repo/tests/vm/run-vm.sh" --kernel "$vm_kernel" --initrd "$vm_image" --cgroup "$cg" \
            --timeout "$vm_timeout" --append "$append" >"$dir/console.txt" 2>"$dir/run-vm.txt"
        rc=$?
        # One more boot, once, when the guest's kernel locked up (run-vm.sh
        # exits 125 and names the lockup): that is the emulator's kernel
        # stuck, not a placement result.  The report stays in
        # run-vm-attempt1.txt and is printed; a second lockup fails.
        if [ $rc = 125 ] && [ $attempt = 1 ] &&
            grep -E 'soft lockup|RCU stall|rcu_.*stall|hung task' "$dir/run-vm.txt" >/dev/null; then
            cat "$dir/run-vm.txt" >&2
            mv "$dir/run-vm.txt" "$dir/run-vm-attempt1.txt"
            mv "$dir/console.txt" "$dir/console-attempt1.txt"
            say "vm $cg: the guest kernel locked up (report above, kept in $dir/run-vm-attempt1.txt); booting it once more"
            continue
        fi
        break
    done
    # The scenario's output without the shipped files and the per-exec
    # progress lines (those stay in console.txt).
    sed -e '/=====PROOF-SUMMARY-BEGIN=====/,$d' -e '/^[^ ]* run [0-9]*\/[0-9]*: /d' "$dir/console.txt"
    awk '/=====PROOF-SUMMARY-BEGIN=====/ { on = 1; next } /=====PROOF-SUMMARY-END=====/ { on = 0 } on' \
        "$dir/console.txt" >"$dir/summary.tsv"
    awk '/=====PROOF-FILES-BEGIN=====/ { on = 1; next } /=====PROOF-FILES-END=====/ { on = 0 } on' \
        "$dir/console.txt" | base64 -d 2>/dev/null | tar xzf - -C "$dir" 2>/dev/null
    cat "$dir/run-vm.txt" >&2
    case $rc in
    0|1) return $rc ;;
    *) say "vm $cg: run-vm.sh exited $rc (124 timeout, 125 no result)"; return 1 ;;
    esac
}

# ---- run ----------------------------------------------------------------------
declare -A took status
t_all=$(now)
for part in "${parts[@]}"; do
    t0=$(now)
    case $part in
    host) part_host ;;
    vm-v1) part_vm v1 ;;
    vm-v2) part_vm v2 ;;
    esac
    status[$part]=$?
    took[$part]=$(secs "$t0" "$(now)")
    echo "== $part: exit ${status[$part]}, ${took[$part]} s"
done
total=$(secs "$t_all" "$(now)")

summaries=()
for part in "${parts[@]}"; do
    [ -s "$out/$part/summary.tsv" ] && summaries+=("$out/$part/summary.tsv")
done
machine="$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-Linux}"), $(nproc) CPUs, host kernel $(uname -r)"
[ -z "$vm_kernel" ] || machine+="; VM: qemu TCG, 4 vCPUs, $(cut -d' ' -f1,2 "$(dirname "$vm_kernel")/VERSION")"
title="execaff proof matrix ($mode: $execs execs per host cell, $vm_execs per VM cell) — $(date -u '+%Y-%m-%d %H:%M UTC') — $machine"
times=''
for part in "${parts[@]}"; do times+="$part ${took[$part]} s (exit ${status[$part]}), "; done
times+="total $total s"
echo
if [ ${#summaries[@]} -gt 0 ]; then
    "$schedtrace" table --title "$title" "${summaries[@]}"
fi
echo "wall time: $times"

if [ -n "$results" ] && [ ${#summaries[@]} -gt 0 ]; then
    mkdir -p "$results"
    md=$results/proof-$mode.md
    {
        echo "# execaff proof matrix, $mode run"
        echo
        echo "* date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "* machine: $machine"
        echo "* tree: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" status --porcelain -- . ':!tests/proof/results' 2>/dev/null | grep . >/dev/null && echo ' + uncommitted changes')"
        echo "* execs per cell: host $execs, VM $vm_execs; wall time: $times"
        echo "* command: tests/proof/matrix.sh --$mode; columns: see tests/proof/README.md"
        echo
        "$schedtrace" table --markdown "${summaries[@]}"
    } >"$md"
    rows=()
    if [ -d "$out/host/csv" ]; then
        cells=runc-unpinned,shim-runc-unpinned,crun-unpinned,shim-crun-unpinned
        for c in crun-fork shim-crun-fork; do
            [ -s "$out/host/csv/$c.csv" ] && cells+=",$c"
        done
        rows+=("host $(uname -r | cut -d- -f1) v1=$out/host:$cells")
    fi
    for cg in v1 v2; do
        [ -d "$out/vm-$cg/csv" ] || continue
        cells=runc,shim-runc,crun,shim-crun
        # The fork beside them when it ran (EXECAFF_CRUN_FORK).
        for c in crun-fork shim-crun-fork; do
            [ -s "$out/vm-$cg/csv/$c.csv" ] && cells+=",$c"
        done
        rows+=("VM 6.1 $cg=$out/vm-$cg:$cells")
    done
    if [ ${#rows[@]} -gt 0 ]; then
        "$here/plot.sh" "$results/proof-$mode.png" "execaff proof matrix, $mode run, $(date -u '+%Y-%m-%d'): first $csv_runs execs of each cell" "${rows[@]}" >/dev/null ||
            say "plot failed"
    fi
    echo "results: $md${rows:+ and $results/proof-$mode.png}"
fi

worst=0 ran=0
for part in "${parts[@]}"; do
    case ${status[$part]} in
    0) ran=1 ;;
    77) ;;
    *) ran=1; worst=1 ;;
    esac
done
[ $ran = 1 ] || exit 77
exit $worst
