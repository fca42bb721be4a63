#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-scenario.sh — the guest side of `conformance.py --vm` (the initramfs's
# /scenario.sh, busybox sh): the rows of the peer table on the VM's kernel.
# It decides nothing: conformance.py writes the plan from its own row and
# column lists, this script runs it and hands every result back over the
# serial console, and conformance.py judges and prints the table.
#
# /peers/plan, one item a line (words separated by single spaces):
#   jobs J                       run the columns in J lanes side by side
#   caller CPUS                  the caller's cpuset cgroup (rows "caller")
#   column N BINARY RUNTIME      N counts from 0; RUNTIME: the shim's
#                                EXECAFF_RUNTIME, or - for none
#   bundle NAME                  /peers/bundles/NAME/config.json, whose
#                                cgroupsPath holds @ID@ for the container id
#   cell ROW BUNDLE WHERE PROCESS [ARG...]
#                                WHERE: process (exec --process PROCESS),
#                                caller (the same, the runtime started in the
#                                caller's cgroup), config (CLI form: exec ID
#                                ARG...; PROCESS is -)
# For each column, one container per bundle (created and started through
# the column's binary, as on the host), then every cell's exec into it.
# Output, one line per cell and column, column by column:
#   =CELL= ROW N RC o:STDOUT_BASE64 e:STDERR_BASE64
# (RC as the shell has it: 128 + S for a death by signal S).
# Exit 0 when every container could be made (a cell's own failure is a
# result, not an error), 1 otherwise.

plan=/peers/plan
tmp=/tmp/peers
mkdir -p "$tmp" || exit 1
echo "=KERNEL= $(uname -r) cgroup $EXECAFF_CGROUP cpus $(cat /sys/devices/system/cpu/online)"

# The caller's cgroup: on the cpuset hierarchy (v1) or the unified one (v2).
caller_cpus=$(sed -n 's/^caller //p' "$plan")
if [ -d /sys/fs/cgroup/cpuset ]; then
    callercg=/sys/fs/cgroup/cpuset/execaff-conformance
    mkdir -p "$callercg" &&
        cat /sys/fs/cgroup/cpuset/cpuset.mems >"$callercg/cpuset.mems" || exit 1
else
    callercg=/sys/fs/cgroup/execaff-conformance
    mkdir -p "$callercg" || exit 1
fi
echo "$caller_cpus" >"$callercg/cpuset.cpus" || exit 1

# rt ARG...: the current column's binary ($bin) with its environment
# ($runtime_env: the shim's EXECAFF_RUNTIME=..., or empty).
rt() {
    env ${runtime_env:+"$runtime_env"} "$bin" "$@"
}

# column N: every cell of column N, one =CELL= line each; 1 when a
# container could not be made.
column() {
    n=$1 status=0
    root=/run/peers/$n
    work=$tmp/$n
    mkdir -p "$work" || return 1
    bin=$(sed -n "s/^column $n \([^ ]*\) .*/\1/p" "$plan")
    runtime=$(sed -n "s/^column $n [^ ]* //p" "$plan")
    runtime_env=''
    [ "$runtime" = - ] || runtime_env=EXECAFF_RUNTIME=$runtime
    made=''
    for b in $(sed -n 's/^bundle //p' "$plan"); do
        id=peers-$n-$b
        mkdir -p "$work/$b"
        sed "s/@ID@/$id/g" "/peers/bundles/$b/config.json" >"$work/$b/config.json"
        if rt --root "$root" create --bundle "$work/$b" "$id" </dev/null >"$work/create.log" 2>&1 &&
            rt --root "$root" start "$id" </dev/null >>"$work/create.log" 2>&1; then
            made="$made $id"
        else
            echo "=ERROR= column $n: container $id: $(tail -n 3 "$work/create.log" | tr '\n' ' ')"
            rt --root "$root" delete --force "$id" >/dev/null 2>&1
            status=1
        fi
    done
    grep '^cell ' "$plan" | while read -r _ row b where process args; do
        id=peers-$n-$b
        case " $made " in *" $id "*) ;; *) continue ;; esac
        set -- env ${runtime_env:+"$runtime_env"} "$bin" --root "$root" exec
        case $where in
        process) set -- "$@" --process "$process" "$id" ;;
        # The runtime started from the caller's cgroup.
        caller) set -- sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$callercg" \
            "$@" --process "$process" "$id" ;;
        # The CLI form: the program's words, split.
        config)
            # shellcheck disable=SC2086
            set -- "$@" "$id" $args ;;
        esac
        # In a subshell that execs it: ash reports a foreground command
        # killed by a signal ("Aborted") on its own stderr, which would
        # otherwise be the cell's.
        (exec timeout 120 "$@" </dev/null >"$work/out" 2>"$work/err") 2>/dev/null
        rc=$?
        echo "=CELL= $row $n $rc o:$(base64 -w 0 <"$work/out") e:$(base64 -w 0 <"$work/err")"
    done
    for id in $made; do
        rt --root "$root" kill "$id" KILL >/dev/null 2>&1
        i=0
        while [ $i -lt 50 ] && rt --root "$root" state "$id" 2>/dev/null | grep -q '"running"'; do
            sleep 0.1
            i=$((i + 1))
        done
        rt --root "$root" delete --force "$id" >/dev/null 2>&1
    done
    return $status
}

# The columns share nothing but the caller's cgroup: "jobs J" of the plan
# runs them in J lanes side by side (column N in lane N mod J).
jobs=$(sed -n 's/^jobs //p' "$plan")
columns=$(sed -n 's/^column \([0-9]*\) .*/\1/p' "$plan")
lane=0
while [ "$lane" -lt "${jobs:-1}" ]; do
    (
        rc=0
        for n in $columns; do
            [ $((n % ${jobs:-1})) = "$lane" ] || continue
            column "$n" >"$tmp/column-$n.txt" || rc=1
        done
        exit $rc
    ) &
    eval "lane_$lane=\$!"
    lane=$((lane + 1))
done
status=0
lane=0
while [ "$lane" -lt "${jobs:-1}" ]; do
    eval "wait \$lane_$lane" || status=1
    lane=$((lane + 1))
done
for n in $columns; do
    cat "$tmp/column-$n.txt"
done
rmdir "$callercg" 2>/dev/null
exit $status
