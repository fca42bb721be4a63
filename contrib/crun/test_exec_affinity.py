#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""process.execCPUAffinity in the forked crun (crun 1.8.1 or 1.21 + contrib/crun/BASE/*.patch).

Runs real busybox containers (tests/integration/fixture.py) and checks the
Cpus_allowed_list of the exec'd process and of a child it forks:

* the field in the exec process file (initial only, final only, both), the
  container's config.json as the fallback (process file and CLI form), the
  pod annotation's policy, malformed or refused lists (the exec fails with a
  crun-format message and runs nothing);
* with no field and no annotation the exec is unpatched crun's: the same
  state-changing syscalls (strace) as stock crun, the process file untouched;
* on cgroup v2 (a private mount namespace with cgroup2 at /sys/fs/cgroup):
  CLONE_INTO_CGROUP unless `initial` is set;
* execaff-shim over the fork takes the native path and gives what the
  emulated path over stock crun gives;
* the build marks itself (+EXECAFF, ELF note), carries libexecaff and its
  C++ runtime inside (no shared libexecaff or libstdc++) and its libraries
  resolve for the VM initramfs;
* an exec that names neither the field nor the annotation never reaches
  libexecaff (no node facts read);
* the node config execaff-shim reads ($EXECAFF_CONFIG here): its
  housekeeping_cpus bound `initial` (strace: crun itself, then the
  grandchild) and leave an exec that is not pinned alone, its handler_default opts a
  pod in, and a half-written, duplicate-keyed, group-writable or misspelt
  file fails the exec with a message naming it, while `state` works;
* crun narrowed to the housekeeping CPUs after its re-execution (early/),
  or before it with the node config's crun_first_image_pin (first-image/).

Usage: test_exec_affinity.py [--crun PATCHED] [--stock STOCK] [--shim SHIM]
                             [--only SUBSTRING]...
Defaults: $EXECAFF_CRUN, $EXECAFF_STOCK_CRUN, $EXECAFF_SHIM, else the
build-crun.sh / ci.sh locations under /var/tmp/execaff-crun.  Prints one
line per case and "N passed, N failed, N skipped"; exits 1 on a failure,
77 when the machine cannot run the tests at all (not root, < 2 CPUs).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import fixture  # noqa: E402
import shimlib  # noqa: E402  (Checks, format_cpus, allowed_lists)
from shimlib import ANNOTATION, OPENSHIFT_ANNOTATION  # noqa: E402

WORK = "/var/tmp/execaff-crun"

# The exec'd shell reports itself ($$, read by a forked grep) and a child
# (grep's own /proc/self); the trailing `true` keeps ash from exec'ing the
# last command in place of the shell.
PROBE = ["sh", "-c", "grep Cpus_allowed_list /proc/$$/status; "
         "grep Cpus_allowed_list /proc/self/status; true"]


# ------------------------------------------------------------ helpers

def last_line(text):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[-1] if lines else ""


CRUN_ERROR = re.compile(r"^exec CPU affinity: .+: Invalid argument$")


def crun_version(crun):
    """(major, minor, patch) from `crun --version`'s first line."""
    first = fixture.run([crun, "--version"]).stdout.splitlines()[:1]
    m = re.match(r"crun version (\d+)\.(\d+)(?:\.(\d+))?", first[0] if first else "")
    return tuple(int(x or 0) for x in m.groups()) if m else (0, 0, 0)


# crun 1.21 (not 1.8.1) resets the affinity of every exec'd process whose
# exec carries no execCPUAffinity, before the cgroup join: scheduler.c's
# libcrun_reset_cpu_affinity_mask, sched_setaffinity(pid, 0, NULL), which
# the kernel refuses with EINVAL after dropping the mask it remembered
# (OCPBUGS-15102).  The fork keeps that for execs it leaves alone, so on a
# 1.21 base it is stock crun's call, not one of execaff's.
CRUN_RESET = re.compile(r"sched_setaffinity\(\d+, 0, NULL\)")


def affinity_calls(trace, base_resets):
    """The sched_setaffinity lines of an strace, without crun's own reset
    when BASE_RESETS."""
    return [l for l in trace.splitlines() if "sched_setaffinity(" in l
            and not (base_resets and CRUN_RESET.search(l))]


# ------------------------------------------------------------ the cases

