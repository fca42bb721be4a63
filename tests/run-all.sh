#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite, as CI runs it (README's second command): installs
# what it needs (contrib/setup-debian.sh, contrib/install-peers.sh), then
#   build/       g++: unit, C ABI, real-runtime integration, proof harness
#                (the forked crun is built first, so that the proof runs its
#                cells: EXECAFF_CRUN_FORK)
#   build-asan/  g++ with ASan+UBSan: unit and C ABI
#   build-fuzz/  clang with libFuzzer+ASan+UBSan: bounded fuzz runs, unit, C ABI
#   contrib/crun/ci.sh: the forked crun, crun's own tests, exec affinity
# and ends with one line: N passed, N failed, N skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

./contrib/setup-debian.sh || { echo "setup failed" >&2; exit 1; }

failed_steps=()
step() {
  local name=$1
  shift
  echo "=== $name: $*"
  local start=$SECONDS
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
    failed_steps+=("$name")
  fi
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
step build configure build
step build-compile ninja -C build

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
  crun_fork_env=("EXECAFF_CRUN_FORK=$crun_work/patched/crun")
}
[ -x contrib/crun/build-crun.sh ] && step crun-fork-build build_crun_fork
step tests env "${crun_fork_env[@]}" meson test -C build --print-errorlogs --num-processes 2

step asan configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
step asan-compile ninja -C build-asan
step asan-tests meson test -C build-asan --print-errorlogs --suite unit --suite capi

configure_fuzz() {
  CC=clang CXX=clang++ configure build-fuzz -Dfuzzers=enabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled
}
step fuzz configure_fuzz
step fuzz-compile ninja -C build-fuzz
step fuzz-tests meson test -C build-fuzz --print-errorlogs --suite fuzz --suite unit --suite capi

crun_summary=""
if [ -x contrib/crun/ci.sh ]; then
  crun_log=$(mktemp)
  step crun-fork bash -c "contrib/crun/ci.sh '$SRC/build' 2>&1 | tee '$crun_log'; exit \${PIPESTATUS[0]}"
  crun_summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$crun_log" | tail -1)
  rm -f "$crun_log"
fi

# One closing line over every meson run (and the crun fork's own count).
python3 - "$crun_summary" build build-asan build-fuzz <<'PY'
import json, os, re, sys
crun, dirs = sys.argv[1], sys.argv[2:]
passed = failed = skipped = 0
for d in dirs:
    log = os.path.join(d, "meson-logs", "testlog.json")
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

if [ ${#failed_steps[@]} -ne 0 ]; then
  echo "failed steps: ${failed_steps[*]}" >&2
  exit 1
fi
