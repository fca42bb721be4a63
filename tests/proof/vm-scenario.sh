#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# vm-scenario.sh — the guest side of the matrix (the initramfs's
# /scenario.sh, see matrix.sh).  Runs cells-run.sh --env vm and hands the
# results back over the serial console, the VM's only channel:
#   =====PROOF-SUMMARY-BEGIN===== summary.tsv rows =====PROOF-SUMMARY-END=====
#   =====PROOF-FILES-BEGIN===== base64 of a gzip'd tar of json/ and csv/
#   =====PROOF-FILES-END=====
# Parameters come from the kernel command line (run-vm.sh --append):
#   execaff.proof_execs=N (default 10), execaff.proof_set=short|full,
#   execaff.proof_csv_runs=K (default 20), execaff.proof_only=a,b,
#   execaff.proof_verbose=1, execaff.proof_timeout=S (per exec, default 120),
#   execaff.proof_keep=1 (keep each run's raw trace; shipped in traces/)
# Exit status: cells-run.sh's.

param() {
    v=$2
    for w in $(cat /proc/cmdline); do
        case $w in "$1="*) v=${w#*=} ;; esac
    done
    echo "$v"
}

execs=$(param execaff.proof_execs 10)
set_name=$(param execaff.proof_set short)
csv_runs=$(param execaff.proof_csv_runs 20)
only=$(param execaff.proof_only '')
PROOF_VERBOSE=$(param execaff.proof_verbose 0)
PROOF_TIMEOUT=$(param execaff.proof_timeout 120)
# One line per exec on the console: a stalled run shows where it stalled.
PROOF_PROGRESS=1
export PROOF_VERBOSE PROOF_TIMEOUT PROOF_PROGRESS
# matrix.sh boots this VM with maxcpus=1: the tracing check and the warm-up
# below run with CPU 0 alone, then the other CPUs come online.
execaff-schedtrace check || exit $?

# Two idle tracefs instances with the harness's events, a pid filter and
# event-fork, for the whole scenario (tracing off: they record nothing).
# Why: enabling an event or a pid filter registers a tracepoint probe, and
# going from 0 to 1 or from 1 to 2 probes live-patches kernel text (static
# calls, text_poke_bp).  Under QEMU TCG that was seen to hang the guest: an
# RCU stall, one vCPU looping on the int3 of the patch, another waiting for
# it in smp_call_function_many_cond (from tracing_stop_cmdline_record, as
# the harness removed its instance).  With two probes already on every
# tracepoint, the harness's own (un)registrations only swap the probe
# array and never patch the call sites.  A real machine does not need this.
# The warm-up's own patches hung too, once in a while (a soft lockup of the
# scenario's shell, 12-04, two CI runs in five), which is why they run
# before the other CPUs are up: a text patch with one CPU online waits for
# no other CPU.
T=/sys/kernel/tracing
sleep 100000 &
warm_pid=$!
for w in execaff-warm-1 execaff-warm-2; do
    d=$T/instances/$w
    mkdir -p "$d" && echo 0 >"$d/tracing_on" || exit 125
    for e in sched/sched_switch sched/sched_process_fork sched/sched_process_exec \
        sched/sched_process_exit sched/sched_migrate_task cgroup/cgroup_attach_task \
        task/task_newtask; do
        echo 1 >"$d/events/$e/enable"
    done
    echo 1 >"$d/options/event-fork"
    echo "$warm_pid" >"$d/set_event_pid"
done

# Now the node's other CPUs; isolcpus= and nohz_full= apply to them as they
# come online.
sys=/sys/devices/system/cpu
for f in $sys/cpu[0-9]*/online; do
    [ "$(cat "$f")" = 1 ] || echo 1 >"$f" || { echo "cannot online ${f%/online}"; exit 125; }
done
if [ "$(cat $sys/online)" != "$(cat $sys/present)" ]; then
    echo "CPUs online $(cat $sys/online), present $(cat $sys/present)"; exit 125
fi
echo "online: $(cat $sys/online)  isolated: $(cat $sys/isolated)  nohz_full: $(cat $sys/nohz_full)"

t0=$(cut -d' ' -f1 /proc/uptime)
set -- --env vm --set "$set_name" --execs "$execs" --out /tmp/proof \
    --rootfs /bundle/rootfs --oci-config oci-config --csv-runs "$csv_runs" \
    --schedtrace /usr/local/bin/execaff-schedtrace --shim /usr/local/bin/execaff-shim
[ -z "$only" ] || set -- "$@" --only "$only"
# The forked crun is in the image only when matrix.sh had EXECAFF_CRUN_FORK.
[ -x /usr/local/bin/crun-execaff ] && set -- "$@" --crun-fork /usr/local/bin/crun-execaff
# The peers matrix.sh found installed, at their host paths.
[ -f /proof/runtimes.resolved ] && set -- "$@" --runtimes /proof/runtimes.resolved
[ "$(param execaff.proof_keep 0)" = 1 ] && set -- "$@" --keep-traces /tmp/proof/traces
# The harness itself stays on the reserved CPU like the rest of the node's
# housekeeping; each COMMAND gets its caller CPUs from --caller-cpus.
taskset -c 0 sh /proof/cells-run.sh "$@"
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "cells took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (guest clock)"

echo "=====PROOF-SUMMARY-BEGIN====="
cat /tmp/proof/summary.tsv
echo "=====PROOF-SUMMARY-END====="
echo "=====PROOF-FILES-BEGIN====="
(cd /tmp/proof && tar cf - json csv $(ls -d traces 2>/dev/null)) | gzip -c | base64
echo "=====PROOF-FILES-END====="
exit $rc
