#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim is the bare runtime wherever it does not pin (runc, crun).

For each runtime:

1. Lifecycle parity.  Two containers from identical bundles, both opted in
   (annotation "first"): one driven through the shim, one through the bare
   runtime.  create, state, exec (created), start, state, pause, exec
   (paused), resume, a series of execs, exec --detach --pid-file, kill,
   state, exec (stopped), delete, state/kill/delete/exec of the deleted id must
   give the same exit codes and the same output once ids, paths and
   timestamps are normalised.  The execs cover exit 0 and 7, a file that is
   not executable, exit 127, death by SIGKILL (137), a directory, and a
   program that is missing (/nope, nope, a PATH that finds nothing): the
   shim hands those over untouched, so the runtime's own error comes out.
2. Byte-identical hand-over.  EXECAFF_RUNTIME is a wrapper script that
   records its argv, environment, fds and affinity, then execs the real
   runtime.  A non-opted-in exec (several forms) must reach it with the
   shim's argv, environment and fds unchanged, and on the CPUs the shim was
   started on — exactly as when the wrapper is called directly.  A pinned
   exec must differ only by `--preserve-fds 1` and the trampoline prefix —
   over a runtime that applies the field itself (tests/runtimes.txt), only
   by `--process /proc/self/fd/N` carrying the decision (spec/native.md).
   housekeeping_cpus from the config sets initial = K ∪ F.
3. --detach --pid-file names the user's process (comm, cmdline), pinned
   and not.
4. A program that exists but whose final execve fails (ENOEXEC, a missing
   interpreter) exits 1 pinned, as with the bare runtime; the message is
   the trampoline's — over a runtime that applies the field, the runtime's
   own exit code and message.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_shim_passthrough.py [runtime ...]   (default: runc crun)
