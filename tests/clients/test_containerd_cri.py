#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim as a containerd 1.6 runtime handler, driven through the CRI
as kubelet drives it (ExecSync: exec probes; Exec: kubectl exec).

A private containerd (crilib.Containerd: contrib/containerd/config.toml,
paths substituted, its own root/state/sockets in a temp dir) with the
handlers "runc" (bare runc, the default) and "execaff" (containerd's runc v2
shim calling execaff-shim).  The shim finds the real runtime through
EXECAFF_CONFIG in containerd's environment (containerd -> the runc v2 shim
-> execaff-shim inherit it); /etc/execaff is not touched.  Image: an OCI
tarball of busybox built here, `ctr images import`ed, also the sandbox
image.  Host network (NamespaceMode NODE): no CNI.

Pods, each with one container, CRI cpuset_cpus "0-1":
  pinned   handler execaff, annotation exec-cpu-affinity.execaff.io=first
  plain    handler execaff, no annotation
  disabled handler execaff, annotation disable
  bare     handler runc (the annotation set too: it must change nothing)
and a pinned and a bare pod whose container runs as uid 1000 with
no_new_privs (a restricted pod).
Cases: the exec'd process and its child on CPU 0 (pinned) and for every
other pod byte-identical to the bare pod (stdout, stderr, exit code), by
ExecSync and by the streaming Exec (websocket, v4.channel.k8s.io); exit
status and stderr pass through; a missing program gives the bare runtime's
error; ExecSync's timeout gives the bare runtime's error, as fast, and
leaves the same processes; the debug line proves the shim decided; nothing
is left behind (shims, mounts, cgroups, sockets, temp dirs).

