#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""OCI runtime-tools' validation suite, bare and through execaff-shim.

Every validation program of runtime-tools (built by build-runtime-tools.sh)
but execaff's own process.execCPUAffinity ones (run_exec_affinity.py's) runs against each runtime named on the command line twice: with RUNTIME set
to the runtime itself (bare), and with RUNTIME set to execaff-shim and
EXECAFF_RUNTIME to the runtime (the shim as a drop-in runtime binary, as a
CRI handler would call it).  The programs never call `exec`, the only
command the shim does not hand to the runtime untouched, so through execaff
every program must give what the bare runtime gives:

  the same TAP results — the multiset of (ok / not ok, directive,
  description), with the errors the programs report as diagnostics and
  the results of runtimetest (run in the container) they embed — and the
  same exit status.

Test numbers are not compared: the programs walk Go maps, so the same
assertions come out in another order from one run to the next.  A program
whose results differ is run again, bare and through the shim, up to
ATTEMPTS times in all; it is a mismatch only when no bare run and no shim
run agree (the difference reproduced every time), and a flake otherwise,
reported with the assertions that moved.  The totals count, per program,
the agreed result (the first run's when there is none).

The not-ok results are the runtimes' own on the host (see the README's
conformance section); only a difference between the two columns fails.

Usage: run_conformance.py [--tools DIR] [--markdown] [--programs NAME,...]
                          [RUNTIME ...]

  RUNTIME    a name from tests/runtimes.txt (default: every one there), or
             a runc or crun binary.  A runtime that is not installed is
             reported, saying why, and left out; when none is left the run
             is skipped (77).
  --tools    the built suite (default $EXECAFF_RTOOLS_DIR, else the cache
             build-runtime-tools.sh --print-cached names); skipped (77),
             saying how to build it, when there is none.
  --markdown after the totals, a markdown table (the README's).
  --programs only these programs (for a quick look; a full run is the test).

Environment: EXECAFF_SHIM (the shim under test, default build/shim/execaff-shim).
Exit codes: 0 every program equal, 1 a mismatch or an error, 77 skipped.
Needs root (the programs create real containers in the runtimes' default
roots; run one at a time: several use the same fixed cgroup paths).
"""

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import fixture  # noqa: E402
import shimlib  # noqa: E402

BUILD_SCRIPT = os.path.join(HERE, "build-runtime-tools.sh")
# Runs of a program whose bare and shim results differ, each side, the first
# included.  Some programs are flaky on the bare runtimes themselves (seen
# here: pidfile fails 6 of 15 runs on runc 1.1.5 and 14 of 15 on crun
# 1.8.1; killsig 1 of 15 on runc, 4 of 11 on crun; crun's hook programs
# now and then report "signal: broken pipe"; process_rlimits now and then
# fails to start its container, seccomp ENOMEM under its 1 GiB
# RLIMIT_AS, issue 17).  A flake that fails with probability p comes out as a
# mismatch only when every bare run gives one result and every shim run
# the other: 2 (p(1-p))^N for N runs each, for pidfile on runc (p = 0.4)
# 2.8 % with 3 runs, 0.002 % with 8.  A real difference costs 8 runs each.
ATTEMPTS = 8
# Once a runtime has a confirmed mismatch it fails anyway: later programs
# that differ get this many runs each, so that a shim that breaks every
# program fails in minutes, not in hours.
ATTEMPTS_AFTER_MISMATCH = 3
# The programs contrib/runtime-tools/exec-cpu-affinity.patch adds: left to
# run_exec_affinity.py.
EXEC_AFFINITY_PREFIX = "process_exec_cpu_affinity"
PROGRAM_TIMEOUT = 300    # seconds; the slowest program takes about 15 here


# ------------------------------------------------------------------- TAP

_TAP_LINE = re.compile(
    r"^(not ok|ok)\b[ \t]*(?:\d+)?[ \t]*(?:-[ \t]*)?(?:#[ \t]*(SKIP|TODO)\b[ \t]*)?(.*)$",
    re.IGNORECASE)


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Go's os.MkdirTemp and the programs' own random names: a word and a random
# decimal number ("/target2979017745/mount2671970736").
_RANDOM_SUFFIX = re.compile(r"(?<=[A-Za-z])[0-9]{4,}")


def normalise_description(text, tmpdir):
    """A description without what changes from run to run: the run's
    TMPDIR, container ids, random suffixes of temporary names."""
    if tmpdir:
        text = text.replace(tmpdir, "$TMPDIR")
    return _RANDOM_SUFFIX.sub("<n>", _UUID.sub("<id>", text))


def parse_tap(text, prefix="", tmpdir=None):
    """The results of a TAP stream: a Counter of (verdict, directive,
    description).  runtime-tools also reports through YAML diagnostics
    (JSON between "  ---" and "  ..."), and those count too:
    * a block that follows no assertion (but the header or another block)
      and carries "error" is a failure
      the program reports without an assertion (the hook programs do):
      ("error", "", its first line);
    * a block whose "stdout" is a TAP stream — runtimetest's own, run in
      the container — adds that stream's results, as ("inner ok", ...)."""
    results = collections.Counter()
    lines = text.splitlines()
    i, after_assertion = 0, False
    while i < len(lines):
        line = lines[i]
        m = _TAP_LINE.match(line)
        if m:
            results[(prefix + m.group(1).lower(), (m.group(2) or "").upper(),
                     normalise_description(m.group(3).rstrip(), tmpdir))] += 1
            after_assertion = True
        elif line.startswith(" ") and line.strip() == "---":
            end = i + 1
            while end < len(lines) and lines[end].strip() != "...":
                end += 1
            try:
                block = json.loads("\n".join(lines[i + 1:end]))
            except ValueError:
                block = None
            if isinstance(block, dict):
                inner = block.get("stdout")
                if isinstance(inner, str) and inner.startswith("TAP version"):
                    results += parse_tap(inner, prefix + "inner ", tmpdir)
                error = block.get("error")
                if not after_assertion and isinstance(error, str):
                    first = error.splitlines()[0] if error else ""
                    results[(prefix + "error", "", normalise_description(first, tmpdir))] += 1
            after_assertion = False
            i = end
        elif line.startswith("TAP version"):
            after_assertion = False
        # Other lines (a description's "Refer to: ..." continuation, a
        # "# comment", the plan) leave the block's attachment as it was.
        i += 1
    return results


class Outcome:
    """One run of one program: its exit status and its TAP results."""

    def __init__(self, status, results, stderr=""):
        self.status = status              # exit code, or "timeout"
        self.results = results            # Counter of (ok|not ok, directive, description)
        self.stderr = stderr

    @classmethod
    def from_run(cls, status, stdout, stderr, tmpdir):
        return cls(status, parse_tap(stdout, tmpdir=tmpdir), stderr)

    def count(self, verdict):
        return sum(n for (v, _, _), n in self.results.items() if v == verdict)

    @property
    def ok(self):
        return self.count("ok")

    @property
    def not_ok(self):
        return self.count("not ok")

    def key(self):
        """What must be equal through execaff: not the test numbers."""
        return (self.status, frozenset(self.results.items()))

    def brief(self):
        errors = self.count("error")
        return "%d ok / %d not ok%s%s" % (
            self.ok, self.not_ok, ", %d errors reported" % errors if errors else "",
            "" if self.status == 0 else ", exit %s" % self.status)


def describe_difference(a, b, a_name, b_name, limit=8):
    """The assertions (and exit status) that differ between two outcomes."""
    lines = []
    if a.status != b.status:
        lines.append("exit status: %s %s, %s %s" % (a_name, a.status, b_name, b.status))
    for name, only in ((a_name, a.results - b.results), (b_name, b.results - a.results)):
        for (verdict, directive, desc), n in sorted(only.items()):
            lines.append("only %s: %s%s - %s%s" % (
                name, verdict, " # " + directive if directive else "", desc,
                " (x%d)" % n if n > 1 else ""))
    if len(lines) > limit:
        lines = lines[:limit] + ["... %d more" % (len(lines) - limit)]
    return lines


# --------------------------------------------------------------- running

def leaked_mounts(top):
    """Mount points under top, deepest first."""
    prefix = top.rstrip("/") + "/"
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")
            if point.startswith(prefix):
                points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))


