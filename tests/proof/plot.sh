#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# plot.sh — the matrix's timeline picture: where each exec's tasks ran.
#
# Usage: plot.sh OUT.png TITLE ROW...
#   ROW is "LABEL=DIR:CELL,CELL,..." — one row of panels, one panel per
#   cell, read from DIR/csv/CELL.csv (execaff-schedtrace --csv).
#
# Each panel: x = milliseconds from the exec of the user's program (the
# phases before it are left of 0), y = CPU; each run of the cell is a thin
# line inside the CPU's band, one segment per residency, coloured by phase
# (caller grey, a blue, b orange, c green) and red where it is a violation.
# Bare runtimes sit beside execaff, one panel each.  Needs gnuplot
# (apt-get install -y gnuplot-nox).
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2; }
out=$1 title=$2
shift 2
command -v gnuplot >/dev/null || { echo "plot: gnuplot not found (apt-get install -y gnuplot-nox)" >&2; exit 1; }
rows=$#
cols=0
for row in "$@"; do
    cells=${row#*:}
    n=$(tr ',' '\n' <<<"$cells" | grep -c .)
    [ "$n" -gt "$cols" ] && cols=$n
done
script=$(mktemp "${TMPDIR:-/tmp}/execaff-plot.XXXXXX")
trap 'rm -f -- "$script"' EXIT
{
    cat <<GP
set terminal pngcairo size $((cols * 430)),$((rows * 300 + 90)) font "DejaVu Sans,9"
set output "$out"
set datafile separator ","
set multiplot layout $rows,$cols title "$title\\n{/*0.85 x: ms from the exec of the user's program (negative: before it); y: CPU; one line per exec; grey caller, blue (a) before the join, orange (b) window, green (c) program; red: violation}" font ",11"
colour(p, v) = v > 0 ? 0xd62728 : (p eq "a" ? 0x1f77b4 : (p eq "b" ? 0xff7f0e : (p eq "c" ? 0x2ca02c : 0x999999)))
lane(cpu, run) = cpu - 0.38 + 0.76 * (int(run) % 20) / 20.0
set ytics 1
set grid xtics
set key off
set xlabel "ms from exec" offset 0,0.5
set lmargin 6
GP
    for row in "$@"; do
        label=${row%%=*}
        rest=${row#*=}
        dir=${rest%%:*}
        cells=${rest#*:}
        IFS=',' read -r -a list <<<"$cells"
        for ((i = 0; i < cols; i++)); do
            cell=${list[i]:-}
            csv=$dir/csv/$cell.csv
            if [ -z "$cell" ] || [ ! -s "$csv" ] || [ "$(wc -l <"$csv")" -le 1 ]; then
                echo "set title \"$label ${cell:-} (no data)\""
                echo "unset xtics; unset ytics; plot [0:1][0:1] NaN notitle; set xtics; set ytics 1"
                continue
            fi
            runs=$(awk -F, 'NR > 1 { r[$8] = 1 } END { print length(r) }' "$csv")
            viol=$(awk -F, 'NR > 1 && $10 == 1 { n++ } END { print n + 0 }' "$csv")
            cpus=$(awk -F, 'NR > 1 { if ($3 > m) m = $3 } END { print m + 0 }' "$csv")
            echo "set title \"$label: $cell ($runs runs, $viol violating)\""
            echo "set yrange [-0.6:$cpus + 0.6]"
            echo "plot \"$csv\" every ::1 using (\$2):(lane(\$3,\$8)):(\$9):(0):(colour(strcol(6),\$10)) with vectors nohead lw 1.6 lc rgb variable"
        done
    done
    echo "unset multiplot"
} >"$script"
gnuplot "$script"
echo "$out"
