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

       conformance.py --vm [--cgroup v1|v2] [--markdown]
the same rows and columns on a pre-6.2 kernel: Debian 12's 6.1 in qemu
(tests/vm, TCG, 4 vCPUs, no isolcpus), cgroup v1 by default.  The container
cpuset is the host rows' shape, the whole machine (0-3), with CPUs 0 and 1
in the fields.  The image carries the peers' whole directories, the shim and
the fork at their host paths; tests/peers/vm-scenario.sh runs the plan
written from rows() and columns() and sends every result back, and the rows
are judged here as on the host.  77 also when qemu or the kernel is not
there.
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, ".."))
import fixture  # noqa: E402
import runtimes  # noqa: E402
import shimlib  # noqa: E402

REFERENCE = "runc-1.3.6"
PROBE = ["grep", "Cpus_allowed_list", "/proc/self/status"]
VM = os.path.join(HERE, "..", "vm")
VM_CPUS = 4
# The guest runs the columns in two lanes side by side, so that qemu's
# vCPU threads can keep both of this machine's CPUs busy: seen, the VM's
# run took 107-149 s with one lane, 63-96 s with two, 88 s with three,
# depending on the load beside it.  The results are masks, not timings:
# the lanes cannot change them.
VM_JOBS = 2
# The busybox rootfs that tests/vm/build-initramfs.sh puts into every image.
VM_ROOTFS = "/bundle/rootfs"


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


def host_table(cols):
    """(header, [(row, {label: cell})]) on this machine."""
    fixture.require_busybox()
    online = sorted(os.sched_getaffinity(0))
    if len(online) < 2:
        fixture.skip("needs 2 CPUs, has %d" % len(online))
    c0, c1 = online[0], online[1]
    table = []
    caller = Caller(str(c0))
    try:
        if caller.path is None:
            fixture.skip("no cpuset cgroup hierarchy to put the caller in")
        for row in rows(c0, c1, online):
            got = {label: run_row(path, env, row, caller) for label, path, env, _ in cols}
            table.append((row, got))
    finally:
        caller.remove()
    header = "Kernel %s, container cpuset %s unless the row says; caller unpinned." % (
        os.uname().release, shimlib.format_cpus(online))
    return header, table


def vm_plan(plan_dir, cols, row_list, c0, jobs):
    """Write the guest's plan (see vm-scenario.sh) into plan_dir: one bundle
    per distinct container config of the rows, one process file per row,
    the columns' binaries and the shim's EXECAFF_RUNTIME."""
    lines = ["jobs %d" % jobs, "caller %d" % c0]
    for n, (_, path, env, _) in enumerate(cols):
        runtime = (env or {}).get("EXECAFF_RUNTIME") or "-"
        lines.append("column %d %s %s" % (n, path, runtime))
    bundles = {}
    cells = []
    for i, (_, _, cpuset, field, where, program) in enumerate(row_list):
        key = (cpuset, json.dumps(field) if where == "config" else None)
        if key not in bundles:
            name = "b%d" % len(bundles)
            config = fixture.default_config(("sleep", "3600"), cpus=cpuset,
                                            cgroups_path="/execaff-@ID@")
            config["root"]["path"] = VM_ROOTFS
            if where == "config":
                config["process"]["execCPUAffinity"] = field
            os.makedirs(os.path.join(plan_dir, "bundles", name))
            with open(os.path.join(plan_dir, "bundles", name, "config.json"), "w") as f:
                json.dump(config, f, indent=2)
            bundles[key] = (name, config)
            lines.append("bundle %s" % name)
        name, config = bundles[key]
        if where == "config":
            cells.append("cell %d %s config - %s" % (i, name, " ".join(program)))
            continue
        process = dict(config["process"], args=list(program))
        if field is not None:
            process["execCPUAffinity"] = field
        with open(os.path.join(plan_dir, "process-%d.json" % i), "w") as f:
            json.dump(process, f)
        cells.append("cell %d %s %s /peers/process-%d.json" % (i, name, where, i))
    with open(os.path.join(plan_dir, "plan"), "w") as f:
        f.write("\n".join(lines + cells) + "\n")


def vm_result(line):
    """A `=CELL= ROW N RC o:B64 e:B64` line as (row, column, result).  The
    guest's shell reports a death by signal S as 128 + S: given back as -S,
    as Python reports it on the host (no runtime exits 129-192 itself)."""
    _, row, n, rc, out, err = line.split(" ")
    rc = int(rc)
    if 128 < rc <= 128 + 64:
        rc = 128 - rc
    text = [base64.b64decode(x[2:]).decode(errors="replace") for x in (out, err)]
    return int(row), int(n), types.SimpleNamespace(returncode=rc, stdout=text[0], stderr=text[1])


