#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job, end to end, on a fresh Debian 12 machine as root: install
# what is needed, build, start a real busybox container whose pod opted in
# (annotation exec-cpu-affinity.execaff.io=first), and exec into it once
# through the bare runtime and once through execaff-shim — with runc and
# with crun.  Prints where each exec'd process may run.  Then the failure
# execaff exists for, in small: a container whose second CPU a SCHED_FIFO
# busy-poll thread holds (RT throttling left at the host's default), and
# five execs into it bare and five through execaff-shim, with their times.
set -eu
cd "$(dirname "$0")/.."
SRC=$PWD

./contrib/setup-debian.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

SHIM=$SRC/build/shim/execaff-shim
WORK=$(mktemp -d /tmp/execaff-demo.XXXXXX)
cleanup() {
  for rt in runc crun; do
    "$rt" --root "$WORK/state-$rt" delete --force demo-$rt >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# A busybox bundle: rootfs from busybox-static, config.json from `runc spec`
# with the container's cpuset, the pod's opt-in annotation and a long sleep.
CPUS=$(cat /sys/devices/system/cpu/online)
mkdir -p "$WORK/bundle/rootfs/bin"
cp /bin/busybox "$WORK/bundle/rootfs/bin/"
for applet in sh sleep grep cat true; do ln -s busybox "$WORK/bundle/rootfs/bin/$applet"; done
(cd "$WORK/bundle" && runc spec)
python3 - "$WORK/bundle/config.json" "$CPUS" <<'PY'
import json, sys
path, cpus = sys.argv[1], sys.argv[2]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["sleep", "3600"]
c["root"]["readonly"] = False
c.setdefault("annotations", {})["exec-cpu-affinity.execaff.io"] = "first"
c["linux"].setdefault("resources", {})["cpu"] = {"cpus": cpus}
json.dump(c, open(path, "w"), indent=2)
PY

echo "Container cpuset: $CPUS; annotation exec-cpu-affinity.execaff.io=first"
echo
for rt in runc crun; do
  RT=$(command -v "$rt")
  ROOT=$WORK/state-$rt
  "$RT" --root "$ROOT" create --bundle "$WORK/bundle" demo-$rt
  "$RT" --root "$ROOT" start demo-$rt
  echo "== $rt $("$RT" --version | head -1 | awk '{print $3}')"
  printf '  bare %s exec:         ' "$rt"
  "$RT" --root "$ROOT" exec demo-$rt grep Cpus_allowed_list /proc/self/status
  printf '  through execaff-shim: '
  EXECAFF_RUNTIME=$RT "$SHIM" --root "$ROOT" exec demo-$rt grep Cpus_allowed_list /proc/self/status
  echo "  why (execaff explain):"
  PID=$("$RT" --root "$ROOT" state demo-$rt | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  "$SRC/build/cli/execaff" explain --bundle "$WORK/bundle" --container-pid "$PID" \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print("    initial=%s final=%s source=%s" % (d["initial"], d["final"], d["source"])); print("    " + d["reason"])'
  "$RT" --root "$ROOT" delete --force demo-$rt
  echo
done

# The busy-poll container: its init is execaff-fifo-poll, one SCHED_FIFO 50
# thread on the cpuset's second CPU for at most 120 s (CAP_SYS_NICE; on a
# kernel with RT group scheduling, 45 % of each period for its cgroup: the
# kernel counts a removed group's budget for a while, and two must fit in
# the root's 95 %).
POLL_CPU=$(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[1] if len(c) > 1 else "")')
if [ -z "$POLL_CPU" ]; then
  echo "(one CPU: no busy-poll demo)"
  exit 0
fi
cp -a "$WORK/bundle" "$WORK/fifo-bundle"
cp "$SRC/build/tests/fifo/execaff-fifo-poll" "$WORK/fifo-bundle/rootfs/bin/"
python3 - "$WORK/fifo-bundle/config.json" "$POLL_CPU" <<'PY'
import glob, json, sys
path, cpu = sys.argv[1], sys.argv[2]
c = json.load(open(path))
c["process"]["args"] = ["/bin/execaff-fifo-poll", "--priority", "50", "--seconds", "120", cpu]
for kind in ("bounding", "effective", "permitted"):
    c["process"]["capabilities"][kind].append("CAP_SYS_NICE")
# Flat under the root cgroup, whose RT budget is the one to take from
# (crun would nest a default path under a cgroup of its own, with none).
c["linux"]["cgroupsPath"] = "/execaff-demo-fifo"
if glob.glob("/sys/fs/cgroup/cpu*/cpu.rt_runtime_us"):
    c["linux"]["resources"]["cpu"].update(realtimeRuntime=450000, realtimePeriod=1000000)
json.dump(c, open(path, "w"), indent=2)
PY
# The node's housekeeping CPU (the node config's housekeeping_cpus): the
# runtime's helpers run there until the cgroup join, not on the poller's.
HK=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
printf '{"housekeeping_cpus": "%s"}\n' "$HK" >"$WORK/shim.json"
chmod 600 "$WORK/shim.json"
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
echo "Busy-poll container: SCHED_FIFO 50 on CPU $POLL_CPU of $CPUS, housekeeping CPU $HK, RT throttling $(cat /proc/sys/kernel/sched_rt_runtime_us)/$(cat /proc/sys/kernel/sched_rt_period_us) us"
for rt in runc crun; do
  RT=$(command -v "$rt")
  ROOT=$WORK/state-$rt
  "$RT" --root "$ROOT" create --bundle "$WORK/fifo-bundle" demo-$rt >/dev/null
  "$RT" --root "$ROOT" start demo-$rt
  sleep 1
  for via in bare shim; do
    times= where=
    for i in 1 2 3 4 5; do
      t0=$(date +%s%N)
      if [ $via = bare ]; then
        out=$("$RT" --root "$ROOT" exec demo-$rt grep Cpus_allowed_list /proc/self/status)
      else
        out=$(EXECAFF_RUNTIME=$RT EXECAFF_CONFIG=$WORK/shim.json "$SHIM" --root "$ROOT" exec demo-$rt grep Cpus_allowed_list /proc/self/status)
      fi
      times="$times $(ms_since "$t0")"
      where=${out##*[[:space:]]}
    done
    printf '  %-4s %s exec, 5 times: ms%s (Cpus_allowed_list %s)\n' "$via" "$rt" "$times" "$where"
  done
  "$RT" --root "$ROOT" delete --force demo-$rt
done
