#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite, as CI runs it (README's second command): installs
# what it needs (contrib/setup-debian.sh, contrib/install-peers.sh), then
# runs two lanes side by side, which share no state:
#   runtimes    build/ (g++): unit, C ABI, real-runtime integration and
#               clients (the forked crun and CRI-O are built first:
#               EXECAFF_CRUN_FORK, EXECAFF_CRIO_DIR), OCI conformance
#               (runtime-tools, built from ../shared/third_party:
#               EXECAFF_RTOOLS_DIR), then contrib/crun/ci.sh
#               (the forked crun, crun's own tests, exec affinity)
#   sanitizers  build-asan/ (g++, ASan+UBSan): unit and C ABI;
#               build-fuzz/ (clang, libFuzzer+ASan+UBSan): bounded fuzz
#               runs, unit, C ABI
# and then, alone on a quiet machine, the proof harness (suite proof: it
# counts where the scheduler ran each task, so no compiler may run beside
# it).  Ends with each step's duration and one line: N passed, N failed,
# N skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

./contrib/setup-debian.sh || { echo "setup failed" >&2; exit 1; }

# Each step appends "STATUS SECONDS LANE NAME" to $steps_file: lanes are
# subshells, so a file, not a variable, collects them.
steps_file=$(mktemp)
trap 'rm -f "$steps_file"' EXIT
lane=main
step() {
  local name=$1
  shift
  echo "=== $name: $*"
  local start=$SECONDS status=ok
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    status=FAILED
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
  echo "$status $((SECONDS - start)) $lane $name" >>"$steps_file"
}