"""

import json
import os
import re
import shutil
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

CPUSET = "0-1"

# name, CLI args (None: process form with PROCESS args), process args
EXEC_CASES = [
    ("true", ["true"]),
    ("exit 7", ["sh", "-c", "exit 7"]),
    ("make /x (0644)", ["sh", "-c", "echo > /x; chmod 644 /x"]),
    ("/x not executable", ["/x"]),
    ("exit 127", ["sh", "-c", "exit 127"]),
    ("kill -9 $$ (137)", ["sh", "-c", "kill -9 $$"]),
    ("/etc is a directory", ["/etc"]),
    ("missing /nope", ["/nope"]),
    ("missing nope (PATH lookup)", ["nope"]),
    ("stdout and stderr", ["sh", "-c", "echo out; echo err >&2; exit 3"]),
]


def state_view(text, repl):
    """state JSON minus what differs between two containers by nature."""
    try:
        d = json.loads(text)
    except ValueError:
        return ("not JSON", shimlib.normalise(text, repl))
    for k in ("pid", "created"):
        if k in d:
            d[k] = "<%s>" % k
    return json.loads(shimlib.normalise(json.dumps(d, sort_keys=True), repl))


class Side:
    """One container driven through one binary (the shim or the runtime)."""

    def __init__(self, label, binary, env, rt):
        self.label, self.binary, self.env = label, binary, env
        self.c = fixture.Container(rt, cpus=CPUSET,
                                   annotations={ANNOTATION: "first"},
                                   start=False, env=env)
        self.c.runtime = binary       # every call, cleanup included, via binary
        self.repl = [(self.c.bundle.dir, "<BUNDLE>"), (self.c.root, "<ROOT>"),
                     (self.c.id, "<ID>"), (self.c._tmp, "<TMP>")]

    def call(self, *args, **kw):
        return self.c.rt(*args, **kw)

    def norm(self, r):
        return (r.returncode, shimlib.normalise(r.stdout, self.repl),
                shimlib.normalise(r.stderr, self.repl))


def lifecycle_parity(chk, rt_name, rt, shim):
    shim_side = Side("shim", shim, shimlib.shim_env(runtime=rt), rt)
    bare_side = Side("bare", rt, None, rt)
    sides = (shim_side, bare_side)
    try:
        def both(name, fn, compare="all"):
            rs = [fn(s) for s in sides]
            if compare == "state":
                got = [(r.returncode, state_view(r.stdout, s.repl),
                        shimlib.normalise(r.stderr, s.repl)) for r, s in zip(rs, sides)]
            else:
                got = [s.norm(r) for r, s in zip(rs, sides)]
            chk.eq("%s lifecycle %s: shim == bare" % (rt_name, name), got[0], got[1],
                   "shim: %s\nbare: %s" % tuple(rs))
            return rs

        def create(s):
            with open(s.c.init_log, "ab") as log:
                r = fixture.run(s.c.argv("create", "--bundle", s.c.bundle.dir, s.c.id),
                                stdout=log, stderr=log, env=s.env)
            s.c.created = True
            return fixture.Result(r.args, r.returncode, "", s.c.read_init_log())

        both("create", create)
        both("state (created)", lambda s: s.call("state", s.c.id), "state")
        both("exec (created)", lambda s: s.call("exec", s.c.id, "sh", "-c", "exit 5"))
        both("start", lambda s: s.call("start", s.c.id))
        rs = both("state (running)", lambda s: s.call("state", s.c.id), "state")
        chk.eq("%s lifecycle state is running" % rt_name,
               json.loads(rs[0].stdout or "{}").get("status"), "running", rs[0])
        both("pause", lambda s: s.call("pause", s.c.id))
        both("state (paused)", lambda s: s.call("state", s.c.id), "state")
        both("exec (paused)", lambda s: s.call("exec", s.c.id, "true"))
        both("resume", lambda s: s.call("resume", s.c.id))

        for name, args in EXEC_CASES:
            rs = both("exec %s (cli)" % name, lambda s: s.call("exec", s.c.id, *args))
            print("     (%s exec %s: rc %d)" % (rt_name, name, rs[0].returncode))
            if name.startswith("make"):
                continue
            both("exec %s (process)" % name,
                 lambda s: s.c.exec_process(s.c.process_json(args)))
        # A PATH in which nothing is found: the shim looks the program up
        # with the exec's own environment, so it hands this over too.
        both("exec -e PATH=/nowhere sh",
             lambda s: s.call("exec", "-e", "PATH=/nowhere", s.c.id, "sh", "-c", "true"))
        # runc appends -e to config.json's env; crun replaces the env by the
        # -e values, PATH included, and so finds no "sh".
        both("exec -e A=b sh (crun: no PATH left)",
             lambda s: s.call("exec", "-e", "A=b", s.c.id, "sh", "-c", "true"))
        both("exec -e A=b -e PATH=/bin sh",
             lambda s: s.call("exec", "-e", "A=b", "-e", "PATH=/bin", s.c.id, "sh", "-c",
                              "echo $A"))
        both("exec --process with env PATH=/nowhere",
             lambda s: s.c.exec_process(s.c.process_json(
                 ["sh", "-c", "true"], env=["PATH=/nowhere"])))
        # PATH elements that are empty or relative: runc (Go) refuses a
        # match there, crun skips empty ones and takes relative ones from
        # cwd; pinned, the outcome must be the bare runtime's.
        for path, cwd in (("bin", "/"), (".", "/bin"), (":/bin", "/bin"), ("/bin:", "/bin"),
                          ("/nowhere:", "/bin"), (":/nowhere", "/bin"), ("", "/bin"),
                          ("/nowhere:bin", "/")):
            both("exec --process PATH=%r cwd=%s" % (path, cwd),
                 lambda s: s.c.exec_process(s.c.process_json(
                     ["sh", "-c", "pwd"], env=["PATH=" + path], cwd=cwd)))
        both("exec --cwd /tmp ../bin/true (relative program)",
             lambda s: s.call("exec", "--cwd", "/tmp", s.c.id, "../bin/true"))

        def detached(s):
            pid_file = os.path.join(s.c._tmp, "exec.pid")
            r = s.call("exec", "--detach", "--pid-file", pid_file, s.c.id, "sleep", "30")
            pid = open(pid_file).read() if os.path.exists(pid_file) else None
            comm = wait_comm(pid, "sleep") if pid else None
            if pid:
                kill_quietly(pid)
            return fixture.Result(r.args, r.returncode,
                                  "pid file %s, comm %r, trailing newline %s" % (
                                      "present" if pid else "missing", comm,
                                      pid is not None and pid.endswith("\n")),
                                  r.stderr)
        both("exec --detach --pid-file", detached)

        both("kill KILL", lambda s: s.call("kill", s.c.id, "KILL"))
        for s in sides:
            wait_stopped(s)
        both("state (stopped)", lambda s: s.call("state", s.c.id), "state")
        both("exec (stopped)", lambda s: s.call("exec", s.c.id, "true"))
        both("exec --process (stopped)", lambda s: s.c.exec_process(["true"]))
        both("delete", lambda s: s.call("delete", s.c.id))
        for s in sides:
            s.c.created = False
        both("state (deleted)", lambda s: s.call("state", s.c.id))
        both("kill (deleted)", lambda s: s.call("kill", s.c.id, "KILL"))
        both("delete (deleted)", lambda s: s.call("delete", s.c.id))
        both("delete --force (deleted)", lambda s: s.call("delete", "--force", s.c.id))
        both("exec (deleted)", lambda s: s.call("exec", s.c.id, "true"))
    finally:
        for s in sides:
            s.c.cleanup()


def wait_stopped(side, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = side.call("state", side.c.id)
        if r.returncode != 0 or '"stopped"' in r.stdout:
            return
        time.sleep(0.05)


def read_proc(pid, name):
    try:
        with open("/proc/%s/%s" % (pid, name), "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return None


def wait_comm(pid, want, timeout=2.0):
    """comm of pid, waiting a little for an exec in flight to complete."""
    end = time.monotonic() + timeout
    comm = read_proc(pid, "comm")
    while comm is not None and comm.strip() != want and time.monotonic() < end:
        time.sleep(0.01)
        comm = read_proc(pid, "comm")
    return comm.strip() if comm is not None else None


def kill_quietly(pid):
    try:
        os.kill(int(pid), 9)
    except (OSError, ValueError):
        pass


# ------------------------------------------------------------ hand-over

RECORDER = r"""#!/bin/sh
# Records how it was started, then becomes the real runtime.
out=%(out)s
n=$(ls "$out" | wc -l)
d="$out/$n"
mkdir "$d"
cat /proc/$$/cmdline > "$d/cmdline"
cat /proc/$$/environ > "$d/environ"
grep Cpus_allowed_list /proc/$$/status > "$d/affinity"
for f in /proc/$$/fd/*; do
  printf '%%s %%s\n' "${f##*/}" "$(readlink "$f" | sed 's/[0-9][0-9]*/N/g')"
