#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# fifo-matrix.sh — issue 25: execs into a pod with SCHED_FIFO busy-poll
# threads, bare and through execaff, in the VM (tests/fifo/README.md).
#
# Usage: fifo-matrix.sh --short|--full [--kernel cloud|rt]... [--cgroup v1|v2]...
#                       [--boots N] [--execs N] [--base N] [--only CELL,...]
#                       [--layout a|b] [--out DIR] [--results FILE]
#                       [--idle-timeout S]
#
#   --short      CI: the cells of set "short", 1 boot, 5 FIFO execs, 3 base
#   --full       by hand: set "full", 3 boots, 17 FIFO execs per boot (>= 50
#                per cell), 5 base; writes tests/fifo/results/fifo-full.md
#   --kernel K   cloud (Debian 12's 6.1 cloud kernel) or rt (its PREEMPT_RT
#                kernel, linux-image-rt-amd64); default both
#   --cgroup V   v1 or v2; default both
#   --only LIST  these cells of cells.txt, whatever their set
#   --layout L   a (default): isolcpus=domain,managed_irq,2-3 nohz_full=2-3
#                rcu_nocbs=2-3; b: nohz_full=2-3 rcu_nocbs=2-3, no isolcpus,
#                load balancing off for the pod's CPUs as CRI-O 1.34.11 does
#                (fifo-scenario.sh)
#   --out DIR    keep everything there (default: a new /tmp/execaff-fifo.*)
#   --results F  where the table goes (--full default
#                tests/fifo/results/fifo-full.md)
#   --idle-timeout S  a console silent that long is a frozen node (default 75;
#                it must exceed the scenario's 45 s hung deadline, during
#                which a hung exec prints nothing)
#
# Each boot runs the cells in order; when the node freezes in a cell (its
# console goes silent: run-vm.sh --idle-timeout, or the guest panics) that
# cell is recorded as frozen with the kernel's hung-task report and the
# rest of the cells get a fresh VM.  A freeze is a result, never a retry.
#
# Needs root, qemu, the build's execaff-fifo-poll, execaff-fifo-exec and
# execaff-shim ($EXECAFF_BUILD, default ./build; or $EXECAFF_FIFO_POLL,
# $EXECAFF_FIFO_EXEC, $EXECAFF_SHIM).  The peers come from
# tests/runtimes.py, the fork from $EXECAFF_CRUN_FORK (absent: skipped).
# Exit 0 when every execaff cell (via shim, shim-default, native) had no
# hung, failed or frozen exec and left nothing behind, 1 otherwise, 2 on
# usage errors, 77 when it cannot run here (reason printed).
set -uo pipefail
# One compound command, read whole before it runs: the script may be edited
# while a long run uses it.
{

prog=fifo-matrix
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
say() { echo "$prog: $*" >&2; }
die() { say "error: $*"; exit 2; }
usage() { sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

mode='' layout=a kernels=() cgroups=() boots='' execs='' base='' only='' out='' results='' idle=75
while [ $# -gt 0 ]; do
    case $1 in
    --short) mode=short; shift ;;
    --full) mode=full; shift ;;
    --kernel) case ${2-} in cloud|rt) kernels+=("$2") ;; *) die "--kernel wants cloud or rt" ;; esac; shift 2 ;;
    --cgroup) case ${2-} in v1|v2) cgroups+=("$2") ;; *) die "--cgroup wants v1 or v2" ;; esac; shift 2 ;;
    --boots) boots=${2?}; shift 2 ;;
    --execs) execs=${2?}; shift 2 ;;
    --base) base=${2?}; shift 2 ;;
    --only) only=${2?}; shift 2 ;;
    --layout) case ${2-} in a|b) layout=$2 ;; *) die "--layout wants a or b" ;; esac; shift 2 ;;
    --out) out=${2?}; shift 2 ;;
    --results) results=${2?}; shift 2 ;;
    --idle-timeout) idle=${2?}; shift 2 ;;
    -h|--help) usage ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$mode" ] || usage