class Cases:
    def __init__(self, report, crun, stock, shim):
        self.r = report
        self.crun = crun
        self.stock = stock
        self.shim = shim
        self.node_dirs = []
        self.base = crun_version(crun)
        self.base_resets = self.base > (1, 8, 1)
        allowed = sorted(os.sched_getaffinity(0))
        self.c0, self.c1 = allowed[0], allowed[1]
        # The container's cpuset: two CPUs, "0-1" on the 2-CPU CI machine.
        self.cpuset = shimlib.format_cpus({self.c0, self.c1})
        self.both = self.cpuset
        # A CPU outside that cpuset ("5" on the CI machine and in the VM).
        self.outside = next(c for c in (5, 7, 9, 63, 1023) if c not in (self.c0, self.c1))

    def case(self, name, fn, *args):
        if not self.r.wanted(name):
            return
        try:
            fn(name, *args)
        except Exception as e:      # a case that cannot run counts as failed
            self.r.error(name, e)

    # -- one exec, one expectation
    def expect(self, name, result, want, detail=""):
        got = shimlib.allowed_lists(result.stdout)
        self.r.check(name, result.returncode == 0 and got == [want, want],
                     "want exec'd and child on %s, got %s\n%s%s" % (
                         want, got, result, ("\n" + detail) if detail else ""))

    def probe_process(self, c, field=None, args=PROBE):
        p = c.process_json(list(args))
        if field is not None:
            p["execCPUAffinity"] = field
        return p

    # -- the build
    def build_marks(self, name):
        v = fixture.run([self.crun, "--version"]).stdout
        s = fixture.run([self.stock, "--version"]).stdout if self.stock else ""
        self.r.check(name + "/version-token", "+EXECAFF" in v.splitlines()[-1], v)
        if self.stock:
            self.r.check(name + "/stock-has-no-token", "+EXECAFF" not in s, s)
        readelf = shutil.which("readelf")
        if not readelf:
            self.r.skip(name + "/elf-note", "readelf not installed (binutils)")
            return
        notes = fixture.run([readelf, "-n", "-W", self.crun]).stdout
        m = re.search(r"\bexecaff\s+0x0*12\b[^\n]*?\n?[^\n]*?description data: "
                      r"((?:[0-9a-f]{2} ?)+)", notes)
        desc = bytes.fromhex(m.group(1).replace(" ", "")) if m else b""
        self.r.check(name + "/elf-note", desc == b"exec-cpu-affinity\0", notes)
        # The shim reads PT_NOTE segments, not sections: the note's section
        # must be mapped to a NOTE program header.
        seg = fixture.run([readelf, "-l", "-W", self.crun]).stdout
        types = re.findall(r"^\s{2}([A-Z_]+)\s+0x", seg.split("Section to Segment")[0], re.M)
        mapped = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+)\s+(.*)$", seg.split(
            "Section to Segment")[-1], re.M) if ".note.execaff" in m.group(2).split()]
        self.r.check(name + "/in-PT_NOTE", any(types[i] == "NOTE" for i in mapped),
                     "segments %s; .note.execaff in %s\n%s" % (types, mapped, seg))

    def libraries(self, name):
        # libexecaff is linked in statically, C++ runtime and all: a shared
        # library would be mapped into every crun command (DESIGN.md, 8).
        dyn = fixture.run(["readelf", "-d", "-W", self.crun])
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn.stdout)
        self.r.check(name + "/static", dyn.returncode == 0 and needed and
                     not any("execaff" in n or "stdc++" in n for n in needed), dyn)
        syms = fixture.run(["nm", "-D", "--defined-only", self.crun])
        self.r.check(name + "/exports-nothing", syms.returncode == 0 and not re.search(
            r" (execaff_|_ZNSt|_ZSt)", syms.stdout), syms)
        ldd = fixture.run(["ldd", self.crun])
        self.r.check(name + "/ldd-resolves", ldd.returncode == 0 and "not found" not in ldd.stdout, ldd)
        script = os.path.join(REPO, "tests", "vm", "build-initramfs.sh")
        if not (os.access(script, os.X_OK) and shutil.which("cpio")):
            self.r.skip(name + "/vm-initramfs", "tests/vm/build-initramfs.sh or cpio missing")
            return
        tmp = tempfile.mkdtemp(prefix="execaff-initramfs-", dir=WORK if os.path.isdir(WORK) else None)
        try:
            out = os.path.join(tmp, "initramfs.cpio.gz")
            b = fixture.run(["bash", script, out, "--add", self.crun + ":/usr/local/bin/crun-execaff"],
                            timeout=120)
            listing = ""
            if b.returncode == 0:
                listing = subprocess.run("gzip -dc %s | cpio -it --quiet" % out, shell=True,
                                         capture_output=True, text=True).stdout
            self.r.check(name + "/vm-initramfs", b.returncode == 0 and
                         "usr/local/bin/crun-execaff" in listing and "libyajl.so.2" in listing,
                         "%s\nlisting has crun-execaff: %s" % (b, "usr/local/bin/crun-execaff" in listing))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def untouched(self, prefix):
        """An exec that names neither the field nor the annotation never
        reaches libexecaff: no node facts read, no thread listed.  One that
        does reads them (the same check can fail)."""
        if not shutil.which("strace"):
            self.r.skip(prefix, "strace not installed")
            return
        facts = re.compile(r'"(/proc/\d+/cgroup|/sys/devices/system/cpu/[^"]*|/proc/\d+/task)"')
        with fixture.Container(self.crun, cpus=self.cpuset) as c:
            for label, field in (("none", None), ("field", {"final": str(self.c1)})):
                path = c.write_process(self.probe_process(c, field, args=["true"]))
                out = os.path.join(c._tmp, "open-%s.txt" % label)
                r = fixture.run(["strace", "-f", "-qq", "-o", out, "-e", "trace=openat,open,stat,newfstatat",
                                 self.crun, "--root", c.root, "exec", "--process", path, c.id])
                with open(out) as f:
                    read = sorted(set(m.group(1) for m in facts.finditer(f.read())))
                want = field is not None
                self.r.check(prefix + label + ("-reads" if want else "-reads-no") + "-node-facts",
                             r.returncode == 0 and bool(read) == want, "%s\n%s" % (r, read))

    # -- the field in the exec process file
    def process_field(self, prefix):
        with fixture.Container(self.crun, cpus=self.cpuset) as c:
            self.case(prefix + "none", self.none, c)
            self.case(prefix + "empty-lists", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"initial": "", "final": ""})), self.both))
            # initial only: final is left to the kernel's cgroup join, as
            # runc >= 1.3 and crun >= 1.19 leave it (decision table R22):
            # before 6.2 the cpuset attach overwrites the mask with the
            # cpuset (0-1); since 6.2 (user_cpus_ptr, commits 8f9ea86fdf99
            # and da019032819a) it keeps cpuset & initial (1).
            self.case(prefix + "initial-only", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"initial": str(self.c1)})),
                str(self.c1) if fixture.kernel_keeps_requested_mask() else self.both,
                "kernel %s (%s)" % (os.uname().release, "keeps cpuset & initial on a join"
                                    if fixture.kernel_keeps_requested_mask() else "resets on a join")))
            self.case(prefix + "final-only", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"final": str(self.c1)})), str(self.c1)))
            self.case(prefix + "initial-and-final", lambda n: self.expect(
                n, c.exec_process(self.probe_process(
                    c, {"initial": str(self.c0), "final": str(self.c1)})), str(self.c1)))
            self.case(prefix + "order-initial-move-final-release", self.order, c)
            # CRI-O's infra_ctr_cpuset runs the runtime pinned (taskset).
            # initial wholly outside crun's own CPUs would fail with EINVAL
            # (crun#1915); libexecaff widens it with the housekeeping CPUs
            # (decision table R21), and final still decides.
            self.case(prefix + "caller-pinned-initial-outside", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"initial": str(self.c1),
                                                         "final": str(self.c1)}),
                                  preexec_fn=lambda: os.sched_setaffinity(0, {self.c0})),
                str(self.c1)))
            self.case(prefix + "cli-form-unpinned", lambda n: self.expect(
                n, c.exec(PROBE), self.both))
            self.case(prefix + "detach-pid-file", self.detached, c)
            for label, field, needle in (
                    ("bad-initial-a", {"initial": "a"}, 'process.execCPUAffinity.initial: invalid CPU list "a"'),
                    ("bad-final-backwards", {"final": "3-1"}, 'process.execCPUAffinity.final: invalid CPU list "3-1"'),
                    ("bad-final-outside", {"final": str(self.outside)},
                     'final affinity "%d" is not within the container\'s cpuset "%s"' % (
                         self.outside, self.cpuset))):
                self.case(prefix + label, self.refused, c, field, needle)
        if self.stock:
            self.case(prefix + "none-syscalls-as-stock", self.same_syscalls)

    def none(self, name, c):
        path = c.write_process(self.probe_process(c))
        with open(path, "rb") as f:
            before = f.read()
        st = os.stat(path)
        self.expect(name, c.exec_process(path), self.both)
        with open(path, "rb") as f:
            after = f.read()
        self.r.check(name + "/process-file-unchanged",
                     after == before and os.stat(path).st_mtime_ns == st.st_mtime_ns)

    def order(self, name, c):
        """strace -y: initial is set on the blocked grandchild before any
        cgroup.procs write moves it, final after the last one and before the
        parent's release write on the sync socket, which precedes execve."""
        if not shutil.which("strace"):
            self.r.skip(name, "strace not installed")
            return
        p = self.probe_process(c, {"initial": str(self.c0), "final": str(self.c1)}, args=["true"])
        path = c.write_process(p)
        out = os.path.join(c._tmp, "order.txt")
        r = fixture.run(["strace", "-f", "-qq", "-y", "-o", out, "-e",
                         "trace=sched_setaffinity,write,execve", self.crun, "--root", c.root,
                         "exec", "--process", path, c.id])
        with open(out) as f:
            trace = f.read()
        ok, why = check_order(trace, str(self.c0), str(self.c1))
        self.r.check(name, r.returncode == 0 and ok, "%s\n%s\n%s" % (why, r, trace))

    def detached(self, name, c):
        # conmon's form: exec --pid-file P --process F --detach ID
        pid_file = os.path.join(c._tmp, "exec.pid")
        p = self.probe_process(c, {"initial": str(self.c0), "final": str(self.c1)},
                               args=["sleep", "30"])
        r = c.exec_process(p, exec_args=["--detach", "--pid-file", pid_file])
        got = None
        if r.returncode == 0:
            with open(pid_file) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/status" % pid) as f:
                got = fixture.status_field(f.read(), "Cpus_allowed_list")
            os.kill(pid, 9)
        self.r.check(name, got == str(self.c1), "got %r\n%s" % (got, r))

    def refused(self, name, c, field, needle):
        marker = "/tmp/ran-%s" % re.sub(r"\W", "-", name)
        r = c.exec_process(self.probe_process(c, field, args=["touch", marker]))
        err = last_line(r.stderr)
        ran = c.exec(["test", "-e", marker]).returncode == 0
        self.r.check(name, r.returncode != 0 and CRUN_ERROR.match(err) is not None and needle in err
                     and not ran, "ran=%s, want a crun error naming %r\n%s" % (ran, needle, r))

    def same_syscalls(self, name):
        """With no field, the state-changing syscalls of an exec are those of
        stock crun: no sched_{get,set}affinity, the same clone/clone3 flags,
        setns, mounts, writes (pid bytes and temp names normalized)."""
        if not shutil.which("strace"):
            self.r.skip(name, "strace not installed")
            return
        traces = {}
        for label, rt in (("stock", self.stock), ("patched", self.crun)):
            with fixture.Container(rt, cpus=self.cpuset) as c:
                path = c.write_process(c.process_json(["true"]))
                out = os.path.join(c._tmp, "strace.txt")
                r = fixture.run(["strace", "-f", "-qq", "-s", "256", "-o", out, "-e",
                                 "trace=clone,clone3,fork,vfork,execve,sched_setaffinity,"
                                 "sched_getaffinity,setns,unshare,mount,umount2,write,prctl,"
                                 "setsid,kill,sched_setscheduler,setpriority,ioprio_set",
                                 rt, "--root", c.root, "exec", "--process", path, c.id])
                if r.returncode != 0:
                    self.r.check(name, False, r)
                    return
                with open(out) as f:
                    traces[label] = normalize_strace(f.read(), {rt: "CRUN", c.root: "ROOT",
                                                                c.id: "ID", path: "PROCESS"})
        import difflib
        # Each process's calls in its own order; how strace interleaves
        # processes that run at once is the scheduler's (crun 1.21's parent
        # and grandchild race around setsid), so the lines are grouped by
        # process first (a stable sort on the process label).
        by_process = {k: sorted(v, key=lambda l: l.split(" ", 1)[0]) for k, v in traces.items()}
        diff = "\n".join(difflib.unified_diff(by_process["stock"], by_process["patched"], "stock",
                                              "patched", lineterm=""))
        affinity = [l for l in traces["patched"] if "affinity" in l
                    and not (self.base_resets and CRUN_RESET.search(l.replace("NUM", "1")))]
        self.r.check(name, not diff and not affinity and len(traces["stock"]) > 10, diff or affinity)

    # -- config.json's process.execCPUAffinity: the default of execs without one
    def config_field(self, prefix):
        c = fixture.Container(self.crun, cpus=self.cpuset, start=False)
        with c:
            c.bundle.config["process"]["execCPUAffinity"] = {"final": str(self.c1)}
            c.bundle.write_config()
            c.create()
            c.start()
            self.case(prefix + "process-file-without-field", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c)), str(self.c1)))
            self.case(prefix + "cli-form", lambda n: self.expect(
                n, c.exec(PROBE), str(self.c1)))
            # runc's rule: the exec's own field wins (decision table R25).
            self.case(prefix + "process-field-wins", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"final": str(self.c0)})), str(self.c0)))

    # -- the pod annotation
    def annotation(self, prefix):
        with fixture.Container(self.crun, cpus=self.cpuset, annotations={ANNOTATION: "first"}) as c:
            # "first": the lowest CPU of the container's cpuset.
            self.case(prefix + "first", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c)), str(self.c0)))
            self.case(prefix + "first-cli-form", lambda n: self.expect(
                n, c.exec(PROBE), str(self.c0)))
            # crun pinned elsewhere (CRI-O's infra_ctr_cpuset): same answer.
            self.case(prefix + "first-caller-pinned", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c),
                                  preexec_fn=lambda: os.sched_setaffinity(0, {self.c1})),
                str(self.c0)))
            # CRI-O 1.34 writes initial only; the policy overrides it (R13).
            self.case(prefix + "first-over-crio-initial", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"initial": str(self.c1)})), str(self.c0)))
        with fixture.Container(self.crun, cpus=self.cpuset,
                               annotations={OPENSHIFT_ANNOTATION: "disable"}) as c:
            # An opt-out turns the policy off, not a field (R5).
            self.case(prefix + "openshift-disable-keeps-field", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c, {"final": str(self.c1)})), str(self.c1)))
            self.case(prefix + "openshift-disable-unpinned", lambda n: self.expect(
                n, c.exec_process(self.probe_process(c)), self.both))
        with fixture.Container(self.crun, cpus=self.cpuset, annotations={ANNOTATION: "firstt"}) as c:
            self.case(prefix + "bad-annotation", self.refused, c, None,
                      '%s "firstt": expected "first", "first-core", "disable" or a CPU list'
                      % ANNOTATION)

    # -- the node config the shim reads (/etc/execaff/shim.json, $EXECAFF_CONFIG)
    def node_file(self, text, mode=0o644):
        """A root-owned node config in a private 0700 dir; its path."""
        d = tempfile.mkdtemp(prefix="execaff-node-")
        self.node_dirs.append(d)
        path = os.path.join(d, "shim.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (text if isinstance(text, str) else json.dumps(text)).encode())
        os.close(fd)
        os.chmod(path, mode)
        return path

    def initial_and_final(self, c, env):
        """The two sets the fork gives one `exec true` (strace), or None."""
        p = self.probe_process(c, args=["true"])
        path = c.write_process(p)
        out = os.path.join(c._tmp, "node-order.txt")
        r = fixture.run(["strace", "-f", "-qq", "-y", "-o", out, "-e",
                         "trace=sched_setaffinity,write,execve", self.crun, "--root", c.root,
                         "exec", "--process", path, c.id], env=env)
        with open(out) as f:
            trace = f.read()
        sets = re.findall(r"sched_setaffinity\(\d+, \d+, \[([\d ]+?)(?: \.\.\.)?\]\)\s+= 0", trace)
        return r, [shimlib.format_cpus(int(x) for x in s.split()) for s in sets], trace

    def node_config(self, prefix):
        c0, both = str(self.c0), self.both
        env = lambda path: dict(os.environ, EXECAFF_CONFIG=path)
        hk = self.node_file({"housekeeping_cpus": c0})
        empty = self.node_file({})
        with fixture.Container(self.crun, cpus=self.cpuset,
                               annotations={ANNOTATION: "first"}) as c:
            if shutil.which("strace"):
                # The caller runs on both CPUs, neither of them isolated:
                # initial is the housekeeping CPUs (plus final).  Without the
                # node config they are all the caller's CPUs, the busy one too.
                # crun puts itself and the grandchild on initial, then the
                # grandchild on final.
                # The first set is crun's own at its start, before its
                # re-execution (exec-affinity-early.c; the early/ cases).
                for label, path, want in (("housekeeping-bounds-initial", hk, [c0, c0, c0, c0]),
                                          ("no-housekeeping-initial-is-wide", empty,
                                           [both, both, c0])):
                    name = prefix + label
                    if self.r.wanted(name):
                        r, sets, trace = self.initial_and_final(c, env(path))
                        self.r.check(name, r.returncode == 0 and sets == want,
                                     "want initial, final %s, got %s\n%s\n%s" % (want, sets, r, trace))
                # Only exec reads it: every other command is stock crun's.
                name = prefix + "state-never-narrowed"
                if self.r.wanted(name):
                    out = os.path.join(c._tmp, "state-trace.txt")
                    r = fixture.run(["strace", "-f", "-qq", "-o", out, "-e",
                                     "trace=sched_setaffinity,openat", self.crun, "--root",
                                     c.root, "state", c.id], env=env(hk))
                    with open(out) as f:
                        trace = f.read()
                    self.r.check(name, r.returncode == 0 and "sched_setaffinity" not in trace and
                                 hk not in trace, "%s\n%s" % (r, trace))
            else:
                self.r.skip(prefix + "housekeeping-*", "strace not installed")
            # A file that cannot be used fails the exec, naming it and why,
            # and runs nothing; commands other than exec never read it.
            for label, text, mode, needle in (
                    ("half-written", '{"housekeeping_cpus": "0", "handl', 0o644, "malformed JSON near byte offset"),
                    ("duplicate-key", '{"housekeeping_cpus": "0", "housekeeping_cpus": "1"}', 0o644,
                     'duplicate key "housekeeping_cpus"'),
                    ("group-writable", "{}", 0o664, "writable by group or others (mode 664)"),
                    ("unknown-key", '{"handler_defualt": "first"}', 0o644,
                     'unknown key "handler_defualt"'),
                    ("first-image-pin-not-boolean", '{"housekeeping_cpus": "0", "crun_first_image_pin": "yes"}',
                     0o644, '"crun_first_image_pin" must be true or false')):
                name = prefix + label
                if not self.r.wanted(name):
                    continue
                path = self.node_file(text, mode)
                marker = "/tmp/ran-%s" % re.sub(r"\W", "-", name)
                r = c.exec_process(self.probe_process(c, args=["touch", marker]), env=env(path))
                err = last_line(r.stderr)
                ran = c.exec(["test", "-e", marker]).returncode == 0
                st = fixture.run([self.crun, "--root", c.root, "state", c.id], env=env(path))
                self.r.check(name, r.returncode != 0 and err.startswith("exec CPU affinity: ") and
                             needle in err and path in err and not ran and st.returncode == 0,
                             "ran=%s, state rc=%s; want a crun error naming %r and %s\n%s" % (
                                 ran, st.returncode, needle, path, r))
        # handler_default opts in a pod without the annotation (CRI-O
        # pointing a handler at the fork); "disable" and no file leave it.
        with fixture.Container(self.crun, cpus=self.cpuset) as c:
            for label, path, want in (
                    ("handler-default-first", self.node_file({"handler_default": "first"}), c0),
                    ("handler-default-disable", self.node_file({"handler_default": "disable"}), both),
                    ("no-handler-default", empty, both),
                    # housekeeping_cpus alone pins nothing.
                    ("housekeeping-unpinned-exec-keeps-caller-cpus", hk, both)):
                self.case(prefix + label, lambda n, p=path, w=want: self.expect(
                    n, c.exec_process(self.probe_process(c), env=env(p)), w))

    # -- crun on the housekeeping CPUs from its first instructions
    def early_trace(self, c, argv, env, wrap=()):
        """strace of one exec: sched_setaffinity, the re-execution's
        execveat and the files opened, in order."""
        out = os.path.join(c._tmp, "early-trace.txt")
        r = fixture.run(list(wrap) + ["strace", "-f", "-qq", "-o", out, "-e",
                                      "trace=sched_setaffinity,execveat,openat"] + argv, env=env)
        with open(out) as f:
            trace = f.read()
        return r, trace

    def early_pin(self, prefix):
        """An exec that will certainly be pinned puts crun on the node
        config's housekeeping CPUs first thing in the image crun re-executes
        itself into, before it reads the container's state (which ran on an
        unpinned caller's CPUs before), and leaves the first image alone
        (narrowing that one cost 1.5-2 %); with crun's binary on a read-only
        filesystem there is no re-execution and the one image does it.  An
        exec that will not be pinned never calls sched_setaffinity; one whose
        decision sets no `initial` gives crun the caller's CPUs back before
        it forks."""
        if not shutil.which("strace"):
            self.r.skip(prefix + "*", "strace not installed")
            return
        c0, c1, both = str(self.c0), str(self.c1), self.both
        hk = self.node_file({"housekeeping_cpus": c0})
        env = dict(os.environ, EXECAFF_CONFIG=hk)
        early = re.compile(r"sched_setaffinity\(0, \d+, \[%d\]\) += 0" % self.c0)

        def before_reexec(trace, reexec=True):
            """One early narrowing: after the re-execution (none before
            it), before crun reads the container's state file."""
            lines = trace.splitlines()
            at = [i for i, l in enumerate(lines) if early.search(l)]
            reexecs = [i for i, l in enumerate(lines) if "execveat(" in l]
            state = [i for i, l in enumerate(lines) if "openat(" in l and '/status"' in l]
            return (len(at) == 1 and state and at[0] < state[0] and
                    (len(reexecs) == 1 and reexecs[0] < at[0] if reexec else not reexecs))

        with fixture.Container(self.crun, cpus=self.cpuset, annotations={ANNOTATION: "first"}) as pod:
            path = pod.write_process(self.probe_process(pod))
            # The forms CRI-O, conmon and podman use, and argp's others.
            for label, argv in (
                    ("crio-streaming", [self.crun, "--root", pod.root, "exec", "--process", path, pod.id]),
                    ("conmon", [self.crun, "--root=" + pod.root, "exec", "--pid-file",
                                os.path.join(pod._tmp, "early.pid"), "--process", path, "--detach", pod.id]),
                    ("short-options", [self.crun, "--root", pod.root, "exec", "-p", path, pod.id]),
                    ("process-equals", [self.crun, "--root", pod.root, "exec", "--process=" + path, pod.id]),
                    # argp's abbreviations and clusters, read by libexecaff's
                    # table as argp reads them (spec/runtime-options.md).
                    ("abbreviation", [self.crun, "--deb", "--root", pod.root, "exec", "--process", path,
                                      pod.id]),
                    ("cluster", [self.crun, "--root", pod.root, "exec", "-dp" + path, pod.id])):
                name = prefix + "before-reexec/" + label
                if not self.r.wanted(name):
                    continue
                r, trace = self.early_trace(pod, argv, env)
                ok = r.returncode == 0 and before_reexec(trace)
                if label not in ("conmon", "cluster"):  # --detach, -d: no output to wait for
                    ok = ok and shimlib.allowed_lists(r.stdout) == [c0, c0]
                self.r.check(name, ok, "want one sched_setaffinity(0, [%s]) after the re-execution, before "
                             "the state is read, exec'd process on %s\n%s\n%s" % (c0, c0, r, trace))
            # crun's binary on a read-only filesystem: crun does not copy
            # itself (cloned_binary.c), so its only image narrows itself.
            name = prefix + "read-only-binary"
            if self.r.wanted(name):
                if not shutil.which("unshare"):
                    self.r.skip(name, "unshare not installed (util-linux)")
                else:
                    ro = os.path.join(pod._tmp, "ro-bin")
                    os.makedirs(ro)
                    shutil.copy2(self.crun, os.path.join(ro, "crun"))
                    wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                            'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"', ro]
                    r, trace = self.early_trace(pod, [os.path.join(ro, "crun"), "--root", pod.root, "exec",
                                                      "--process", path, pod.id], env, wrap)
                    self.r.check(name, r.returncode == 0 and before_reexec(trace, reexec=False) and
                                 shimlib.allowed_lists(r.stdout) == [c0, c0], "want no execveat, one sched_setaffinity(0, [%s]) "
                                 "before the state is read\n%s\n%s" % (c0, r, trace))
            # A line crun refuses (--proc: --process or --process-label?):
            # no early pin, crun's own parser reports it, nothing runs.
            name = prefix + "ambiguous-refused-by-crun"
            if self.r.wanted(name):
                r, trace = self.early_trace(pod, [self.crun, "--root", pod.root, "exec", "--proc", path,
                                                  pod.id], env)
                self.r.check(name, r.returncode != 0 and not early.search(trace) and
                             "Cpus_allowed_list" not in r.stdout, "%s\n%s" % (r, trace))
            # Without housekeeping CPUs there is nothing to go to early.
            name = prefix + "no-housekeeping-no-early-pin"
            if self.r.wanted(name):
                r, trace = self.early_trace(pod, [self.crun, "--root", pod.root, "exec", "--process", path,
                                                  pod.id], dict(os.environ, EXECAFF_CONFIG=self.node_file({})))
                self.r.check(name, r.returncode == 0 and not early.search(trace),
                             "%s\n%s" % (r, trace))
        # Not pinned: crun is never narrowed, the result is stock crun's.
        for label, annotations, field in (("no-opt-in", None, None),
                                          ("annotation-disable", {ANNOTATION: "disable"}, None),
                                          ("empty-field", None, {"initial": "", "final": ""})):
            name = prefix + "untouched/" + label
            if not self.r.wanted(name):
                continue
            with fixture.Container(self.crun, cpus=self.cpuset, annotations=annotations) as c:
                path = c.write_process(self.probe_process(c, field))
                r, trace = self.early_trace(c, [self.crun, "--root", c.root, "exec", "--process", path, c.id],
                                            env)
                self.r.check(name, r.returncode == 0 and not affinity_calls(trace, self.base_resets) and
                             shimlib.allowed_lists(r.stdout) == [both, both], "want no sched_setaffinity, %s\n%s\n%s" % (
                                 both, r, trace))
        # `final` alone: early on the housekeeping CPUs, given back before
        # the fork, the grandchild on final.
        name = prefix + "final-only-gives-back"
        if self.r.wanted(name):
            with fixture.Container(self.crun, cpus=self.cpuset) as c:
                path = c.write_process(self.probe_process(c, {"final": c1}))
                r, trace = self.early_trace(c, [self.crun, "--root", c.root, "exec", "--process", path, c.id],
                                            env)
                sets = re.findall(r"sched_setaffinity\((\d+), \d+, \[([\d ]+?)\]\)\s+= 0", trace)
                got = [(pid == "0", shimlib.format_cpus(int(x) for x in cpus.split())) for pid, cpus in sets]
                self.r.check(name, r.returncode == 0 and before_reexec(trace) and shimlib.allowed_lists(r.stdout) == [c1, c1] and
                             got == [(True, c0), (False, both), (False, c1)],
                             "want early [%s], crun given back [%s], grandchild on [%s]; got %s\n%s\n%s" % (
                                 c0, both, c1, got, r, trace))

    # -- the node's choice: crun narrowed in its first image too
    def first_image_pin(self, prefix):
        """With "crun_first_image_pin": true in the node config an exec that
        will certainly be pinned narrows crun before its re-execution (the
        constructor of the first image), once: the re-executed image is
        handed the caller's CPUs (a `final`-only field gives them back) and
        does not narrow again.  false is today's placement, after the
        re-execution; an exec that does not opt in is never narrowed either
        way, and the variables that carry it never reach the exec'd process.
        (A value that is not a boolean: node-config/first-image-pin-not-boolean.)"""
        if not shutil.which("strace"):
            self.r.skip(prefix + "*", "strace not installed")
            return
        c0, c1, both = str(self.c0), str(self.c1), self.both
        on = dict(os.environ, EXECAFF_CONFIG=self.node_file(
            {"housekeeping_cpus": c0, "crun_first_image_pin": True}))
        off = dict(os.environ, EXECAFF_CONFIG=self.node_file(
            {"housekeeping_cpus": c0, "crun_first_image_pin": False}))
        sets_re = re.compile(r"sched_setaffinity\((\d+), \d+, \[([\d ]+?)\]\)\s+= 0")

        def placement(trace):
            """[(own?, cpus)] of every set in order (own: pid 0, the early
            narrowing), and how many came before the re-execution's execveat
            (None: no execveat)."""
            got, before, reexec = [], 0, None
            for line in trace.splitlines():
                if "execveat(" in line and reexec is None:
                    reexec = len(got)
                m = sets_re.search(line)
                if m:
                    got.append((m.group(1) == "0", shimlib.format_cpus(int(x) for x in m.group(2).split())))
            return got, reexec

        with fixture.Container(self.crun, cpus=self.cpuset, annotations={ANNOTATION: "first"}) as pod:
            path = pod.write_process(self.probe_process(pod))
            argv = [self.crun, "--root", pod.root, "exec", "--process", path, pod.id]
            # crun itself (0) on c0 before execveat, once; then the
            # decision's: crun on initial (c0 ∪ c0), the grandchild on
            # initial, then on final.
            for label, env, want_before in (("on-before-reexec", on, 1), ("off-after-reexec", off, 0),
                                            ("absent-after-reexec", None, 0)):
                name = prefix + label
                if not self.r.wanted(name):
                    continue
                env = env or dict(os.environ, EXECAFF_CONFIG=self.node_file({"housekeeping_cpus": c0}))
                r, trace = self.early_trace(pod, argv, env)
                got, reexec = placement(trace)
                own = [g for g in got if g[0]]
                self.r.check(name, r.returncode == 0 and shimlib.allowed_lists(r.stdout) == [c0, c0] and
                             reexec == want_before and own == [(True, c0)] and got[0] == own[0],
                             "want crun's own set [%s] %s the re-execution, once, first; got %s, execveat "
                             "after %s sets\n%s\n%s" % (c0, "before" if want_before else "after", got, reexec,
                                                        r, trace))
            # The env vars that carry it stop in crun.
            name = prefix + "env-not-leaked"
            if self.r.wanted(name):
                r = fixture.run([self.crun, "--root", pod.root, "exec", "--process",
                                 pod.write_process(pod.process_json(["env"])), pod.id], env=on)
                self.r.check(name, r.returncode == 0 and "PATH=" in r.stdout and "_EXECAFF" not in r.stdout,
                             r)
        # `final` alone: narrowed before the re-execution, the caller's CPUs
        # (carried across it) given back before the fork, the grandchild on
        # final.
        name = prefix + "final-only-gives-back"
        if self.r.wanted(name):
            with fixture.Container(self.crun, cpus=self.cpuset) as c:
                path = c.write_process(self.probe_process(c, {"final": c1}))
                r, trace = self.early_trace(c, [self.crun, "--root", c.root, "exec", "--process", path, c.id],
                                            on)
                got, reexec = placement(trace)
                self.r.check(name, r.returncode == 0 and shimlib.allowed_lists(r.stdout) == [c1, c1] and
                             reexec == 1 and got == [(True, c0), (False, both), (False, c1)],
                             "want [%s] before the re-execution, crun given back [%s], grandchild on [%s]; "
                             "got %s, execveat after %s sets\n%s\n%s" % (c0, both, c1, got, reexec, r, trace))
        # Not opted in: never narrowed, key or not.
        name = prefix + "untouched/no-opt-in"
        if self.r.wanted(name):
            with fixture.Container(self.crun, cpus=self.cpuset) as c:
                path = c.write_process(self.probe_process(c))
                r, trace = self.early_trace(c, [self.crun, "--root", c.root, "exec", "--process", path, c.id],
                                            on)
                self.r.check(name, r.returncode == 0 and not affinity_calls(trace, self.base_resets) and
                             shimlib.allowed_lists(r.stdout) == [both, both], "want no sched_setaffinity, %s\n%s\n%s" % (
                                 both, r, trace))

    # -- execaff-shim: native over the fork, emulated over stock
    def shim_paths(self, prefix):
        if not self.shim or not os.access(self.shim, os.X_OK):
            self.r.skip(prefix + "*", "execaff-shim not built (%s)" % self.shim)
            return
        if not self.stock:
            self.r.skip(prefix + "*", "no stock crun to compare with")
            return
        cases = (
            ("field-initial-final", {}, {"initial": str(self.c0), "final": str(self.c1)}, str(self.c1)),
            ("field-final", {}, {"final": str(self.c1)}, str(self.c1)),
            ("annotation-first", {ANNOTATION: "first"}, None, str(self.c0)),
        )
        env = dict(os.environ)
        env.pop("EXECAFF_CONFIG", None)
        empty = None
        if os.path.lexists("/etc/execaff/shim.json"):
            # Keep a host-wide shim config out of the comparison.
            empty = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            empty.write("{}")
            empty.close()
            env["EXECAFF_CONFIG"] = empty.name
        try:
            for label, annotations, field, want in cases:
                name = prefix + label
                if not self.r.wanted(name):
                    continue
                got = {}
                # Over stock crun 1.8.1 the shim emulates the field; stock
                # crun 1.21 applies it itself, so the shim takes its native
                # path over both (and gives the annotation's decision as a
                # process file), and the comparison is fork against stock.
                if crun_version(self.stock) >= (1, 19):
                    other = ("stock-native", self.stock, "native: %s applies the field itself")
                else:
                    other = ("emulated", self.stock, "emulated: trampoline")
                try:
                    for kind, rt, mark in (("native", self.crun, "native: %s applies the field itself"), other):
                        with fixture.Container(rt, cpus=self.cpuset, annotations=annotations) as c:
                            path = c.write_process(self.probe_process(c, field))
                            r = fixture.run([self.shim, "--debug", "--root", c.root, "exec",
                                             "--process", path, c.id],
                                            env=dict(env, EXECAFF_RUNTIME=rt))
                            mark = mark % rt if "%s" in mark else mark
                            self.r.check("%s/%s-path" % (name, kind), mark in r.stderr, r)
                            self.expect("%s/%s" % (name, kind), r, want)
                            got[kind] = shimlib.allowed_lists(r.stdout)
                    self.r.check(name + "/same-result", got["native"] == got[other[0]], got)
                except Exception as e:
                    self.r.error(name, e)
        finally:
            if empty:
                os.unlink(empty.name)

    # -- cgroup v2: CLONE_INTO_CGROUP unless initial is set
    def cgroup_v2(self, prefix):
        """Runs this script's --v2-inner mode in a private mount namespace
        whose /sys/fs/cgroup is the cgroup2 hierarchy (this host is hybrid,
        where crun 1.8.1 never uses CLONE_INTO_CGROUP).  The v1 cpuset
        hierarchy is mounted elsewhere in it, so that libexecaff still finds
        the container's cpuset through /proc/PID/cgroup."""
        names = [prefix + n for n in ("none", "initial", "final")]
        if not any(self.r.wanted(n) for n in names):
            return
        missing = [t for t in ("strace", "unshare") if not shutil.which(t)]
        if missing:
            for n in names:
                self.r.skip(n, "%s not installed" % " ".join(missing))
            return
        # The v1 cpuset mount point; the mount itself ends with the namespace.
        mnt = tempfile.mkdtemp(prefix="execaff-v1cpuset-")
        if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            setup = ""          # already pure cgroup v2
        else:
            setup = ('umount -R /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && '
                     'mount -t cgroup -o cpuset cgroup "$0" && ')
        try:
            r = fixture.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                             setup + 'exec "$@"', mnt, sys.executable, os.path.abspath(__file__),
                             "--v2-inner", "--crun", self.crun], timeout=120)
        finally:
            os.rmdir(mnt)
        try:
            results = json.loads(last_line(r.stdout))
        except ValueError:
            for n in names:
                self.r.check(n, False, r)
            return
        for n, (ok, detail) in zip(names, results):
            if self.r.wanted(n):
                self.r.check(n, ok, detail)


