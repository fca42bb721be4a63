#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The peers side by side: where each runtime puts an exec'd process for
the same process.execCPUAffinity field, bare and through execaff.

Columns: the runtimes of tests/runtimes.txt that apply the field themselves
(runc 1.3.6, crun 1.21, crun 1.28: contrib/install-peers.sh), bare; then
execaff: execaff-shim over each installed runtime of the list (Debian's
runc 1.1.5 and crun 1.8.1, which ignore the field, and the peers) and the
forked crun ($EXECAFF_CRUN_FORK).  Rows: the shapes the field alone can
express (spec/decision-table.md R19-R32), each exec'd with a process file
unless the row says "CLI form".  A cell is the exec'd process's
Cpus_allowed_list, or the exit code and the last line of stderr.

The rule it checks (fidelity, spec/upstream.md): where runc 1.3.6, the
reference, runs the exec, execaff puts the process on the same CPUs, over
every runtime; where runc 1.3.6 fails, execaff fails too or goes further
only as the decision table says (a repaired initial, R21/R30).  The bare
peers are recorded, not judged: where crun differs from runc the table
shows it.

Usage: conformance.py [--markdown]     (root; 77 when fewer than 2 CPUs or
no peer installed).  Exit 0 when execaff matches runc 1.3.6 on every row.
"""

import argparse
import os
import re
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, ".."))
import fixture  # noqa: E402
import runtimes  # noqa: E402
import shimlib  # noqa: E402

REFERENCE = "runc-1.3.6"
PROBE = ["grep", "Cpus_allowed_list", "/proc/self/status"]


class Caller:
    """A cpuset cgroup holding only `cpus`, for the caller of the runtime:
    the exclusive-cpuset shape (CRI-O's infra_ctr_cpuset, a kubelet whose
    reserved CPUs exclude the pod's), where an initial outside it makes
    sched_setaffinity fail with EINVAL."""

    def __init__(self, cpus):
        self.path = None
        mount = cpuset_mount()
        if mount is None:
            return
        path, version = mount
        self.path = os.path.join(path, "execaff-conformance-%d" % os.getpid())
        os.mkdir(self.path)
        if version == 1:
            write(os.path.join(self.path, "cpuset.mems"), read(os.path.join(path, "cpuset.mems")))
            write(os.path.join(self.path, "cpuset.cpus"), cpus)
        else:
            write(os.path.join(self.path, "cpuset.cpus"), cpus)

    def enter(self):
        write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def remove(self):
        if self.path:
            os.rmdir(self.path)


def read(path):
    with open(path) as f:
        return f.read().strip()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def cpuset_mount():
    """(path, 1 or 2) of the cpuset hierarchy, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            rest = fields[fields.index("-") + 1:]
            if rest[0] == "cgroup" and "cpuset" in rest[2].split(","):
                return fields[4], 1
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            rest = fields[fields.index("-") + 1:]
            if rest[0] == "cgroup2" and "cpuset" in read(
                    os.path.join(fields[4], "cgroup.subtree_control")).split():
                return fields[4], 2
    return None


def rows(c0, c1, online):
    """(id, label, container cpuset, field, where, program): `where` is
    "process" (the field in the exec's process file), "config" (in
    config.json's process, exec'd in the CLI form) or "caller" (a process
    file, the runtime started from a cpuset cgroup holding only c0)."""
    outside = str(max(online) + 1000)
    return [
        ("R1", "no field", None, None, "process", PROBE),
        ("R22", "initial only (CRI-O 1.34's shape)", None, {"initial": str(c0)}, "process", PROBE),
        ("R20", "final only", None, {"final": str(c1)}, "process", PROBE),
        ("R19", "initial and final", None, {"initial": str(c0), "final": str(c1)}, "process", PROBE),
        ("R23", "final outside the container's cpuset", str(c0), {"final": str(c1)}, "process",
         PROBE),
        ("R21", "initial outside the caller's cpuset (exclusive CPUs)", None,
         {"initial": str(c1)}, "caller", PROBE),
        ("R31", "the same, final given", None, {"initial": str(c1), "final": str(c1)}, "caller",
         PROBE),
        ("R30", "initial on CPUs not there", None, {"initial": outside}, "process", PROBE),
        ("—", "final on CPUs not there", None, {"final": outside}, "process", PROBE),
        ("R24", "CLI form, the field in config.json", None,
         {"initial": str(c0), "final": str(c1)}, "config", PROBE),
        ("—", "a missing program", None, {"initial": str(c0), "final": str(c1)}, "process",
         ["/nope"]),
    ]


def cell(r):
    m = re.search(r"Cpus_allowed_list:\s*(\S+)", r.stdout)
    if r.returncode == 0 and m:
        return m.group(1)
    last = (r.stderr.strip().splitlines() or [""])[-1]
    # Ids, temp paths and times differ between runs: keep the reason.
    last = re.sub(r"/tmp/\S+", "…", last)
    last = re.sub(r'time="[^"]*" level=\w+ msg="?', "", last).rstrip('"')
    return "exit %d: %s" % (r.returncode, last)


def short(text):
    """A cell for the README: CPUs as they are, a failure as its exit code
    and what kind of failure it is."""
    m = re.match(r"exit (-?\d+): (.*)", text)
    if not m:
        return "`%s`" % text
    code, msg = int(m.group(1)), m.group(2)
    status = "killed by signal %d" % -code if code < 0 else "exit %d" % code
    for needle, what in (("free(): invalid pointer", "heap corrupted: free(): invalid pointer"),
                         ("is not within the container's cpuset", "refused: final not in the cpuset"),
                         ("initial CPU affinity: invalid", "EINVAL setting initial"),
                         ("final CPU affinity: invalid", "EINVAL setting final"),
                         ("sched_setaffinity: Invalid argument", "EINVAL (sched_setaffinity)"),
                         ("o such file", "not found"), ("not found", "not found")):
        if needle in msg:
            return "%s, %s" % (status, what)
    return "%s, %s" % (status, msg.replace("`", "'").replace("|", "\\|"))


def run_row(runtime, env, row, caller):
    _, _, cpuset, field, where, program = row
    with fixture.Container(runtime, cpus=cpuset, env=env, start=False) as c:
        if where == "config":
            c.bundle.config["process"]["execCPUAffinity"] = field
            c.bundle.write_config()
        c.create()
        c.start()
        if where == "config":
            return cell(c.exec(program, env=env))
        process = c.process_json(program)
        if field is not None:
            process["execCPUAffinity"] = field
        kw = {"preexec_fn": caller.enter} if where == "caller" else {}
        return cell(c.exec_process(process, env=env, **kw))


def judge(row, got, cols):
    """The failures of one row: each execaff cell against the reference.

    * runc 1.3.6 runs the exec: execaff puts the process on the same CPUs.
    * runc 1.3.6 fails: execaff fails too (its own error: a decision
      table error, or the runtime's), except on the rows where the decision
      table repairs the field (R21, R30, R31), where execaff runs the exec,
      on the same CPUs over every runtime.
    * a missing program: through execaff, each peer's exit code and message
      are the bare peer's own."""
    rid, what = row[0], row[1]
    want = got["%s bare" % REFERENCE]
    ours = [(label, rt) for label, _, _, rt in cols if label.startswith("execaff")]
    failures = []
    repaired = {got[label] for label, _ in ours}
    for label, rt in ours:
        have = got[label]
        if not want.startswith("exit"):
            ok, why = have == want, "%s gives %s" % (REFERENCE, want)
        elif rid in ("R21", "R30", "R31"):
            ok = not have.startswith("exit") and len(repaired) == 1
            why = "the decision table repairs it: every execaff cell the same CPUs, got %s" % (
                sorted(repaired))
        elif row[5] != PROBE and rt.applies == "field":
            ok, why = have == got["%s bare" % rt.name], "bare %s gives %s" % (
                rt.name, got["%s bare" % rt.name])
        else:
            ok, why = have.startswith("exit"), "%s fails: %s" % (REFERENCE, want)
        if not ok:
            failures.append("%s %s: %s gives %s; %s" % (rid, what, label, have, why))
    return failures


def columns():
    """[(label, runtime path, env)]: the bare peers, then execaff's."""
    cols, shim = [], shimlib.shim_path()
    for rt in runtimes.load():
        if rt.applies == "field" and rt.path:
            cols.append(("%s bare" % rt.name, rt.path, None, rt))
    for rt in runtimes.load():
        if not rt.path:
            continue
        if rt.applies == "execaff":
            cols.append(("execaff: %s" % rt.name, rt.path, None, rt))
        elif shim:
            cols.append(("execaff-shim over %s" % rt.name, shim, shimlib.shim_env(rt.path), rt))
    return cols


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print the README's table")
    args = ap.parse_args()
    fixture.require_root()
    fixture.require_busybox()
    online = sorted(os.sched_getaffinity(0))
    if len(online) < 2:
        fixture.skip("needs 2 CPUs, has %d" % len(online))
    ref = runtimes.find(REFERENCE)
    if ref is None or not ref.path:
        fixture.skip("%s is not installed (%s)" % (
            REFERENCE, ref.problem if ref else "not in tests/runtimes.txt"))
    c0, c1 = online[0], online[1]
    table, failures = [], []
    cols = columns()
    caller = Caller(str(c0))
    try:
        if caller.path is None:
            fixture.skip("no cpuset cgroup hierarchy to put the caller in")
        for row in rows(c0, c1, online):
            got = {label: run_row(path, env, row, caller) for label, path, env, _ in cols}
            failures += judge(row, got, cols)
            table.append((row, got))
    finally:
        caller.remove()

    labels = [label for label, _, _, _ in cols]
    if args.markdown:
        print("Kernel %s, container cpuset %s unless the row says; caller unpinned. "
              "Produced by `tests/peers/conformance.py --markdown`." % (
                  os.uname().release, shimlib.format_cpus(online)))
        print()
        print("| row | case | " + " | ".join(labels) + " |")
        print("|---|---|" + "---|" * len(labels))
        for row, got in table:
            label = row[1] + (" (cpuset %s)" % row[2] if row[2] else "")
            print("| %s | %s | " % (row[0], label) +
                  " | ".join(short(got[x]) for x in labels) + " |")
    else:
        for row, got in table:
            print("%s %s:" % (row[0], row[1]))
            for x in labels:
                print("    %-36s %s" % (x, got[x][:160]))
    for f in failures:
        print("FAIL " + f)
    print("%d rows, %d execaff cells differ from %s" % (len(table), len(failures), REFERENCE))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
