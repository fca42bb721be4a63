#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cells-run.sh — run the matrix's cells (cells.txt) in one environment: this
# host, or the test VM (busybox ash; started by vm-scenario.sh).
#
# Usage: cells-run.sh --env host|vm --set short|full --execs N --out DIR
#                     --rootfs DIR --oci-config CMD
#                     [--schedtrace PATH] [--shim PATH] [--csv-runs K]
#                     [--only NAME,NAME...] [--keep-traces DIR]
#                     [--crun-fork PATH] [--runtimes FILE]
#
# Layout per environment (why: see README.md, "CPU layouts"):
#   host (2 CPUs): container cpuset 0-1, first CPU 0 = node housekeeping,
#        CPU 1 "isolated" (busy loop; not isolated by the kernel), final 0,
#        housekeeping_cpus "0" in the node config (EXECAFF_CONFIG, read by
#        the shim and the forked crun alike), pinned caller = 0.
#   vm (4 vCPUs, isolcpus=domain,2-3 nohz_full=2-3): reserved 0, container
#        cpuset 1-3, first CPU 1, isolated 2-3 (busy loops), final 1, the
#        shim finds the isolated CPUs itself, pinned caller = 0.
# Every exec is `<runtime> --root R exec --process P ID` with P = {"args":
# ["true"]} — the form CRI-O and conmon use — directly (bare) or through
# execaff-shim (shim), against one container per runtime whose config.json
# carries the annotation exec-cpu-affinity.execaff.io=first.  The cells
# whose via is field or shim-field add CRI-O 1.34's field to P:
# "execCPUAffinity": {"initial": the cpuset's first CPU}.
#
# --crun-fork PATH: the forked crun (contrib/crun) for the cells whose
# runtime is crun-execaff; run as DIR/bin/crun-execaff (a symlink) when its
# name is another, so that its container and the harness's --runtime do
# not collide with stock crun's.  Without it those cells are skipped.
#
# --runtimes FILE: "NAME PATH" a line, the runtimes of tests/runtimes.txt
# that a cell may name (runc-1.3.6, crun-1.21: matrix.sh writes it with
# tests/runtimes.py); a name not there is looked up in PATH.
#
# Writes DIR/summary.tsv (one row per cell), DIR/json/<cell>.json,
# DIR/csv/<cell>.csv; prints each cell's row as it finishes and the whole
# table at the end.  Exit 0 when every cell met its expectation, 1 when one
# did not (FAIL) or could not be proven (INVALID), 2 on usage errors.
set -u

prog=cells-run
say() { echo "$prog: $*" >&2; }
die() { say "error: $*"; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
env_name='' set_name=short execs='' out='' rootfs='' oci_config='' only='' keep='' crun_fork=''
runtimes_file=''
schedtrace=${EXECAFF_SCHEDTRACE:-execaff-schedtrace}
shim=${EXECAFF_SHIM:-execaff-shim}
csv_runs=20
while [ $# -gt 0 ]; do
    case $1 in
    --env) env_name=$2; shift 2 ;;
    --set) set_name=$2; shift 2 ;;
    --execs) execs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rootfs) rootfs=$2; shift 2 ;;
    --oci-config) oci_config=$2; shift 2 ;;
    --schedtrace) schedtrace=$2; shift 2 ;;
    --shim) shim=$2; shift 2 ;;
    --csv-runs) csv_runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --keep-traces) keep=$2; shift 2 ;;
    --crun-fork) crun_fork=$2; shift 2 ;;
    --runtimes) runtimes_file=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
    esac
done
[ -n "$env_name" ] && [ -n "$execs" ] && [ -n "$out" ] && [ -n "$rootfs" ] && [ -n "$oci_config" ] ||
    die "--env, --execs, --out, --rootfs and --oci-config are required"

case $env_name in
host)
    CPUSET=0-1 FINAL=0 ISOLATED=1 BUSY=1 PINNED=0 INITIAL_SHIM=0
    SHIM_CONFIG_JSON='{"housekeeping_cpus": "0"}'
    where=host ;;
vm)
    CPUSET=1-3 FINAL=1 ISOLATED=2-3 BUSY=2-3 PINNED=0 INITIAL_SHIM=0-1
    SHIM_CONFIG_JSON='{}'
    where=vm ;;
*) die "--env must be host or vm" ;;
esac