def check_order(trace, initial, final):
    """(ok, why) for an `strace -f -y` of one exec: initial on crun itself,
    then on the grandchild G, then G's cgroup.procs writes (if crun moves it), then final, then
    the parent's release write "\\0\\0\\0\\0" on a socket, then G's execve.  final None: the
    decision leaves final to the kernel's join, so G gets initial only."""
    lines = trace.splitlines()
    sets = [(i, m.group(1), m.group(2)) for i, l in enumerate(lines)
            for m in [re.search(r"sched_setaffinity\((\d+), \d+, \[([\d ]+)\]\)\s+= 0", l)] if m]
    as_list = lambda s: shimlib.format_cpus(int(x) for x in s.split())
    # First crun puts itself on initial (config.md: where the runtime's
    # parent runs before the move), before it forks anything.
    first_pid = lines[0].split()[0] if lines else ""
    if not sets or sets[0][1] != first_pid or as_list(sets[0][2]) != initial:
        return False, "want crun (pid %s) on initial %s first, got %s" % (first_pid, initial, sets)
    sets = sets[1:]
    if len(sets) != (1 if final is None else 2) or sets[0][1] != sets[-1][1]:
        return False, "want %s on one pid, got %s" % (
            "initial only" if final is None else "initial then final", sets)
    g = sets[0][1]
    if [as_list(x[2]) for x in sets] != [initial] + ([] if final is None else [final]):
        return False, "want initial %s then final %s, got %s" % (initial, final, sets)
    initial_at, final_at = sets[0][0], sets[-1][0] if final is not None else None
    moves = [i for i, l in enumerate(lines) if re.search(r'cgroup\.procs>, "%s"' % g, l)]
    release = [i for i, l in enumerate(lines) if re.search(r'write\(\d+<socket:\[\d+\]>, "\\0\\0\\0\\0", 4\)', l)]
    execve = [i for i, l in enumerate(lines) if l.startswith(g + " ") and "execve(" in l]
    if not release or not execve:
        return False, "no release write or no execve of %s" % g
    if moves and not (initial_at < min(moves) and (final_at is None or max(moves) < final_at)):
        return False, "initial/moves/final out of order: %s %s %s" % (initial_at, moves, final_at)
    last = final_at if final_at is not None else max([initial_at] + moves)
    if not (last < release[0] < execve[0]):
        return False, "final/release/execve out of order: %s %s %s" % (last, release, execve)
    return True, "%d cgroup.procs writes between initial and final" % len(moves)