[ ${#kernels[@]} -gt 0 ] || kernels=(cloud rt)
[ ${#cgroups[@]} -gt 0 ] || cgroups=(v1 v2)
if [ "$mode" = short ]; then
    boots=${boots:-1} execs=${execs:-5} base=${base:-3}
else
    boots=${boots:-3} execs=${execs:-17} base=${base:-5}
    results=${results:-$here/results/fifo-full.md}
fi
for v in "$boots" "$execs" "$base" "$idle"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "--boots, --execs, --base, --idle-timeout want numbers >= 1"
done

if [ "$(id -u)" != 0 ]; then echo "$prog: SKIP: needs root"; exit 77; fi
command -v "${QEMU:-qemu-system-x86_64}" >/dev/null ||
    { echo "$prog: SKIP: qemu-system-x86_64 not found (apt-get install qemu-system-x86)"; exit 77; }
build=${EXECAFF_BUILD:-$repo/build}
poll=${EXECAFF_FIFO_POLL:-$build/tests/fifo/execaff-fifo-poll}
fexec=${EXECAFF_FIFO_EXEC:-$build/tests/fifo/execaff-fifo-exec}
shim=${EXECAFF_SHIM:-$build/shim/execaff-shim}
for f in "$poll" "$fexec" "$shim"; do
    [ -x "$f" ] || die "$f not found: build first (ninja -C build)"
done

# The cells: --only, else the mode's set.
cells=()
while read -r name _ _ _ sets; do
    if [ -n "$only" ]; then
        [[ ,$only, == *,$name,* ]] || continue
    else
        [[ ,$sets, == *,$mode,* ]] || continue
    fi
    cells+=("$name")
done < <(grep -v -e '^#' -e '^ *$' "$here/cells.txt")
[ ${#cells[@]} -gt 0 ] || die "no cells selected (--only $only)"

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/execaff-fifo.XXXXXX")
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
echo "$prog: $mode run: ${kernels[*]} x ${cgroups[*]}, $boots boot(s), $execs FIFO + $base base execs per cell, cells: ${cells[*]}; output in $out"

# The image: the fifo programs, the shim, the peers the cells name, the fork.
peers=$out/runtimes.resolved
: >"$peers"
adds=()
for name in runc-1.3.6 crun-1.21 crun-1.28; do
    grep -v '^#' "$here/cells.txt" | awk '{ print $2 }' | grep -qxF "$name" || continue
    path=$(python3 "$repo/tests/runtimes.py" --path "$name" 2>/dev/null) || continue
    [ -x "$path" ] || { say "peer $name not installed ($path): its cells are skipped"; continue; }
    echo "$name $path" >>"$peers"
    adds+=(--add "$(dirname "$path")")
done
if [ -n "${EXECAFF_CRUN_FORK:-}" ]; then
    "$EXECAFF_CRUN_FORK" --version 2>&1 | grep -q '+EXECAFF' ||
        die "EXECAFF_CRUN_FORK=$EXECAFF_CRUN_FORK is not the forked crun (no +EXECAFF in --version)"
    adds+=(--add "$(readlink -f "$EXECAFF_CRUN_FORK"):/usr/local/bin/crun-execaff")
fi
image=$out/fifo.cpio.gz
"$repo/tests/vm/build-initramfs.sh" "$image" --script "$here/fifo-scenario.sh" \
    --add "$poll:/usr/local/bin/execaff-fifo-poll" --add "$fexec:/usr/local/bin/execaff-fifo-exec" \
    --add "$shim:/usr/local/bin/execaff-shim" --add "$here/cells.txt:/fifo/cells.txt" \
    --add "$peers:/fifo/runtimes.resolved" "${adds[@]}" >/dev/null || die "build-initramfs.sh failed"

raw=$out/results.tsv   # kernel cgroup boot cell phase i outcome ms
ends=$out/cells.tsv    # kernel cgroup boot cell end|frozen|skip detail
: >"$raw"; : >"$ends"
kargs="nohz_full=2-3 rcu_nocbs=2-3 execaff.fifo_layout=$layout"
[ "$layout" = b ] || kargs="isolcpus=domain,managed_irq,2-3 $kargs"
t_all=$SECONDS
for kname in "${kernels[@]}"; do
    case $kname in cloud) pkg='' ;; rt) pkg=linux-image-rt-amd64 ;; esac
    if ! kernel=$(EXECAFF_KERNEL_PKG=$pkg "$repo/tests/vm/fetch-kernel.sh" "${EXECAFF_VM_CACHE:-$HOME/.cache/execaff-vm}"); then
        echo "$prog: SKIP: the $kname kernel could not be fetched (see above)"; exit 77
    fi
    kver=$(cut -d' ' -f3 "$(dirname "$kernel")/VERSION")
    for cg in "${cgroups[@]}"; do
        for boot in $(seq 1 "$boots"); do
            todo=("${cells[@]}") vm=0
            while [ ${#todo[@]} -gt 0 ]; do
                vm=$((vm + 1))
                tag=$kname-$cg-$layout-b$boot-vm$vm
                list=$(IFS=,; echo "${todo[*]}")
                echo "== $tag: $kver, cells ${todo[*]}"
                t0=$SECONDS
                "$repo/tests/vm/run-vm.sh" --kernel "$kernel" --initrd "$image" --cgroup "$cg" \
                    --timeout $((600 + ${#todo[@]} * (2 * base + execs) * 20)) --idle-timeout "$idle" \
                    --append "$kargs execaff.fifo_cells=$list execaff.fifo_execs=$execs execaff.fifo_base=$base" \
                    --log "$out/$tag.console" >"$out/$tag.out" 2>"$out/$tag.err"
                rc=$?
                echo "   run-vm exit $rc after $((SECONDS - t0)) s"
                awk -v k="$kname/$layout" -v c="$cg" -v b="$boot" '
                    $1 == "FIFO" && $2 == "exec" { print k "\t" c "\t" b "\t" $3 "\t" $4 "\t" $5 "\t" $6 "\t" ($6 == "ok" ? $7 : $6 == "fail" ? $8 : "") }' \
                    "$out/$tag.out" >>"$raw"
                awk -v k="$kname/$layout" -v c="$cg" -v b="$boot" '
                    $1 == "FIFO" && $2 == "cell-end" { print k "\t" c "\t" b "\t" $3 "\tend\t" $4 " " $5 " " $6 }
                    $1 == "FIFO" && $2 == "cell-skip" { print k "\t" c "\t" b "\t" $3 "\tskip\t-" }' \
                    "$out/$tag.out" >>"$ends"
                grep -E '^FIFO (node|note|cell-end|cell-skip)' "$out/$tag.out" | sed 's/^/   /'
                [ $rc != 0 ] || break
                # Where did it stop?  The cell begun and never ended.
                stuck=$(awk '$1 == "FIFO" && $2 == "cell-begin" { c = $3 } $1 == "FIFO" && $2 == "cell-end" && $3 == c { c = "" } END { print c }' "$out/$tag.out")
                if [ -z "$stuck" ]; then
                    say "$tag: run-vm.sh exited $rc outside any cell:"; sed 's/^/   /' "$out/$tag.err" >&2
                    echo -e "$kname/$layout\t$cg\t$boot\t(boot)\terror\trun-vm exit $rc" >>"$ends"
                    break
                fi
                why="run-vm exit $rc"
                case $rc in 123) why="console silent ${idle}s" ;; 124) why=timeout ;; 125) why="guest panic" ;; esac
                report=$out/$tag.hung-task.txt
                awk '!on && /blocked for more than|soft lockup|BUG:|rcu.*stall/ { on = 1 } on && n++ < 60' \
                    "$out/$tag.console" >"$report"
                echo -e "$kname/$layout\t$cg\t$boot\t$stuck\tfrozen\t$why; report $report" >>"$ends"
                echo "   FROZEN in $stuck ($why); kernel report: $(grep -m1 -E 'blocked for more than|soft lockup|BUG:|stall' "$report" || echo none)"
                # The first report's call chain, without timestamps and "? " guesses.
                awk '/Call Trace:/ { n++ } n == 1' "$report" |
                    sed -n 's/^\[ *[0-9.]*\]  *\([a-z_][a-zA-Z_0-9.]*+0x[0-9a-f]*\).*/\1/p' |
                    head -n 12 | tr '\n' ' ' | sed 's/^/     /; s/$/\n/'
                # The rest of the cells in a fresh VM.
                rest=() seen=0
                for c in "${todo[@]}"; do
                    [ $seen = 1 ] && rest+=("$c")
                    [ "$c" = "$stuck" ] && seen=1
                done
                todo=("${rest[@]}")
            done
        done
    done
done
echo "$prog: wall time $((SECONDS - t_all)) s"
python3 "$here/fifo-table.py" --cells "$here/cells.txt" --raw "$raw" --ends "$ends" \
    --title "fifo cells ($mode, layout $layout: $boots boot(s) x $execs FIFO execs, $base base; $(date -u '+%Y-%m-%d %H:%M UTC'); tree $(git -C "$repo" rev-parse --short HEAD 2>/dev/null))" \
    ${results:+--markdown "$results"}
exit $?
}
