#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# fifo-scenario.sh — the guest side of the fifo cells (the initramfs's
# /scenario.sh; tests/fifo/README.md, fifo-matrix.sh).  busybox sh.
#
# Per cell of /fifo/cells.txt named in execaff.fifo_cells (in that order):
# a container (cpuset 1-3, mems 0, CAP_SYS_NICE), then three phases of
# `exec CONTAINER true`, each through execaff-fifo-exec (not returned in
# execaff.fifo_timeout s, default 45, while the poll threads still run =
# hung; one that returns after more than 10 s is counted as slow by
# fifo-table.py: under TCG on a loaded 2-CPU host a plain runc exec with
# no poll threads at all took over 10 s):
#   base   no poll threads                          (execaff.fifo_base execs)
#   other  SCHED_OTHER spinners on 2-3, the control (execaff.fifo_base execs)
#   fifo   SCHED_FIFO priority 50 poll threads on 2-3 (execaff.fifo_execs)
# The poll threads are started inside the container by a detached exec of
# execaff-fifo-poll, as a DPDK application starts its lcores; CPU 1 is the
# pod's housekeeping CPU.  After the fifo phase the poll threads are killed
# and every task a hung exec left behind gets up to 60 s to finish.
# A phase stops after 3 hung execs (each costs the whole timeout).
#
# Output (one line each, parsed by fifo-matrix.sh; kernel messages at
# level < 7 share the console, so the hung-task reports show there too):
#   FIFO cell-begin NAME
#   FIFO exec NAME PHASE I ok MS | fail RC MS | hung
#   FIFO note NAME TEXT
#   FIFO cell-end NAME leftovers=N hungtasks=N
# A cell whose cell-end never comes froze the node: the host sees the
# console go quiet (run-vm.sh --idle-timeout) and boots the next cell in a
# fresh VM.
# Kernel command line: execaff.fifo_cells=a,b  execaff.fifo_execs=N
# (default 10)  execaff.fifo_base=N (default 5)  execaff.fifo_timeout=S (45)
# execaff.fifo_layout=a|b (default a).  Layout a: the kernel's isolcpus=
# (fifo-matrix.sh).  Layout b: no isolcpus; load balancing off for the
# pod's CPUs as CRI-O 1.34.11 does for cpu-load-balancing.crio.io
# "disable" (internal/runtimehandlerhooks/high_performance_hooks_linux.go):
# v1 cpuset.sched_load_balance 0 on the container's cgroup and on every
# cgroup that overlaps it (here: the root, which CRI-O leaves to "some
# other entity"); v2 cpuset.cpus.partition "isolated" on the container's
# cgroup (6.1 has no cpuset.cpus.exclusive: the cgroup sits under the root).

param() {
    v=$2
    for w in $(cat /proc/cmdline); do
        case $w in "$1="*) v=${w#*=} ;; esac
    done
    echo "$v"
}
cells=$(param execaff.fifo_cells '')
execs=$(param execaff.fifo_execs 10)
base=$(param execaff.fifo_base 5)
tmo=$(param execaff.fifo_timeout 45)
layout=$(param execaff.fifo_layout a)
max_hung=3
[ -n "$cells" ] || { echo "FIFO error: no execaff.fifo_cells"; exit 2; }

# The node as tuned's realtime profile leaves it, and a hung-task report
# within seconds of a task blocking (shown on the console: printk 7).
echo -1 >/proc/sys/kernel/sched_rt_runtime_us || exit 125
echo 7 >/proc/sys/kernel/printk
echo 10 >/proc/sys/kernel/hung_task_timeout_secs
echo 3 >/proc/sys/kernel/hung_task_warnings
sys=/sys/devices/system/cpu
echo "FIFO node kernel=$(uname -r) cgroup=$EXECAFF_CGROUP online=$(cat $sys/online)" \
    "isolated=$(cat $sys/isolated) nohz_full=$(cat $sys/nohz_full)" \
    "rt_runtime=$(cat /proc/sys/kernel/sched_rt_runtime_us) layout=$layout"