Exit codes: 0 pass, 1 fail, 77 skip (not root, no containerd/ctr/runc,
no grpc modules, shim not built, fewer than 2 CPUs).
"""

import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402
from crilib import fixture, shimlib  # noqa: E402

ANNOTATION = shimlib.ANNOTATION
ALLOWED = ["sh", "-c", 'grep Cpus_allowed_list /proc/self/status; '
           'sh -c "grep Cpus_allowed_list /proc/self/status"']
STATUS = ["sh", "-c", "echo out; echo err >&2; exit 7"]
STDIN = ["sh", "-c", "head -c 6; grep Cpus_allowed_list /proc/self/status"]
SLEEPERS = ["sh", "-c", "ps -o args | grep -c '^sleep 5'"]


def main():
    shimlib.common_setup(min_cpus=2)
    crilib.require_tools()
    if not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("needs CPUs 0 and 1")
    shim = shimlib.shim_path()
    chk = shimlib.Checks("containerd cri: ")
    work = shimlib.workdir("execaff-cri-test-")
    config = shimlib.write_config(os.path.join(work, "shim.json"),
                                  {"runtime": "/usr/bin/runc", "debug": True})
    env = shimlib.shim_env(config=config)
    daemon = crilib.Containerd(shim, env=env)
    try:
        run(chk, daemon, work, config)
    except Exception as e:
        chk.error("setup or a case that could not run", e)
        print(daemon.log_tail(), file=sys.stderr)
    finally:
        daemon.cleanup()
    chk.eq("nothing left behind (shims, mounts, cgroups, shim sockets, temp dir)",
           daemon.leftover_report(), "")
    return chk.finish()


def run(chk, daemon, work, config):
    daemon.import_image(crilib.oci_image_tar(os.path.join(work, "image.tar")))
    cri = crilib.Cri(daemon)
    v = cri.version()
    chk.eq("Version: containerd, CRI v1", (v.runtime_name, v.runtime_api_version),
           ("containerd", "v1"), v)

    pods = {
        "pinned": cri.run_pod("execaff", {ANNOTATION: "first"}),
        "plain": cri.run_pod("execaff"),
        "disabled": cri.run_pod("execaff", {ANNOTATION: "disable"}),
        "bare": cri.run_pod("runc", {ANNOTATION: "first"}),
    }
    chk.check("four pods running (handlers execaff and runc, cpuset 0-1)", True)
    badpod = cri.run_pod("execaff", {ANNOTATION: "firstt"})
    users = {"pinned": cri.run_pod("execaff", {ANNOTATION: "first"}, run_as_user=1000),
             "bare": cri.run_pod("runc", {ANNOTATION: "first"}, run_as_user=1000)}
    chk.check("the shims' sockets are where the cleanup looks for them",
              all(os.path.exists(s) for s in daemon.shim_sockets), daemon.shim_sockets)
    chk.check("the pods' cgroups are where the cleanup looks for them",
              len(daemon._cgroup_dirs()) >= 7, daemon._cgroup_dirs())
    cid = {k: c for k, (_, c) in pods.items()}
    ids = [x for pair in pods.values() for x in pair]

    # The runc v2 shim has containerd's environment, and so execaff-shim.
    shims = daemon._shim_pids()
    envs = []
    for pid in shims:
        with open("/proc/%d/environ" % pid, "rb") as f:
            envs.append(("EXECAFF_CONFIG=" + config).encode() in f.read().split(b"\0"))
    chk.check("every containerd-shim-runc-v2 has EXECAFF_CONFIG from containerd",
              len(shims) == 7 and all(envs), (shims, envs))

    # --- ExecSync: the exec-probe path
    sync = {k: cri.exec_sync(c, ALLOWED) for k, c in cid.items()}
    shimlib.check_pinned_beside_bare(chk, "ExecSync", sync)
    for k in cid:
        r = cri.exec_sync(cid[k], STATUS)
        chk.eq("ExecSync %s: exit 7, stdout and stderr pass through" % k, r, (7, "out\n", "err\n"))
    for prog in ("/nope", "nope"):
        got = {k: cri.exec_sync(c, [prog]) for k, c in cid.items()}
        want = normalised(got["bare"], ids)
        for k in ("pinned", "plain"):
            chk.eq("ExecSync %s %s: the bare runtime's error" % (k, prog),
                   normalised(got[k], ids), want)

    # --- a pod running as uid 1000 with no_new_privs (a restricted pod)
    ucmd = ["sh", "-c", "id -u; grep Cpus_allowed_list /proc/self/status"]
    got = {k: cri.exec_sync(c, ucmd) for k, (_, c) in users.items()}
    chk.eq("ExecSync runAsUser 1000 pinned: uid 1000 on CPU 0", got["pinned"],
           (0, "1000\nCpus_allowed_list:\t0\n", ""))
    chk.eq("ExecSync runAsUser 1000 bare runc: uid 1000 on 0-1", got["bare"],
           (0, "1000\nCpus_allowed_list:\t0-1\n", ""))

    # --- a bad annotation: the exec fails, and the CRI error says why
    for how, r in (("ExecSync", cri.exec_sync(badpod[1], ["true"])),):
        chk.check("%s with annotation \"firstt\": fails, the CRI error carries the shim's "
                  "message naming the annotation" % how,
                  r[0] == "error" and "execaff-shim" in r[2] and ANNOTATION in r[2] and
                  "firstt" in r[2], r)
    try:
        r = cri.stream_exec(badpod[1], ["true"])
    except Exception as e:
        r = ("error", str(e))
    chk.check("Exec (stream) with annotation \"firstt\": fails, the stream's status "
              "carries the shim's message", r[0] == "error" and "execaff-shim" in r[1] and
              "firstt" in r[1], r)

    # --- ExecSync with a timeout, as a probe with timeoutSeconds: 1
    timed = {}
    for k in ("pinned", "bare"):
        start = time.monotonic()
        r = cri.exec_sync(cid[k], ["sleep", "5"], timeout=1)
        timed[k] = (normalised(r, ids), time.monotonic() - start)
    chk.eq("ExecSync timeout 1 s pinned: bare runc's error",
           timed["pinned"][0], timed["bare"][0], timed)
    chk.check("ExecSync timeout 1 s: the error is DEADLINE_EXCEEDED after ~1 s, pinned "
              "(%.2f s) as bare (%.2f s)" % (timed["pinned"][1], timed["bare"][1]),
              timed["bare"][0][:2] == ("error", "DEADLINE_EXCEEDED") and
              timed["pinned"][1] < 4 and timed["bare"][1] < 4, timed)
    time.sleep(0.5)
    left = {k: cri.exec_sync(cid[k], SLEEPERS) for k in ("pinned", "bare")}
    chk.eq("ExecSync timeout: the same processes left in the container as with bare runc",
           left["pinned"], left["bare"])

    # --- the streaming Exec (kubectl exec): websocket to containerd's server
    stream = {k: cri.stream_exec(c, ALLOWED) for k, c in cid.items()}
    shimlib.check_pinned_beside_bare(chk, "Exec (stream)", stream)
    for k in ("pinned", "bare"):
        r = cri.stream_exec(cid[k], STATUS)
        chk.eq("Exec (stream) %s: exit 7, stdout and stderr pass through" % k, r,
               (7, "out\n", "err\n"))
    # kubectl exec -it: tty with stdin.  (A tty without stdin loses the
    # output most of the time under containerd 1.6, with bare runc too.)
    for k, want in (("pinned", ["0"]), ("bare", ["0-1"])):
        r = cri.stream_exec(cid[k], ["sh", "-c", "tty; grep Cpus_allowed_list /proc/self/status"],
                            tty=True, stdin_data="")
        chk.check("Exec (stream, tty + stdin) %s: a tty, on %s" % (k, want[0]),
                  r[0] == 0 and r[1].startswith("/dev/pts/") and
                  shimlib.allowed_lists(r[1]) == want, r)
    r = cri.stream_exec(cid["pinned"], STDIN, stdin_data="hello\n")
    chk.eq("Exec (stream, stdin) pinned: stdin reaches the program, on CPU 0",
           (r[0], r[1].split("\n")[0], shimlib.allowed_lists(r[1])), (0, "hello", ["0"]), r)

    # --- the shim decided (its debug line, in the log runc v2 gives it)
    log = os.path.join(daemon.paths["/run/containerd"], "io.containerd.runtime.v2.task",
                       crilib.NAMESPACE, cid["pinned"], "log.json")
    try:
        with open(log, errors="replace") as f:
            text = f.read()
    except OSError as e:
        text = str(e)
    chk.contains("the shim logged its decision for the pinned container (%s)" % log,
                 text, 'decision for \\"%s\\"' % cid["pinned"])

    for k, (sid, _) in list(pods.items()) + [("uid 1000 " + k, p) for k, p in users.items()] + \
            [("bad annotation", badpod)]:
        try:
            cri.remove_pod(sid)
            chk.check("StopPodSandbox + RemovePodSandbox %s" % k, True)
        except Exception as e:
            chk.error("StopPodSandbox + RemovePodSandbox %s" % k, e)
    cri.close()


def normalised(result, ids):
    return tuple(crilib.normalise_ids(x, ids) if isinstance(x, str) else x for x in result)


if __name__ == "__main__":
    sys.exit(main())
