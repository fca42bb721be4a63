#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The fault matrix: execaff-shim when something dies or goes away mid-exec
(issue 11).  Nothing the shim does may hang the node's runtime, and after
every fault the container is usable (a pinned exec still pins) and nothing
the shim made is left behind.

Faults, each over the runtime named on the command line:

* the shim stopped and SIGKILLed after it has applied initial and placed
  its memfds, before the runtime runs (a runtime wrapper that stops itself);
* the runtime SIGKILLed while the exec'd program runs (the program goes on
  as with the bare runtime, pinned);
* the exec'd program SIGKILLed: 137, as with the bare runtime;
* the container stopped (kill KILL) mid-exec: the exec returns;
* the container paused: the exec through the shim ends as the bare one
  does (the same exit code, or both still waiting), and after resume a
  pinned exec works;
* the container deleted (delete --force) mid-exec: the exec returns, the
  state dir and the cgroup are gone;
* the runtime missing, or not executable: exit 1, one message naming it;
* a definitely-missing program: handed to the runtime (its message, 255),
  which starts on initial, not on the caller's CPUs;
* /tmp and /run read-only (a private mount namespace): the exec is pinned.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_fault_matrix.py RUNTIME
"""

import os
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
from shimlib import ANNOTATION  # noqa: E402

PINNED = "Cpus_allowed_list:\t0\n"
GREP = ["grep", "Cpus_allowed_list", "/proc/self/status"]
CPUSET_ROOT = "/sys/fs/cgroup/cpuset"


class PrivateSnapshot(shimlib.Snapshot):
    """What a call left in the given trees only: the shared dirs (/tmp...)
    see the other tests on this host; the load test watches those."""
    SHARED = ()


def wait_for(cond, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(step)
    return cond()


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def cgroup_procs(c):
    path = os.path.join(CPUSET_ROOT, c.bundle.config["linux"]["cgroupsPath"].lstrip("/"),
                        "cgroup.procs")
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return None


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def allowed(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return fixture.status_field(f.read(), "Cpus_allowed_list")
    except OSError:
        return None


def start(argv, env):
    """A process whose output goes to temp files (the exec may detach)."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
    p.files = (out, err)
    return p


def finish(p, timeout=15):
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = "timeout"
    texts = []
    for f in p.files:
        f.seek(0)
        texts.append(f.read().decode(errors="replace"))
        f.close()
    return rc, texts[0], texts[1]


