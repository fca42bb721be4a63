#!/bin/sh
# affinity-reset.sh — show what a pre-6.2 kernel does to an exec'd process.
#
# For runc and crun in turn: start the busybox bundle (/bundle, cpuset 1-3,
# init `sleep 1000`), then exec `grep Cpus_allowed_list /proc/self/status`
# into it from callers pinned with taskset to 0, 0-3 and 2 (0 and 2 in the
# busy-loop pass), and print one
# line per exec:
#   RESULT <runtime> cgroup=<v1|v2> caller=<cpus> exec=<Cpus_allowed_list>
# Also reports the kernel, the tracepoints the project wants and, with
# busy loops pinned to CPUs 2 and 3, the same execs again.
#
# Exit 0 when every exec printed a Cpus_allowed_list (whatever it was),
# 1 otherwise. The expectation on 6.1 is exec=1-3 for every caller.

rc=0
say() { echo "$*"; }

say "kernel: $(uname -r)  cgroup: ${EXECAFF_CGROUP:-?}  cpus online: $(cat /sys/devices/system/cpu/online)"
say "isolated: '$(cat /sys/devices/system/cpu/isolated 2>/dev/null)'  nohz_full: '$(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)'"
say "cmdline: $(cat /proc/cmdline)"

T=/sys/kernel/tracing
for ev in sched/sched_switch sched/sched_process_exec sched/sched_migrate_task \
    cgroup/cgroup_attach_task task/task_newtask; do
    if [ -d "$T/events/$ev" ]; then say "tracepoint $ev: present"; else say "tracepoint $ev: MISSING"; fi
done

# The kernel itself, without a runtime: a shell pinned to CPU 2 joins a cgroup
# whose cpuset is 1-3. Pre-6.2 kernels reset it to 1-3; 6.2+ keep 2.
kernel_join() {
    if [ "$EXECAFF_CGROUP" = v2 ]; then
        d=/sys/fs/cgroup/join-test
    else
        d=/sys/fs/cgroup/cpuset/join-test
    fi
    mkdir -p "$d"
    echo 0 >"$d/cpuset.mems"
    echo 1-3 >"$d/cpuset.cpus"
    got=$(taskset -c 2 sh -c "echo \$\$ >$d/cgroup.procs && grep Cpus_allowed_list /proc/self/status" |
        sed 's/^Cpus_allowed_list:[[:space:]]*//')
    say "KERNEL cgroup=$EXECAFF_CGROUP task pinned to 2 joins cpuset 1-3: Cpus_allowed_list=$got"
    rmdir "$d"
}
kernel_join

# exec_as RUNTIME ID CALLER_CPUS: one exec from a caller pinned to CALLER_CPUS
exec_as() {
    s0=$(cut -d' ' -f1 /proc/uptime)
    out=$(taskset -c "$3" "$1" exec "$2" grep Cpus_allowed_list /proc/self/status 2>&1)
    s1=$(cut -d' ' -f1 /proc/uptime)
    ms=$(awk -v a="$s0" -v b="$s1" 'BEGIN{printf "%d", (b-a)*1000}')
    got=$(echo "$out" | sed -n 's/^Cpus_allowed_list:[[:space:]]*//p')
    if [ -z "$got" ]; then
        say "RESULT $1 cgroup=$EXECAFF_CGROUP caller=$3 exec=ERROR: $out"
        rc=1
    else
        say "RESULT $1 cgroup=$EXECAFF_CGROUP caller=$3 exec=$got (${ms} ms)"
    fi
}

# cgroup_of PID: the container's cgroup, for the record
cgroup_of() {
    if [ "$EXECAFF_CGROUP" = v2 ]; then
        sed -n 's/^0:://p' "/proc/$1/cgroup"
    else
        sed -n 's/^[0-9]*:cpuset://p' "/proc/$1/cgroup"
    fi
}

run_for() { # RUNTIME CALLER_CPUS...
    rt=$1 id=demo-$1
    shift
    if ! "$rt" run -d --bundle /bundle "$id" </dev/null >"/tmp/$id.out" 2>&1; then
        say "RESULT $rt cgroup=$EXECAFF_CGROUP caller=- exec=ERROR: run failed: $(cat "/tmp/$id.out")"
        rc=1
        return
    fi
    pid=$("$rt" state "$id" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
    say "$rt $($rt --version | head -n 1): container pid $pid," \
        "cgroup $(cgroup_of "$pid"), init $(grep Cpus_allowed_list "/proc/$pid/status" | tr -s '\t' ' ')"
    for c in "$@"; do exec_as "$rt" "$id" "$c"; done
    "$rt" kill "$id" KILL 2>/dev/null
    i=0
    while [ $i -lt 50 ] && "$rt" state "$id" 2>/dev/null | grep -q '"running"'; do
        usleep 100000; i=$((i + 1))
    done
    "$rt" delete -f "$id" >/dev/null 2>&1 || { say "$rt delete $id failed"; rc=1; }
}

t0=$(cut -d' ' -f1 /proc/uptime)
run_for runc 0 0-3 2
run_for crun 0 0-3 2
t1=$(cut -d' ' -f1 /proc/uptime)
say "time for both runtimes: $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')s"

# Again with busy loops pinned to CPUs 2 and 3 (the "isolated" CPUs of a pod).
taskset -c 2 sh -c 'while :; do :; done' &
b2=$!
taskset -c 3 sh -c 'while :; do :; done' &
b3=$!
usleep 200000
say "busy loops: pid $b2 mask 0x$(taskset -p $b2 | sed 's/.*: //'), pid $b3 mask 0x$(taskset -p $b3 | sed 's/.*: //')," \
    "running: $(cut -d' ' -f3 /proc/$b2/stat)$(cut -d' ' -f3 /proc/$b3/stat)"
t0=$(cut -d' ' -f1 /proc/uptime)
run_for runc 0 2
run_for crun 0 2
t1=$(cut -d' ' -f1 /proc/uptime)
say "time for both runtimes with busy loops: $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')s"
say "busy loops still running: $(cut -d' ' -f3 /proc/$b2/stat 2>/dev/null)$(cut -d' ' -f3 /proc/$b3/stat 2>/dev/null)" \
    "cpu ticks (utime): $(cut -d' ' -f14 /proc/$b2/stat) $(cut -d' ' -f14 /proc/$b3/stat)"
kill $b2 $b3
wait 2>/dev/null
exit $rc