done > "$d/fds"
exec %(runtime)s "$@"
"""


def read_record(d):
    def rd(name, binary=False):
        with open(os.path.join(d, name), "rb") as f:
            data = f.read()
        return data if binary else data.decode()
    argv = rd("cmdline", True).split(b"\0")[:-1]
    env = rd("environ", True).split(b"\0")[:-1]
    return {
        # argv[0] is /bin/sh, argv[1] the script: the runtime's argv from 2
        "args": [a.decode() for a in argv[2:]],
        "env": [e.decode() for e in env],
        "affinity": rd("affinity").split(":", 1)[1].strip(),
        "fds": rd("fds"),
    }


class Recorder:
    def __init__(self, rt, workdir):
        self.out = os.path.join(workdir, "calls")
        os.mkdir(self.out)
        # basename starts with the runtime's: the shim infers the state root
        # from it when no --root is given (here --root is always given).
        self.path = shimlib.write_script(
            os.path.join(workdir, os.path.basename(rt) + "-recorder"),
            RECORDER % {"out": self.out, "runtime": rt})

    def last(self):
        n = len(os.listdir(self.out))
        return read_record(os.path.join(self.out, str(n - 1))) if n else None


def handover(chk, rt_name, rt, shim, workdir):
    rec = Recorder(rt, workdir)
    plain = fixture.Container(rt, cpus=CPUSET)
    pinned = fixture.Container(rt, cpus=CPUSET, annotations={ANNOTATION: "first"})
    try:
        hold = os.path.join(workdir, "extra-fd")
        with open(hold, "w") as f:
            f.write("x")
        # The caller's fd 7 (not preserved) must reach the runtime all the
        # same; the shim is started on CPU 1 only.
        wrap = ["/usr/bin/taskset", "-c", "1", "/bin/sh", "-c",
                'f=$1; shift; exec "$@" 7<"$f"', "sh", hold]
        if not os.access(wrap[0], os.X_OK):
            wrap = ["/bin/sh", "-c", 'f=$1; shift; exec "$@" 7<"$f"', "sh", hold]
        env = shimlib.shim_env(runtime=rec.path, EXECAFF_TEST_MARK="1 2\t3")
        log = os.path.join(workdir, "rt.log")
        pid_file = os.path.join(workdir, "p.pid")
        proc_file = plain.write_process(plain.process_json(["sh", "-c", "exit 4"]))
        forms = [
            ("cli", ["exec", plain.id, "sh", "-c", "exit 4"], 4),
            ("process", ["exec", "--process", proc_file, plain.id], 4),
            ("--log/--log-format/--debug globals",
             ["--log", log, "--log-format=json", "--debug", "exec", "-e", "A=b c",
              "--cwd", "/tmp", plain.id, "/bin/sh", "-c", "exit 4"], 4),
            ("--detach --pid-file", ["exec", "--detach", "--pid-file", pid_file,
                                     plain.id, "true"], 0),
            # both runtimes take "--" after the id as the program; crun 1.28
            # then exits 1, not 255, as for every program it cannot start:
            # for the peers only the direct call's exit code is compared
            ("-- after the id", ["exec", plain.id, "--", "sh", "-c", "exit 4"],
             None if rt_name in shimlib.runtime_list.names(applies="field") else 255),
            ("missing id", ["exec", "no-such-id", "true"], None),
            ("no id at all", ["exec"], None),
            ("not exec: state", ["state", plain.id], 0),
        ]
        for name, args, want_rc in forms:
            label = "%s hand-over %s" % (rt_name, name)
            argv = [shim, "--root", plain.root] + args
            r = fixture.run(wrap + argv, env=env)
            via_shim = rec.last()
            direct_r = fixture.run(wrap + [rec.path] + argv[1:], env=env)
            direct = rec.last()
            if want_rc is not None:
                chk.eq(label + ": rc", r.returncode, want_rc, r)
            chk.eq(label + ": rc as direct call", r.returncode, direct_r.returncode,
                   "shim: %s\ndirect: %s" % (r, direct_r))
            if via_shim is None or direct is None:
                chk.check(label + ": runtime was called", False, r)
                continue
            chk.eq(label + ": argv byte-identical", via_shim["args"], argv[1:])
            chk.eq(label + ": environment identical", via_shim["env"], direct["env"])
            chk.eq(label + ": environment is the caller's",
                   sorted(via_shim["env"]), sorted("%s=%s" % kv for kv in env.items()))
            chk.eq(label + ": fds identical", via_shim["fds"], direct["fds"])
            chk.check(label + ": caller's fd 7 reached the runtime",
                      re.search(r"^7 ", via_shim["fds"], re.M) is not None, via_shim["fds"])
            chk.eq(label + ": affinity untouched", via_shim["affinity"], direct["affinity"])
            if wrap[0].endswith("taskset"):
                chk.eq(label + ": runtime on the caller's CPU 1", via_shim["affinity"], "1")
            if os.path.exists(pid_file):
                kill_quietly(open(pid_file).read())
                os.unlink(pid_file)

        # Pinned: the same argv plus exactly the documented insertions.  The
        # trampoline's fd token says "r" when the runtime is runc: it then
        # looks $PATH up as runc does (Go's lexical Join).
        rules = "" if shimlib.kind_of(rt_name) == "crun" else "r"
        native = rt_name in shimlib.runtime_list.names(applies="field")
        label = "%s hand-over pinned cli" % rt_name
        argv = [shim, "--root", pinned.root, "exec", pinned.id, "sh", "-c", "exit 4"]
        r = fixture.run(wrap + argv, env=env)
        got = rec.last()
        chk.eq(label + ": rc", r.returncode, 4, r)
        if native:
            # The CLI form as the process file the runtime would build.
            chk.check(label + ": argv = shim's as --process /proc/self/fd/N",
                      got["args"][:4] == ["--root", pinned.root, "exec", "--process"] and
                      re.match(r"^/proc/self/fd/\d+$", got["args"][4]) is not None and
                      got["args"][5:] == [pinned.id], got["args"])
        else:
            want = ["--root", pinned.root, "exec", "--preserve-fds", "1", pinned.id,
                    "/proc/self/fd/3", "3" + rules, "0", "sh", "-c", "exit 4"]
            chk.eq(label + ": argv = shim's + --preserve-fds 1 + trampoline", got["args"],
                   want)
        chk.eq(label + ": runtime starts on initial (housekeeping 1 + final 0)",
               got["affinity"], "0-1")
        memfd = r"^\d+ /memfd:execaff-process" if native else r"^3 /memfd:execaff-trampoline"
        chk.check(label + ": %s memfd" % ("process file" if native else "trampoline at fd 3"),
                  re.search(memfd, got["fds"], re.M) is not None, got["fds"])
        label = "%s hand-over pinned --preserve-fds 2" % rt_name
        argv = [shim, "--root", pinned.root, "exec", "--preserve-fds=2", pinned.id,
                "sh", "-c", "exit 4"]
        r = fixture.run(["/bin/sh", "-c", 'exec "$@" 3</dev/null 4</dev/null', "sh"] + argv,
                        env=env)
        got = rec.last()
        chk.eq(label + ": rc", r.returncode, 4, r)
        if native:
            # The process file's fd comes after the preserved ones (3, 4).
            n = got["args"][5][len("/proc/self/fd/"):] if len(got["args"]) > 5 else ""
            chk.check(label + ": argv, the process file after the preserved fds",
                      got["args"][:5] == ["--root", pinned.root, "exec", "--preserve-fds=2",
                                          "--process"] and n.isdigit() and int(n) >= 5
                      and got["args"][6:] == [pinned.id], got["args"])
        else:
            chk.eq(label + ": argv", got["args"],
                   ["--root", pinned.root, "exec", "--preserve-fds=3", pinned.id,
                    "/proc/self/fd/5", "5" + rules, "0", "sh", "-c", "exit 4"])
        # housekeeping_cpus from the config: initial = K ∪ F, not all CPUs.
        on_one = fixture.Container(rt, cpus=CPUSET, annotations={ANNOTATION: "1"})
        try:
            cfg = shimlib.write_config(os.path.join(workdir, "hk.json"),
                                       {"runtime": rec.path, "housekeeping_cpus": "1"})
            for name, env_, want_initial in (
                    ("housekeeping_cpus 1", shimlib.shim_env(config=cfg), "1"),
                    ("no housekeeping_cpus", shimlib.shim_env(runtime=rec.path), CPUSET)):
                label = "%s hand-over pinned (annotation 1, %s)" % (rt_name, name)
                argv = [shim, "--root", on_one.root, "exec", on_one.id, "sh", "-c", "exit 4"]
                r = fixture.run(argv, env=env_)
                got = rec.last()
                chk.eq(label + ": rc", r.returncode, 4, r)
                if native:
                    chk.eq(label + ": no trampoline, a process file", got["args"][3:4],
                           ["--process"])
                else:
                    chk.eq(label + ": trampoline final 1", got["args"][6:10],
                           ["/proc/self/fd/3", "3" + rules, "1", "sh"])
                chk.eq(label + ": runtime starts on initial %s" % want_initial,
                       got["affinity"], want_initial)
        finally:
            on_one.cleanup()
    finally:
        pinned.cleanup()
        plain.cleanup()


def trampoline_failures(chk, rt_name, rt, shim):
    """When the program exists but its final execve fails (ENOEXEC, a
    missing interpreter), the bare runtime exits 1; pinned, the trampoline
    makes that execve and exits 1 too, with its own message.

    Over a runtime that applies the field (tests/runtimes.txt) no
    trampoline runs: the pinned exec exits as the bare runtime does, with
    its message (runc 1.3.6: 255)."""
    env = shimlib.shim_env(runtime=rt)
    with fixture.Container(rt, cpus=CPUSET, annotations={ANNOTATION: "first"}) as c:
        r = c.exec(["sh", "-c", "echo garbage > /g; chmod 755 /g; "
                    "printf '#!/nonexistent\\n' > /bi; chmod 755 /bi"])
        chk.eq("%s trampoline failures: setup" % rt_name, r.returncode, 0, r)
        native = rt_name in shimlib.runtime_list.names(applies="field")
        for prog, want, needle in (("/g", 1, "exec format error"),
                                   ("/bi", 1, "no such file or directory")):
            label = "%s trampoline failure %s" % (rt_name, prog)
            shim_r = fixture.run([shim, "--root", c.root, "exec", c.id, prog], env=env)
            bare_r = c.exec([prog])
            if native:
                chk.eq(label + ": native: exit code and message the bare runtime's",
                       (shim_r.returncode, shimlib.normalise(shim_r.stderr)),
                       (bare_r.returncode, shimlib.normalise(bare_r.stderr)),
                       "shim: %s\nbare: %s" % (shim_r, bare_r))
                continue
            chk.eq(label + ": bare runtime exits 1", bare_r.returncode, 1, bare_r)
            chk.eq(label + ": pinned exits %d" % want, shim_r.returncode, want, shim_r)
            chk.contains(label + ": trampoline's message", shim_r.stderr,
                         'execaff: exec "%s": %s' % (prog, needle))


# ------------------------------------------------------------ pid file

def pid_file_cases(chk, rt_name, rt, shim, workdir):
    env = shimlib.shim_env(runtime=rt)
    for pinned in (False, True):
        ann = {ANNOTATION: "first"} if pinned else {}
        with fixture.Container(rt, cpus=CPUSET, annotations=ann) as c:
            for form in ("cli", "process"):
                label = "%s --detach --pid-file %s %s" % (
                    rt_name, "pinned" if pinned else "unpinned", form)
                pid_file = os.path.join(workdir, "detach-%s-%s.pid" % (pinned, form))
                argv = [shim, "--root", c.root, "exec", "--detach", "--pid-file", pid_file]
                if form == "cli":
                    argv += [c.id, "sleep", "30"]
                else:
                    argv += ["--process", c.write_process(c.process_json(["sleep", "30"])),
                             c.id]
                r = fixture.run(argv, env=env)
                chk.eq(label + ": rc", r.returncode, 0, r)
                try:
                    with open(pid_file) as f:
                        pid = f.read()
                except OSError as e:
                    chk.check(label + ": pid file written", False, e)
                    continue
                try:
                    chk.eq(label + ": comm of the pid is sleep", wait_comm(pid, "sleep"),
                           "sleep")
                    chk.eq(label + ": cmdline", read_proc(pid, "cmdline"), "sleep\x0030\x00")
                    chk.eq(label + ": pid is in the container's pid namespace",
                           os.readlink("/proc/%s/ns/pid" % pid),
                           os.readlink("/proc/%s/ns/pid" % c.pid))
                    status = read_proc(pid, "status") or ""
                    chk.eq(label + ": Cpus_allowed_list",
                           fixture.status_field(status, "Cpus_allowed_list"),
                           "0" if pinned else CPUSET)
                finally:
                    kill_quietly(pid)


def main():
    shimlib.common_setup(min_cpus=2)
    if not shimlib.parse_cpus(CPUSET) <= os.sched_getaffinity(0):
        fixture.skip("the test process may not use CPUs %s" % CPUSET)
    shim = shimlib.shim_path()
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes():
        workdir = shimlib.workdir("execaff-pass-")
        try:
            for name, fn in (("lifecycle", lambda: lifecycle_parity(chk, rt_name, rt, shim)),
                             ("hand-over", lambda: handover(chk, rt_name, rt, shim, workdir)),
                             ("pid file", lambda: pid_file_cases(chk, rt_name, rt, shim,
                                                                 workdir)),
                             ("trampoline failures",
                              lambda: trampoline_failures(chk, rt_name, rt, shim))):
                try:
                    fn()
                except Exception as e:
                    chk.error("%s %s" % (rt_name, name), e)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
