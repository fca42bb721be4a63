#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim under a live CRI-O 1.34.11, driven through the CRI as
kubelet drives it (ExecSync: exec probes and postStart/preStop hooks;
Exec: kubectl exec).

CRI-O is built from ../shared/third_party/ by tests/clients/build-crio.sh
(tests/run-all.sh's crio-build step; EXECAFF_CRIO_DIR names the build) and
started by criolib.Crio with everything of its own under a temp dir.  The
shim finds the real runtime in /etc/execaff/shim.json, as on a node
(conmon gives the runtime only the handler's monitor_env): written under
the flock /tmp/execaff-etc.lock and restored.  Pods run on the host
network; each has one container, CRI cpuset_cpus "0-1" and cpu_shares
2048 (what kubelet sends for a Guaranteed pod of 2 CPUs) unless said.

Per runtime RT (the arguments: runc, crun, crun-1.21, ... of
tests/runtimes.txt), two CRI-O instances, one after the other:

A. contrib/crio/99-execaff.conf as written (the shim's path and the root
   substituted): handlers RT (bare, the default) and high-performance
   (execaff-shim over RT).
     pinned    high-performance, annotation exec-cpu-affinity.execaff.io=first
     plain     high-performance, no annotation
     disabled  high-performance, annotation disable
     bare      RT, annotation first (it must change nothing)
   plus a pod with a bad annotation and a pinned and a bare pod whose
   container runs as uid 1000 with no_new_privs.
   Cases: CRI-O takes the drop-in's handler; the annotation reaches the
   container's spec; ExecSync and the streaming Exec (pipes, tty with and
   without stdin, stdin) put the pinned exec and its child on CPU 0 and give
   every other pod the bare handler's bytes; exit status, stderr, a missing
   program and ExecSync's timeout are the bare handler's; a bad annotation
   fails the exec with the shim's message.  A runtime that refuses CRI-O
   1.34's config (crun 1.8.1: "unknown version specified", runtime-spec
   1.2's ociVersion) must refuse it through the shim with the same error;
   its exec cases are then skipped, saying so.
B. CRI-O's own exec_cpu_affinity = "first": handlers RT (bare),
   high-performance-first (execaff-shim over RT with exec_cpu_affinity),
   and high-performance-first-PEER (the released runtime of RT's kind that
   applies the field itself, tests/runtimes.txt, when installed).  The
   names hold "high-performance": CRI-O runs the hooks that write the field
   only for such handlers, and keeps the first such handler's
   exec_cpu_affinity for all of them (runtimehandlerhooks in 1.34.11), so
   the two setups are two CRI-Os.
     field     high-performance-first: CRI-O writes {"initial": "0"}
     both      the same with the annotation first
     burstable high-performance-first, cpu_shares 512 (not whole CPUs:
               CRI-O writes no field)
     peer      high-performance-first-PEER
     bare      RT
   Cases: the field CRI-O wrote; `both` on CPU 0 (process and child);
   `field` where a runtime that applies the field puts it (initial only:
   the kernel's cgroup join keeps cpuset & initial since 6.2), and the same
   as `peer`; `burstable` is bare's bytes.

Every pod is ended as kubelet ends one (its container stopped, then the
sandbox stopped and removed), each call with a deadline; the cleanup does it
too when a case fails, then stops CRI-O and removes whatever is left
(processes, container state, mounts, cgroups, the temp dir), which is
checked.  Nothing here judges a duration.

Usage: test_crio_live.py [runtime ...]   (default: runc crun)
Exit codes: 0 pass, 1 fail, 77 skip (not root, CRI-O not built, no conmon,
podman or grpc modules, runtime missing, shim not built, fewer than 2
CPUs).
"""

import os
import re
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402
import criolib  # noqa: E402
from crilib import fixture, shimlib  # noqa: E402

ANNOTATION = shimlib.ANNOTATION
DROPIN = os.path.join(crilib.SRC, "contrib", "crio", "99-execaff.conf")
DROPIN_SHIM = "/usr/local/bin/execaff-shim"
DROPIN_ROOT = 'runtime_root = "/run/runc"'
HANDLER = "high-performance"
FIRST = "high-performance-first"
GUARANTEED = 2048           # cpu_shares of a Guaranteed pod with 2 CPUs
ALLOWED = ["sh", "-c", 'grep Cpus_allowed_list /proc/self/status; '
           'sh -c "grep Cpus_allowed_list /proc/self/status"']
STATUS = ["sh", "-c", "echo out; echo err >&2; exit 7"]
STDIN = ["sh", "-c", "head -c 6; grep Cpus_allowed_list /proc/self/status"]
# A tty exec writes what it found to a file in the container, read back by
# ExecSync: CRI-O's ttyCmd closes the pty when the runtime exits without
# draining it, so the stream may lose the last lines (bare too).
TTY_OUT = "/tmp/execaff-tty"
TTY = ["sh", "-c", "{ tty; grep Cpus_allowed_list /proc/self/status; } > %s" % TTY_OUT]
# Long enough to outlive the checks however loaded the machine is; the
# container's end takes it along.
SLEEP = ["sleep", "30"]
SLEEPERS = ["sh", "-c", "ps -o args | grep -c '^sleep 30'"]
TIMED_OUT = (-1, "", "command timed out")      # conmon's, as CRI-O returns it
REFUSED = "unknown version specified"           # crun < 1.9 on runtime-spec 1.2


def dropin_text(shim, root):
    """contrib/crio/99-execaff.conf with the test's shim and runtime root;
    a file that no longer names what is replaced fails the test."""
    with open(DROPIN) as f:
        text = f.read()
    for p in (DROPIN_SHIM, DROPIN_ROOT):
        if p not in text:
            raise RuntimeError("%s no longer holds %r: the test cannot run the file it "
                               "documents" % (DROPIN, p))
    return text.replace(DROPIN_SHIM, shim).replace(DROPIN_ROOT, 'runtime_root = "%s"' % root)


def peer_of(kind):
    """The first installed runtime of tests/runtimes.txt of this kind that
    applies the field itself: (name, path, None), or (None, None, why not)."""
    listed = [rt for rt in shimlib.runtime_list.load() if rt.kind == kind and rt.applies == "field"]
    for rt in listed:
        if rt.path:
            return rt.name, rt.path, None
    return None, None, "; ".join(rt.problem for rt in listed) or "no %s peer listed" % kind


def spec_of(cri, cid):
    """The container's OCI spec, as CRI-O reports it (verbose status)."""
    return cri.container_info(cid).get("info", {}).get("runtimeSpec", {})


def normalised(result, ids, replacements=()):
    return tuple(shimlib.normalise(crilib.normalise_ids(x, ids), replacements)
                 if isinstance(x, str) else x for x in result)


def tty_exec(cri, cid, stdin=None):
    """(exit code, is a tty, the Cpus_allowed_list values) of TTY run by
    a streaming Exec with a tty (and stdin when given)."""
    code = cri.stream_exec(cid, TTY, tty=True, stdin_data=stdin)[0]
    r = cri.exec_sync(cid, ["sh", "-c", "cat %s && rm %s" % (TTY_OUT, TTY_OUT)])
    return (code, r[0] == 0 and re.match(r"/dev/pts/\d+\n", r[1]) is not None,
            shimlib.allowed_lists(r[1]))


def end_pods(chk, p, cri, pods):
    for k, (sid, _) in pods.items():
        try:
            start = time.monotonic()
            cri.remove_pod(sid)
            chk.check(p + "StopContainer + StopPodSandbox + RemovePodSandbox %s (%.1f s)" % (
                k, time.monotonic() - start), True)
        except Exception as e:
            chk.error(p + "StopContainer + StopPodSandbox + RemovePodSandbox %s" % k, e)


def with_crio(chk, label, start, run):
    """Starts a CRI-O (start() returns a criolib.Crio), runs run(daemon,
    cri), always cleans up and checks that nothing was left; returns what
    run returned (None on an error)."""
    daemon = result = None
    try:
        daemon = start()
        cri = crilib.Cri(daemon, timeout=60)
        try:
            result = run(daemon, cri)
        finally:
            cri.close()
    except Exception as e:
        chk.error(label + "setup or a case that could not run", e)
        if daemon is not None:
            print(daemon.log_tail(), file=sys.stderr)
    finally:
        if daemon is not None:
            daemon.cleanup()
    if daemon is not None:
        chk.eq(label + "nothing left behind (processes, container state, mounts, cgroups, "
               "files outside the temp dir)", daemon.leftover_report(), "")
    return result


# ------------------------------------------------------- A: the drop-in

def check_dropin(chk, p, daemon, cri, name, rt, shim):
    v = cri.version()
    chk.eq(p + "Version: CRI-O 1.34.11, CRI v1",
           (v.runtime_name, v.runtime_version, v.runtime_api_version), ("cri-o", "1.34.11", "v1"))
    with open(daemon.log, errors="replace") as f:
        ignored = re.findall(r'Runtime handler \\"[^"\\]*\\" is being ignored[^"]*', f.read())
    chk.eq(p + "CRI-O took every handler, the drop-in's too (no 'is being ignored')",
           ignored, [])

    try:
        bare = cri.run_pod(name, {ANNOTATION: "first"}, cpu_shares=GUARANTEED)
    except cri.grpc.RpcError as e:
        if REFUSED not in e.details():
            raise
        # CRI-O 1.34 writes runtime-spec 1.2's ociVersion, which crun 1.8.1
        # predates: no container at all, bare or not.  The shim hands
        # create to the runtime untouched, so the same refusal.
        try:
            cri.run_pod(HANDLER, {ANNOTATION: "first"}, cpu_shares=GUARANTEED)
            got = "created"
        except cri.grpc.RpcError as e2:
            got = e2.details()
        chk.eq(p + "CreateContainer: %s refuses CRI-O 1.34's spec (%r); through the shim, "
               "the same error" % (name, REFUSED), got, e.details())
        chk.skip(p + "the exec cases", "%s runs no container CRI-O 1.34 makes" % name)
        return False
    pods = {
        "pinned": cri.run_pod(HANDLER, {ANNOTATION: "first"}, cpu_shares=GUARANTEED),
        "plain": cri.run_pod(HANDLER, cpu_shares=GUARANTEED),
        "disabled": cri.run_pod(HANDLER, {ANNOTATION: "disable"}, cpu_shares=GUARANTEED),
        "bare": bare,
    }
    others = {
        "bad annotation": cri.run_pod(HANDLER, {ANNOTATION: "firstt"}, cpu_shares=GUARANTEED),
        "uid 1000 pinned": cri.run_pod(HANDLER, {ANNOTATION: "first"}, run_as_user=1000,
                                       cpu_shares=GUARANTEED),
        "uid 1000 bare": cri.run_pod(name, {ANNOTATION: "first"}, run_as_user=1000,
                                     cpu_shares=GUARANTEED),
    }
    chk.check(p + "RunPodSandbox + CreateContainer + StartContainer: 7 pods on %s and %s" % (
        HANDLER, name), True)
    cid = {k: c for k, (_, c) in pods.items()}
    ids = [x for pair in list(pods.values()) + list(others.values()) for x in pair]

    spec = spec_of(cri, cid["pinned"])
    chk.eq(p + "the pod's annotation reaches the container's spec, CRI-O adds no field",
           ((spec.get("annotations") or {}).get(ANNOTATION),
            "execCPUAffinity" in (spec.get("process") or {})), ("first", False), spec)

    # --- ExecSync: exec probes, postStart and preStop hooks
    sync = {k: cri.exec_sync(c, ALLOWED) for k, c in cid.items()}
    shimlib.check_pinned_beside_bare(chk, p + "ExecSync", sync, runtime=name)
    for k in cid:
        chk.eq(p + "ExecSync %s: exit 7, stdout and stderr pass through" % k,
               cri.exec_sync(cid[k], STATUS), (7, "out\n", "err\n"))
    for prog in ("/nope", "nope"):
        got = {k: normalised(cri.exec_sync(c, [prog]), ids, [(shim, "RT"), (rt, "RT")])
               for k, c in cid.items()}
        for k in ("pinned", "plain"):
            chk.eq(p + "ExecSync %s %s: the bare handler's result" % (k, prog), got[k],
                   got["bare"])

    timed = {}
    for k in ("pinned", "bare"):
        start = time.monotonic()
        r = cri.exec_sync(cid[k], SLEEP, timeout=1)
        timed[k] = (r, time.monotonic() - start)
    # conmon's message, not sleep's exit 0: the timeout ended the exec
    # (the durations are printed, not judged: the machine may be loaded).
    chk.eq(p + "ExecSync timeout 1 s: conmon's %r, pinned (%.2f s) as bare (%.2f s)" % (
        TIMED_OUT[2], timed["pinned"][1], timed["bare"][1]),
        (timed["pinned"][0], timed["bare"][0]), (TIMED_OUT, TIMED_OUT))
    chk.eq(p + "ExecSync timeout: the same processes left in the container as bare",
           cri.exec_sync(cid["pinned"], SLEEPERS), cri.exec_sync(cid["bare"], SLEEPERS))

    ucmd = ["sh", "-c", "id -u; grep Cpus_allowed_list /proc/self/status"]
    chk.eq(p + "ExecSync uid 1000 pinned: uid 1000 on CPU 0",
           cri.exec_sync(others["uid 1000 pinned"][1], ucmd),
           (0, "1000\nCpus_allowed_list:\t0\n", ""))
    chk.eq(p + "ExecSync uid 1000 bare: uid 1000 on 0-1",
           cri.exec_sync(others["uid 1000 bare"][1], ucmd),
           (0, "1000\nCpus_allowed_list:\t0-1\n", ""))

    # --- a bad annotation: the exec fails and says why
    r = cri.exec_sync(others["bad annotation"][1], ["true"])
    text = " ".join(str(x) for x in r)
    chk.check(p + "ExecSync with annotation \"firstt\": fails with the shim's message naming "
              "the annotation", r[0] != 0 and "execaff-shim" in text and ANNOTATION in text and
              "firstt" in text, r)
    try:
        r = cri.stream_exec(others["bad annotation"][1], ["true"])
    except Exception as e:
        r = ("error", str(e))
    text = " ".join(str(x) for x in r)
    chk.check(p + "Exec (stream) with annotation \"firstt\": fails with the shim's message",
              r[0] != 0 and "execaff-shim" in text and "firstt" in text, r)

    # --- the streaming Exec (kubectl exec): websocket to CRI-O's server
    stream = {k: cri.stream_exec(c, ALLOWED) for k, c in cid.items()}
    shimlib.check_pinned_beside_bare(chk, p + "Exec (stream)", stream, runtime=name)
    for k in ("pinned", "bare"):
        chk.eq(p + "Exec (stream) %s: exit 7, stdout and stderr pass through" % k,
               cri.stream_exec(cid[k], STATUS), (7, "out\n", "err\n"))
    for stdin in (None, ""):
        how = "tty" if stdin is None else "tty + stdin"
        got = {k: tty_exec(cri, c, stdin) for k, c in cid.items()}
        chk.eq(p + "Exec (stream, %s) pinned: a tty, on CPU 0" % how, got["pinned"],
               (0, True, ["0"]))
        chk.eq(p + "Exec (stream, %s) bare: a tty, on 0-1" % how, got["bare"],
               (0, True, ["0-1"]))
        chk.eq(p + "Exec (stream, %s) plain, disabled: as bare" % how,
               (got["plain"], got["disabled"]), (got["bare"], got["bare"]))
    r = cri.stream_exec(cid["pinned"], STDIN, stdin_data="hello\n")
    chk.eq(p + "Exec (stream, stdin) pinned: stdin reaches the program, on CPU 0",
           (r[0], r[1].split("\n")[0], shimlib.allowed_lists(r[1])), (0, "hello", ["0"]), r)

    end_pods(chk, p, cri, dict(pods, **others))
    return True


# ------------------------------------ B: CRI-O's exec_cpu_affinity = "first"

def check_first(chk, p, daemon, cri, name, peer, why):
    pods = {
        "field": cri.run_pod(FIRST, cpu_shares=GUARANTEED),
        "both": cri.run_pod(FIRST, {ANNOTATION: "first"}, cpu_shares=GUARANTEED),
        "burstable": cri.run_pod(FIRST, cpu_shares=512),
        "bare": cri.run_pod(name, cpu_shares=GUARANTEED),
    }
    if peer:
        pods["peer"] = cri.run_pod(FIRST + "-" + peer, cpu_shares=GUARANTEED)
    cid = {k: c for k, (_, c) in pods.items()}
    fields = {k: (spec_of(cri, c).get("process") or {}).get("execCPUAffinity")
              for k, c in cid.items()}
    want = {"field": {"initial": "0"}, "both": {"initial": "0"}, "burstable": None,
            "bare": None}
    if peer:
        want["peer"] = {"initial": "0"}
    chk.eq(p + "CRI-O's field: initial only, the lowest CPU, for whole-CPU pods of the "
           "exec_cpu_affinity handlers", fields, want)

    # initial only: final is left to the kernel's cgroup join, as a runtime
    # that applies the field leaves it (decision table R22): since 6.2 the
    # join keeps cpuset & initial, before it the whole cpuset.
    on = "0" if fixture.kernel_keeps_requested_mask() else "0-1"
    for how, call in (("ExecSync", cri.exec_sync), ("Exec (stream)", cri.stream_exec)):
        got = {k: call(c, ALLOWED) for k, c in cid.items()}
        chk.eq(p + "%s both: process and child on CPU 0" % how,
               (got["both"][0], shimlib.allowed_lists(got["both"][1])), (0, ["0", "0"]),
               got["both"])
        chk.eq(p + "%s field (initial only): process and child on %s" % (how, on),
               (got["field"][0], shimlib.allowed_lists(got["field"][1])), (0, [on, on]),
               got["field"])
        chk.eq(p + "%s bare: on 0-1" % how,
               (got["bare"][0], shimlib.allowed_lists(got["bare"][1])), (0, ["0-1", "0-1"]),
               got["bare"])
        chk.eq(p + "%s burstable (no field): byte-identical to bare" % how,
               got["burstable"], got["bare"])
        if peer:
            chk.eq(p + "%s field: where %s, which applies CRI-O's field itself, puts it" % (
                how, peer), got["field"], got["peer"])
    if not peer:
        chk.skip(p + "the field beside a runtime that applies it", why)
    end_pods(chk, p, cri, pods)


# ------------------------------------------------------------------ main

def check_runtime(chk, name, rt, shim, cfg, crio, pinns):
    cfg.write({"runtime": rt})
    root = criolib.DIR_TOKEN + "/" + name
    bare = {name: {"runtime_path": rt, "runtime_root": root}}
    roots = {root: rt}
    p = "%s crio A " % name
    dropins = {"99-execaff.conf": dropin_text(shim, root)}
    runs = with_crio(chk, p,
                     lambda: criolib.Crio(crio, pinns, bare, name, dropins=dropins, roots=roots),
                     lambda daemon, cri: check_dropin(chk, p, daemon, cri, name, rt, shim))
    if runs is False:
        return

    peer, peer_path, why = peer_of(shimlib.kind_of(name))
    runtimes = dict(bare)
    runtimes[FIRST] = {"runtime_path": shim, "runtime_root": root, "exec_cpu_affinity": "first"}
    if peer:
        peer_root = criolib.DIR_TOKEN + "/" + peer
        runtimes[FIRST + "-" + peer] = {"runtime_path": peer_path, "runtime_root": peer_root,
                                        "exec_cpu_affinity": "first"}
        roots = dict(roots, **{peer_root: peer_path})
    p = "%s crio B " % name
    with_crio(chk, p, lambda: criolib.Crio(crio, pinns, runtimes, name, roots=roots),
              lambda daemon, cri: check_first(chk, p, daemon, cri, name, peer, why))


def main():
    shimlib.common_setup(min_cpus=2)
    crilib.require_grpc()
    if not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("needs CPUs 0 and 1")
    crio, pinns, version = criolib.find_crio()
    shim = shimlib.shim_path()
    print("# %s" % version, flush=True)
    chk = shimlib.Checks()
    return shimlib.run_per_runtime_with_default_config(
        chk, "crio live",
        lambda name, rt, cfg: check_runtime(chk, name, rt, shim, cfg, crio, pinns))


if __name__ == "__main__":
    sys.exit(main())
