#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""fifo-table.py: the fifo cells' table from fifo-matrix.sh's raw rows.

Reads results.tsv (kernel cgroup boot cell phase i outcome ms: one row per
exec) and cells.tsv (kernel cgroup boot cell end|frozen|skip|error detail)
and prints, per kernel x cgroup x cell: the FIFO phase's execs, hung (not
returned by the scenario's deadline, 45 s), slow (returned after more than
10 s: what a user calls hung, but under TCG a loaded host alone gets there),
failed, frozen boots, p50/p99/max latency of the execs that returned, and
the same cell's p50/p99 without poll threads (base) and with SCHED_OTHER
spinners on the same CPUs (other: the emulator's share of the slowdown),
and the FIFO p99 over each.
Exit 1 when an execaff cell (via shim, shim-default, native) had a hung,
failed or frozen exec, or left a task behind; 0 otherwise.  Python 3,
stdlib only.
"""

import argparse
import math
import sys
from collections import defaultdict

EXECAFF_VIAS = {"shim", "shim-default", "native"}


def percentile(values, p):
    """Nearest-rank percentile of a non-empty list."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def fmt_ms(values, p):
    return f"{percentile(values, p) / 1000:.2f}" if values else "-"


def read_cells(path):
    vias = {}
    order = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            vias[words[0]] = words[2]
            order.append(words[0])
    return vias, order


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", required=True)
    ap.add_argument("--raw", required=True)
    ap.add_argument("--ends", required=True)
    ap.add_argument("--title", default="fifo cells")
    ap.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = ap.parse_args()

    vias, order = read_cells(args.cells)
    lat = defaultdict(list)      # (k, c, cell, phase) -> [ms]
    counts = defaultdict(lambda: defaultdict(int))  # (k, c, cell) -> outcome -> n
    boots = defaultdict(set)
    with open(args.raw, encoding="utf-8") as f:
        for line in f:
            k, c, b, cell, phase, _i, outcome, ms = line.rstrip("\n").split("\t")
            boots[(k, c, cell)].add(b)
            if outcome == "ok":
                lat[(k, c, cell, phase)].append(float(ms))
            if phase == "fifo":
                counts[(k, c, cell)][outcome] += 1
            elif outcome != "ok":
                counts[(k, c, cell)][phase + "-" + outcome] += 1
    frozen = defaultdict(int)
    leftovers = defaultdict(int)
    skipped = set()
    errors = []
    with open(args.ends, encoding="utf-8") as f:
        for line in f:
            k, c, b, cell, kind, detail = line.rstrip("\n").split("\t", 5)
            if kind == "frozen":
                frozen[(k, c, cell)] += 1
                boots[(k, c, cell)].add(b)
            elif kind == "end":
                for word in detail.split():
                    if word.startswith("leftovers="):
                        leftovers[(k, c, cell)] += int(word.split("=", 1)[1])
                    if word == "error":
                        errors.append(f"{k} {c} boot {b} {cell}: container did not start")
            elif kind == "skip":
                skipped.add((k, c, cell))
            else:
                errors.append(f"{k} {c} boot {b}: {detail}")

    keys = sorted({key for key in list(boots) + list(frozen) + list(skipped)},
                  key=lambda t: (t[0], t[1], order.index(t[2]) if t[2] in order else 999))
    head = ["kernel", "cg", "cell", "via", "boots", "fifo execs", "hung", "slow>10s", "failed",
            "frozen",
            "p50 s", "p99 s", "max s", "base p50", "base p99", "other p99", "p99/base p99", "p99/other p99",
            "left"]
    rows = []
    bad = []
    for key in keys:
        k, c, cell = key
        if key in skipped and key not in boots:
            rows.append([k, c, cell, vias.get(cell, "?")] + ["skipped"] + [""] * (len(head) - 5))
            continue
        n = counts[key]
        fifo = lat[(k, c, cell, "fifo")]
        base = lat[(k, c, cell, "base")]
        other = lat[(k, c, cell, "other")]
        execs = sum(n[o] for o in ("ok", "hung", "fail"))
        ratio = (f"{percentile(fifo, 99) / percentile(base, 99):.2f}"
                 if fifo and base else "-")
        ratio_other = (f"{percentile(fifo, 99) / percentile(other, 99):.2f}"
                       if fifo and other else "-")
        rows.append([k, c, cell, vias.get(cell, "?"), str(len(boots[key])), str(execs),
                     str(n["hung"]), str(sum(1 for v in fifo if v > 10000)), str(n["fail"]),
                     str(frozen[key]),
                     fmt_ms(fifo, 50), fmt_ms(fifo, 99), fmt_ms(fifo, 100),
                     fmt_ms(base, 50), fmt_ms(base, 99), fmt_ms(other, 99), ratio, ratio_other,
                     str(leftovers[key])])
        if vias.get(cell) in EXECAFF_VIAS:
            trouble = {o: v for o, v in n.items() if o != "ok" and v}
            if trouble or frozen[key] or leftovers[key]:
                bad.append(f"{k} {c} {cell}: {dict(trouble)} frozen {frozen[key]} "
                           f"leftovers {leftovers[key]}")

    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    print(args.title)
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    for e in errors:
        print("error:", e)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(f"# {args.title}\n\n")
            f.write("| " + " | ".join(head) + " |\n")
            f.write("|" + "---|" * len(head) + "\n")
            for r in rows:
                f.write("| " + " | ".join(r) + " |\n")
            for e in errors:
                f.write(f"\nerror: {e}\n")
        print(f"table written to {args.markdown}")
    for b in bad:
        print("EXECAFF CELL FAILED:", b)
    if errors:
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