# The pod's rootfs: the image's busybox root plus the poll program.
W=/tmp/fifo
mkdir -p $W/state
cp -a /bundle/rootfs $W/rootfs && cp /usr/local/bin/execaff-fifo-poll $W/rootfs/bin/ || exit 125
printf '%s\n' '{"housekeeping_cpus": "0"}' >$W/annot.json
printf '%s\n' '{"housekeeping_cpus": "0", "handler_default": "first"}' >$W/default.json
chmod 0644 $W/annot.json $W/default.json
true_proc='{"terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["true"], "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "cwd": "/"'
printf '%s}\n' "$true_proc" >$W/true.json
printf '%s, "execCPUAffinity": {"initial": "1"}}\n' "$true_proc" >$W/true-field.json
caps='"CAP_SYS_NICE", "CAP_KILL"'
for pol in fifo other; do
    printf '%s\n' "{\"terminal\": false, \"user\": {\"uid\": 0, \"gid\": 0}, \"args\": [\"/bin/execaff-fifo-poll\", \"--policy\", \"$pol\", \"--priority\", \"50\", \"2\", \"3\"], \"env\": [\"PATH=/bin\"], \"cwd\": \"/\", \"capabilities\": {\"bounding\": [$caps], \"effective\": [$caps], \"permitted\": [$caps]}}" >$W/poll-$pol.json
done

resolve() { # runtime name -> path
    case $1 in
    crun-execaff) [ -x /usr/local/bin/crun-execaff ] && echo /usr/local/bin/crun-execaff ;;
    runc|crun) command -v "$1" ;;
    *) awk -v n="$1" '$1 == n { print $2 }' /fifo/runtimes.resolved ;;
    esac
}

poll_pids() { pidof execaff-fifo-poll 2>/dev/null; }

# start_poll POLICY: the detached exec of the poll program; waits for its
# "ready" line (the threads run).
start_poll() {
    : >$W/poll.out
    # The bare runtime's own exec -d can be stranded behind the FIFO threads
    # it just started (seen with crun 1.8.1 in layout b: the console went
    # silent with no hung-task report): bounded like every exec, and said.
    r=$(execaff-fifo-exec --timeout "$tmo" --cpus 0 -- sh -c \
        'exec "$0" --root "$1" exec -d --process "$2" "$3" >>"$4" 2>&1 </dev/null' \
        "$rt" "$root" $W/poll-$1.json "$cid" $W/poll.out)
    case $r in
    ok*) ;;
    hung) echo "FIFO note $name the $1 poll threads' own exec -d did not return in $tmo s (stranded; a harness exec, not counted)" ;;
    *) echo "FIFO note $name cannot start the $1 poll threads ($r): $(cat $W/poll.out)"; return 1 ;;
    esac
    i=0
    while ! grep -q '^ready:' $W/poll.out; do
        i=$((i + 1))
        if [ $i -gt 100 ]; then
            echo "FIFO note $name the $1 poll threads never got ready: $(cat $W/poll.out)"
            return 1
        fi
        sleep 0.1
    done
    echo "FIFO note $name $1 poll threads $(cat $W/poll.out)"
}

stop_poll() {
    p=$(poll_pids)
    [ -z "$p" ] || kill -9 $p
    i=0
    while [ -n "$(poll_pids)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
}

# run_phase PHASE COUNT: COUNT timed execs; sets hung.
run_phase() {
    hung=0 k=1
    while [ $k -le "$2" ]; do
        r=$(env $envs execaff-fifo-exec --timeout "$tmo" --cpus "$ccpus" -- \
            $cmd --root "$root" exec --process "$proc" "$cid" 2>>$W/exec.err)
        echo "FIFO exec $name $1 $k $r"
        case $r in hung) hung=$((hung + 1)) ;; esac
        if [ $hung -ge $max_hung ]; then
            echo "FIFO note $name $1 stopped after $hung hung execs"
            break
        fi
        k=$((k + 1))
    done
}

# The tasks a cell's execs left behind: anything still running the
# container's exec (runtime, shim, their init) or in its cgroup beside its
# init.
leftovers() {
    n=0
    for p in $(ps -o pid,args | awk -v c="$cid" 'index($0, " exec ") && index($0, c) { print $1 }'); do
        n=$((n + 1))
    done
    echo $n
}

