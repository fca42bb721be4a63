#!/bin/bash
# run-vm.sh — boot the test VM, run its scenario, report the scenario's result.
#
# Usage: run-vm.sh --kernel VMLINUZ --initrd CPIO.GZ --cgroup v1|v2
#                  [--smp 4] [--mem 1024] [--timeout 120]
#                  [--append "KERNEL ARGS"]... [--log FILE] [--console]
#                  [--idle-timeout S] [--interactive]
#
#   --kernel VMLINUZ   kernel image (tests/vm/fetch-kernel.sh prints its path)
#   --initrd CPIO.GZ   initramfs from tests/vm/build-initramfs.sh
#   --cgroup v1|v2     cgroup layout mounted by the guest's /init
#   --smp N            vCPUs (default 4)
#   --mem MB           guest memory (default 1024)
#   --timeout S        kill qemu after S seconds (default 120)
#   --append ARGS      extra kernel command line, e.g.
#                      "isolcpus=domain,2-3 nohz_full=2-3" (repeatable)
#   --log FILE         keep the whole serial console log in FILE
#   --idle-timeout S   once the scenario has begun, a console silent for S
#                      seconds means the guest stopped answering (a frozen
#                      node, not a slow one: the scenario must print more
#                      often than that); qemu is killed, exit 123
#   --console          also copy the whole console log to stderr at the end
#   --interactive      serial console on this terminal, execaff.shell=1
#                      (no capture; for debugging by hand)
#
# Prints the scenario's output (the lines between the markers printed by
# /init) on stdout and exits with the scenario's exit code. Exits 123 when
# the console went silent (--idle-timeout; the kernel's first hung-task
# report, if any, on stderr), 124 on timeout, 125 when the guest gave no
# result (panic, crash, no markers), 2 on usage errors; in those cases the
# partial output goes to stdout and the tail of the console log to stderr.
#
# The guest runs under TCG (no KVM needed; KVM is used when /dev/kvm is
# usable and EXECAFF_VM_KVM=1). The kernel is started with panic=-1 and qemu
# with -no-reboot, so a panic ends qemu at once. A CPU stuck in the kernel
# for 60 s panics it (softlockup_panic=1, watchdog_thresh=30), with every
# CPU's backtrace and the kernel log replayed onto the console
# (panic_print=0x20; /init keeps that log off the console otherwise), and
# the first report is printed on stderr: a lockup costs a minute and leaves
# its call trace instead of running into --timeout with one line.
set -euo pipefail

prog=run-vm
die() { echo "$prog: error: $*" >&2; exit 2; }
usage() {
    sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}

kernel='' initrd='' cgroup='' smp=4 mem=1024 timeout=120 logfile='' console=0 interactive=0 idle=0
append=()
while [ $# -gt 0 ]; do
    case $1 in
    --kernel) kernel=${2?}; shift 2 ;;
    --initrd) initrd=${2?}; shift 2 ;;
    --cgroup) cgroup=${2?}; shift 2 ;;
    --smp) smp=${2?}; shift 2 ;;
    --mem) mem=${2?}; shift 2 ;;
    --timeout) timeout=${2?}; shift 2 ;;
    --append) append+=("${2?}"); shift 2 ;;
    --log) logfile=${2?}; shift 2 ;;
    --console) console=1; shift ;;
    --idle-timeout) idle=${2?}; shift 2 ;;
    --interactive) interactive=1; shift ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
