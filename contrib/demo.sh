#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job, end to end, on a fresh Debian 12 machine as root: install
# what is needed, build, start a real busybox container whose pod opted in
# (annotation exec-cpu-affinity.execaff.io=first), and exec into it once
# through the bare runtime and once through execaff-shim — with runc and
# with crun.  Prints where each exec'd process may run.
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
for applet in sh sleep grep cat; do ln -s busybox "$WORK/bundle/rootfs/bin/$applet"; done
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
