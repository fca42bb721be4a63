#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Issue 17 §3, "The whole chain, placed": proof cells whose exec starts at
the CRI call (README.md, "The CRI cells").

A live CRI-O 1.34.11 (tests/clients/build-crio.sh; criolib.Crio, with
everything of its own under a temp dir) runs two handlers:
contrib/crio/99-execaff.conf as written (high-performance: execaff-shim
over Debian's runc) and the bare runc.  Placed as a node would be:

* crio runs on the housekeeping CPU H = 0 from its first instruction,
  every thread of it, as systemd's CPUAffinity= in crio.service puts it
  there (the driver sets its own affinity before it starts crio and
  restores it after; the install file that does it on a node:
  contrib/kubernetes/install-node.sh);
* infra_ctr_cpuset = "0" in the private CRI-O config (a drop-in of this
  test, PLACEMENT below): CRI-O then starts conmon, and every other
  command, under `taskset --cpu-list 0`; conmon's children inherit it;
* /etc/execaff/shim.json: {"runtime": runc, "housekeeping_cpus": "0"}
  (shimlib.DefaultConfig: under its flock, restored).

A second CRI-O without either (no affinity set, no infra_ctr_cpuset) runs
the unplaced cells beside them.

One Guaranteed pod per cell (cpuset 0-1, 2 whole CPUs, the annotation
exec-cpu-affinity.execaff.io=first on both; the bare handler ignores it),
CPU 1 busy (the harness's busy loop: the pod's busy-poll thread) and
treated as isolated.  Each cell is execaff-schedtrace run --daemon-pid
<crio> over cri-exec-sync.py, which sends ExecSync(true) as kubelet sends
a probe: the trace follows every thread of crio, and every process crio
forks during the call is judged from its fork (taskset, conmon, the shim,
runc, runc init, the program).

Usage: crio-cells.py [--execs N] [--out DIR] [--only CELL,...] [--keep-traces]
Exit: 0 every cell met its expectation and nothing was left behind, 1 not,
77 skipped (not root, no CRI-O build, no conmon/podman/grpc, no runc, the
harness cannot trace here, fewer than 2 CPUs).
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients"))
import crilib  # noqa: E402
import criolib  # noqa: E402
from crilib import fixture, shimlib  # noqa: E402
from test_crio_live import GUARANTEED, HANDLER, dropin_text, with_crio  # noqa: E402

HOUSEKEEPING = {0}
CPUSET, BUSY, FINAL = "0-1", "1", "0"
BARE = "runc"
# After 99-execaff.conf, so that it wins should that file ever set the key.
PLACEMENT_DROPIN = "99-proof-placement.conf"
# infra_ctr_cpuset, and conmon_cgroup "" in place of criolib's "pod": with
# "pod", CRI-O 1.34.11 also gives conmon's cgroup (crio-conmon-ID) the
# infra_ctr_cpuset, and on cgroupfs over cgroup v1 it writes that cgroup's
# cpuset.cpus before it creates it: CreateContainer fails ("openat2
# .../cpuset/POD/crio-conmon-ID/cpuset.cpus: no such file or directory",
# internal/oci/oci_linux.go + cgmgr/cgroupfs_linux.go applyWorkloadSettings:
# Set before Apply).  With "" conmon stays in crio's cgroup; where it runs
# is the taskset's, as CRI-O starts it either way.
PLACEMENT = '[crio.runtime]\ninfra_ctr_cpuset = "%s"\nconmon_cgroup = ""\n'
ALLOWED = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status"]

# expect: by kernel generation, as in cells.txt (from 6.2 on the cgroup join
# keeps cpuset & the task's mask; before it, the whole cpuset).
CELLS = [
    # Through the drop-in: the shim sets initial = H u F = 0 on itself and
    # final = 0 after the join (the trampoline).  Clean on every kernel.
    {"name": "crio-shim", "handler": HANDLER, "placed": True,
     "expect": {"old": "clean", "new": "clean"}},
    # The bare runc under the same placement: every task inherits H = 0
    # from crio and taskset, and from 6.2 on the join keeps cpuset & 0 =
    # 0, so nothing can reach CPU 1: clean (measured: README.md).  Before
    # 6.2 the join hands runc init and the program the whole cpuset 0-1;
    # whether they then run on the busy CPU is the scheduler's choice, and
    # no pre-6.2 host has run it (CRI-O does not fit the test VM): any.
    {"name": "crio-runc", "handler": BARE, "placed": True,
     "expect": {"old": "any", "new": "clean"}},
    # Neither crio nor conmon placed (no CPUAffinity=, no infra_ctr_cpuset),
    # the CRI client still on H.  Bare: crio's child, conmon, runc and runc
    # init run on both CPUs, the busy one too: the harness must see it
    # through crio (this is the cell that proves it can fail here).
    {"name": "crio-runc-unplaced", "handler": BARE, "placed": False,
     "expect": {"old": "violations", "new": "violations"}},
    # Through the shim, unplaced: everything from the shim's first
    # instruction on is execaff's and placed, but crio's child and conmon
    # run before it, wherever crio runs: how often that is the busy CPU is
    # the scheduler's choice (any).  The caller's phase is the caller's to
    # place (issue 17 §4; execaff audit reports it).
    {"name": "crio-shim-unplaced", "handler": HANDLER, "placed": False,
     "expect": {"old": "any", "new": "any"}},
]


def harness_path():
    path = os.environ.get("EXECAFF_SCHEDTRACE") or os.path.normpath(
        os.path.join(shimlib.BUILD_DIR, "tests", "proof", "execaff-schedtrace"))
    if not os.access(path, os.X_OK):
        fixture.skip("execaff-schedtrace not built (%s); run ninja -C build or set "
                     "EXECAFF_SCHEDTRACE" % path)
    r = subprocess.run([path, "check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        fixture.skip("cannot trace here: %s" % r.stdout.strip())
    return path


class Harness:
    """The execaff-schedtrace run of one cell, ended with the driver (it
    stops its busy loops itself on SIGTERM)."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        fixture._register(self)

    def output(self):
        """(exit code, whole output); prints it but the per-exec lines."""
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            if " run " not in line:
                print(line, end="", flush=True)
        self.proc.wait()
        fixture._unregister(self)
        return self.proc.returncode, "".join(lines)

    def cleanup(self):
        fixture._unregister(self)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_crio(crio, pinns, runc, shim, placed):
    """criolib.Crio with the drop-in and the bare handler; placed: on H from
    its first instruction (as CPUAffinity= places a unit), infra_ctr_cpuset
    H."""
    root = criolib.DIR_TOKEN + "/" + BARE
    dropins = {"99-execaff.conf": dropin_text(shim, root)}
    mine = os.sched_getaffinity(0)
    if placed:
        dropins[PLACEMENT_DROPIN] = PLACEMENT % shimlib.format_cpus(HOUSEKEEPING)
        os.sched_setaffinity(0, HOUSEKEEPING)
    try:
        return criolib.Crio(crio, pinns, {BARE: {"runtime_path": runc, "runtime_root": root}},
                            BARE, dropins=dropins, roots={root: runc})
    finally:
        os.sched_setaffinity(0, mine)


def thread_affinities(pid):
    """{Cpus_allowed_list of each thread of pid}."""
    out = set()
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                out.update(shimlib.allowed_lists(f.read()))
        except OSError:
            pass                                # a thread that just ended
    return out


def container_cgroup(cri, cid):
    """The container's cpuset cgroup as /proc/PID/cgroup names it (the
    unified one on cgroup v2), from its init's pid."""
    pid = cri.container_info(cid).get("info", {}).get("pid")
    if not pid:
        raise RuntimeError("ContainerStatus(verbose) of %s names no pid" % cid)
    with open("/proc/%d/cgroup" % pid) as f:
        lines = f.read().splitlines()
    for prefix in [ln for ln in lines if ":cpuset:" in ln] + [ln for ln in lines
                                                              if ln.startswith("0::")]:
        return prefix.split(":", 2)[2]
    raise RuntimeError("/proc/%d/cgroup has no cpuset line" % pid)


# execaff-schedtrace run's exit codes.
VERDICTS = {0: "PASS", 1: "FAIL (expectation not met)",
            3: "INVALID (failed execs, lost events, or no join or program exec seen)"}


def run_cells(chk, daemon, cri, args, harness, cells, placed):
    h = shimlib.format_cpus(HOUSEKEEPING)
    crio_pid = daemon.proc.pid
    everywhere = shimlib.format_cpus(os.sched_getaffinity(0))
    chk.eq("crio %s: every thread on %s" % (
        "placed as CPUAffinity=%s would" % h if placed else "unplaced", h if placed else everywhere),
        thread_affinities(crio_pid), {h if placed else everywhere})
    keeps = fixture.kernel_keeps_requested_mask()
    gen = "new" if keeps else "old"
    for cell in cells:
        sid, cid = cri.run_pod(cell["handler"], {shimlib.ANNOTATION: "first"}, cpuset=CPUSET,
                               cpu_shares=GUARANTEED)
        cgroup = container_cgroup(cri, cid)
        # Where the exec'd process ends, outside the trace: the shim's final;
        # the bare runtime's is the kernel's (6.2+: cpuset & the caller's 0).
        want = FINAL if cell["handler"] == HANDLER or (keeps and placed) else CPUSET
        r = cri.exec_sync(cid, ALLOWED)
        chk.eq("%s: ExecSync lands on %s (%s)" % (cell["name"], want, cell["handler"]),
               (r[0], shimlib.allowed_lists(r[1])), (0, [want]), r)
        out = args.out
        argv = [harness, "run", "--label", cell["name"], "--container-cgroup", cgroup,
                "--cpuset", CPUSET, "--initial", h, "--final", FINAL, "--isolated", BUSY,
                "--busy", BUSY, "--caller-cpus", h, "--program", "true",
                "--daemon-pid", str(crio_pid), "--execs", str(args.execs),
                "--expect", cell["expect"][gen], "--progress", "--settle-ms", "100",
                "--timeout", "120", "--summary", os.path.join(out, "summary.tsv"),
                "--json", os.path.join(out, "json", cell["name"] + ".json"),
                "--csv", os.path.join(out, "csv", cell["name"] + ".csv"), "--csv-runs", "20"]
        if args.keep_traces:
            argv += ["--keep-traces", os.path.join(out, "traces")]
        argv += ["--", sys.executable, os.path.join(HERE, "cri-exec-sync.py"), daemon.address,
                 cid, "true"]
        print("== %s: %d ExecSync(true) through handler %s, container cgroup %s" % (
            cell["name"], args.execs, cell["handler"], cgroup), flush=True)
        rc, text = Harness(argv).output()
        with open(os.path.join(out, cell["name"] + ".out"), "w") as f:
            f.write(text)
        chk.check("cell %s: %s" % (cell["name"], VERDICTS.get(rc, "the harness failed (%d)" % rc)),
                  rc == 0, text if rc not in VERDICTS else "")
        cri.remove_pod(sid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--execs", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--only")
    ap.add_argument("--keep-traces", action="store_true")
    args = ap.parse_args()
    shimlib.common_setup(min_cpus=2)
    crilib.require_grpc()
    if not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("needs CPUs 0 and 1")
    harness = harness_path()
    crio, pinns, version = criolib.find_crio()
    runc = fixture.require_runtime(BARE)
    shim = shimlib.shim_path()
    cells = [c for c in CELLS if not args.only or c["name"] in args.only.split(",")]
    if not cells:
        print("crio-cells: --only %s names no cell (%s)" % (
            args.only, ", ".join(c["name"] for c in CELLS)), file=sys.stderr)
        return 2
    args.out = os.path.abspath(args.out or tempfile.mkdtemp(prefix="execaff-proof-crio."))
    for sub in ("json", "csv"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    summary = os.path.join(args.out, "summary.tsv")
    if os.path.exists(summary):
        os.unlink(summary)
    print("# %s; %s; output in %s" % (version, runc, args.out), flush=True)
    chk = shimlib.Checks()
    cfg = shimlib.DefaultConfig()
    try:
        cfg.write({"runtime": runc, "housekeeping_cpus": shimlib.format_cpus(HOUSEKEEPING)})
        for placed in (True, False):
            group = [c for c in cells if c["placed"] == placed]
            if group:
                with_crio(chk, "crio %s: " % ("placed" if placed else "unplaced"),
                          lambda: start_crio(crio, pinns, runc, shim, placed),
                          lambda daemon, cri: run_cells(chk, daemon, cri, args, harness, group,
                                                        placed))
    finally:
        cfg.cleanup()
    if os.path.exists(summary):
        print(subprocess.run([harness, "table", summary], stdout=subprocess.PIPE,
                             text=True).stdout, flush=True)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
