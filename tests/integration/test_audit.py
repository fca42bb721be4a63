#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`execaff audit` against live containers (runc, crun).

Per runtime, two busybox containers with cpuset "0-1" and the annotation
`first` (final "0"), each under a state root of its own:

* escaped: a process exec'd through the shim (pinned to 0) that the test
  then re-pins to CPU 1 with sched_setaffinity, and a process exec'd by the
  bare runtime (never pinned: "0-1") — both must be reported as
  escaped_exec, and nothing else (the container's own init runs on 0-1 by
  right: it is not an exec);
* clean: a process exec'd through the shim, left alone — audit must see it
  (one exec'd process) and report nothing, exit 0; beside it, under the
  same root, a container that does not opt in, with a process exec'd by the
  bare runtime: not held to any final, so still nothing.  That one has
  cpu shares 512, and audit reports its CPU weight from the cgroup the
  kernel names for the cpu controller (v1 cpu.shares, found through
  mountinfo: 512; v2 cpu.weight, the runtime's conversion).

Also: --prometheus writes the gauges atomically (no temp file left), the
counts per container are right, and the exit status is 1 with findings.

The callers (caller_on_exclusive_cpu): a container pinned to the last CPU
X (exclusive: no other audited container holds it), and real processes
named as the callers — copies of sleep named crio, conmon, containerd,
containerd-shim-runc-v2 (comm "containerd-shim") and kubelet, plus one
named sleeper — each given an affinity with sched_setaffinity.  crio on
{H, X}, the shim on {X} and conmon on every CPU must be reported, each
with the affinity the kernel gives it and its own fix (CRI-O's
infra_ctr_cpuset, containerd's CPUAffinity= for its shim, CRI-O's for
conmon); containerd and kubelet on {H} and the sleeper on {H, X} must not.
crio moved to {H} is no longer reported; with housekeeping_cpus H in the
node config each fix names H.
Real-time threads (exec_may_hang): a pod whose init is a SCHED_FIFO
busy-poll thread on CPU 1 is flagged while its execs are not pinned and
clean with handler_default "first", where an exec through the shim lands
on CPU 0 and returns (check_realtime says how).
Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_audit.py [runtime ...]   (default: runc crun)
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402


def exec_pid(container, marker, timeout=10):
    """The host pid of the exec'd `sleep MARKER` in the container."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()]:
                return int(name)
        time.sleep(0.05)
    raise RuntimeError("exec'd sleep %s never appeared in %s" % (marker, container.id))


def background_exec(argv, env):
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kernel_cpu_weight(pid, shares):
    """What audit must report for a container given cpu `shares`: on a v1
    cpu hierarchy the shares themselves; on v2 the cpu.weight the runtime
    wrote (its own conversion), beside the cgroup of /proc/PID/cgroup's
    "0::" line under the usual v2 mount."""
    with open("/proc/%d/cgroup" % pid) as f:
        lines = [line.split(":", 2) for line in f.read().splitlines()]
    if any("cpu" in controllers.split(",") for _, controllers, _ in lines):
        return shares
    path = next(p for hierarchy, _, p in lines if hierarchy == "0")
    with open("/sys/fs/cgroup%s/cpu.weight" % path.rstrip("/")) as f:
        return int(f.read())


def audit(cli, roots, config, *extra):
    argv = [cli, "audit", "--config", config]
    for r in roots:
        argv += ["--root", r]
    return fixture.run(argv + list(extra))


def run_for(name, path, cli, shim, checks, work):
    config = shimlib.write_config(os.path.join(work, "node.json"), {})
    env = shimlib.shim_env(runtime=path)
    children = []
    annotations = {ANNOTATION: "first"}
    with fixture.Container(path, cpus="0-1", annotations=annotations) as escaped, \
            fixture.Container(path, cpus="0-1", annotations=annotations) as clean, \
            fixture.Container(path, cpus="0-1", root=clean.root, start=False) as plain:
        plain.bundle.config["linux"]["resources"]["cpu"]["shares"] = 512
        plain.bundle.write_config()
        plain.create()
        plain.start()
        try:
            tag = str(os.getpid())
            # Through the shim, then re-pinned by hand: "a task someone re-pinned".
            children.append(background_exec(
                [shim, "--root", escaped.root, "exec", escaped.id, "sleep", "7" + tag], env))
            repinned = exec_pid(escaped, "7" + tag)
            checks.eq("%s shim pinned the exec" % name, os.sched_getaffinity(repinned), {0})
            os.sched_setaffinity(repinned, {1})
            # The bare runtime: "an exec that escaped".
            children.append(background_exec(
                [path, "--root", escaped.root, "exec", escaped.id, "sleep", "8" + tag], None))
            unpinned = exec_pid(escaped, "8" + tag)
            # The clean pod: pinned through the shim and left alone.
            children.append(background_exec(
                [shim, "--root", clean.root, "exec", clean.id, "sleep", "9" + tag], env))
            pinned = exec_pid(clean, "9" + tag)
            checks.eq("%s clean exec on final" % name, os.sched_getaffinity(pinned), {0})
            children.append(background_exec(
                [path, "--root", plain.root, "exec", plain.id, "sleep", "6" + tag], None))
            exec_pid(plain, "6" + tag)

            r = audit(cli, [clean.root], config, "--json")
            checks.eq("%s clean pod: exit 0" % name, r.returncode, 0, r)
            doc = json.loads(r.stdout) if r.stdout else {}
            checks.eq("%s clean pod: no findings" % name, doc.get("findings"), [], r.stdout)
            got = sorted((c["id"], c["opted_in"], c["final"], c["exec_processes"])
                         for c in doc.get("containers", []))
            checks.eq("%s clean pod: its exec was seen" % name, got,
                      sorted([(clean.id, True, "0", 1), (plain.id, False, None, 1)]), r.stdout)
            weights = {c["id"]: c["cpu_weight"] for c in doc.get("containers", [])}
            checks.eq("%s cpu weight of the pod with cpu shares 512" % name,
                      weights.get(plain.id), kernel_cpu_weight(plain.pid, 512), r.stdout)

            prom = os.path.join(work, "execaff.prom")
            r = audit(cli, [escaped.root, clean.root], config, "--json", "--prometheus", prom)
            checks.eq("%s escaped: exit 1" % name, r.returncode, 1, r)
            doc = json.loads(r.stdout) if r.stdout else {}
            found = sorted((f["kind"], f["container"], f["pid"], f["affinity"])
                           for f in doc.get("findings", []))
            want = sorted([("escaped_exec", escaped.id, repinned, "1"),
                           ("escaped_exec", escaped.id, unpinned, "0-1")])
            checks.eq("%s escaped: both escapes reported, nothing else" % name, found, want,
                      r.stdout)
            with open(prom) as f:
                text = f.read()
            for cid, n in ((escaped.id, 2), (clean.id, 0), (plain.id, 0)):
                sample = 'execaff_audit_escaped_exec{container="%s",root="%s"} %d' % (
                    cid, escaped.root if cid == escaped.id else clean.root, n)
                checks.contains("%s prometheus %s=%d" % (name, cid[-6:], n), text, sample)
            checks.eq("%s prometheus: no temp file left" % name,
                      sorted(os.listdir(work)), ["execaff.prom", "node.json"])

            r = audit(cli, [escaped.root], config)
            checks.contains("%s table names the re-pinned pid" % name, r.stdout,
                            "%d/%d" % (repinned, repinned), r)
        finally:
            for child in children:
                child.kill()
                child.wait()


CALLERS = ("crio", "conmon", "containerd", "containerd-shim-runc-v2", "kubelet", "sleeper")


def caller_findings(doc, pids):
    """{comm: (affinity, expected, fix)} of the caller findings about `pids`."""
    return {f["comm"]: (f["affinity"], f["expected"], f["fix"])
            for f in doc.get("findings", [])
            if f["kind"] == "caller_on_exclusive_cpu" and f["pid"] in pids}


def check_callers(name, path, cli, checks, work):
    """A container on CPU X and processes named as the callers around it."""
    allowed = sorted(os.sched_getaffinity(0))
    h, x = allowed[0], allowed[-1]
    with open("/sys/devices/system/cpu/online") as f:
        shared = shimlib.parse_cpus(f.read()) - {x}
    bindir = os.path.join(work, "callers")
    os.mkdir(bindir)
    procs = {}
    with fixture.Container(path, cpus=str(x)) as pinned:
        try:
            for comm in CALLERS:
                exe = os.path.join(bindir, comm)
                shutil.copy("/bin/sleep", exe)
                procs[comm] = background_exec([exe, "300"], None)
            cpus = {"crio": {h, x}, "conmon": set(allowed), "containerd": {h},
                    "containerd-shim-runc-v2": {x}, "kubelet": {h}, "sleeper": {h, x}}
            for comm, p in procs.items():
                os.sched_setaffinity(p.pid, cpus[comm])
            pids = {p.pid for p in procs.values()}
            config = shimlib.write_config(os.path.join(work, "callers.json"), {})
            r = audit(cli, [pinned.root], config, "--json")
            doc = json.loads(r.stdout) if r.stdout else {}
            checks.eq("%s callers: exit 1" % name, r.returncode, 1, r)
            exclusive = {c["id"]: c["exclusive"] for c in doc.get("containers", [])}
            checks.eq("%s callers: the container on CPU %d holds it exclusively" % (name, x),
                      exclusive, {pinned.id: str(x)}, r.stdout)
            got = caller_findings(doc, pids)
            fmt = shimlib.format_cpus
            checks.eq("%s callers: crio, conmon and the shim reported, with their CPUs" % name,
                      {c: a for c, (a, _, _) in got.items()},
                      {"crio": fmt({h, x}), "conmon": fmt(allowed), "containerd-shim": str(x)},
                      r.stdout)
            checks.eq("%s callers: expected is every online CPU but %d" % (name, x),
                      sorted({e for _, e, _ in got.values()}), [fmt(shared)], r.stdout)
            fixes = {c: fix or "" for c, (_, _, fix) in got.items()}
            want = {"crio": 'infra_ctr_cpuset = "%s" in [crio.runtime]' % fmt(shared),
                    "conmon": "fix its parent: conmon runs where CRI-O starts it: "
                              'infra_ctr_cpuset = "%s"' % fmt(shared),
                    "containerd-shim": "fix its parent: a shim inherits containerd's CPUs: "
                                       "CPUAffinity=%s in [Service] of a containerd.service "
                                       "drop-in" % fmt(shared)}
            for comm, text in want.items():
                checks.contains("%s callers: %s's fix" % (name, comm), fixes.get(comm, ""), text,
                                r.stdout)

            os.sched_setaffinity(procs["crio"].pid, {h})
            config = shimlib.write_config(os.path.join(work, "callers-h.json"),
                                          {"housekeeping_cpus": str(h)})
            r = audit(cli, [pinned.root], config, "--json")
            doc = json.loads(r.stdout) if r.stdout else {}
            got = caller_findings(doc, pids)
            checks.eq("%s callers: crio moved to %d is no longer reported" % (name, h),
                      sorted(got), ["conmon", "containerd-shim"], r.stdout)
            checks.check("%s callers: with housekeeping_cpus %d every fix names it" % (name, h),
                         bool(got) and all(
                             e == str(h) and ("CPUAffinity=%d " % h in fix or
                                              'infra_ctr_cpuset = "%d"' % h in fix)
                             for _, e, fix in got.values()), r.stdout)
            r = audit(cli, [pinned.root], config)
            checks.contains("%s callers: the table gives the fix" % name, r.stdout,
                            "(fix: fix its parent: a shim inherits containerd's CPUs", r)
        finally:
            for p in procs.values():
                p.kill()
                p.wait()


def rt_group_sched():
    """Whether the host schedules real-time tasks per cgroup (v1
    CONFIG_RT_GROUP_SCHED): a container then needs cpu.rt_runtime_us."""
    return any(os.path.exists("/sys/fs/cgroup/%s/cpu.rt_runtime_us" % d)
               for d in ("cpu", "cpu,cpuacct", "cpuacct,cpu"))


def fifo_threads(pid):
    """{tid: (policy, ticks)} of PID's threads, from task/TID/stat."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[41 - 3]), int(fields[14 - 3]) + int(fields[15 - 3]))
    return out


def check_realtime(name, path, cli, shim, checks, work):
    """exec_may_hang on a live pod: cpuset 0-1, its init a SCHED_FIFO 50
    busy-poll thread on CPU 1 (execaff-fifo-poll, CAP_SYS_NICE, as a DPDK
    app starts its lcores).  Not opted in: flagged.  With the node config's
    handler_default "first" (final 0): clean, and an exec through the shim
    lands on 0 and returns.  RT throttling stays at the host's default, and
    the poller stops by itself after 60 s."""
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        print("SKIP %s realtime: needs CPUs 0 and 1" % name)
        return
    poller = os.environ["EXECAFF_FIFO_POLL"]

    def edit(config):
        config["process"]["args"] = ["/bin/execaff-fifo-poll", "--priority", "50",
                                     "--seconds", "60", "1"]
        caps = config["process"].setdefault("capabilities", {})
        for kind in ("bounding", "effective", "permitted"):
            caps.setdefault(kind, [])
            if "CAP_SYS_NICE" not in caps[kind]:
                caps[kind].append("CAP_SYS_NICE")
        if rt_group_sched():
            cpu = config["linux"].setdefault("resources", {}).setdefault("cpu", {})
            cpu["realtimeRuntime"] = 900000
            cpu["realtimePeriod"] = 1000000

    with fixture.Container(path, cpus="0-1", start=False, edit_config=edit) as c:
        shutil.copy2(poller, os.path.join(c.bundle.rootfs, "bin", "execaff-fifo-poll"))
        # A cgroup removed a moment ago (the previous runtime's pod) still
        # counts against the root's RT budget until the kernel frees it.
        for attempt in range(10):
            try:
                c.create()
                break
            except RuntimeError as e:
                if "rt_runtime" not in str(e) or attempt == 9:
                    raise
                c.rt("delete", "--force", c.id)
                time.sleep(1)
        c.start()
        deadline = time.time() + 10
        busy = None
        while time.time() < deadline and busy is None:
            time.sleep(0.5)
            for tid, (policy, ticks) in fifo_threads(c.pid).items():
                if policy == 1 and tid != c.pid and ticks >= 50:
                    busy = tid
        if busy is None:
            checks.check("%s realtime: a busy SCHED_FIFO thread in %d" % (name, c.pid), False,
                         c.read_init_log())
            return
        checks.eq("%s realtime: the poller runs on CPU 1" % name,
                  os.sched_getaffinity(busy), {1})

        bare = shimlib.write_config(os.path.join(work, "rt-none.json"), {})
        r = audit(cli, [c.root], bare, "--json")
        checks.eq("%s realtime: not opted in: exit 1" % name, r.returncode, 1, r)
        doc = json.loads(r.stdout) if r.stdout else {}
        found = [(f["kind"], f["container"], f["tid"], f["affinity"])
                 for f in doc.get("findings", [])]
        checks.eq("%s realtime: not opted in: exec_may_hang, nothing else" % name, found,
                  [("exec_may_hang", c.id, busy, "1")], r.stdout)
        threads = [(t["tid"], t["policy"], t["priority"], t["busy"], t["in_container"])
                   for cc in doc.get("containers", []) for t in cc["realtime_threads"]
                   if t["tid"] == busy]
        checks.eq("%s realtime: the poller listed" % name, threads,
                  [(busy, "SCHED_FIFO", 50, True, True)], r.stdout)
        checks.eq("%s realtime: throttling as the host has it" % name,
                  doc.get("rt_throttling", {}).get("off"),
                  open("/proc/sys/kernel/sched_rt_runtime_us").read().strip() == "-1", r.stdout)
        r = audit(cli, [c.root], bare)
        checks.contains("%s realtime: the table names the fix" % name, r.stdout,
                        "exec-cpu-affinity.execaff.io: first", r)

        first = shimlib.write_config(os.path.join(work, "rt-first.json"),
                                     {"handler_default": "first"})
        r = audit(cli, [c.root], first, "--json")
        checks.eq("%s realtime: handler_default first: clean, exit 0" % name,
                  r.returncode, 0, r)
        start = time.monotonic()
        r = fixture.run([shim, "--root", c.root, "exec", c.id, "grep", "Cpus_allowed_list",
                         "/proc/self/status"],
                        env=shimlib.shim_env(runtime=path, config=first), timeout=30)
        took = time.monotonic() - start
        checks.eq("%s realtime: exec through the shim returns on CPU 0 (%.2f s)" % (name, took),
                  (r.returncode, r.stdout.split()[-1:] if r.stdout else []), (0, ["0"]), r)


def run_for_with_callers(name, path, cli, shim, checks, work):
    run_for(name, path, cli, shim, checks, work)
    check_callers(name, path, cli, checks, work)
    check_realtime(name, path, cli, shim, checks, work)


def main():
    return shimlib.run_per_runtime(run_for_with_callers, "execaff-audit-")


if __name__ == "__main__":
    sys.exit(main())
