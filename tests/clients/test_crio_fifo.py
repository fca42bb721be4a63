#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Exec probes into SCHED_FIFO busy-poll pods through a live CRI-O 1.34.11,
bare and through execaff-shim (issue 25 §4, "through the real client").

Each pod is what a DPDK pod looks like to the node: cpuset 0-1, whole
CPUs (cpu_shares 2048), its container's process execaff-fifo-poll
(tests/fifo/fifo_poll.c, bind-mounted read-only from the build) with
CAP_SYS_NICE, one SCHED_FIFO 50 thread busy-polling CPU 1 without a system
call; CPU 0, the pod's first, is left to housekeeping.  P pods (default 3)
run on the bare runtime's handler, P on contrib/crio/99-execaff.conf's
`high-performance` (execaff-shim over the same runtime); every pod has the
annotation exec-cpu-affinity.execaff.io=first, which the bare handler
ignores (EXECAFF_FIFO_HOW=handler_default: no annotation, and the shim's
node config says handler_default "first" instead).

RT budget: kernel.sched_rt_runtime_us stays at its default (checked, never
written): RT throttling leaves other tasks part of CPU 1 every second, so
this 2-CPU machine stays usable.  With RT group scheduling (cgroup v1,
CONFIG_RT_GROUP_SCHED) a task can be SCHED_FIFO only in a cgroup with
cpu.rt_runtime_us > 0, and new cgroups get 0.  The CRI has no field for
it and CRI-O 1.34.11 writes none (no realtime anywhere in its source
outside vendor/), so the test gives it as a node agent would: the pod's
cgroup (made before RunPodSandbox, where kubelet makes it) and the
container's (between CreateContainer and StartContainer) get an equal
share of 900000 µs per 1 s period (less when other cgroups at the top
already hold part of the root's budget).  Together the pollers take at
most 90 % of CPU 1.

Probes, all at once, for EXECAFF_FIFO_SECONDS (default 45):
* ExecSync at probe cadence: one worker per pod, every 1 s (a probe that
  takes longer delays the next, as kubelet's prober does), timeout
  EXECAFF_FIFO_TIMEOUT seconds (default 2), the gRPC deadline 10 s past it;
* the streaming Exec (kubectl exec): one worker per handler, every 2 s,
  round-robin over its pods; one that has not returned in 10 s is hung.
The probe reports the exec'd process's Cpus_allowed_list and the CPU its
child last ran on.

Per handler the test prints probes, timeouts (conmon's "command timed out"
plus calls past their deadline), p50/p99/max latency and the CPUs the
execs ran on.  It asserts: through the shim, 0 timeouts, 0 hung, 0
errors, every exec and its child on CPU 0; bare, only sanity (each probe
returned on 0-1 or timed out: no other error); the pollers were SCHED_FIFO
on CPU 1 and used their budget throughout (otherwise nothing was
measured).  Latencies are printed, not judged.  Everything is ended as
test_crio_live.py ends it (pods, CRI-O, cgroups, the temp dir: checked);
the pollers stop by themselves after --seconds in any case.

Usage: test_crio_fifo.py [runtime ...]   (default: runc crun; meson runs runc;
crun 1.8.1 refuses CRI-O 1.34's config, so its probes are skipped, saying so)
Env: EXECAFF_FIFO_POLL (the poller; default build/tests/fifo/), EXECAFF_FIFO_PODS,
EXECAFF_FIFO_SECONDS, EXECAFF_FIFO_TIMEOUT, EXECAFF_FIFO_HOW (runs by hand).
Exit codes: 0 pass, 1 fail, 77 skip (as test_crio_live.py, and: the poller
not built statically, RT throttling off, no RT budget left at the top).
"""

import collections
import os
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402
import criolib  # noqa: E402
import test_crio_live as live  # noqa: E402
from crilib import fixture, shimlib  # noqa: E402

HANDLER = live.HANDLER
POLL_IN_POD = "/execaff-fifo-poll"
BUSY_CPU = 1
PROBE = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status; cut -d' ' -f39 /proc/self/stat"]
PERIOD = 1.0          # s between one pod's probes (kubelet's periodSeconds)
STREAM_PERIOD = 2.0   # s between one handler's streaming execs
HUNG = 10.0           # s: an exec not returned by then is hung (issue 25)
RT_TOTAL = 900000     # µs per period the pollers get together
RT_PERIOD = 1000000


def env_int(name, default, low):
    text = os.environ.get(name, "")
    try:
        value = int(text) if text else default
    except ValueError:
        value = low - 1
    if value < low:
        raise SystemExit("%s=%r: not a whole number >= %d" % (name, text, low))
    return value


def poller_path():
    """The poller, checked to be a static ELF (it runs in a busybox pod)."""
    path = os.environ.get("EXECAFF_FIFO_POLL") or os.path.join(
        shimlib.BUILD_DIR, "tests", "fifo", "execaff-fifo-poll")
    try:
        with open(path, "rb") as f:
            elf = f.read(1 << 16)
    except OSError as e:
        fixture.skip("no poller at %s (ninja -C build tests/fifo/execaff-fifo-poll): %s" % (
            path, e))
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    types = [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]
    if elf[:4] != b"\x7fELF" or 3 in types:           # PT_INTERP: dynamically linked
        fixture.skip("%s is not a static executable (a sanitized build links it "
                     "dynamically): it cannot run in the busybox pod" % path)
    return path


# ------------------------------------------------------------ RT budget

def rt_root():
    """The cpu controller's top dir when RT group scheduling is on, else None."""
    for d in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        p = os.path.join("/sys/fs/cgroup", d)
        if os.path.exists(os.path.join(p, "cpu.rt_runtime_us")):
            return p
    return None


def read_int(path):
    with open(path) as f:
        return int(f.read())


def rt_share(root, pods):
    """Each pod's cpu.rt_runtime_us: an equal share of RT_TOTAL, or of what
    the root's children leave of its budget."""
    held = sum(read_int(os.path.join(root, d, "cpu.rt_runtime_us"))
               for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    free = read_int(os.path.join(root, "cpu.rt_runtime_us")) - held
    share = min(RT_TOTAL, free) // pods
    if share < 50000:
        fixture.skip("%s: %d µs of the root's RT budget are held by other cgroups, %d left "
                     "for %d pods" % (root, held, free, pods))
    return share


def write_rt(path, share):
    with open(os.path.join(path, "cpu.rt_runtime_us"), "w") as f:
        f.write(str(share))


# ------------------------------------------------------------- the pods

def fifo_threads(pid):
    """{tid: (policy, priority, utime+stime ticks, affinity)} of pid's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            affinity = os.sched_getaffinity(int(tid))
        except OSError:
            continue
        # stat fields 14, 15 (utime, stime), 40 (rt_priority), 41 (policy)
        out[int(tid)] = (int(fields[41 - 3]), int(fields[40 - 3]),
                         int(fields[14 - 3]) + int(fields[15 - 3]), affinity)
    return out


def poller_ticks(pid):
    """Ticks of pid's SCHED_FIFO 50 threads on BUSY_CPU alone; None without one."""
    busy = [t for pol, prio, t, aff in fifo_threads(pid).values()
            if pol == 1 and prio == 50 and aff == {BUSY_CPU}]
    return sum(busy) if busy else None


def start_pods(cri, handler_names, count, poller, seconds, root, share, annotations):
    """count pods per handler, each polling BUSY_CPU; {handler: [(sid, cid, pid)]}."""
    args = [POLL_IN_POD, "--priority", "50", "--seconds", str(seconds), str(BUSY_CPU)]

    def parent_budget(parent):
        if root:
            os.makedirs(os.path.join(root, parent.lstrip("/")))
            write_rt(os.path.join(root, parent.lstrip("/")), share)

    def container_budget(sid, cid):
        if root:
            path = live.spec_of(cri, cid)["linux"]["cgroupsPath"]
            write_rt(os.path.join(root, path.lstrip("/")), share)

    pods = {}
    for h in handler_names:
        pods[h] = []
        for _ in range(count):
            sid, cid = cri.run_pod(h, annotations, args=args,
                                   cpu_shares=live.GUARANTEED, add_capabilities=["SYS_NICE"],
                                   mounts=[(poller, POLL_IN_POD)],
                                   before_sandbox=parent_budget, before_start=container_budget)
            pods[h].append((sid, cid, int(cri.container_info(cid)["info"]["pid"])))
    return pods


def wait_polling(pods, timeout=20):
    """{pid: ticks} once every pod's poller is SCHED_FIFO on BUSY_CPU; raises
    naming the pods that are not."""
    deadline = time.monotonic() + timeout
    while True:
        ticks = {pid: poller_ticks(pid) for h in pods for _, _, pid in pods[h]}
        if all(t is not None for t in ticks.values()):
            return ticks
        if time.monotonic() > deadline:
            raise RuntimeError("no SCHED_FIFO 50 poller on CPU %d after %d s in pods %s" % (
                BUSY_CPU, timeout, sorted(p for p, t in ticks.items() if t is None)))
        time.sleep(0.2)


# ----------------------------------------------------------- the probes

Result = collections.namedtuple("Result", "how latency verdict allowed ran detail")


# what a call past its deadline gives: gRPC's code, a socket's timeout
DEADLINE = ("DEADLINE_EXCEEDED", "TimeoutError")


def classify(r, latency, limit):
    """(verdict, allowed list, CPU ran on) of one exec's result: timeout
    (conmon's, or no answer within `limit`), error, or ok."""
    if r == live.TIMED_OUT or latency >= limit or (r[0] == "error" and r[1] in DEADLINE):
        return "timeout", None, None
    lines = r[1].split("\n") if isinstance(r[1], str) else []
    allowed = shimlib.allowed_lists(r[1]) if r[0] == 0 else []
    if len(allowed) != 1 or len(lines) < 2:
        return "error", None, None
    return "ok", allowed[0], lines[1].strip()


def probe_worker(cri, cid, start, end, timeout, out):
    """ExecSync every PERIOD from start until end, as kubelet's prober."""
    due = start
    while due < end:
        time.sleep(max(0.0, due - time.monotonic()))
        t0 = time.monotonic()
        r = cri.exec_sync(cid, PROBE, timeout=timeout)
        latency = time.monotonic() - t0
        out.append(Result("ExecSync", latency, *classify(r, latency, timeout + 10), r))
        now = time.monotonic()
        while due <= now:
            due += PERIOD


def stream_worker(cri, cids, start, end, out):
    """A streaming Exec every STREAM_PERIOD, round-robin over cids."""
    due, k = start, 0
    while due < end:
        time.sleep(max(0.0, due - time.monotonic()))
        t0 = time.monotonic()
        try:
            r = cri.stream_exec(cids[k % len(cids)], PROBE)
        except Exception as e:          # a socket timeout: nothing for HUNG s
            r = ("error", type(e).__name__, str(e))
        latency = time.monotonic() - t0
        out.append(Result("Exec", latency, *classify(r, latency, HUNG), r))
        k += 1
        now = time.monotonic()
        while due <= now:
            due += STREAM_PERIOD


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list."""
    v = sorted(values)
    return v[max(0, min(len(v) - 1, int(-(-q * len(v) // 100)) - 1))]


def summary(results):
    lat = [r.latency for r in results]
    timeouts = sum(r.verdict == "timeout" for r in results)
    errors = sum(r.verdict == "error" for r in results)
    cpus = collections.Counter("%s/%s" % (r.allowed, r.ran) for r in results if r.verdict == "ok")
    if not lat:
        return "no probes"
    return ("%d probes, %d timeouts, %d errors, p50 %.3f s, p99 %.3f s, max %.3f s; "
            "allowed/ran-on: %s" % (len(lat), timeouts, errors, percentile(lat, 50),
                                    percentile(lat, 99), max(lat), dict(sorted(cpus.items()))))


def run_probes(daemon, pods, seconds, timeout):
    """{handler: {"ExecSync": [Result], "Exec": [Result]}} after `seconds`."""
    probe_cri = crilib.Cri(daemon, timeout=timeout + 10)
    stream_cri = crilib.Cri(daemon, timeout=HUNG)
    results = {h: {"ExecSync": [], "Exec": []} for h in pods}
    threads = []
    start = time.monotonic() + 0.5
    end = start + seconds
    n = sum(len(p) for p in pods.values())
    k = 0
    for h, plist in pods.items():
        for _, cid, _ in plist:
            # phases spread over the period, as unrelated pods' probes are
            threads.append(threading.Thread(target=probe_worker, args=(
                probe_cri, cid, start + PERIOD * k / n, end, timeout, results[h]["ExecSync"])))
            k += 1
        threads.append(threading.Thread(target=stream_worker, args=(
            stream_cri, [c for _, c, _ in plist], start + 0.25 * len(threads), end,
            results[h]["Exec"])))
    try:
        for t in threads:
            t.start()
    finally:
        for t in threads:
            t.join()
        probe_cri.close()
        stream_cri.close()
    return results


# -------------------------------------------------------------- checks

def check_runtime(chk, name, rt, shim, cfg, crio, pinns, poller):
    pods_per = env_int("EXECAFF_FIFO_PODS", 3, 1)
    seconds = env_int("EXECAFF_FIFO_SECONDS", 45, 5)
    timeout = env_int("EXECAFF_FIFO_TIMEOUT", 2, 1)
    root = rt_root()
    share = rt_share(root, 2 * pods_per) if root else None
    how = os.environ.get("EXECAFF_FIFO_HOW") or "annotation"
    if how not in ("annotation", "handler_default"):
        raise SystemExit("EXECAFF_FIFO_HOW=%r: not annotation or handler_default" % how)
    cfg.write({"runtime": rt, "handler_default": "first"} if how == "handler_default" else
              {"runtime": rt})
    annotations = {live.ANNOTATION: "first"} if how == "annotation" else {}
    croot = criolib.DIR_TOKEN + "/" + name
    bare = {name: {"runtime_path": rt, "runtime_root": croot}}
    dropins = {"99-execaff.conf": live.dropin_text(shim, croot)}
    p = "%s crio fifo " % name
    print("# %s: %d pods per handler, probes for %d s, ExecSync timeout %d s, RT budget "
          "%s µs/s per pod, the shim's pods opted in by %s" % (
              name, pods_per, seconds, timeout, share, how), flush=True)

    def run(daemon, cri):
        try:
            pods = start_pods(cri, [name, HANDLER], pods_per, poller, seconds + 120, root,
                              share, annotations)
        except cri.grpc.RpcError as e:
            if live.REFUSED not in e.details():
                raise
            chk.skip(p + "the probes", "%s runs no container CRI-O 1.34 makes (%s)" % (
                name, e.details()))
            return
        chk.check(p + "%d pods on %s and %s, each with a SCHED_FIFO poller" % (
            2 * pods_per, name, HANDLER), True)
        before = wait_polling(pods)
        chk.check(p + "every pod's poller is SCHED_FIFO 50 on CPU %d" % BUSY_CPU, True)
        t0 = time.monotonic()
        results = run_probes(daemon, pods, seconds, timeout)
        elapsed = time.monotonic() - t0
        after = {pid: poller_ticks(pid) for h in pods for _, _, pid in pods[h]}
        used = sum((after[pid] or 0) - before[pid] for pid in before) / os.sysconf("SC_CLK_TCK")
        budget = (share or RT_TOTAL) * len(before) / RT_PERIOD * elapsed if root else elapsed
        print("# pollers: %.1f s of CPU %d in %.1f s (RT budget %.1f s)" % (
            used, BUSY_CPU, elapsed, budget), flush=True)
        chk.check(p + "the pollers stayed SCHED_FIFO on CPU %d and used at least half of "
                  "their budget (%.1f s of %.1f s)" % (BUSY_CPU, used, budget),
                  all(t is not None for t in after.values()) and used >= budget / 2, after)

        for h, label in ((name, "bare"), (HANDLER, "shim")):
            for how, rs in results[h].items():
                print("# %s %s (%s) %s: %s" % (name, label, h, how, summary(rs)), flush=True)
        for how, rs in results[HANDLER].items():
            bad = [r for r in rs if r.verdict != "ok" or (r.allowed, r.ran) != ("0", "0")]
            chk.eq(p + "through the shim, %s: %d probes, 0 timeouts, 0 errors, each exec and "
                   "its child on CPU 0" % (how, len(rs)), bad[:3], [])
            chk.check(p + "through the shim, %s: probes ran" % how, len(rs) > 0)
        for how, rs in results[name].items():
            bad = [r for r in rs if r.verdict == "error" or
                   (r.verdict == "ok" and r.allowed != "0-1")]
            chk.eq(p + "bare, %s: each probe returned on 0-1 or timed out (%d of %d "
                   "timed out)" % (how, sum(r.verdict == "timeout" for r in rs), len(rs)),
                   bad[:3], [])
        live.end_pods(chk, p, cri, {"%s %d" % (h, i): (sid, cid) for h in pods
                                     for i, (sid, cid, _) in enumerate(pods[h])})

    live.with_crio(chk, p, lambda: criolib.Crio(crio, pinns, bare, name, dropins=dropins,
                                                roots={croot: rt}), run)
    chk.eq(p + "kernel.sched_rt_runtime_us left as it was", read_int(
        "/proc/sys/kernel/sched_rt_runtime_us"), RT_DEFAULT[0])


RT_DEFAULT = []


def main():
    shimlib.common_setup(min_cpus=2)
    crilib.require_grpc()
    if not {0, BUSY_CPU} <= os.sched_getaffinity(0):
        fixture.skip("needs CPUs 0 and %d" % BUSY_CPU)
    RT_DEFAULT.append(read_int("/proc/sys/kernel/sched_rt_runtime_us"))
    if RT_DEFAULT[0] < 0:
        fixture.skip("kernel.sched_rt_runtime_us is -1 (RT throttling off): a busy-poll "
                     "thread would take CPU %d whole; this test relies on throttling to keep "
                     "the machine usable" % BUSY_CPU)
    poller = poller_path()
    crio, pinns, version = criolib.find_crio()
    shim = shimlib.shim_path()
    print("# %s" % version, flush=True)
    chk = shimlib.Checks()
    return shimlib.run_per_runtime_with_default_config(
        chk, "crio fifo",
        lambda name, rt, cfg: check_runtime(chk, name, rt, shim, cfg, crio, pinns, poller))


if __name__ == "__main__":
    sys.exit(main())
