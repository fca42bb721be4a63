#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""test_fifo_table.py: fifo-table.py's verdicts and figures on made-up rows."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = "runc-bare runc bare unpinned short\nshim-runc runc shim unpinned short\n"


def run(raw, ends):
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, text in (("cells", CELLS), ("raw", raw), ("ends", ends)):
            paths[name] = os.path.join(d, name)
            with open(paths[name], "w", encoding="utf-8") as f:
                f.write(text)
        md = os.path.join(d, "t.md")
        p = subprocess.run([sys.executable, os.path.join(HERE, "fifo-table.py"),
                            "--cells", paths["cells"], "--raw", paths["raw"],
                            "--ends", paths["ends"], "--markdown", md],
                           capture_output=True, text=True, check=False)
        with open(md, encoding="utf-8") as f:
            return p.returncode, p.stdout, f.read()


def rows(cell, phase, outcomes):
    return "".join(f"rt/a\tv1\t1\t{cell}\t{phase}\t{i}\t{o}\t{ms}\n"
                   for i, (o, ms) in enumerate(outcomes, 1))


class FifoTable(unittest.TestCase):
    def test_bare_hang_is_a_result_execaff_clean_passes(self):
        raw = (rows("runc-bare", "base", [("ok", "1000")]) +
               rows("runc-bare", "fifo", [("ok", "1000"), ("hung", "")]) +
               rows("shim-runc", "base", [("ok", "1000"), ("ok", "2000")]) +
               rows("shim-runc", "fifo", [("ok", str(ms)) for ms in (1000, 1500, 2500)]))
        ends = "rt/a\tv1\t1\trunc-bare\tend\tleftovers=0 hungtasks=0\n"
        rc, out, md = run(raw, ends)
        self.assertEqual(rc, 0, out)
        shim = [l for l in md.splitlines() if "| shim-runc |" in l][0].split(" | ")
        # p50 1.50, p99 = max 2.50, base p99 2.00, ratio 1.25
        self.assertEqual(shim[10:13], ["1.50", "2.50", "2.50"], shim)
        self.assertEqual(shim[16], "1.25", shim)
        bare = [l for l in md.splitlines() if "| runc-bare |" in l][0].split(" | ")
        self.assertEqual(bare[5:7], ["2", "1"], bare)

    def test_slow_is_counted_not_failed(self):
        rc, out, md = run(rows("shim-runc", "fifo", [("ok", "12000"), ("ok", "900")]), "")
        self.assertEqual(rc, 0, out)
        shim = [l for l in md.splitlines() if "| shim-runc |" in l][0].split(" | ")
        self.assertEqual(shim[5:8], ["2", "0", "1"], shim)

    def test_execaff_hung_fails(self):
        rc, out, _ = run(rows("shim-runc", "fifo", [("ok", "1000"), ("hung", "")]), "")
        self.assertEqual(rc, 1)
        self.assertIn("EXECAFF CELL FAILED: rt/a v1 shim-runc", out)

    def test_execaff_frozen_and_leftovers_fail(self):
        rc, out, _ = run("", "rt/a\tv1\t2\tshim-runc\tfrozen\tconsole silent 60s\n")
        self.assertEqual(rc, 1)
        self.assertIn("frozen 1", out)
        rc, out, _ = run(rows("shim-runc", "fifo", [("ok", "1000")]),
                         "rt/a\tv1\t1\tshim-runc\tend\tleftovers=2 hungtasks=0\n")
        self.assertEqual(rc, 1)
        self.assertIn("leftovers 2", out)

    def test_bare_frozen_is_a_result(self):
        rc, out, md = run("", "rt/a\tv1\t1\trunc-bare\tfrozen\tconsole silent 60s\n")
        self.assertEqual(rc, 0, out)
        self.assertIn("| runc-bare | bare | 1 | 0 | 0 | 0 | 0 | 1 |", md)

    def test_boot_error_fails(self):
        rc, out, _ = run("", "rt/a\tv1\t1\t(boot)\terror\trun-vm exit 125\n")
        self.assertEqual(rc, 1)
        self.assertIn("run-vm exit 125", out)


if __name__ == "__main__":
    unittest.main()