def vm_table(cols, cgroup):
    """(header, [(row, {label: cell})]) in Debian 12's 6.1 kernel (tests/vm)."""
    qemu = os.environ.get("QEMU", "qemu-system-x86_64")
    if shutil.which(qemu) is None:
        fixture.skip("%s not found (apt-get install qemu-system-x86)" % qemu)
    cache = os.environ.get("EXECAFF_VM_CACHE", os.path.expanduser("~/.cache/execaff-vm"))
    fetched = subprocess.run([os.path.join(VM, "fetch-kernel.sh"), cache],
                             stdout=subprocess.PIPE, text=True)
    if fetched.returncode != 0:
        fixture.skip("Debian's 6.1 kernel could not be fetched (see above)")
    kernel = fetched.stdout.strip()
    online = list(range(VM_CPUS))
    c0, c1 = online[0], online[1]
    row_list = rows(c0, c1, online)
    work = tempfile.mkdtemp(prefix="execaff-peers-vm-")
    try:
        plan_dir = os.path.join(work, "peers")
        os.makedirs(plan_dir)
        vm_plan(plan_dir, cols, row_list, c0, VM_JOBS)
        adds = ["%s:/peers" % plan_dir]
        for _, path, _, rt in cols:
            # A peer with its own loader and libraries: its whole directory.
            adds.append(os.path.dirname(rt.path) if rt.applies == "field" else rt.path)
            adds.append(path)
        image = os.path.join(work, "peers.cpio.gz")
        argv = [os.path.join(VM, "build-initramfs.sh"), image,
                "--script", os.path.join(HERE, "vm-scenario.sh")]
        for a in sorted(set(adds)):
            argv += ["--add", a]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        vm = subprocess.run([os.path.join(VM, "run-vm.sh"), "--kernel", kernel, "--initrd", image,
                             "--cgroup", cgroup, "--smp", str(VM_CPUS), "--timeout", "1200"],
                            stdout=subprocess.PIPE, text=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results, kernel_line, errors = {}, "", []
    for line in vm.stdout.splitlines():
        if line.startswith("=CELL= "):
            i, n, r = vm_result(line)
            results[(i, n)] = cell(r)
        elif line.startswith("=KERNEL= "):
            kernel_line = line.split(" ", 2)[1]
        elif line.startswith("=ERROR= "):
            errors.append(line[len("=ERROR= "):])
    if vm.returncode != 0 or errors:
        sys.stdout.write(vm.stdout)
        raise SystemExit("conformance: the VM run failed (run-vm.sh exit %d): %s" % (
            vm.returncode, "; ".join(errors) or "see above"))
    table = []
    for i, row in enumerate(row_list):
        missing = [label for n, (label, _, _, _) in enumerate(cols) if (i, n) not in results]
        if missing:
            raise SystemExit("conformance: no result from the VM for %s: %s" % (
                row[1], ", ".join(missing)))
        table.append((row, {label: results[(i, n)] for n, (label, _, _, _) in enumerate(cols)}))
    header = ("Kernel %s (Debian 12's, in qemu: TCG, %d vCPUs, cgroup %s), container cpuset "
              "%s unless the row says; caller unpinned." % (
                  kernel_line, VM_CPUS, cgroup, shimlib.format_cpus(online)))
    return header, table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print the README's table")
    ap.add_argument("--vm", action="store_true",
                    help="run the rows in the 6.1 VM (tests/vm) instead of on this host")
    ap.add_argument("--cgroup", choices=("v1", "v2"), default="v1",
                    help="with --vm: the guest's cgroup layout (default v1)")
    args = ap.parse_args()
    fixture.require_root()
    ref = runtimes.find(REFERENCE)
    if ref is None or not ref.path:
        fixture.skip("%s is not installed (%s)" % (
            REFERENCE, ref.problem if ref else "not in tests/runtimes.txt"))
    cols = columns()
    header, table = vm_table(cols, args.cgroup) if args.vm else host_table(cols)
    failures = []
    for row, got in table:
        failures += judge(row, got, cols)

    labels = [label for label, _, _, _ in cols]
    if args.markdown:
        print("%s Produced by `tests/peers/conformance.py%s --markdown`." % (
            header, " --vm" if args.vm else ""))
        print()
        print("| row | case | " + " | ".join(labels) + " |")
        print("|---|---|" + "---|" * len(labels))
        for row, got in table:
            label = row[1] + (" (cpuset %s)" % row[2] if row[2] else "")
            print("| %s | %s | " % (row[0], label) +
                  " | ".join(short(got[x]) for x in labels) + " |")
    else:
        print(header)
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
