#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The whole test suite, as CI runs it (README's second command): installs
# what it needs (contrib/setup-debian.sh, contrib/install-peers.sh), then
# runs three lanes side by side, which share no state:
#   runtimes    build/ (g++): unit, C ABI, real-runtime integration and
#               clients (the forked crun is built first: EXECAFF_CRUN_FORK);
#               then, once third-party is done, the live CRI-O tests
#               (EXECAFF_CRIO_DIR) and OCI conformance (EXECAFF_RTOOLS_DIR),
#               then contrib/crun/ci.sh (the forked crun, crun's own
#               tests, exec affinity)
#   third-party CRI-O 1.34.11 and runtime-tools from ../shared/third_party
#               (Go builds, cached under /var/tmp by the tarball's hash),
#               while the runtimes lane compiles and tests
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

# The third-party lane's builds, from ../shared/third_party/, each built once
# per machine and tarball (a cache under /var/tmp keyed by the tarball's
# hash): CRI-O 1.34.11 for tests/clients/test_crio_live.py and
# runtime-tools' validation suite for tests/conformance, which find them
# through EXECAFF_CRIO_DIR and EXECAFF_RTOOLS_DIR (and skip without).
# Lanes are subshells: each build leaves "NAME=DIR" in $third_party_dir, and
# the lane a file "done" when it has finished, built or not.
third_party_dir=$(mktemp -d)
trap 'rm -rf "$steps_file" "$crun_log" "$third_party_dir"' EXIT
build_crio() {
  local dir
  dir=$(tests/clients/build-crio.sh) || return 1
  echo "EXECAFF_CRIO_DIR=$dir" >"$third_party_dir/crio"
}
build_runtime_tools() {
  local dir
  dir=$(tests/conformance/build-runtime-tools.sh) || return 1
  echo "EXECAFF_RTOOLS_DIR=$dir" >"$third_party_dir/rtools"
}
third_party_env() {  # third_party_env crio|rtools: its NAME=DIR, or nothing
  [ -s "$third_party_dir/$1" ] && cat "$third_party_dir/$1"
}
lane_third_party() {
  lane=third-party
  step crio-build build_crio
  step rtools-build build_runtime_tools
  touch "$third_party_dir/done"
}
wait_third_party() {
  while [ ! -e "$third_party_dir/done" ]; do sleep 2; done
}

lane_runtimes() {
  lane=runtimes
  step build configure build
  step build-compile ninja -C build
  [ -x contrib/crun/build-crun.sh ] && step crun-fork-build build_crun_fork
  [ -x "$crun_work/patched/crun" ] && crun_fork_env=("EXECAFF_CRUN_FORK=$crun_work/patched/crun")
  step tests env "${crun_fork_env[@]}" meson test -C build \
    --print-errorlogs --num-processes 2 --no-suite proof --no-suite conformance \
    --no-suite conformance-peers --no-suite crio --no-suite proof-fifo --no-suite proof-fifo-short
  step wait-third-party wait_third_party
  local crio_env rtools_env
  crio_env=$(third_party_env crio) rtools_env=$(third_party_env rtools)
  step crio-live env ${crio_env:+"$crio_env"} meson test -C build \
    --print-errorlogs --suite crio --logbase crio-testlog
  # The conformance suite as a step of its own, so that its time shows: all
  # of runtime-tools' programs, bare and through the shim, over every
  # runtime of tests/runtimes.txt but two peers (tests/conformance/
  # meson.build says which and why; 2-3 minutes each).  After the other
  # container tests, never beside them: its containers would be in the
  # runtimes' default roots while their snapshots look.  Its own log.
  step conformance env "${crun_fork_env[@]}" ${rtools_env:+"$rtools_env"} \
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
lane_third_party > >(sed -u 's/^/[third-party] /') 2>&1 &
third_party_pid=$!
lane_sanitizers > >(sed -u 's/^/[sanitizers] /') 2>&1 &
sanitizers_pid=$!
wait "$runtimes_pid" "$third_party_pid" "$sanitizers_pid"
sleep 1  # let the prefixing seds drain

# The proof alone, after the lanes: a compiler beside it would put tasks
# on the CPUs it watches.  Its CRI cells (proof_crio) run the CRI-O the
# third-party lane built.
[ -x "$crun_work/patched/crun" ] && crun_fork_env=("EXECAFF_CRUN_FORK=$crun_work/patched/crun")
crio_env=$(third_party_env crio)
step proof env "${crun_fork_env[@]}" ${crio_env:+"$crio_env"} meson test -C build \
  --print-errorlogs --suite proof --logbase proof-testlog

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
         for name in ("proof-testlog.json", "conformance-testlog.json",
                      "crio-testlog.json")]
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
