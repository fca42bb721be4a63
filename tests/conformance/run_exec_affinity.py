#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""runtime-tools' process.execCPUAffinity programs over every runtime.

The programs (validation/process_exec_cpu_affinity*, added to runtime-tools
by contrib/runtime-tools/exec-cpu-affinity.patch, built by
build-runtime-tools.sh) run once per cell: each runtime of
tests/runtimes.txt bare, and execaff-shim over it.  What each cell must give
depends on what implements the field there:

  execaff   (the shim over any runtime, the forked crun bare): every
            assertion ok and exit 0, else the test fails;
  ignores   (runc 1.1.5, crun 1.8.1 bare: applies "no"): every program
            that asserts where the exec'd process runs must fail at least
            one assertion (the programs can fail), else the test fails;
  field     (the peers bare): reported, not judged.

A failed execaff program is run once more and fails only when it fails
again (both runs shown).  SKIP lines that start "informational:" are where
the spec is silent: they are collected per runtime, and where two cells
that implement the field say different things the table says so.

Usage: run_exec_affinity.py [--tools DIR] [--markdown] [RUNTIME ...]
Exit codes: 0 as expected, 1 not, 77 skipped (no build, no runtime).
Needs root; takes the containers of the runtimes' default roots.
"""

import argparse
import collections
import os
import re
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from run_conformance import (  # noqa: E402
    EXEC_AFFINITY_PREFIX as PREFIX, Runner, runtime_version, tools_dir)

INFO = "informational: "


def verdicts(outcome):
    """(oks, not oks, skips, informational lines) of one run."""
    oks, bad, skips, info = [], [], [], []
    for (verdict, directive, desc), n in outcome.results.items():
        if verdict != "ok" and verdict != "not ok":
            continue
        if directive == "SKIP":
            (info if desc.startswith(INFO) else skips).extend([desc] * n)
        elif verdict == "ok":
            oks.extend([desc] * n)
        else:
            bad.extend([desc] * n)
    return oks, bad, skips, info


_DETAIL = re.compile(r"\s*(\((?:[^()]|\([^()]*\))*\)|\[[^\]]*\])")


def info_key(desc):
    """An informational line as (what was tried, what the runtime did)."""
    text = desc[len(INFO):].replace("; the spec is silent", "")
    what, sep, did = text.partition(": the ")
    return (what, "the " + did) if sep else (text, "")


def gist(did):
    """What the runtime did without the figures in parentheses and the
    citation: what two cells are compared on."""
    return _DETAIL.sub("", did).strip()


class Cell:
    def __init__(self, runtime, side, judged):
        self.runtime, self.side, self.judged = runtime, side, judged
        self.programs = {}           # program -> (outcome, retry outcome or None)

    @property
    def label(self):
        return "%s %s" % (self.runtime, self.side)


def run_cell(runner, programs, cell, path, through_shim):
    problems = []
    for program in programs:
        outcome = runner.run(program, path, through_shim)
        oks, bad, skips, info = verdicts(outcome)
        retry = None
        # A program that asserted nothing and skipped nothing said nothing:
        # a failure.  One that skipped whole (no root, no tracefs, one CPU)
        # reports its reason.
        if cell.judged == "execaff" and (bad or outcome.status != 0 or not (oks or skips)):
            retry = runner.run(program, path, through_shim)
        cell.programs[program] = (outcome, retry)
        shown = retry or outcome
        roks, rbad, rskips, _ = verdicts(shown)
        print("  %-16s %-40s %d ok, %d not ok, %d skipped, %d informational, exit %s%s" % (
            cell.side, program, len(oks), len(bad), len(skips), len(info), outcome.status,
            "; again: %d ok, %d not ok, exit %s" % (len(roks), len(rbad), retry.status)
            if retry else ""), flush=True)
        for d in sorted(set(bad)):
            print("      not ok: %s" % d)
        if not oks and not bad:
            for d in sorted(set(skips)):
                print("      skipped: %s" % d)
        for o in (outcome,) + ((retry,) if retry else ()):
            if o.status not in (0, 1) or (not oks and not bad):
                tail = o.stderr.strip().splitlines()[-3:]
                print("      exit %s, stderr: %s" % (o.status, " | ".join(tail) or "-"))
        if cell.judged == "execaff" and (rbad or shown.status != 0 or not (roks or rskips)):
            problems.append("%s: %s fails through execaff (%s)" % (
                cell.label, program, "; ".join(sorted(set(rbad))) or "exit %s" % shown.status))
        if cell.judged == "ignores" and not bad and any(
                "runs on" in d or "does not run" in d for d in oks):
            problems.append("%s: %s passes on a runtime that ignores the field: "
                            "the program cannot fail" % (cell.label, program))
    return problems


def markdown(cells, programs):
    short = [p[len(PREFIX):].lstrip("_") or "(main)" for p in programs]
    lines = ["| runtime | " + " | ".join("`%s`" % s for s in short) + " | expected |",
             "|---|" + "---|" * (len(programs) + 1)]
    expect = {"execaff": "all ok (execaff)", "ignores": "affinity lines fail (ignores the field)",
              "field": "reported (implements the field)"}
    for c in cells:
        row = []
        for p in programs:
            o = c.programs[p][1] or c.programs[p][0]
            oks, bad, _, _ = verdicts(o)
            row.append("%d/%d ok" % (len(oks), len(oks) + len(bad)) if o.status in (0, 1) or oks
                       or bad else "exit %s" % o.status)
        lines.append("| %s | %s | %s |" % (c.label, " | ".join(row), expect[c.judged]))
    # Where the spec is silent: what each cell did.
    info = collections.OrderedDict()
    for c in cells:
        for p in programs:
            o = c.programs[p][1] or c.programs[p][0]
            for d in verdicts(o)[3]:
                what, did = info_key(d)
                info.setdefault(what, {})[c.label] = did
    lines += ["", "| where the spec is silent | " + " | ".join(c.label for c in cells) + " |",
              "|---|" + "---|" * len(cells)]
    for what, by in info.items():
        lines.append("| %s | %s |" % (what, " | ".join(by.get(c.label, "-") for c in cells)))
    return "\n".join(lines)


def disagreements(cells, programs):
    """Where cells that implement the field differ: informational lines,
    and assertions that pass in one and fail in another."""
    out = []
    implementing = [c for c in cells if c.judged in ("field", "execaff")]
    seen = collections.OrderedDict()
    for c in implementing:
        for p in programs:
            o = c.programs[p][1] or c.programs[p][0]
            for d in verdicts(o)[3]:
                what, did = info_key(d)
                seen.setdefault(what, collections.OrderedDict()).setdefault(
                    gist(did), []).append(c.label)
    # Assertions one implementing cell passes and another fails.
    for c in implementing:
        for p in programs:
            o = c.programs[p][1] or c.programs[p][0]
            oks, bad, _, _ = verdicts(o)
            for verdict, descs in (("ok", oks), ("not ok", bad)):
                for d in descs:
                    seen.setdefault(gist(d), collections.OrderedDict()).setdefault(
                        verdict, []).append(c.label)
    for what, by in seen.items():
        if len(by) > 1:
            out.append("%s: %s" % (what, "; ".join("%s: %s" % (", ".join(ls), did)
                                                    for did, ls in by.items())))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runtimes", nargs="*", metavar="RUNTIME")
    ap.add_argument("--tools", help="the built suite (default $EXECAFF_RTOOLS_DIR)")
    ap.add_argument("--markdown", action="store_true", help="print the markdown tables too")
    args = ap.parse_args()

    fixture.require_root()
    tools, programs = tools_dir(args.tools)
    programs = [p for p in programs if p.startswith(PREFIX)]
    if not programs:
        sys.exit("run_exec_affinity: %s has no %s* program: built without "
                 "contrib/runtime-tools/exec-cpu-affinity.patch?" % (tools, PREFIX))
    shim = shimlib.shim_path()
    if not fixture.prepare_host():
        sys.exit("run_exec_affinity: prepare-host.sh failed")
    # The programs want an unpinned caller.
    os.sched_setaffinity(0, _online())
    found = shimlib.runtimes([sys.argv[0]] + (args.runtimes or shimlib.runtime_list.names()))
    print("runtime-tools: %s; programs: %s" % (tools, ", ".join(programs)), flush=True)
    work = shimlib.workdir("execaff-exec-affinity-")
    os.chmod(work, 0o755)
    runner = Runner(tools, shim, work)
    cells, problems = [], []
    for rt in found:
        name, path = rt
        print("== %s: %s (%s)" % (name, runtime_version(path), path), flush=True)
        bare_judged = {"no": "ignores", "execaff": "execaff"}.get(rt.applies, "field")
        for side, through_shim, judged in (("bare", False, bare_judged),
                                            ("+ execaff-shim", True, "execaff")):
            cell = Cell(name, side, judged)
            problems += run_cell(runner, programs, cell, path, through_shim)
            cells.append(cell)
    print()
    asserted = [c for c in cells for o, r in c.programs.values() if any(verdicts(r or o)[:2])]
    if not asserted:
        fixture.skip("no program asserted anything here (each skipped whole: see above)")
    if args.markdown:
        print(markdown(cells, programs))
        print()
    for d in disagreements(cells, programs):
        print("disagree: %s" % d)
    for p in problems:
        print("FAIL %s" % p)
    print("%s: %d cells, %d programs" % ("FAIL" if problems else "PASS", len(cells), len(programs)))
    return 1 if problems else 0


def _online():
    with open("/sys/devices/system/cpu/online") as f:
        return set(shimlib.parse_cpus(f.read().strip()))


if __name__ == "__main__":
    sys.exit(main())
