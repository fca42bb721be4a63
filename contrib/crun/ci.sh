#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# CI for the forked crun: builds Debian's crun (1.8.1 unless --base says
# 1.21) stock and patched (build-crun.sh), runs crun's own exec/process
# tests on both (run-crun-tests.sh) and requires the same result per test,
# then runs test_exec_affinity.py on the patched build.
#
# Usage: ci.sh [--base 1.8.1|1.21] [LIBEXECAFF_BUILD_DIR]
#
#   --base VERSION        build-crun.sh's base (default 1.8.1); 1.21 builds
#                         into stock-1.21/ and patched-1.21/, logs into
#                         ci-logs-1.21/, and compares with baseline-1.21.txt
#   LIBEXECAFF_BUILD_DIR  a meson build dir of this repository (it has
#                         libexecaff/libexecaff-static.a, its
#                         libexecaff-static-uninstalled.pc, and
#                         shim/execaff-shim); brought up to date with ninja.
#                         Default: $EXECAFF_CRUN_WORK/libbuild-fork, set up
#                         when missing with -Dtests=false.
#
# Environment: EXECAFF_CRUN_WORK (default /var/tmp/execaff-crun) holds the
# builds (stock/, patched/ for 1.8.1) and the logs (ci-logs/); NO_APT=1 as in
# build-crun.sh; CI_ALL_CRUN_TESTS=1 runs every crun test file, not only
# the exec/process set.
#
# Prints one line per check and ends with "N passed, N failed, N skipped"
# (build steps, one per crun test compared stock vs patched, one per
# exec-affinity case); exits 1 when anything failed.  Needs root.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${EXECAFF_CRUN_WORK:-/var/tmp/execaff-crun}
base=1.8.1
if [ "${1:-}" = --base ]; then
    base=${2:?--base needs 1.8.1 or 1.21}
    shift 2
fi
case $base in
1.8.1) suffix= ;;
1.21) suffix=-1.21 ;;
*) echo "ci.sh: unknown --base $base (1.8.1 or 1.21)" >&2; exit 2 ;;
esac
libbuild=${1:-$work/libbuild-fork}
logs=$work/ci-logs$suffix
stock=$work/stock$suffix
patched=$work/patched$suffix
baseline=$here/baseline-$base.txt
mkdir -p "$work" "$logs"

passed=0 failed=0 skipped=0
failures=()
t_start=$(date +%s.%N)
now() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%5.1f", b - a }'; }
say() { printf '[%ss] %s\n' "$(now)" "$*"; }
check() { # NAME STATUS [DETAIL]
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1)); say "ok   $1"
    else
        failed=$((failed + 1)); failures+=("$1"); say "FAIL $1${3:+  # $3}"
    fi
}
finish() {
    echo
    [ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[*]}"
    say "done"
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit
}
[ "$(id -u)" = 0 ] || { echo "ci.sh: needs root (real containers)" >&2; exit 2; }

# --- 1. libexecaff (and execaff-shim) -------------------------------------
if [ ! -f "$libbuild/build.ninja" ]; then
    say "meson setup $libbuild"
    meson setup -Dtests=false -Dbenchmarks=disabled -Dfuzzers=disabled "$libbuild" "$repo" \
        >"$logs/meson-setup.log" 2>&1
    check build/libexecaff-setup $? "see $logs/meson-setup.log"
fi
ninja -C "$libbuild" >"$logs/ninja.log" 2>&1
check build/libexecaff $? "see $logs/ninja.log"
pcdir=$libbuild/libexecaff
[ -f "$pcdir/libexecaff-static-uninstalled.pc" ] ||
    { check build/libexecaff-pc 1 "no $pcdir/libexecaff-static-uninstalled.pc"; finish; }

# --- 2. crun, stock and patched -------------------------------------------
"$here/build-crun.sh" --base "$base" --stock "$stock" >"$logs/build-stock.log" 2>&1
check build/crun-stock $? "see $logs/build-stock.log"
"$here/build-crun.sh" --base "$base" --patched --pkg-config-path "$pcdir" "$patched" >"$logs/build-patched.log" 2>&1
check build/crun-patched $? "see $logs/build-patched.log"
[ -x "$stock/crun" ] && [ -x "$patched/crun" ] || finish