configure() {  # configure DIR [meson options...]; meson's output only on failure
  local dir=$1 log
  shift
  log=$(mktemp)
  local action=(setup)
  [ -f "$dir/build.ninja" ] && action=(setup --reconfigure)
  if ! meson "${action[@]}" "$dir" "$@" >"$log" 2>&1; then
    tail -n 20 "$log"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# The released runtimes that apply execCPUAffinity themselves (runc 1.3.6,
# crun 1.21, 1.28: tests/runtimes.txt), which the integration tests run
# over; without them those tests would only skip, so a failure here fails
# the run.
step peers ./contrib/install-peers.sh

# The forked crun against build/'s libexecaff, before the tests: the proof
# matrix's fork cells (crun-fork, shim-crun-fork) run it on the host and in
# the VM.  The same command as contrib/crun/ci.sh's patched build, which
# then finds it done.
crun_work=${EXECAFF_CRUN_WORK:-/var/tmp/execaff-crun}
crun_fork_env=()
build_crun_fork() {
  local log=$crun_work/ci-logs/build-patched-for-proof.log
  mkdir -p "$crun_work/ci-logs" || return 1
  if ! contrib/crun/build-crun.sh --patched --pkg-config-path "$SRC/build/libexecaff" \
      "$crun_work/patched" >"$log" 2>&1; then
    tail -n 30 "$log"
    echo "(whole log: $log)"
    return 1
  fi
}
crun_log=$(mktemp)
trap 'rm -f "$steps_file" "$crun_log"' EXIT

# CRI-O 1.34.11 from ../shared/third_party/, for tests/clients/test_crio_live.py
# (which skips without it): built once per machine, kept under /var/tmp by
# the tarball's hash.  The tests find it through EXECAFF_CRIO_DIR.
crio_env=()
build_crio() {
  local dir
  dir=$(tests/clients/build-crio.sh) || return 1
  crio_env=("EXECAFF_CRIO_DIR=$dir")
}

# OCI runtime-tools' validation suite for tests/conformance, from
# ../shared/third_party/: built once per machine and tarball (a cache under
# /var/tmp keyed by the tarball's hash), passed to the tests by its path.
rtools_env=()
build_runtime_tools() {
  local dir
  dir=$(tests/conformance/build-runtime-tools.sh) || return 1
  rtools_env=("EXECAFF_RTOOLS_DIR=$dir")
}

lane_runtimes() {
  lane=runtimes
  step build configure build
  step build-compile ninja -C build
  [ -x contrib/crun/build-crun.sh ] && step crun-fork-build build_crun_fork
  [ -x "$crun_work/patched/crun" ] && crun_fork_env=("EXECAFF_CRUN_FORK=$crun_work/patched/crun")
  step crio-build build_crio
  step rtools-build build_runtime_tools
  step tests env "${crun_fork_env[@]}" "${crio_env[@]}" meson test -C build \
    --print-errorlogs --num-processes 2 --no-suite proof --no-suite conformance \
    --no-suite conformance-peers
  # The conformance suite as a step of its own, so that its time shows: all
  # of runtime-tools' programs, bare and through the shim, over every
  # runtime of tests/runtimes.txt but two peers (tests/conformance/
  # meson.build says which and why; 2-3 minutes each).  After the other
  # container tests, never beside them: its containers would be in the
  # runtimes' default roots while their snapshots look.  Its own log.
  step conformance env "${crun_fork_env[@]}" "${rtools_env[@]}" \
    meson test -C build --print-errorlogs --suite conformance --logbase conformance-testlog
  if [ -x contrib/crun/ci.sh ]; then
    step crun-fork bash -c "contrib/crun/ci.sh '$SRC/build' 2>&1 | tee '$crun_log'; exit \${PIPESTATUS[0]}"
  fi
}

configure_fuzz() {
  CC=clang CXX=clang++ configure build-fuzz -Dfuzzers=enabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
}
lane_sanitizers() {
  lane=sanitizers
  step asan configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
  step asan-compile ninja -C build-asan -j1
  step asan-tests meson test -C build-asan --print-errorlogs --suite unit --suite capi
  step fuzz configure_fuzz
  step fuzz-compile ninja -C build-fuzz -j1
  step fuzz-tests meson test -C build-fuzz --print-errorlogs --suite fuzz --suite unit --suite capi
}

# Each lane's lines carry its name, as they come.
lane_runtimes > >(sed -u 's/^/[runtimes] /') 2>&1 &
runtimes_pid=$!
lane_sanitizers > >(sed -u 's/^/[sanitizers] /') 2>&1 &
sanitizers_pid=$!
wait "$runtimes_pid" "$sanitizers_pid"
sleep 1  # let the prefixing seds drain

# The proof alone, after both lanes: a compiler beside it would put tasks
# on the CPUs it watches.  Its CRI cells (proof_crio) run the CRI-O the
# runtimes lane built: that lane's crio_env stayed in its subshell, so the
# build is found again here (--print-cached builds nothing).
[ -x "$crun_work/patched/crun" ] && crun_fork_env=("EXECAFF_CRUN_FORK=$crun_work/patched/crun")
crio_dir=$(tests/clients/build-crio.sh --print-cached 2>/dev/null) &&
  crio_env=("EXECAFF_CRIO_DIR=$crio_dir")
step proof env "${crun_fork_env[@]}" "${crio_env[@]}" meson test -C build --print-errorlogs \
  --suite proof --logbase proof-testlog

crun_summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$crun_log" | tail -1)

echo
echo "step durations (s):"
awk '{ printf "  %-16s %-11s %6d  %s\n", $4, $3, $2, $1 }' "$steps_file"
echo "  wall clock: $SECONDS s"

# One closing line over every meson run (and the crun fork's own count).
python3 - "$crun_summary" build build-asan build-fuzz <<'PY'
import json, os, re, sys
crun, dirs = sys.argv[1], sys.argv[2:]
passed = failed = skipped = 0
logs = [os.path.join(d, "meson-logs", "testlog.json") for d in dirs]
logs += [os.path.join(dirs[0], "meson-logs", name)
         for name in ("proof-testlog.json", "conformance-testlog.json")]
for log in logs:
    if not os.path.exists(log):
        continue
    for line in open(log):
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"): passed += 1
        elif r == "SKIP": skipped += 1
        else: failed += 1
m = re.match(r"(\d+) passed, (\d+) failed(?:, (\d+) skipped)?", crun)
if m:
    passed += int(m.group(1)); failed += int(m.group(2)); skipped += int(m.group(3) or 0)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY

failed=$(awk '$1 == "FAILED" { print $4 }' "$steps_file" | tr '\n' ' ')
if [ -n "$failed" ]; then
  echo "failed steps: $failed" >&2
  exit 1
fi