# balance_off: layout b for the container just started (its init's cpuset
# cgroup); prints what it did.
balance_off() {
    ipid=$("$rt" --root "$root" state "$cid" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
    if [ "$EXECAFF_CGROUP" = v1 ]; then
        cg=/sys/fs/cgroup/cpuset$(sed -n 's/^[0-9]*:cpuset://p' /proc/$ipid/cgroup)
        echo 0 >"$cg/cpuset.sched_load_balance" && echo 0 >/sys/fs/cgroup/cpuset/cpuset.sched_load_balance || {
            echo "FIFO note $name cannot turn load balancing off in $cg"; return 1; }
        echo "FIFO note $name layout b: $cg sched_load_balance $(cat "$cg/cpuset.sched_load_balance"), root $(cat /sys/fs/cgroup/cpuset/cpuset.sched_load_balance)"
    else
        cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/$ipid/cgroup)
        echo isolated >"$cg/cpuset.cpus.partition" || {
            echo "FIFO note $name cannot make $cg an isolated partition"; return 1; }
        echo "FIFO note $name layout b: $cg partition $(cat "$cg/cpuset.cpus.partition"), effective $(cat "$cg/cpuset.cpus.effective")"
    fi
    d=/sys/kernel/debug/sched/domains/cpu2
    doms=$(cat $d/domain*/name 2>/dev/null | tr '\n' ' ')
    echo "FIFO note $name cpu2 sched domains: ${doms:-none (no load balancing there)}"
    return 0
}

for name in $(echo "$cells" | tr ',' ' '); do
    line=$(grep -v '^#' /fifo/cells.txt | awk -v n="$name" '$1 == n')
    [ -n "$line" ] || { echo "FIFO error: no cell $name in cells.txt"; exit 2; }
    set -- $line
    rtname=$2 via=$3 caller=$4
    echo "FIFO cell-begin $name"
    rt=$(resolve "$rtname")
    if [ -z "$rt" ]; then
        echo "FIFO cell-skip $name runtime $rtname not present"
        continue
    fi
    cid=fifo-$name root=$W/state/$name b=$W/b-$name
    mkdir -p "$b"
    oci-config --cpus 1-3 --mems 0 --root $W/rootfs --cgroups-path "/execaff-fifo-$name" \
        -- sleep 100000 >"$b/config.json.in" || exit 125
    case $via in
    shim|native)
        awk '{ print } /"ociVersion"/ && !d { print "    \"annotations\": {\"exec-cpu-affinity.execaff.io\": \"first\"},"; d = 1 }' \
            "$b/config.json.in" >"$b/config.json" ;;
    *) mv "$b/config.json.in" "$b/config.json" ;;
    esac
    if ! "$rt" --root "$root" run -d --bundle "$b" "$cid" </dev/null >$W/run.out 2>&1; then
        echo "FIFO note $name cannot start the container: $(cat $W/run.out)"
        echo "FIFO cell-end $name leftovers=0 hungtasks=0 error"
        continue
    fi
    if [ "$layout" = b ] && ! balance_off; then
        echo "FIFO cell-end $name leftovers=0 hungtasks=0 error"
        continue
    fi
    proc=$W/true.json envs='' cmd=$rt
    case $via in
    field) proc=$W/true-field.json ;;
    shim) envs="EXECAFF_RUNTIME=$rt EXECAFF_CONFIG=$W/annot.json" cmd=execaff-shim ;;
    shim-default) envs="EXECAFF_RUNTIME=$rt EXECAFF_CONFIG=$W/default.json" cmd=execaff-shim ;;
    native) envs="EXECAFF_CONFIG=$W/annot.json" ;;
    esac
    if [ "$caller" = pinned ]; then ccpus=0; else ccpus=0-3; fi
    dmesg -c >/dev/null
    run_phase base "$base"
    if start_poll other; then
        run_phase other "$base"
        stop_poll
    fi
    if start_poll fifo; then
        run_phase fifo "$execs"
    fi
    stop_poll
    # Let every stranded task finish now that the CPUs are free.
    i=0
    while [ "$(leftovers)" -gt 0 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    left=$(leftovers)
    ht=$(dmesg | grep -c 'blocked for more than')
    "$rt" --root "$root" kill "$cid" KILL >/dev/null 2>&1
    i=0
    while [ $i -lt 50 ] && "$rt" --root "$root" state "$cid" 2>/dev/null | grep -q '"running"'; do
        sleep 0.1; i=$((i + 1))
    done
    "$rt" --root "$root" delete -f "$cid" >/dev/null 2>&1
    echo "FIFO cell-end $name leftovers=$left hungtasks=$ht"
done
[ ! -s $W/exec.err ] || { echo "FIFO stderr of the execs (last 20 lines):"; tail -n 20 $W/exec.err; }
exit 0