def normalize_strace(text, replace):
    pids, out = {}, []
    for line in text.splitlines():
        m = re.match(r"(\d+)\s+(.*)", line)
        if not m or m.group(2).startswith(("---", "+++")):
            continue
        pid, rest = m.groups()
        pids.setdefault(pid, "P%d" % len(pids))
        for k, v in sorted(replace.items(), key=lambda kv: -len(kv[0])):
            rest = rest.replace(k, v)
        rest = re.sub(r"0x[0-9a-f]+", "ADDR", rest)
        rest = re.sub(r"/tmp/crun\.\w+", "TMPDIR", rest)
        # A number written as text (a pid into cgroup.procs): its length
        # follows the pid counter, which crossed 999 -> 1000 between the
        # stock and the patched run of one CI job ("123", 3 against "1234",
        # 4, which the next rule took for raw bytes).
        rest = re.sub(r'write\((\d+), "\d+", \d+\)', r"write(\1, DIGITS)", rest)
        # A pid or status written as 4 raw bytes; strace escapes a quote
        # among them ("\"\25\0\0" for pid 5410).
        rest = re.sub(r'write\((\d+), "(?:[^"\\]|\\.)*", 4\)', r"write(\1, INT, 4)", rest)
        rest = re.sub(r"\b\d{3,}\b", "NUM", rest)
        rest = re.sub(r"= \d+$", "= N", rest)
        rest = re.sub(r"\s+", " ", rest)
        out.append(pids[pid] + " " + rest)
    return out


