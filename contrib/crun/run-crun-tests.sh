#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs crun's own Python tests (tests/test_*.py of the Debian source tree)
# against a crun built by build-crun.sh, prints one line per test and a
# final "N passed, N failed, N skipped" line.
#
# Usage: run-crun-tests.sh [options] CRUN_DIR
#
#   CRUN_DIR             build-crun.sh's OUTDIR: CRUN_DIR/crun, CRUN_DIR/tests/init
#                        and the source tree CRUN_DIR/work/tree/tests
#   --baseline FILE      known failures ("test_file.py:test-name  reason" a line);
#                        default: baseline-BASE.txt beside this script, BASE
#                        from CRUN_DIR/build-info.txt (1.8.1 or 1.21)
#   --tests-dir DIR      where test_*.py live (default CRUN_DIR/work/tree/tests)
#   --all                run every test_*.py, not only the exec/process set
#   --files "a.py b.py"  run exactly these files
#   --log-dir DIR        TAP and stderr per file (default CRUN_DIR/test-logs)
#   --write-baseline F   write this run's failures to F (to make a baseline)
#   --timeout SECS       per test file (default 300)
#
# Exit status: 0 when every failure is listed in the baseline; 1 when a test
# outside the baseline failed (a regression against stock); 2 on usage errors.
# A failing test is retried once alone (RUN_TESTS=name) before it counts, so
# cgroup-v1 races such as test_delete's freezer rmdir do not flap the result.
#
# crun 1.8.1 refuses hybrid cgroups while hugetlb sits on cgroup2; unless
# EXECAFF_NO_CGROUP_FIXUP=1, hugetlb is moved to its own v1 mount first.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
baseline=default
tests_dir=
log_dir=
files=
all=0
write_baseline=
timeout_s=300
crun_dir=

# Test files whose code paths the execaff patch touches or neighbours: exec
# itself, exec into cgroups (resources-unified-exec-cgroup), execs in mounts,
# and the process settings that exec shares with run (user, caps, cwd, tty,
# rlimits, fds, seccomp, pid files, hooks, detach, delete).
exec_set="test_exec.py test_resources.py test_mounts.py test_start.py test_capabilities.py
 test_uid_gid.py test_tty.py test_preserve_fds.py test_cwd.py test_rlimits.py test_pid_file.py
 test_detach.py test_hooks.py test_seccomp.py test_pid.py test_delete.py"

usage() { sed -n '/^# Usage:/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    --baseline) baseline=$2; shift ;;
    --tests-dir) tests_dir=$2; shift ;;
    --log-dir) log_dir=$2; shift ;;
    --all) all=1 ;;
    --files) files=$2; shift ;;
    --write-baseline) write_baseline=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    -h | --help) usage ;;
    -*) echo "run-crun-tests.sh: unknown option $1" >&2; usage ;;
    *) [ -z "$crun_dir" ] || usage; crun_dir=$1 ;;
    esac
    shift
done
[ -n "$crun_dir" ] || usage
crun_dir=$(cd "$crun_dir" && pwd) || exit 2
if [ "$baseline" = default ]; then
    base=$(sed -n 's/^base: //p' "$crun_dir/build-info.txt" 2>/dev/null)
    baseline=$here/baseline-${base:-1.8.1}.txt
fi
tests_dir=${tests_dir:-$crun_dir/work/tree/tests}
log_dir=${log_dir:-$crun_dir/test-logs}
[ -x "$crun_dir/crun" ] || { echo "no $crun_dir/crun" >&2; exit 2; }
[ -x "$crun_dir/tests/init" ] || { echo "no $crun_dir/tests/init" >&2; exit 2; }
[ -f "$tests_dir/tests_utils.py" ] || { echo "no crun tests in $tests_dir" >&2; exit 2; }
[ -z "$baseline" ] || [ -f "$baseline" ] || { echo "no baseline file $baseline" >&2; exit 2; }
mkdir -p "$log_dir"

ensure_hybrid_cgroups_usable() {
    [ "${EXECAFF_NO_CGROUP_FIXUP:-0}" = 1 ] && return 0
    local unified=/sys/fs/cgroup/unified/cgroup.controllers
    # Only on a hybrid layout whose cgroup2 still holds controllers.
    [ -s "$unified" ] || return 0
    if grep -qw hugetlb "$unified" && ! mountpoint -q /sys/fs/cgroup/hugetlb; then
        mkdir -p /sys/fs/cgroup/hugetlb &&
            mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb &&
            echo "run-crun-tests: moved hugetlb to /sys/fs/cgroup/hugetlb (crun 1.8.1 refuses it on cgroup2)" >&2
    fi
}
ensure_hybrid_cgroups_usable

if [ -n "$files" ]; then
    chosen=$files
elif [ "$all" = 1 ]; then
    chosen=$(cd "$tests_dir" && printf '%s ' test_*.py)
else
    chosen=$exec_set
fi