# --- 3. crun's own tests: the patched build must do exactly as stock -------
all=()
[ "${CI_ALL_CRUN_TESTS:-0}" = 1 ] && all=(--all)
for b in stock patched; do
    say "crun's tests on $b"
    dir=$stock
    [ $b = patched ] && dir=$patched
    "$here/run-crun-tests.sh" "${all[@]}" --baseline "$baseline" --log-dir "$logs/crun-tests-$b" "$dir" \
        >"$logs/crun-tests-$b.txt" 2>&1
    rc=$?
    say "  $(tail -n 1 "$logs/crun-tests-$b.txt")"
    check "crun-tests/$b-no-regression-vs-baseline" $rc "see $logs/crun-tests-$b.txt"
done
# One check per test: PASS, SKIP or KNOWN-FAIL on both.  A test that the
# baseline lists as environment-dependent (exec_write_pid_file wants a
# 5-digit PID) may pass on one and fail on the other; it counts as passed
# and is named.
compare=$(python3 - "$logs/crun-tests-stock.txt" "$logs/crun-tests-patched.txt" \
    "$baseline" <<'EOF'
import re, sys
def results(path):
    out = {}
    for line in open(path, errors="replace"):
        m = re.match(r"^(PASS|SKIP|KNOWN-FAIL|FAIL)\s+(\S+)", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out
stock, patched = results(sys.argv[1]), results(sys.argv[2])
baseline = {l.split()[0] for l in open(sys.argv[3]) if l.strip() and not l.startswith("#")}
for name in sorted(set(stock) | set(patched)):
    s, p = stock.get(name, "MISSING"), patched.get(name, "MISSING")
    if s == p == "SKIP":
        print("skip %s" % name)
    elif s == p and s in ("PASS", "KNOWN-FAIL"):
        print("ok %s %s" % (name, s))
    elif {s, p} == {"PASS", "KNOWN-FAIL"} and name in baseline:
        print("ok %s stock=%s patched=%s (baseline-listed, environment-dependent)" % (name, s, p))
    else:
        print("FAIL %s stock=%s patched=%s" % (name, s, p))
EOF
)
while read -r verdict name detail; do
    case $verdict in
    skip) skipped=$((skipped + 1)) ;;
    ok) passed=$((passed + 1)); [[ $detail == *baseline-listed* ]] && say "ok   crun-test/$name $detail" ;;
    FAIL) failed=$((failed + 1)); failures+=("crun-test/$name"); say "FAIL crun-test/$name $detail" ;;
    esac
done <<<"$compare"
say "crun tests compared: $(grep -c '^ok' <<<"$compare") same, $(grep -c '^FAIL' <<<"$compare") different, $(grep -c '^skip' <<<"$compare") skipped on both"

# --- 4. the exec-affinity tests ---------------------------------------------
say "test_exec_affinity.py"
python3 "$here/test_exec_affinity.py" --crun "$patched/crun" --stock "$stock/crun" \
    --shim "$libbuild/shim/execaff-shim" >"$logs/exec-affinity.txt" 2>&1
rc=$?
sed 's/^/    /' "$logs/exec-affinity.txt"
counts=$(tail -n 1 "$logs/exec-affinity.txt")
if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[2]))
    skipped=$((skipped + BASH_REMATCH[3]))
    [ "${BASH_REMATCH[2]}" -eq 0 ] || failures+=("exec-affinity")
    [ $rc -eq 0 ] || [ "${BASH_REMATCH[2]}" -ne 0 ] || check exec-affinity/exit-status $rc
elif [ $rc -eq 77 ]; then
    skipped=$((skipped + 1)); say "SKIP exec-affinity ($(tail -n 1 "$logs/exec-affinity.txt"))"
else
    check exec-affinity/ran $rc "no summary line; see $logs/exec-affinity.txt"
fi
finish