def unmount_under(top):
    """Detach what a program left mounted in its bundles.  runtime-tools'
    rootfs-propagation programs make the container's mounts shared, so they
    come back to the host's namespace; removing the bundle would otherwise
    walk into the container's /proc and /sys.  Returns how many."""
    points = leaked_mounts(top)
    for p in points:
        subprocess.run(["umount", "-l", p], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    left = leaked_mounts(top)
    if left:
        raise RuntimeError("cannot unmount %s" % ", ".join(left))
    return len(points)


# The parents of runtime-tools' relative cgroup path (RelCgroupPath,
# "testdir/cgrouptest/container"), deepest first: the runtimes remove the
# container's own cgroup and leave these, empty, in every hierarchy.
CGROUP_PARENTS = ("testdir/cgrouptest", "testdir")


def cgroup_parents_present():
    """The CGROUP_PARENTS directories that exist now, in every hierarchy."""
    roots = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            fstype = fields[fields.index("-") + 1]
            if fstype in ("cgroup", "cgroup2"):
                roots.add(fields[4])
    return [os.path.join(root, rel) for rel in CGROUP_PARENTS for root in sorted(roots)
            if os.path.isdir(os.path.join(root, rel))]


def containers_under(runtime, top):
    """Ids of the runtime's containers (in its default root, where the
    programs create them) whose bundle is under top."""
    r = subprocess.run([runtime, "list", "--format", "json"], capture_output=True,
                       text=True, timeout=60, check=False)
    try:
        listed = json.loads(r.stdout or "null") or []
    except ValueError:
        raise RuntimeError("%s list --format json: not JSON: %r" % (runtime, r.stdout[:200]))
    return [c["id"] for c in listed if c.get("bundle", "").startswith(top.rstrip("/") + "/")]


class Runner:
    """Runs one program at a time, each in its own session and TMPDIR,
    and removes what it left: processes, containers, mounts, files."""

    def __init__(self, tools, shim, workdir):
        self.tools, self.shim, self.workdir = tools, shim, workdir
        self.leaked = collections.Counter()     # (program, what) -> how many removed
        self.serial = 0
        self.current = None                     # (Popen, runtime) while a program runs
        self.runtimes = set()
        self.cgroups_before = set(cgroup_parents_present())
        # Registered after the workdir, so run before its removal (newest
        # first), also on SIGTERM: nothing is removed through a mount.
        fixture._register(self)

    def cleanup(self):
        fixture._unregister(self)
        if self.current:
            self._kill_group(self.current[0])
        for runtime in self.runtimes:
            self._delete_containers(runtime, self.workdir)
        unmount_under(self.workdir)
        for path in cgroup_parents_present():       # deepest first
            if path not in self.cgroups_before:
                try:
                    os.rmdir(path)
                except OSError as exc:
                    print("note: cannot remove %s: %s" % (path, exc.strerror), flush=True)

    @staticmethod
    def _kill_group(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    @staticmethod
    def _delete_containers(runtime, top):
        ids = containers_under(runtime, top)
        for cid in ids:
            subprocess.run([runtime, "delete", "--force", cid], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60, check=False)
        left = containers_under(runtime, top)
        if left:
            raise RuntimeError("%s delete --force %s did not delete them" % (runtime, " ".join(left)))
        return len(ids)

    def run(self, program, runtime, through_shim):
        """One run of one program; its bundles under a fresh TMPDIR."""
        self.serial += 1
        self.runtimes.add(runtime)
        tmp = os.path.join(self.workdir, "%s-%d" % (program, self.serial))
        os.mkdir(tmp, 0o755)
        if through_shim:
            env = shimlib.shim_env(runtime=runtime, RUNTIME=self.shim, TMPDIR=tmp)
        else:
            env = shimlib.shim_env(RUNTIME=runtime, TMPDIR=tmp)
        argv = [os.path.join(self.tools, "validation", program, program + ".t")]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            # Files, not pipes: a container or a hook that inherits them
            # must not keep the run open.  A session of its own, so that
            # whatever the program leaves running can be killed with it.
            proc = subprocess.Popen(argv, cwd=self.tools, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
            self.current = (proc, runtime)
            try:
                status = proc.wait(timeout=PROGRAM_TIMEOUT)
            except subprocess.TimeoutExpired:
                status = "timeout"
            self._kill_group(proc)
            self.current = None
            out.seek(0)
            err.seek(0)
            outcome = Outcome.from_run(status, out.read().decode(errors="replace"),
                                       err.read().decode(errors="replace"), tmp)
        # The runtimes' own leftovers (crun's hook programs leave stopped
        # containers when a hook fails), the same bare and through the shim.
        self.leaked[(program, "containers")] += self._delete_containers(runtime, tmp)
        self.leaked[(program, "mounts")] += unmount_under(tmp)
        subprocess.run(["rm", "-rf", "--one-file-system", tmp], check=True)
        return outcome


class ProgramResult:
    def __init__(self, program, bare, shim, agreed, attempts, seconds):
        self.program, self.seconds = program, seconds
        self.bare, self.shim = bare, shim          # lists of Outcome, one per attempt
        self.agreed = agreed                       # the common Outcome, or None
        self.attempts = attempts

    @property
    def equal(self):
        return self.agreed is not None

    @property
    def flaky(self):
        return self.attempts > 1


def compare_program(runner, program, runtime, attempts):
    """Bare, then through the shim; again for both while no run of one
    agrees with a run of the other, up to `attempts` runs each."""
    bare, shim = [], []
    start = time.monotonic()
    for attempt in range(1, attempts + 1):
        bare.append(runner.run(program, runtime, through_shim=False))
        shim.append(runner.run(program, runtime, through_shim=True))
        shim_keys = {o.key(): o for o in shim}
        for b in bare:
            if b.key() in shim_keys:
                return ProgramResult(program, bare, shim, b, attempt,
                                     time.monotonic() - start)
    return ProgramResult(program, bare, shim, None, attempts, time.monotonic() - start)


def runtime_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except OSError:
        return "?"
    m = re.search(r"^(\S+) version (\S+)", out, re.MULTILINE)
    return "%s %s" % (m.group(1), m.group(2)) if m else (out.splitlines() or ["?"])[0]


# ------------------------------------------------------------- reporting

class RuntimeReport:
    def __init__(self, name, path, version, results, seconds):
        self.name, self.path, self.version = name, path, version
        self.results, self.seconds = results, seconds

    def totals(self, side):
        """(ok, not ok) over the programs: the agreed outcome where there is one."""
        ok = not_ok = 0
        for r in self.results:
            o = r.agreed or (r.bare if side == "bare" else r.shim)[0]
            ok += o.ok
            not_ok += o.not_ok
        return ok, not_ok

    @property
    def mismatches(self):
        return [r for r in self.results if not r.equal]

    @property
    def flakes(self):
        return [r for r in self.results if r.equal and r.flaky]


def print_program(r, width):
    if r.equal and not r.flaky:
        print("  ok      %-*s %s, the same through execaff (%.1f s)" % (
            width, r.program, r.agreed.brief(), r.seconds), flush=True)
        return
    label = "flake" if r.equal else "NOT OK"
    print("  %-7s %-*s %d runs each (%.1f s):" % (label, width, r.program, r.attempts, r.seconds))
    for i, (b, s) in enumerate(zip(r.bare, r.shim), 1):
        print("            run %d: bare %s, shim %s" % (i, b.brief(), s.brief()))
    for line in describe_difference(r.bare[0], r.shim[0], "bare", "shim"):
        print("            first run, %s" % line)
    if r.equal:
        print("            agreed on: %s" % r.agreed.brief())
    else:
        for name, o in (("bare", r.bare[0]), ("shim", r.shim[0])):
            tail = o.stderr.strip().splitlines()[-3:]
            if tail:
                print("            %s stderr: %s" % (name, " | ".join(tail)))
    sys.stdout.flush()


def run_runtime(runner, programs, name, path):
    version = runtime_version(path)
    print("== %s: %s (%s), bare and through %s" % (name, version, path, runner.shim), flush=True)
    width = max(len(p) for p in programs)
    start = time.monotonic()
    results = []
    for program in programs:
        confirmed = any(not r.equal for r in results)
        r = compare_program(runner, program, path,
                            ATTEMPTS_AFTER_MISMATCH if confirmed else ATTEMPTS)
        print_program(r, width)
        results.append(r)
    report = RuntimeReport(name, path, version, results, time.monotonic() - start)
    (bok, bnok), (sok, snok) = report.totals("bare"), report.totals("shim")
    print("%s: bare %d ok / %d not ok, through execaff %d ok / %d not ok; "
          "%d of %d programs equal, %d mismatched, flaky: %s (%.0f s)" % (
              name, bok, bnok, sok, snok, len(results) - len(report.mismatches),
              len(results), len(report.mismatches),
              ", ".join(r.program for r in report.flakes) or "none", report.seconds),
          flush=True)
    return report


def markdown(reports):
    lines = ["| runtime | ok bare | ok through execaff-shim | not ok (bare / shim) | equal? |",
             "|---|---|---|---|---|"]
    for rep in reports:
        (bok, bnok), (sok, snok) = rep.totals("bare"), rep.totals("shim")
        if rep.mismatches:
            verdict = "**no**: %s" % ", ".join(r.program for r in rep.mismatches)
        else:
            verdict = "yes, all %d programs" % len(rep.results)
        if rep.flakes:
            verdict += " (flaky, rerun: %s)" % ", ".join(r.program for r in rep.flakes)
        lines.append("| %s (`%s`) | %d | %d | %s | %s |" % (
            rep.version, rep.name, bok, sok,
            str(bnok) if bnok == snok else "%d / %d" % (bnok, snok), verdict))
    return "\n".join(lines)


# ------------------------------------------------------------------ main

def tools_dir(arg):
    d = arg or os.environ.get("EXECAFF_RTOOLS_DIR")
    if not d:
        r = subprocess.run([BUILD_SCRIPT, "--print-cached"], capture_output=True, text=True)
        if r.returncode != 0:
            fixture.skip("runtime-tools is not built: EXECAFF_RTOOLS_DIR is unset and there is %s "
                         "(tests/run-all.sh runs it and sets EXECAFF_RTOOLS_DIR)"
                         % r.stderr.strip().removeprefix("build-runtime-tools: "))
        d = r.stdout.strip()
    listing = os.path.join(d, "programs.txt")
    try:
        with open(listing) as f:
            programs = [ln.strip() for ln in f if ln.strip()]
    except OSError as exc:
        sys.exit("run_conformance: %s is not a runtime-tools build (%s: %s); "
                 "build one with %s" % (d, listing, exc.strerror, BUILD_SCRIPT))
    missing = [p for p in ["runtimetest"] + ["validation/%s/%s.t" % (n, n) for n in programs]
               if not os.access(os.path.join(d, p), os.X_OK)]
    if not programs or missing:
        sys.exit("run_conformance: %s is incomplete: %s" % (
            d, "no programs listed" if not programs else "missing " + ", ".join(missing[:5])))
    return os.path.abspath(d), programs


def main():
    ap = argparse.ArgumentParser(
        description="runtime-tools' validation programs, bare and through execaff-shim")
    ap.add_argument("runtimes", nargs="*", metavar="RUNTIME",
                    help="names from tests/runtimes.txt (default: all of them)")
    ap.add_argument("--tools", help="the built suite (default $EXECAFF_RTOOLS_DIR)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table too")
    ap.add_argument("--programs", help="comma-separated program names (default: all)")
    args = ap.parse_args()

    fixture.require_root()
    tools, programs = tools_dir(args.tools)
    # execaff's own programs (contrib/runtime-tools) exec with the field:
    # through execaff they must differ from a runtime that ignores it.
    # run_exec_affinity.py runs them.
    programs = [p for p in programs if not p.startswith(EXEC_AFFINITY_PREFIX)]
    if args.programs:
        asked = [p for p in args.programs.split(",") if p]
        unknown = [p for p in asked if p not in programs]
        if unknown:
            sys.exit("run_conformance: no such program in %s: %s" % (tools, ", ".join(unknown)))
        programs = asked
    shim = shimlib.shim_path()
    if not fixture.prepare_host():
        sys.exit("run_conformance: prepare-host.sh failed")

    # Missing ones are reported, saying why; none at all skips (77).
    found = shimlib.runtimes([sys.argv[0]] + (args.runtimes or shimlib.runtime_list.names()))

    with open(os.path.join(tools, "SOURCE")) as f:
        source = " ".join(f.read().split())
    print("runtime-tools: %s (%s); %d programs, each bare and through execaff-shim, "
          "rerun up to %d times when they differ" % (tools, source, len(programs), ATTEMPTS),
          flush=True)
    work = shimlib.workdir("execaff-conformance-")
    # mkdtemp's 0700 would keep a user-namespaced container's root (a host
    # uid other than 0) out of its own bundle: linux_uid_mappings and
    # linux_ns_nopath fail then, on the bare runtime too.
    os.chmod(work, 0o755)
    runner = Runner(tools, shim, work)
    reports = [run_runtime(runner, programs, name, path) for name, path in found]

    print()
    for (program, what), n in sorted(runner.leaked.items()):
        if n:
            print("note: %s left %d %s behind, removed (bare and through the shim, "
                  "all runs)" % (program, n, what))
    if args.markdown:
        print(markdown(reports))
    bad = [rep.name for rep in reports if rep.mismatches]
    print("%s: %s" % ("FAIL" if bad else "PASS",
                      "results differ through execaff over " + ", ".join(bad) if bad else
                      "every program gave the bare runtime's results through execaff"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
