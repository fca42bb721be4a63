#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The node config (/etc/execaff/shim.json, or $EXECAFF_CONFIG) read as an
attacker would write it, through execaff-shim over a real runtime
(issue 11, section 3).

CASES is data: each case builds a config (text, mode, owner, and how the
path to it is laid out), optionally sets $EXECAFF_RUNTIME, and states the
exit code and the message for two commands:

* "exec": `exec` of an opted-in container (annotation "first").  A config
  that cannot be used refuses every exec (exit 1, one line naming the file
  and the reason).
* "state": `state ID`, standing for every command the shim passes through.
  A broken config does not stop it when the runtime is known — from
  $EXECAFF_RUNTIME, or from the part of a root-owned file on a safe path
  read before the error — and the shim warns (stderr, and --log).  A file
  that root did not write (owner, mode, a directory others may write, a
  symbolic link) gives no runtime at all.

Then: a runtime that is a directory is one more bad runtime (exit 1, as a
missing or non-executable one; d072d25 gave 126), the warning also goes to
--log FILE (--log-format json), and the clean-up CRI-O does while the file
is half-written — `kill` and `delete` of a live container — works.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_node_config.py [runtime ...]   (default: runc crun)
"""

import json
import os
import stat
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

PREFIX = "execaff-shim: "
PASSED = "passing \"state\" through to runtime"
NOBODY = 65534


def half(rt):
    """A config cut after its runtime: what a reader sees mid-write."""
    return '{"runtime": "%s", "housekeeping_cpus": "0", "hand' % rt


# Each case: name; "text" (str, or a function of the runtime's path);
# "mode" (0644), "uid" (0); "layout": how the path is built (see
# NodeConfigTests.place); "env_runtime": set $EXECAFF_RUNTIME; "exec" and
# "state": (exit code, [substrings of stderr]); "warn": the state's stderr
# is the pass-through warning (else it is the error, or empty on success).
CASES = [
    {"name": "duplicate runtime key",
     "text": lambda rt: '{"runtime": "%s", "runtime": "/bin/false"}' % rt,
     "exec": (1, ['duplicate key "runtime"']),
     "state": (1, ['duplicate key "runtime"'])},
    {"name": "duplicate runtime key, EXECAFF_RUNTIME set", "env_runtime": True,
     "text": lambda rt: '{"runtime": "%s", "runtime": "/bin/false"}' % rt,
     "exec": (1, ['duplicate key "runtime"']),
     "state": (0, ['duplicate key "runtime"', PASSED]), "warn": True},
    {"name": "duplicate handler_default key",
     "text": lambda rt: ('{"runtime": "%s", "handler_default": "disable", '
                         '"handler_default": "first"}' % rt),
     "exec": (1, ['duplicate key "handler_default"']),
     "state": (0, ['duplicate key "handler_default"', PASSED]), "warn": True},
    {"name": "half-written after the runtime", "text": half,
     "exec": (1, ["malformed JSON near byte offset"]),
     "state": (0, ["malformed JSON near byte offset", PASSED]), "warn": True},
    {"name": "half-written inside the runtime",
     "text": lambda rt: '{"runtime": "%s' % rt[:5],
     "exec": (1, ["malformed JSON near byte offset"]),
     "state": (1, ["malformed JSON near byte offset"])},
    {"name": "half-written inside the runtime, EXECAFF_RUNTIME set", "env_runtime": True,
     "text": lambda rt: '{"runtime": "%s' % rt[:5],
     "exec": (1, ["malformed JSON near byte offset"]),
     "state": (0, ["malformed JSON near byte offset", PASSED]), "warn": True},
    {"name": "empty, EXECAFF_RUNTIME set", "env_runtime": True, "text": "",
     "exec": (1, ["malformed JSON: the document is empty"]),
     "state": (0, ["the document is empty", PASSED]), "warn": True},
    {"name": "housekeeping_cpus out of range",
     "text": lambda rt: '{"runtime": "%s", "housekeeping_cpus": "0-99999"}' % rt,
     "exec": (1, ['"housekeeping_cpus": invalid CPU list "0-99999": CPU 99999 at offset 2']),
     "state": (0, ["CPU 99999 at offset 2", PASSED]), "warn": True},
    # The forked crun's key: the shim reads it (a bad value is the same
    # error as any other key's) and otherwise ignores it.
    {"name": "crun_first_image_pin true, ignored by the shim",
     "text": lambda rt: '{"runtime": "%s", "crun_first_image_pin": true}' % rt,
     "exec": (0, []), "state": (0, [])},
    {"name": "crun_first_image_pin not a boolean",
     "text": lambda rt: '{"runtime": "%s", "crun_first_image_pin": "yes"}' % rt,
     "exec": (1, ['"crun_first_image_pin" must be true or false']),
     "state": (0, ['"crun_first_image_pin" must be true or false', PASSED]), "warn": True},
    {"name": "runtime of the wrong type",
     "text": '{"runtime": ["/usr/bin/runc"]}',
     "exec": (1, ['"runtime" must be a string']),
     "state": (1, ['"runtime" must be a string'])},
    {"name": "the file is a symbolic link", "layout": "file-symlink",
     "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (1, ["is a symbolic link"]),
     "state": (1, ["is a symbolic link"])},
    {"name": "a directory on the path is a symbolic link", "layout": "dir-symlink",
     "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (1, ["is a symbolic link"]),
     "state": (1, ["is a symbolic link"])},
    {"name": "a directory on the path is group-writable", "layout": "dir-775",
     "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (1, ["on its path is writable by group or others (mode 775)"]),
     "state": (1, ["on its path is writable by group or others (mode 775)"])},
    {"name": "a directory on the path is owned by uid 65534", "layout": "dir-nobody",
     "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (1, ["on its path is owned by uid 65534, not root"]),
     "state": (1, ["on its path is owned by uid 65534, not root"])},
    {"name": "file owned by uid 65534, EXECAFF_RUNTIME set", "uid": NOBODY,
     "env_runtime": True, "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (1, ["owned by uid 65534, not root"]),
     "state": (0, ["owned by uid 65534, not root", PASSED]), "warn": True},
    {"name": "a FIFO at the path", "layout": "fifo", "text": "",
     "exec": (1, ["not a regular file"]),
     "state": (1, ["not a regular file"])},
    {"name": "\"..\" in EXECAFF_CONFIG", "layout": "dotdot",
     "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (1, ['the path must not contain ".."']),
     "state": (1, ['the path must not contain ".."'])},
    # The one safe world-writable directory: root-owned and sticky (/tmp).
    {"name": "a root-owned sticky directory (1777) on the path", "layout": "dir-1777",
     "text": lambda rt: '{"runtime": "%s"}' % rt,
     "exec": (0, []), "state": (0, [])},
    # One rule for a bad runtime: exit 1, whatever is wrong with it.
    {"name": "runtime is a directory", "text": '{"runtime": "/usr"}',
     "exec": (1, ['runtime "/usr"', "is not executable: it is a directory"]),
     "state": (1, ['runtime "/usr"', "is not executable: it is a directory"])},
    {"name": "runtime is not executable", "text": '{"runtime": "/etc/passwd"}',
     "exec": (1, ['runtime "/etc/passwd"', "is not executable"]),
     "state": (1, ['runtime "/etc/passwd"', "is not executable"])},
]


class NodeConfigTests:
    def __init__(self, chk, rt_name, rt, shim, workdir):
        self.chk, self.rt_name, self.rt, self.shim = chk, rt_name, rt, shim
        self.workdir = workdir
        self.pinned = fixture.Container(rt, cpus="0-1", annotations={ANNOTATION: "first"})
        self.containers = [self.pinned]
        self.serial = 0

    def cleanup(self):
        for c in self.containers:
            c.cleanup()

    def place(self, case):
        """Write the case's config where its layout says; returns the path."""
        self.serial += 1
        base = os.path.join(self.workdir, "c%d" % self.serial)
        os.mkdir(base, 0o700)
        layout = case.get("layout", "plain")
        text = case["text"](self.rt) if callable(case["text"]) else case["text"]
        mode, uid = case.get("mode", 0o644), case.get("uid", 0)
        if layout == "fifo":
            path = os.path.join(base, "shim.json")
            os.mkfifo(path, 0o644)
            return path
        if layout in ("dir-775", "dir-nobody", "dir-1777", "dir-symlink"):
            sub = os.path.join(base, "sub")
            os.mkdir(sub)
            os.chmod(sub, {"dir-775": 0o775, "dir-1777": 0o1777}.get(layout, 0o755))
            if layout == "dir-nobody":
                os.chown(sub, NOBODY, -1)
            shimlib.write_config(os.path.join(sub, "shim.json"), text, mode=mode, uid=uid)
            if layout == "dir-symlink":
                os.symlink(sub, os.path.join(base, "link"))
                return os.path.join(base, "link", "shim.json")
            return os.path.join(sub, "shim.json")
        path = shimlib.write_config(os.path.join(base, "shim.json"), text, mode=mode, uid=uid)
        if layout == "file-symlink":
            os.symlink(path, os.path.join(base, "link.json"))
            return os.path.join(base, "link.json")
        if layout == "dotdot":
            os.mkdir(os.path.join(base, "d"))
            return os.path.join(base, "d", "..", "shim.json")
        return path

    def argv(self, command):
        c = self.pinned
        if command == "exec":
            return [self.shim, "--root", c.root, "exec", c.id, "true"]
        return [self.shim, "--root", c.root, "state", c.id]

    def check(self, label, r, rc, needles, warn):
        self.chk.eq(label + ": exit code", r.returncode, rc, r)
        if rc != 0 or warn:
            level = "" if rc != 0 else " (a warning)"
            self.chk.check(label + ": stderr is one execaff-shim line" + level,
                           r.stderr.startswith(PREFIX) and r.stderr.count("\n") == 1, r)
        else:
            self.chk.eq(label + ": nothing on stderr", r.stderr, "", r)
        for n in needles:
            self.chk.contains(label + ": message names %r" % n, r.stderr, n)

    def cases(self):
        for case in CASES:
            path = self.place(case)
            env = shimlib.shim_env(config=path,
                                   runtime=self.rt if case.get("env_runtime") else None)
            for command in ("exec", "state"):
                label = "%s %s (%s)" % (self.rt_name, case["name"], command)
                rc, needles = case[command]
                r = fixture.run(self.argv(command), env=env)
                self.check(label, r, rc, needles + ([path] if rc != 0 or case.get("warn")
                                                    else []),
                           command == "state" and case.get("warn", False))
                if command == "state" and rc == 0:
                    try:
                        state = json.loads(r.stdout)
                    except ValueError:
                        state = {}
                    self.chk.eq(label + ": the runtime's state came through",
                                state.get("id"), self.pinned.id, r)

    def runtime_from_env_is_a_directory(self):
        """The same rule when the directory comes from $EXECAFF_RUNTIME."""
        env = shimlib.shim_env(runtime="/usr")
        for command in ("exec", "state"):
            r = fixture.run(self.argv(command), env=env)
            self.check("%s EXECAFF_RUNTIME is a directory (%s)" % (self.rt_name, command), r, 1,
                       ['runtime "/usr" (from EXECAFF_RUNTIME) is not executable: '
                        "it is a directory"], False)

    def warning_in_log(self):
        path = self.place({"text": half})
        log = os.path.join(self.workdir, "warn.log")
        c = self.pinned
        r = fixture.run([self.shim, "--root", c.root, "--log", log, "--log-format", "json",
                         "state", c.id], env=shimlib.shim_env(config=path))
        label = "%s half-written config, state with --log json" % self.rt_name
        self.chk.eq(label + ": exit code", r.returncode, 0, r)
        try:
            with open(log) as f:
                lines = [json.loads(ln) for ln in f if ln.strip()]
        except (OSError, ValueError) as e:
            lines = [{"error": str(e)}]
        warnings = [ln for ln in lines if ln.get("level") == "warning"]
        self.chk.check(label + ": one warning line in --log naming the file and the runtime",
                       len(warnings) == 1 and path in warnings[0].get("msg", "") and
                       self.rt in warnings[0].get("msg", ""), lines)

    def cleanup_while_half_written(self):
        """What CRI-O does to a pod while the file is being rewritten."""
        c = fixture.Container(self.rt, cpus="0-1", annotations={ANNOTATION: "first"})
        self.containers.append(c)
        path = self.place({"text": half})
        env = shimlib.shim_env(config=path)
        label = "%s half-written config" % self.rt_name
        r = fixture.run([self.shim, "--root", c.root, "exec", c.id, "true"], env=env)
        self.chk.eq(label + ": exec refused", r.returncode, 1, r)
        r = fixture.run([self.shim, "--root", c.root, "kill", c.id, "KILL"], env=env)
        self.chk.eq(label + ": kill passes through", r.returncode, 0, r)
        self.chk.contains(label + ": kill warns", r.stderr, 'passing "kill" through')
        for _ in range(50):
            st = fixture.run([self.rt, "--root", c.root, "state", c.id])
            if '"stopped"' in st.stdout:
                break
            time.sleep(0.1)
        r = fixture.run([self.shim, "--root", c.root, "delete", c.id], env=env)
        self.chk.eq(label + ": delete passes through", r.returncode, 0, r)
        self.chk.contains(label + ": delete warns", r.stderr, 'passing "delete" through')
        st = fixture.run([self.rt, "--root", c.root, "state", c.id])
        self.chk.check(label + ": the container is gone", st.returncode != 0, st)
        c.created = False


def main():
    shimlib.common_setup(min_cpus=2)
    if not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("the test process may not use CPUs 0-1")
    shim = shimlib.shim_path()
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes():
        workdir = shimlib.workdir("execaff-nodecfg-")
        # mkdtemp's 0700 root-owned dir under the root-owned sticky /tmp:
        # a safe path, so each case's own layout decides.
        assert stat.S_IMODE(os.stat(workdir).st_mode) == 0o700
        t = None
        try:
            t = NodeConfigTests(chk, rt_name, rt, shim, workdir)
            for part in (t.cases, t.runtime_from_env_is_a_directory, t.warning_in_log,
                         t.cleanup_while_half_written):
                try:
                    part()
                except Exception as e:  # noqa: BLE001 - a broken sub-case is a failure
                    chk.error("%s %s" % (rt_name, part.__name__), e)
        except Exception as e:  # noqa: BLE001
            chk.error("%s setup" % rt_name, e)
        finally:
            if t is not None:
                t.cleanup()
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