class Faults:
    def __init__(self, chk, rt_name, rt, shim, workdir):
        self.chk, self.rt_name, self.rt, self.shim = chk, rt_name, rt, shim
        self.workdir = workdir
        self.env = shimlib.shim_env(runtime=rt)

    def label(self, text):
        return "%s %s" % (self.rt_name, text)

    def container(self, **kw):
        return fixture.Container(self.rt, cpus="0-1", annotations={ANNOTATION: "first"}, **kw)

    def shim_exec(self, c, args, extra=(), env=None):
        return [self.shim, "--root", c.root, "exec"] + list(extra) + [c.id] + list(args)

    def still_usable(self, name, c):
        r = fixture.run(self.shim_exec(c, GREP), env=self.env)
        self.chk.eq(self.label(name + ": the container is usable, a new exec is pinned"),
                    (r.returncode, r.stdout), (0, PINNED), r)

    def program_pid(self, c, marker):
        """The pid of the container process whose argv holds `marker`."""
        def find():
            for pid in cgroup_procs(c) or []:
                if marker.encode() in cmdline(pid):
                    return pid
            return None
        return wait_for(find)

    # -- the shim stopped and killed before the runtime runs
    def shim_killed_before_runtime(self):
        name = "shim SIGKILLed after placing its memfds, before the runtime"
        with self.container() as c:
            wrapper = shimlib.write_script(os.path.join(self.workdir, "stop-then-runtime"),
                                           '#!/bin/sh\nkill -STOP $$\nexec %s "$@"\n' % self.rt)
            snap = PrivateSnapshot(c.root, self.workdir)
            p = start(self.shim_exec(c, GREP), shimlib.shim_env(runtime=wrapper))
            stopped = wait_for(lambda: proc_state(p.pid) == "T")
            self.chk.check(self.label(name + ": the wrapper stopped itself"), stopped)
            fds = sorted(os.readlink("/proc/%d/fd/%s" % (p.pid, fd))
                         for fd in os.listdir("/proc/%d/fd" % p.pid)) if stopped else []
            self.chk.check(self.label(name + ": the trampoline's memfd was in place"),
                           any("memfd:execaff-trampoline" in t for t in fds), fds)
            self.chk.eq(self.label(name + ": it stood on initial"), allowed(p.pid), "0-1")
            p.send_signal(signal.SIGKILL)
            rc, _, _ = finish(p)
            self.chk.eq(self.label(name + ": killed"), rc, -signal.SIGKILL)
            self.chk.eq(self.label(name + ": nothing left behind"),
                        snap.diff(ignore=(os.path.join(self.workdir, "stop-then-runtime"),)), "")
            self.chk.eq(self.label(name + ": nothing joined the container"),
                        cgroup_procs(c), [c.pid])
            self.still_usable(name, c)

    # -- the runtime killed while the program runs
    def runtime_killed_mid_exec(self):
        name = "runtime SIGKILLed while the exec'd program runs"
        with self.container() as c:
            p = start(self.shim_exec(c, ["sleep", "31"]), self.env)
            prog = self.program_pid(c, "31")
            self.chk.check(self.label(name + ": the program started"), prog, c.root)
            self.chk.eq(self.label(name + ": the program is pinned"), allowed(prog), "0")
            p.send_signal(signal.SIGKILL)  # p is the runtime: the shim exec'd it
            rc, _, _ = finish(p)
            self.chk.eq(self.label(name + ": the runtime died of it"), rc, -signal.SIGKILL)
            self.chk.eq(self.label(name + ": the program goes on, pinned, as with the bare runtime"),
                        allowed(prog), "0")
            os.kill(prog, signal.SIGKILL)
            wait_for(lambda: prog not in (cgroup_procs(c) or []))
            self.still_usable(name, c)

    # -- the exec'd program killed
    def program_killed(self):
        name = "the exec'd program SIGKILLed"
        with self.container() as c:
            p = start(self.shim_exec(c, ["sleep", "32"]), self.env)
            prog = self.program_pid(c, "32")
            self.chk.check(self.label(name + ": the program started"), prog)
            os.kill(prog, signal.SIGKILL)
            rc, _, err = finish(p)
            self.chk.eq(self.label(name + ": exit 137 as with the bare runtime"), rc, 137, err)
            self.still_usable(name, c)

    # -- the container stopped mid-exec
    def container_stopped_mid_exec(self):
        name = "container stopped (kill KILL) mid-exec"
        with self.container() as c:
            p = start(self.shim_exec(c, ["sleep", "33"]), self.env)
            self.chk.check(self.label(name + ": the program started"), self.program_pid(c, "33"))
            r = c.rt("kill", c.id, "KILL")
            self.chk.eq(self.label(name + ": kill"), r.returncode, 0, r)
            rc, _, err = finish(p)
            self.chk.check(self.label(name + ": the exec returned (rc %s)" % rc),
                           rc != "timeout", err)
            stopped = wait_for(lambda: c.state().get("status") == "stopped")
            self.chk.check(self.label(name + ": the container is stopped"), stopped)
            r = fixture.run(self.shim_exec(c, ["true"]), env=self.env)
            bare = c.exec(["true"])
            self.chk.eq(self.label(name + ": an exec into it fails as with the bare runtime"),
                        r.returncode, bare.returncode, r)

    # -- the container paused
    def container_paused(self):
        name = "container paused"
        with self.container() as c:
            r = c.rt("pause", c.id)
            self.chk.eq(self.label(name + ": pause"), r.returncode, 0, r)
            bare = start(c.argv("exec", c.id, "true"), None)
            via = start(self.shim_exec(c, ["true"]), self.env)
            bare_rc, _, bare_err = finish(bare, timeout=5)
            via_rc, _, via_err = finish(via, timeout=5)
            self.chk.eq(self.label(name + ": the exec ends as the bare one (%s)" % bare_rc),
                        via_rc, bare_rc, "shim: %s\nbare: %s" % (via_err, bare_err))
            r = c.rt("resume", c.id)
            self.chk.eq(self.label(name + ": resume"), r.returncode, 0, r)
            wait_for(lambda: cgroup_procs(c) == [c.pid], timeout=5)
            self.still_usable(name, c)
            self.chk.eq(self.label(name + ": nothing but the init left in the cgroup"),
                        wait_for(lambda: cgroup_procs(c) == [c.pid] and cgroup_procs(c), 5),
                        [c.pid])

    # -- the container deleted mid-exec
    def container_deleted_mid_exec(self):
        name = "container deleted (delete --force) mid-exec"
        c = self.container()
        try:
            cgroup = os.path.join(CPUSET_ROOT, c.bundle.config["linux"]["cgroupsPath"].lstrip("/"))
            p = start(self.shim_exec(c, ["sleep", "34"]), self.env)
            self.chk.check(self.label(name + ": the program started"), self.program_pid(c, "34"))
            r = c.rt("delete", "--force", c.id)
            self.chk.eq(self.label(name + ": delete --force"), r.returncode, 0, r)
            rc, _, err = finish(p)
            self.chk.check(self.label(name + ": the exec returned (rc %s)" % rc),
                           rc != "timeout", err)
            self.chk.check(self.label(name + ": the state dir is gone"),
                           not os.path.exists(os.path.join(c.root, c.id)))
            self.chk.check(self.label(name + ": the cpuset cgroup is gone"),
                           wait_for(lambda: not os.path.exists(cgroup), 5), cgroup)
            r = fixture.run(self.shim_exec(c, ["true"]), env=self.env)
            bare = c.exec(["true"])
            self.chk.eq(self.label(name + ": a later exec fails as with the bare runtime"),
                        (r.returncode, shimlib.normalise(r.stderr)),
                        (bare.returncode, shimlib.normalise(bare.stderr)))
        finally:
            c.cleanup()

    # -- the runtime missing or not executable
    def runtime_unusable(self):
        with self.container() as c:
            plain = os.path.join(self.workdir, "runtime-0644")
            with open(plain, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(plain, 0o644)
            missing = os.path.join(self.workdir, "no-such-runtime")
            for what, runtime in (("missing", missing), ("not executable (0644)", plain)):
                name = "runtime %s" % what
                snap = PrivateSnapshot(c.root, self.workdir)
                r = fixture.run(self.shim_exec(c, GREP), env=shimlib.shim_env(runtime=runtime))
                self.chk.eq(self.label(name + ": exit 1"), r.returncode, 1, r)
                self.chk.check(self.label(name + ": one execaff-shim line naming it"),
                               r.stderr.startswith("execaff-shim: ") and
                               r.stderr.count("\n") == 1 and runtime in r.stderr, r)
                self.chk.eq(self.label(name + ": nothing left behind"), snap.diff(), "")
                self.chk.eq(self.label(name + ": nothing joined the container"),
                            cgroup_procs(c), [c.pid])

    # -- /tmp and /run read-only
    def read_only_tmp_and_run(self):
        name = "/tmp and /run read-only"
        base = tempfile.mkdtemp(prefix="execaff-rofs-", dir="/var/tmp")
        old = os.environ.get("EXECAFF_TEST_TMPDIR")
        os.environ["EXECAFF_TEST_TMPDIR"] = base  # bundle and state outside /tmp
        try:
            with self.container() as c:
                script = ("mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && "
                          "mount --bind /run /run && mount -o remount,bind,ro /run && "
                          "touch /tmp/x 2>/dev/null && exit 99; "
                          "touch /run/x 2>/dev/null && exit 98; exec \"$@\"")
                for form, extra in (("cli", GREP), ("process", None)):
                    if extra is None:
                        argv = [self.shim, "--root", c.root, "exec", "--process",
                                c.write_process(c.process_json(GREP)), c.id]
                    else:
                        argv = self.shim_exec(c, extra)
                    r = fixture.run(["unshare", "-m", "sh", "-c", script, "sh"] + argv,
                                    env=self.env)
                    self.chk.eq(self.label("%s [%s]: exit 0, pinned" % (name, form)),
                                (r.returncode, r.stdout), (0, PINNED), r)
        finally:
            if old is None:
                os.environ.pop("EXECAFF_TEST_TMPDIR", None)
            else:
                os.environ["EXECAFF_TEST_TMPDIR"] = old
            subprocess.run(["rm", "-rf", base])

    # -- the race a hostile container could try on a missing program
    def missing_program_hand_over(self):
        """A definitely-missing program is handed to the runtime (its own
        message and 255), but the runtime starts on initial: a program a
        container process creates meanwhile does not start on every CPU."""
        name = "definitely-missing program handed over"
        record = os.path.join(self.workdir, "runtime-affinity")
        wrapper = shimlib.write_script(
            os.path.join(self.workdir, "record-then-runtime"),
            "#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status > %s\nexec %s \"$@\"\n" % (
                record, self.rt))
        cfg = shimlib.write_config(os.path.join(self.workdir, "hk0.json"),
                                   {"runtime": wrapper, "housekeeping_cpus": "0"})
        with fixture.Container(self.rt, cpus="0-1", annotations={ANNOTATION: "0"}) as c:
            r = fixture.run(self.shim_exec(c, ["/nope"]), env=shimlib.shim_env(config=cfg))
            bare = c.exec(["/nope"])
            self.chk.eq(self.label(name + ": the runtime's exit code"), r.returncode,
                        bare.returncode, r)
            self.chk.eq(self.label(name + ": the runtime's message"),
                        shimlib.normalise(r.stderr), shimlib.normalise(bare.stderr))
            with open(record) as f:
                self.chk.eq(self.label(name + ": the runtime ran on initial (0)"),
                            f.read(), "Cpus_allowed_list:\t0\n")

    def all(self):
        for case in (self.missing_program_hand_over, self.shim_killed_before_runtime, self.runtime_killed_mid_exec,
                     self.program_killed, self.container_stopped_mid_exec,
                     self.container_paused, self.container_deleted_mid_exec,
                     self.runtime_unusable, self.read_only_tmp_and_run):
            try:
                case()
            except Exception as e:
                self.chk.error(self.label(case.__name__), e)


def main():
    shimlib.common_setup(min_cpus=2)
    shim = shimlib.shim_path()
    if not os.path.isdir(CPUSET_ROOT):
        fixture.skip("needs the cgroup v1 cpuset hierarchy at %s" % CPUSET_ROOT)
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes(sys.argv[:2]):
        Faults(chk, rt_name, rt, shim, shimlib.workdir("execaff-faults-")).all()
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