if [ -z "$kernel" ] || [ -z "$initrd" ] || [ -z "$cgroup" ]; then usage; fi
[ -f "$kernel" ] || die "kernel not found: $kernel"
[ -f "$initrd" ] || die "initrd not found: $initrd"
case $cgroup in v1|v2) ;; *) die "--cgroup must be v1 or v2" ;; esac
[[ $smp =~ ^[1-9][0-9]*$ ]] || die "--smp wants a number"
[[ $mem =~ ^[1-9][0-9]*$ ]] || die "--mem wants a number of MB"
[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout wants seconds"
[[ $idle =~ ^[0-9]+$ ]] || die "--idle-timeout wants seconds"
qemu=${QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || die "$qemu not found (apt-get install qemu-system-x86)"
command -v timeout >/dev/null || die "timeout not found (coreutils)"

cmdline="console=ttyS0 panic=-1 oops=panic quiet execaff.cgroup=$cgroup"
cmdline="$cmdline softlockup_panic=1 softlockup_all_cpu_backtrace=1 watchdog_thresh=30 panic_print=0x20"
[ $interactive = 0 ] || cmdline="$cmdline execaff.shell=1"
for a in "${append[@]}"; do cmdline="$cmdline $a"; done

accel=(-accel tcg)
if [ "${EXECAFF_VM_KVM:-0}" = 1 ] && [ -w /dev/kvm ]; then
    accel=(-accel kvm -cpu host)
fi
qargs=(
    -nodefaults -no-user-config -no-reboot
    "${accel[@]}" -smp "$smp" -m "$mem"
    -display none -vga none -net none
    -kernel "$kernel" -initrd "$initrd" -append "$cmdline"
)

if [ $interactive = 1 ]; then
    exec "$qemu" "${qargs[@]}" -serial mon:stdio
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/execaff-vm.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT
log=$tmp/console.log

start=$(date +%s.%N)
set +e
timeout --kill-after=5 "$timeout" "$qemu" "${qargs[@]}" \
    -chardev "file,id=ser0,path=$log" -serial chardev:ser0 \
    -monitor none </dev/null >"$tmp/qemu.out" 2>&1 &
qpid=$!
went_idle=0
if [ "$idle" -gt 0 ]; then
    # Watch the console's size; the clock starts at the scenario's BEGIN.
    last_size=-1 last_change=$SECONDS
    while kill -0 "$qpid" 2>/dev/null; do
        sleep 1
        size=$(stat -c %s "$log" 2>/dev/null || echo 0)
        if [ "$size" != "$last_size" ]; then
            last_size=$size last_change=$SECONDS
        elif [ $((SECONDS - last_change)) -ge "$idle" ] &&
            grep -aqF '=====EXECAFF-SCENARIO-BEGIN=====' "$log"; then
            went_idle=1
            kill -TERM "$qpid" 2>/dev/null   # timeout passes it on to qemu
            break
        fi
    done
fi
wait "$qpid"
qrc=$?
set -e
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

[ -f "$log" ] || : >"$log"
tr -d '\r' <"$log" >"$tmp/clean.log"
[ -z "$logfile" ] || cp -- "$tmp/clean.log" "$logfile"
[ $console = 0 ] || cat -- "$tmp/clean.log" >&2

begin='=====EXECAFF-SCENARIO-BEGIN====='
endm='=====EXECAFF-SCENARIO-END====='
has_begin=0 has_end=0
grep -qxF "$begin" "$tmp/clean.log" && has_begin=1
grep -q "^$endm rc=[0-9]*\$" "$tmp/clean.log" && has_end=1

# The scenario's output: after BEGIN, up to END (or to the end of the log).
awk -v b="$begin" -v e="$endm" '
    $0 == b { on = 1; next }
    on && index($0, e " rc=") == 1 { exit }
    on { print }' "$tmp/clean.log"

tail_log() {
    echo "$prog: last lines of the serial console:" >&2
    tail -n 40 "$tmp/clean.log" | sed 's/^/  | /' >&2
    if [ -s "$tmp/qemu.out" ]; then
        echo "$prog: qemu said:" >&2
        sed 's/^/  | /' "$tmp/qemu.out" >&2
    fi
}

if [ $has_end = 1 ]; then
    rc=$(sed -n "s/^$endm rc=\([0-9]*\)\$/\1/p" "$tmp/clean.log" | tail -n 1)
    if [ $has_begin = 0 ]; then
        echo "$prog: the guest's /init failed before the scenario (rc=$rc) after ${elapsed}s" >&2
        tail_log
    elif [ "$rc" != 0 ]; then
        echo "$prog: scenario exited with $rc (VM ran ${elapsed}s)" >&2
    else
        echo "$prog: scenario passed (VM ran ${elapsed}s)" >&2
    fi
    exit "$rc"
fi

if [ $went_idle = 1 ]; then
    echo "$prog: GUEST STOPPED ANSWERING: no console output for ${idle}s (scenario started; VM ran ${elapsed}s)" >&2
    # The kernel's first hung-task report, if it printed one.
    awk '!on && /blocked for more than/ { on = 1 } on && n++ < 60' "$tmp/clean.log" | sed 's/^/  > /' >&2
    tail_log
    exit 123
fi
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
    echo "$prog: TIMEOUT: no result after ${timeout}s (scenario started: $([ $has_begin = 1 ] && echo yes || echo no))" >&2
    tail_log
    exit 124
fi
if grep -q 'Kernel panic' "$tmp/clean.log"; then
    echo "$prog: KERNEL PANIC in the guest after ${elapsed}s" >&2
    # The first report (soft lockup, BUG, WARNING, Oops) with its trace.
    awk '!on && /soft lockup|BUG:|WARNING:|Oops|rcu.*stall/ { on = 1 }
         on && n++ < 80' "$tmp/clean.log" | sed 's/^/  > /' >&2
    tail_log
    exit 125
fi
echo "$prog: no scenario result in the console log (qemu exit status $qrc, ${elapsed}s)" >&2
tail_log
exit 125
