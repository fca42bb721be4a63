#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""CRI-O's exec command lines, replayed through execaff-shim (CRI-O is not
packaged for Debian 12, so no live CRI-O runs here).

What CRI-O does for a runtime handler (internal/oci/runtime_oci.go as of
cri-o/cri-o 0002055581858fd4f6672d53448ec555914c937f; the 1.34
exec_cpu_affinity hook in internal/runtimehandlerhooks; conmon's
src/runtime_args.c; contrib/crio/README.md), replayed exactly:

* ExecSync (exec probes): the process file is the container's
  spec.Process with args replaced and terminal set (Go's json.Marshal:
  compact, struct order), so a handler with exec_cpu_affinity = "first"
  passes on the spec's `"execCPUAffinity":{"initial":"<lowest CPU of the
  exclusive cpuset>"}`.  conmon is started as
    conmon -c ID -n NAME -r RUNTIME -p PIDFILE -e -l LOG
           --socket-dir-path DIR --log-level info --sync
           --log-global-size-max 16777216 [-T TIMEOUT]
           --exec-process-spec FILE --runtime-arg --root=ROOT
  with env = monitor_env (PATH) + _OCI_SYNCPIPE=3 _OCI_STARTPIPE=4, fd 3 the
  sync pipe's write end, fd 4 the start pipe's read end (one byte written
  to start it); the exit code is the JSON conmon writes on fd 3, the output
  the k8s-file log (-l), parsed as CRI-O parses it; a timeout is conmon's
  "command timed out" with exit code -1.  conmon 2.1.6 (Debian's, real)
  then runs `RUNTIME --root=ROOT exec --pid-file P --process F --detach ID`
  (checked: a recording wrapper).
* The streaming exec (kubectl exec): `RUNTIME --root ROOT exec --process F
  ID`, the runtime's stdio the stream's (a pty with tty).

The runtime path is the shim, which finds the real runtime in the host's
/etc/execaff/shim.json (conmon's environment has no EXECAFF_* variables,
as under CRI-O): written under the flock /tmp/execaff-etc.lock and
restored.  Each line is run side by side with the bare runtime as
runtime path, on its own container.  Containers (cpuset 0-1, created
with the runtime path under a private --root):

  field     spec has execCPUAffinity {"initial": "0"} (exec_cpu_affinity = "first")
  both      the same plus the pod's annotation exec-cpu-affinity.execaff.io=first
            (CRI-O passes pod annotations to the spec: contrib/crio/99-execaff.conf)
  plain     neither
  bare      the bare runtime, field and annotation both (it ignores them)

Cases: `both` is pinned to CPU 0 (process and child), by ExecSync and by
the streaming exec (pipes and tty); `field` ends where runc >= 1.3 puts it
(initial only: final left to the kernel's join, CPU 0 on 6.2+ kernels);
`plain` is bare's bytes;
exit status, stderr, a missing program and ExecSync's timeout are bare's.

Usage: test_crio_replay.py [runtime ...]   (default: runc crun)
Exit codes: 0 pass, 1 fail, 77 skip (not root, no conmon, runtime missing,
shim not built, fewer than 2 CPUs).
"""

import json
import os
import select
import subprocess
import sys
import time
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402,F401  (puts tests/integration on sys.path)
from crilib import fixture, shimlib  # noqa: E402

ANNOTATION = shimlib.ANNOTATION
MONITOR_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
MAX_EXEC_SYNC_SIZE = 16 * 1024 * 1024
TIMED_OUT = "command timed out"          # conmon's TimedOutMessage
ALLOWED = ["sh", "-c", 'grep Cpus_allowed_list /proc/self/status; '
           'sh -c "grep Cpus_allowed_list /proc/self/status"']
STATUS = ["sh", "-c", "echo out; echo err >&2; exit 7"]
SLEEPERS = ["sh", "-c", "ps -o args | grep -c '^sleep 5'"]

# Go's runtime-spec Process and User field order (json.Marshal follows it).
PROCESS_ORDER = ("terminal", "consoleSize", "user", "args", "commandLine", "env", "cwd",
                 "capabilities", "rlimits", "noNewPrivileges", "apparmorProfile",
                 "oomScoreAdj", "scheduler", "selinuxLabel", "ioPriority", "execCPUAffinity")
USER_ORDER = ("uid", "gid", "umask", "additionalGids", "username")
CAPS_ORDER = ("bounding", "effective", "inheritable", "permitted", "ambient")


def crio_process_file(spec_process, args, tty, path):
    """What prepareProcessExec writes: spec.Process, args replaced,
    terminal = tty, marshalled like Go (compact, struct order)."""
    p = dict(spec_process, args=list(args), terminal=bool(tty))
    out = {}
    for k in PROCESS_ORDER:
        if k not in p:
            continue
        v = p[k]
        if k == "user":
            v = {u: v[u] for u in USER_ORDER if u in v}
        elif k == "capabilities":
            v = {c: v[c] for c in CAPS_ORDER if c in v}
        out[k] = v
    missing = set(p) - set(out)
    if missing:
        raise RuntimeError("process keys without a Go field order: %s" % sorted(missing))
    with open(path, "w") as f:
        f.write(json.dumps(out, separators=(",", ":")))
    return path


def parse_k8s_log(data):
    """CRI-O's parseLog: "DATE STREAM TAG CONTENT" lines; P drops the newline."""
    out, err = b"", b""
    for line in data.splitlines(keepends=True):
        parts = line.split(b" ", 3)
        if len(parts) < 4:
            continue
        content = parts[3]
        if parts[2] == b"P" and content.endswith(b"\n"):
            content = content[:-1]
        if parts[1] == b"stdout":
            out += content
        elif parts[1] == b"stderr":
            err += content
    return out.decode(errors="replace"), err.decode(errors="replace")


class Pod:
    """One container as CRI-O would have it: created with the handler's
    runtime path under its runtime_root."""

    def __init__(self, runtime, work, field=False, annotation=None):
        self.runtime = runtime
        ann = {ANNOTATION: annotation} if annotation else {}
        self.name = "k8s_app_execaff-%s_default_%s_0" % (uuid.uuid4().hex[:8], uuid.uuid4().hex)
        self.c = fixture.Container(runtime, cpus="0-1", annotations=ann, start=False)
        if field:
            self.c.bundle.config["process"]["execCPUAffinity"] = {"initial": "0"}
            self.c.bundle.write_config()
        self.c.create()
        self.c.start()
        self.root = self.c.root
        self.work = work

    def process_file(self, args, tty=False):
        fd_path = os.path.join(self.work, "exec-process-%s" % uuid.uuid4().hex[:10])
        return crio_process_file(self.c.bundle.config["process"], args, tty, fd_path)

    def conmon_argv(self, pf, pidfile, log, timeout=0, runtime=None):
        argv = ["conmon", "-c", self.c.id, "-n", self.name, "-r", runtime or self.runtime,
                "-p", pidfile, "-e", "-l", log,
                "--socket-dir-path", os.path.join(self.work, "attach"),
                "--log-level", "info", "--sync",
                "--log-global-size-max", str(MAX_EXEC_SYNC_SIZE)]
        if timeout > 0:
            argv += ["-T", str(timeout)]
        return argv + ["--exec-process-spec", pf, "--runtime-arg", "--root=" + self.root]

    def exec_sync(self, args, timeout=0, runtime=None):
        """ExecSyncContainer's conmon invocation: (exit_code, stdout, stderr)."""
        pf = self.process_file(args)
        tag = uuid.uuid4().hex[:10]
        pidfile = os.path.join(self.work, "pidfile" + tag)
        log = os.path.join(self.work, "crio-log-" + self.c.id + tag)
        open(pidfile, "w").close()
        open(log, "w").close()
        sync_r, sync_w = os.pipe()
        start_r, start_w = os.pipe()

        def fds():                              # fd 3: sync (write), fd 4: start (read)
            a, b = os.dup(sync_w), os.dup(start_r)
            os.dup2(a, 3)
            os.dup2(b, 4)

        try:
            p = subprocess.Popen(self.conmon_argv(pf, pidfile, log, timeout, runtime),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, close_fds=False, preexec_fn=fds,
                                 env=dict(e.split("=", 1) for e in MONITOR_ENV +
                                          ["_OCI_SYNCPIPE=3", "_OCI_STARTPIPE=4"]))
            os.close(sync_w)
            os.close(start_r)
            sync_w = start_r = None
            os.write(start_w, b"\0")
            out, err = p.communicate(timeout=60)
            data = b""
            while True:
                ready, _, _ = select.select([sync_r], [], [], 5)
                chunk = os.read(sync_r, 65536) if ready else b""
                if not chunk:
                    break
                data += chunk
            ec = json.JSONDecoder().raw_decode(data.decode())[0] if data.strip() else None
            if ec is None:
                raise RuntimeError("conmon wrote no exit code (rc %d): %r %r" % (
                    p.returncode, out, err))
            if ec.get("exit_code") == -1 and ec.get("message") == TIMED_OUT:
                return (-1, "", TIMED_OUT)
            if ec.get("exit_code") == -1:
                return ("error", ec.get("message"))
            with open(log, "rb") as f:
                stdout, stderr = parse_k8s_log(f.read())
            return (ec["exit_code"], stdout, stderr)
        finally:
            for fd in (sync_r, sync_w, start_r, start_w):
                if fd is not None:
                    os.close(fd)
            for f in (pf, pidfile, log):
                if os.path.exists(f):
                    os.unlink(f)

    def stream_argv(self, pf, systemd=False):
        """defaultRuntimeArgs() + exec: --systemd-cgroup with
        cgroup_manager = "systemd"."""
        return [self.runtime, "--root", self.root] + (["--systemd-cgroup"] if systemd else []) + \
            ["exec", "--process", pf, self.c.id]

    def stream_exec(self, args, systemd=False):
        """ExecContainer without a tty: (exit_code, stdout, stderr)."""
        pf = self.process_file(args)
        try:
            r = fixture.run(self.stream_argv(pf, systemd), env={"PATH": MONITOR_ENV[0][5:]})
            return (r.returncode, r.stdout, r.stderr)
        finally:
            os.unlink(pf)

    def stream_exec_tty(self, args, timeout=60):
        """ExecContainer with a tty: the runtime's stdio is a pty."""
        pf = self.process_file(args, tty=True)
        master, slave = os.openpty()
        try:
            p = subprocess.Popen(self.stream_argv(pf), stdin=slave, stdout=slave, stderr=slave,
                                 env={"PATH": MONITOR_ENV[0][5:]}, start_new_session=True)
            os.close(slave)
            slave = None
            out = b""
            while True:
                ready, _, _ = select.select([master], [], [], timeout)
                if not ready:
                    p.kill()
                    break
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            p.wait()
            return (p.returncode, out.decode(errors="replace").replace("\r", ""))
        finally:
            os.close(master)
            if slave is not None:
                os.close(slave)
            os.unlink(pf)

    def cleanup(self):
        self.c.cleanup()


def check_runtime(chk, name, rt, shim, cfg, work):
    cfg.write({"runtime": rt})
    p = "%s crio " % name
    pods = {}
    try:
        pods["field"] = Pod(shim, work, field=True)
        pods["both"] = Pod(shim, work, field=True, annotation="first")
        pods["plain"] = Pod(shim, work)
        pods["bare"] = Pod(rt, work, field=True, annotation="first")
        ids = [x.c.id for x in pods.values()]

        with open(pods["field"].process_file(["true"])) as f:
            text = f.read()
        chk.contains(p + "the process file carries the handler's initial-only field",
                     text, '"execCPUAffinity":{"initial":"0"}')

        # conmon's runtime argv, recorded by a wrapper that then execs the shim
        rec = os.path.join(work, "argv-%s" % name)
        wrapper = shimlib.write_script(os.path.join(work, "record-%s" % name),
                                       "#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\nexec %s \"$@\"\n"
                                       % (rec, shim))
        r = pods["both"].exec_sync(["true"], runtime=wrapper)
        with open(rec) as f:
            argv = f.read().splitlines()
        want = ["--root=" + pods["both"].root, "exec", "--pid-file", "P", "--process", "F",
                "--detach", pods["both"].c.id]
        got = [a if i not in (3, 5) else "PF"[(i - 3) // 2] for i, a in enumerate(argv)]
        chk.eq(p + "conmon runs RUNTIME --root=R exec --pid-file P --process F --detach ID",
               (r, got), ((0, "", ""), want), argv)

        sync = {k: pod.exec_sync(ALLOWED) for k, pod in pods.items()}
        chk.eq(p + "ExecSync both: process and child on CPU 0",
               (sync["both"][0], shimlib.allowed_lists(sync["both"][1])), (0, ["0", "0"]),
               sync["both"])
        chk.eq(p + "ExecSync bare: on 0-1 (the runtime ignores field and annotation)",
               (sync["bare"][0], shimlib.allowed_lists(sync["bare"][1])), (0, ["0-1", "0-1"]),
               sync["bare"])
        # initial only: final is left to the kernel's join, as runc >= 1.3
        # leaves it (decision table R22): since 6.2 the join keeps
        # cpuset & initial, before it the whole cpuset, as bare.
        want = ["0", "0"] if fixture.kernel_keeps_requested_mask() else ["0-1", "0-1"]
        chk.eq(p + "ExecSync field (initial only): where runc >= 1.3 puts it (%s)" % want[0],
               (sync["field"][0], shimlib.allowed_lists(sync["field"][1])), (0, want),
               sync["field"])
        chk.eq(p + "ExecSync plain: byte-identical to bare", sync["plain"], sync["bare"])
        for k in ("both", "plain", "bare"):
            chk.eq(p + "ExecSync %s: exit 7, stdout and stderr" % k, pods[k].exec_sync(STATUS),
                   (7, "out\n", "err\n"))
        for prog in ("/nope", "nope"):
            b = norm(pods["bare"].exec_sync([prog]), ids, rt, name)
            for k in ("both", "plain"):
                chk.eq(p + "ExecSync %s %s: the bare runtime's result" % (k, prog),
                       norm(pods[k].exec_sync([prog]), ids, shim, name), b)

        timed = {}
        for k in ("both", "bare"):
            start = time.monotonic()
            timed[k] = (pods[k].exec_sync(["sleep", "5"], timeout=1), time.monotonic() - start)
        chk.eq(p + "ExecSync -T 1 both: conmon's timeout, as bare", timed["both"][0],
               timed["bare"][0], timed)
        chk.check(p + "ExecSync -T 1: (-1, %r) after ~1 s, both %.2f s, bare %.2f s" % (
            TIMED_OUT, timed["both"][1], timed["bare"][1]),
            timed["bare"][0] == (-1, "", TIMED_OUT) and timed["both"][1] < 4 and
            timed["bare"][1] < 4, timed)
        time.sleep(0.5)
        chk.eq(p + "ExecSync -T 1: the same processes left in the container as bare",
               pods["both"].exec_sync(SLEEPERS), pods["bare"].exec_sync(SLEEPERS))

        stream = {k: pod.stream_exec(ALLOWED) for k, pod in pods.items()}
        chk.eq(p + "stream exec both: process and child on CPU 0",
               (stream["both"][0], shimlib.allowed_lists(stream["both"][1])), (0, ["0", "0"]),
               stream["both"])
        chk.eq(p + "stream exec field: where runc >= 1.3 puts it (%s)" % want[0],
               (stream["field"][0], shimlib.allowed_lists(stream["field"][1])), (0, want),
               stream["field"])
        chk.eq(p + "stream exec plain: byte-identical to bare", stream["plain"], stream["bare"])
        for k in ("both", "bare"):
            chk.eq(p + "stream exec %s: exit 7, stdout and stderr" % k,
                   pods[k].stream_exec(STATUS), (7, "out\n", "err\n"))
        # CRI-O with cgroup_manager = "systemd" puts --systemd-cgroup before exec
        sysd = {k: pods[k].stream_exec(ALLOWED, systemd=True) for k in ("both", "plain", "bare")}
        chk.eq(p + "stream exec --systemd-cgroup both: on CPU 0",
               (sysd["both"][0], shimlib.allowed_lists(sysd["both"][1])), (0, ["0", "0"]),
               sysd["both"])
        chk.eq(p + "stream exec --systemd-cgroup plain: byte-identical to bare",
               norm(sysd["plain"], ids, shim, name), norm(sysd["bare"], ids, rt, name))
        tty = ["sh", "-c", "tty; grep Cpus_allowed_list /proc/self/status; exit 3"]
        for k, want in (("both", "0"), ("bare", "0-1")):
            r = pods[k].stream_exec_tty(tty)
            # Bare crun 1.8.1 now and then writes an empty coloured log
            # line to the pty before the program's output: find the tty
            # line rather than expect it first.
            chk.check(p + "stream exec tty %s: a tty, on %s, exit 3" % (k, want),
                      r[0] == 3 and
                      any(x.startswith("/dev/pts/") for x in r[1].splitlines()) and
                      shimlib.allowed_lists(r[1]) == [want], r)
    finally:
        for pod in pods.values():
            pod.cleanup()


def norm(result, ids, runtime, name):
    return tuple(shimlib.normalise(crilib.normalise_ids(x.replace(runtime, name), ids))
                 if isinstance(x, str) else x for x in result)


def main():
    fixture.require_root()
    fixture.require_busybox()
    if fixture.find_runtime("conmon") is None:
        fixture.skip("conmon not installed (apt-get install conmon)")
    if (os.cpu_count() or 1) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("needs CPUs 0 and 1")
    if not fixture.prepare_host():
        print("FAIL: prepare-host.sh failed", file=sys.stderr)
        return 1
    shim = shimlib.shim_path()
    chk = shimlib.Checks()
    work = shimlib.workdir("execaff-crio-")
    os.mkdir(os.path.join(work, "attach"))
    return shimlib.run_per_runtime_with_default_config(
        chk, "crio replay", lambda name, rt, cfg: check_runtime(chk, name, rt, shim, cfg, work))


if __name__ == "__main__":
    sys.exit(main())