# known_reason FILE:TEST -> the baseline's reason, or nothing
known_reason() {
    [ -n "$baseline" ] || return 0
    awk -v k="$1" '!/^[[:space:]]*(#|$)/ && $1 == k { $1 = ""; sub(/^[[:space:]]+/, ""); print; exit }' "$baseline"
}

# run_file FILE [RUN_TESTS] -> TAP on stdout; stderr to the log dir.
# crun's tests call ./tests/init, so they run from CRUN_DIR.
run_file() {
    local f=$1 only=${2:-}
    (cd "$crun_dir" &&
        env ${only:+RUN_TESTS="$only"} OCI_RUNTIME="$crun_dir/crun" INIT="$crun_dir/tests/init" \
            timeout "$timeout_s" python3 "$tests_dir/$f" </dev/null 2>>"$log_dir/${f%.py}.stderr")
}

passed=0 failed=0 skipped=0 unexpected=0 known=0
results=()
fail_keys=()
t_all0=$(date +%s.%N)
for f in $chosen; do
    [ -f "$tests_dir/$f" ] || { echo "run-crun-tests: no $tests_dir/$f" >&2; exit 2; }
    : >"$log_dir/${f%.py}.stderr"
    t0=$(date +%s.%N)
    tap=$(run_file "$f")
    rc=$?
    printf '%s\n' "$tap" >"$log_dir/${f%.py}.tap"
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    plan=$(printf '%s\n' "$tap" | sed -n 's/^1\.\.\([0-9]*\)$/\1/p' | head -n1)
    echo "== $f (${secs}s)"
    if [ -z "$plan" ] || [ $rc -ne 0 ]; then
        # The file itself crashed or timed out: one failure for the file.
        key="$f:(file)"
        reason=$(known_reason "$key")
        failed=$((failed + 1))
        if [ -n "$reason" ]; then
            known=$((known + 1)); results+=("KNOWN-FAIL $key  # $reason")
        else
            unexpected=$((unexpected + 1)); results+=("FAIL       $key  # rc=$rc, see $log_dir/${f%.py}.stderr")
        fi
        fail_keys+=("$key")
        continue
    fi
    if [ "$plan" = 0 ]; then
        # crun's way of skipping a whole file (test_mounts.py without libmount).
        skipped=$((skipped + 1))
        results+=("SKIP       $f:(all)  # plan 1..0: $(known_reason "$f:(all)")")
        continue
    fi
    seen=0
    while IFS= read -r line; do
        case $line in
        "ok "*"#SKIP"* | "ok "*"# SKIP"*)
            name=$(sed -E 's/^ok [0-9]+ - //; s/ *# ?SKIP.*$//' <<<"$line")
            seen=$((seen + 1)); skipped=$((skipped + 1))
            results+=("SKIP       $f:$name") ;;
        "ok "*)
            name=$(sed -E 's/^ok [0-9]+ - //' <<<"$line")
            seen=$((seen + 1)); passed=$((passed + 1))
            results+=("PASS       $f:$name") ;;
        "not ok "*)
            name=$(sed -E 's/^not ok [0-9]+ - //' <<<"$line")
            seen=$((seen + 1))
            # Retry alone once: a pass on retry is reported as such.
            if run_file "$f" "$name" | sed -nE 's/^ok [0-9]+ - //p' | grep -xF -- "$name" >/dev/null; then
                passed=$((passed + 1))
                results+=("PASS       $f:$name  # passed on retry (flaky)")
                continue
            fi
            failed=$((failed + 1))
            key="$f:$name"
            fail_keys+=("$key")
            reason=$(known_reason "$key")
            if [ -n "$reason" ]; then
                known=$((known + 1)); results+=("KNOWN-FAIL $key  # $reason")
            else
                unexpected=$((unexpected + 1)); results+=("FAIL       $key  # not in baseline")
            fi ;;
        esac
    done <<<"$tap"
    if [ "$seen" -ne "$plan" ]; then
        failed=$((failed + 1)); unexpected=$((unexpected + 1))
        results+=("FAIL       $f:(file)  # planned $plan tests, saw $seen")
        fail_keys+=("$f:(file)")
    fi
done

echo
echo "== results (crun: $crun_dir/crun; logs: $log_dir)"
printf '%s\n' "${results[@]}"
echo
if [ -n "$write_baseline" ]; then
    {
        echo "# Known failures of crun's tests on this machine; FILE:TEST  reason"
        echo "# written by run-crun-tests.sh on $(date -u +%F) for $("$crun_dir/crun" --version | head -n1)"
        for k in "${fail_keys[@]}"; do echo "$k  $(known_reason "$k")"; done
    } >"$write_baseline"
    echo "baseline written to $write_baseline"
fi
printf 'time: %s s; %d failures are known (baseline %s), %d are not\n' \
    "$(awk -v a="$t_all0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" \
    "$known" "${baseline:-none}" "$unexpected"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$unexpected" -eq 0 ]
