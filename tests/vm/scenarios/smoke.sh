#!/bin/sh
# smoke.sh — quick check of the VM environment: mounts, cgroups, tracefs,
# and one container per runtime. Prints what it finds; exits non-zero on the
# first thing missing.
set -e
echo "kernel $(uname -r), cpus $(cat /sys/devices/system/cpu/online), cgroup $EXECAFF_CGROUP"
grep -E ' (/|/proc|/sys|/dev|/run|/tmp|/sys/kernel/tracing|/sys/fs/cgroup[^ ]*) ' /proc/mounts | cut -d' ' -f2,3 | tr '\n' ';'
echo
if [ "$EXECAFF_CGROUP" = v2 ]; then
    echo "subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
else
    echo "v1 hierarchies: $(ls /sys/fs/cgroup | tr '\n' ' ')"
fi
test -e /sys/kernel/tracing/events/sched/sched_switch
for rt in runc crun; do
    "$rt" run -d --bundle /bundle "smoke-$rt" </dev/null >/dev/null
    echo "$rt exec: $("$rt" exec "smoke-$rt" sh -c 'echo $(hostname) $(grep Cpus_allowed_list /proc/self/status)')"
    "$rt" delete -f "smoke-$rt"
done
echo "uptime at end: $(cut -d' ' -f1 /proc/uptime)s"