def v2_inner(crun):
    """In the private mount namespace: three execs under strace.  Prints a
    JSON list of [ok, detail] for none, initial, final."""
    allowed = sorted(os.sched_getaffinity(0))
    c1 = str(allowed[1])
    results = []
    c = fixture.Container(crun, start=False, prepare=False)
    try:
        # No resources: on cgroup v2 crun's device filter is an eBPF
        # program, which this sandbox does not let crun load.
        c.bundle.config["linux"].pop("resources", None)
        c.bundle.write_config()
        c.create()
        c.start()
        ctr_cgroup = None
        everything = shimlib.format_cpus(allowed)
        # initial only: final is left to the kernel's join (decision table
        # R22), which keeps cpuset & initial since 6.2.
        for field, want_into, want_cpus in ((None, True, everything),
                                            ({"initial": c1}, False,
                                             c1 if fixture.kernel_keeps_requested_mask() else everything),
                                            ({"final": c1}, True, c1)):
            p = c.process_json(["sh", "-c", "grep Cpus_allowed_list /proc/self/status; "
                                "grep '^0::' /proc/self/cgroup"])
            if field:
                p["execCPUAffinity"] = field
            path = c.write_process(p)
            trace = os.path.join(c._tmp, "strace.txt")
            r = fixture.run(["strace", "-f", "-qq", "-y", "-o", trace, "-e",
                             "trace=clone3,sched_setaffinity,write,execve",
                             crun, "--root", c.root, "exec", "--process", path, c.id])
            with open(trace) as f:
                t = f.read()
            clone3 = [l for l in t.splitlines() if "clone3(" in l]
            into = bool(clone3) and all("CLONE_INTO_CGROUP" in l for l in clone3)
            setaff = bool(affinity_calls(t, crun_version(crun) > (1, 8, 1)))
            cgroup = re.search(r"^0::(\S+)", r.stdout, re.M)
            cpus = re.search(r"Cpus_allowed_list:\s*(\S+)", r.stdout)
            if ctr_cgroup is None:
                with open("/proc/%d/cgroup" % c.pid) as f:
                    ctr_cgroup = re.search(r"^0::(\S+)", f.read(), re.M).group(1)
            order_ok, why = (True, "")
            if field and "initial" in field:
                order_ok, why = check_order(t, c1, None)
            ok = (r.returncode == 0 and bool(clone3) and into == want_into and order_ok
                  and setaff == (field is not None)
                  and cgroup is not None and cgroup.group(1) == ctr_cgroup
                  and (want_cpus is None or (cpus and cpus.group(1) == want_cpus)))
            results.append([ok, "want CLONE_INTO_CGROUP=%s, cpus %s, cgroup %s; %s\n%s\n%s" % (
                want_into, want_cpus, ctr_cgroup, why, r, t)])
    except Exception as e:
        results += [[False, "v2 setup failed: %s" % e]] * (3 - len(results))
    finally:
        c.cleanup()
    print(json.dumps(results))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--crun", default=os.environ.get("EXECAFF_CRUN", WORK + "/patched/crun"))
    ap.add_argument("--stock", default=os.environ.get("EXECAFF_STOCK_CRUN", WORK + "/stock/crun"))
    ap.add_argument("--shim", default=os.environ.get("EXECAFF_SHIM", WORK + "/libbuild-fork/shim/execaff-shim"))
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--v2-inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()

    fixture.require_root()
    fixture.require_busybox()
    if len(os.sched_getaffinity(0)) < 2:
        fixture.skip("needs 2 CPUs")
    if not os.access(a.crun, os.X_OK):
        print("no patched crun at %s (build-crun.sh --patched)" % a.crun, file=sys.stderr)
        return 2
    if a.v2_inner:
        return v2_inner(a.crun)
    if a.stock and not os.access(a.stock, os.X_OK):
        print("note: no stock crun at %s; comparisons are skipped" % a.stock, file=sys.stderr)
        a.stock = None
    if not fixture.prepare_host():
        print("prepare-host.sh failed", file=sys.stderr)
        return 1

    report = shimlib.Checks(only=a.only)
    # The fork reads the node config on every exec: keep the host's
    # /etc/execaff/shim.json (other tests write one) out of these cases.
    isolation = tempfile.mkdtemp(prefix="execaff-node-")
    fd = os.open(os.path.join(isolation, "shim.json"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"{}")
    os.close(fd)
    os.environ["EXECAFF_CONFIG"] = os.path.join(isolation, "shim.json")
    t = Cases(report, a.crun, a.stock, a.shim)
    print("# crun %s, stock %s, shim %s; container cpuset %s, kernel %s" % (
        a.crun, a.stock, a.shim, t.cpuset, os.uname().release), flush=True)
    t.case("build", t.build_marks)
    t.case("libs", t.libraries)
    t.untouched("untouched/")
    t.process_field("process/")
    t.config_field("config/")
    t.annotation("annotation/")
    t.node_config("node-config/")
    t.early_pin("early/")
    t.first_image_pin("first-image/")
    t.shim_paths("shim/")
    t.cgroup_v2("cgroup-v2/")
    for d in t.node_dirs + [isolation]:
        shutil.rmtree(d, ignore_errors=True)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