# Kernel generation: the join keeps cpuset ∩ mask from 6.2 on.
kver=$(uname -r)
kmaj=${kver%%.*}
krest=${kver#*.}
kmin=${krest%%[!0-9]*}
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" -eq 6 ] && [ "$kmin" -ge 2 ]; }; then
    kernel_gen=new
else
    kernel_gen=old
fi

mkdir -p "$out/state" "$out/bundles" "$out/json" "$out/csv" || die "cannot create $out"
out=$(cd "$out" && pwd)
if [ -n "$crun_fork" ]; then
    [ -f "$crun_fork" ] && [ -x "$crun_fork" ] || die "--crun-fork: no executable $crun_fork"
    if [ "$(basename "$crun_fork")" != crun-execaff ]; then
        case $crun_fork in /*) ;; *) crun_fork=$(pwd)/$crun_fork ;; esac
        mkdir -p "$out/bin" && ln -sfn "$crun_fork" "$out/bin/crun-execaff" || die "cannot link $out/bin/crun-execaff"
        crun_fork=$out/bin/crun-execaff
    fi
fi
summary=$out/summary.tsv
: >"$summary"
shim_config=$out/shim.json
echo "$SHIM_CONFIG_JSON" >"$shim_config"
chmod 0644 "$shim_config"
# The node config with "crun_first_image_pin": true, for the
# native-first-image cells (the fork narrows itself before its re-execution).
first_image_config=$out/first-image-node-config.json
printf '%s\n' "$SHIM_CONFIG_JSON" | sed 's/}$/, "crun_first_image_pin": true}/; s/^{, /{/' >"$first_image_config"
chmod 0644 "$first_image_config"
# No node config at all, for the native-nocfg cells.
empty_config=$out/empty-node-config.json
echo '{}' >"$empty_config"
chmod 0644 "$empty_config"
process=$out/process.json
printf '%s\n' '{"terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["true"], "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "cwd": "/"}' >"$process"
# CRI-O 1.34's field (exec_cpu_affinity "first": initial = the container's
# first CPU, no final), for the cells whose via is field or shim-field.
process_field=$out/process-field.json
sed "s/}\$/, \"execCPUAffinity\": {\"initial\": \"${CPUSET%%[-,]*}\"}}/" "$process" >"$process_field"

started=''   # "name=path ..." of the containers we started
cleanup() {
    for entry in $started; do
        n=${entry%%=*} rt=${entry#*=}
        "$rt" --root "$out/state/$n" kill "proof-$n" KILL >/dev/null 2>&1
        i=0
        while [ $i -lt 50 ] && "$rt" --root "$out/state/$n" state "proof-$n" 2>/dev/null | grep -q '"running"'; do
            sleep 0.1 2>/dev/null || usleep 100000
            i=$((i + 1))
        done
        "$rt" --root "$out/state/$n" delete -f "proof-$n" >/dev/null 2>&1
    done
    started=''
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

resolve_runtime() { # NAME|PATH -> absolute path, or empty when absent
    case $1 in
    crun-execaff) [ -z "$crun_fork" ] || echo "$crun_fork" ;;
    /*) [ -x "$1" ] && echo "$1" ;;
    *)
        listed=''
        [ -z "$runtimes_file" ] || listed=$(awk -v n="$1" '$1 == n { print $2 }' "$runtimes_file")
        if [ -n "$listed" ]; then
            [ -x "$listed" ] && echo "$listed"
        else
            command -v "$1" 2>/dev/null
        fi ;;
    esac
}

# container RUNTIME_PATH [NAME]: start (once) the container for that
# runtime, named NAME (default: the binary's name; a peer's binary is called
# runc or crun too); sets cid, croot, ccgroup.
container() {
    n=${2:-$(basename "$1")}
    cid=proof-$n
    croot=$out/state/$n
    case " $started " in
    *" $n=$1 "*) ;;
    *)
        b=$out/bundles/$n
        mkdir -p "$b"
        # The annotation is what the shim acts on (config.json, as CRI-O
        # and podman put it); oci-config has no flag for annotations.
        $oci_config --cpus "$CPUSET" --mems 0 --root "$rootfs" \
            --cgroups-path "/execaff-proof-$n" -- sleep 100000 |
            awk '{ print } /"ociVersion"/ && !done {
                     print "    \"annotations\": {\"exec-cpu-affinity.execaff.io\": \"first\"},"; done = 1 }' \
                >"$b/config.json" || return 1
        "$1" --root "$croot" delete -f "$cid" >/dev/null 2>&1
        if ! "$1" --root "$croot" run -d --bundle "$b" "$cid" </dev/null >"$out/$n.run.log" 2>&1; then
            say "cannot start a container with $1: $(cat "$out/$n.run.log")"
            return 1
        fi
        started="$started $n=$1"
        ;;
    esac
    pid=$("$1" --root "$croot" state "$cid" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
    [ -n "$pid" ] || { say "no pid for $cid"; return 1; }
    # The cpuset hierarchy's path (v1), else the unified one (v2).
    ccgroup=$(sed -n 's/^[0-9]*:cpuset://p' "/proc/$pid/cgroup")
    [ -n "$ccgroup" ] || ccgroup=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
    [ -n "$ccgroup" ] || { say "no cgroup for $cid (pid $pid)"; return 1; }
}

worst=0
echo "== $env_name: kernel $kver ($kernel_gen semantics), CPUs $(cat /sys/devices/system/cpu/online), $execs execs per cell, set $set_name"
echo "== layout: cpuset $CPUSET, final $FINAL, isolated $ISOLATED (busy loops), pinned caller $PINNED"
# (A redirect, not a pipe: the loop must run in this shell so that
# `started` reaches cleanup.)
grep -v '^#' "${PROOF_CELLS_FILE:-$here/cells.txt}" >"$out/cells.list"
while read -r name rtspec via caller expect_old expect_new cell_where; do
    [ -n "$name" ] || continue
    case ",$cell_where," in
    *",$where,"*) ;;
    *",vm-full,"*) [ "$where" = vm ] && [ "$set_name" = full ] || continue ;;
    # The guest's /init says which cgroup layout it mounted.
    *",vm-${EXECAFF_CGROUP:-none},"*) [ "$where" = vm ] || continue ;;
    *) continue ;;
    esac
    if [ -n "$only" ]; then
        case ",$only," in *",$name,"*) ;; *) continue ;; esac
    fi
    rt=$(resolve_runtime "$rtspec")
    if [ -z "$rt" ]; then
        if [ "$rtspec" = crun-execaff ]; then
            echo "SKIP $name: no forked crun given (cells-run.sh --crun-fork; matrix.sh: EXECAFF_CRUN_FORK=PATH)"
        else
            echo "SKIP $name: runtime $rtspec not present"
        fi
        continue
    fi
    case $rtspec in */*) ctr_name='' ;; *) ctr_name=$rtspec ;; esac
    if ! container "$rt" "$ctr_name"; then
        echo "FAIL $name: could not start the container"
        worst=1
        continue
    fi
    rtname=$(basename "$rt")
    if [ "$caller" = pinned ]; then caller_cpus=$PINNED; else caller_cpus=all; fi
    case $via in
    field|shim-field) cell_process=$process_field ;;
    *) cell_process=$process ;;
    esac
    if [ "$via" = shim ] || [ "$via" = shim-field ]; then
        initial=$INITIAL_SHIM
        set -- "$shim" --root "$croot" exec --process "$cell_process" "$cid"
    elif [ "$via" = native ] || [ "$via" = native-nocfg ] || [ "$via" = native-first-image ]; then
        # The runtime pins the exec itself from the container's annotation
        # (the forked crun): execaff's initial, as under the shim.  It reads
        # the node config the shim reads ($EXECAFF_CONFIG below); without
        # it (native-nocfg) the harness still wants the node's housekeeping.
        initial=$INITIAL_SHIM
        set -- "$rt" --root "$croot" exec --process "$process" "$cid"
    else
        # A bare runtime's helpers run wherever the caller runs: its own CPUs
        # are its "initial"; isolated CPUs are flagged regardless.  With the
        # field (via field) the runtime narrows only the tasks it starts for
        # the exec, not itself: the same rule.
        if [ "$caller" = pinned ]; then initial=$PINNED; else initial=any; fi
        set -- "$rt" --root "$croot" exec --process "$cell_process" "$cid"
    fi
    if [ "$kernel_gen" = old ]; then expect=$expect_old; else expect=$expect_new; fi
    verbose=--progress
    [ "${PROOF_VERBOSE:-0}" = 1 ] && verbose=--verbose
    [ -z "$keep" ] || verbose="$verbose --keep-traces $keep"
    # Streamed (a VM run is long); the row without the repeated table
    # header; the per-run progress lines only with PROOF_PROGRESS=1 (they
    # stay in DIR/<cell>.out).
    {
        cell_config=$shim_config
        [ "$via" != native-nocfg ] || cell_config=$empty_config
        [ "$via" != native-first-image ] || cell_config=$first_image_config
        EXECAFF_RUNTIME=$rt EXECAFF_CONFIG=$cell_config "$schedtrace" run \
            --label "$name" --container-cgroup "$ccgroup" --cpuset "$CPUSET" \
            --initial "$initial" --final "$FINAL" --isolated "$ISOLATED" --busy "$BUSY" \
            --caller-cpus "$caller_cpus" --program true --runtime "$rtname" \
            --execs "$execs" --expect "$expect" $verbose --timeout "${PROOF_TIMEOUT:-120}" \
            --summary "$summary" --json "$out/json/$name.json" \
            --csv "$out/csv/$name.csv" --csv-runs "$csv_runs" \
            -- "$@" </dev/null 2>&1
        echo $? >"$out/$name.rc"
    } | tee "$out/$name.out" | awk -v progress="${PROOF_PROGRESS:-0}" '
        /^cell  / { next }
        / run [0-9]+\/[0-9]+: / && progress != 1 { next }
        { print; fflush() }'
    rc=$(cat "$out/$name.rc")
    [ $rc = 0 ] || worst=1
done <"$out/cells.list"
cleanup
echo
"$schedtrace" table "$summary"
exit $worst
