#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim's errors on bad input, with real containers (runc, crun).

Every error case checks: the exit code (1 for the shim's own errors), the
message on stderr ("execaff-shim: ..." naming what is wrong), and that
nothing was left behind — no new entry in /tmp, /dev/shm, /run/runc,
/run/crun, the container's state dir or the test's work dir (listings
before and after).

Cases: no usable configuration (EXECAFF_CONFIG names a missing file, a
config without a runtime), a config that is not root-owned, group- or
other-writable, not JSON, half-written, empty, with an unknown key or a bad
on_failure, housekeeping_cpus the caller may not use; EXECAFF_RUNTIME naming the shim itself (also through a symlink
and from the config), a relative path, a missing file; an annotation with a
bad value, an annotation outside the cpuset, a process file with a bad
execCPUAffinity; the same errors as JSON lines in --log FILE with
--log-format json; on_failure = "run-unpinned" (the exec runs, a warning is
logged); --debug and "debug": true (the decision on stderr or in --log,
JSON or text); a missing container id and a missing id argument (the runtime's own
exit code and message, also in --log); a runtime that fails (its exit status
and output pass through, also when killed by a signal).

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_shim_errors.py [runtime ...]   (default: runc crun)
"""

import json
import os
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

PREFIX = "execaff-shim: "
# Broken configs whose runtime is still known: commands the shim passes
# through run anyway, with a warning (test_node_config.py checks that).
PASSES_THROUGH = {"config unknown key", "config bad on_failure"}


class ErrorTests:
    def __init__(self, chk, rt_name, rt, shim, workdir):
        self.chk, self.rt_name, self.rt, self.shim = chk, rt_name, rt, shim
        self.workdir = workdir
        self.containers = []
        self.plain = self.container("0-1", {})
        self.pinned = self.container("0-1", {ANNOTATION: "first"})
        self.bad_value = self.container("0-1", {ANNOTATION: "firstt"})
        self.outside = self.container("1", {ANNOTATION: "0"})
        self.offline = self.container("0-1", {ANNOTATION: "5"})

    def container(self, cpus, annotations):
        c = fixture.Container(self.rt, cpus=cpus, annotations=annotations)
        self.containers.append(c)
        return c

    def cleanup(self):
        for c in self.containers:
            c.cleanup()

    def path(self, name):
        return os.path.join(self.workdir, name)

    def config(self, name, content, mode=0o600, uid=0):
        return shimlib.write_config(self.path(name), content, mode=mode, uid=uid)

    # -- running one case
    def run(self, argv, env, expect_new=()):
        """Run argv; returns (Result, what was left behind).

        A new entry in a shared dir (/tmp...) may be another process's: the
        call is then repeated once, and only what the repetition leaves
        behind too counts (a leak by the shim is deterministic)."""
        trees = [self.workdir] + [c.root for c in self.containers]
        snap = shimlib.Snapshot(*trees)
        r = fixture.run(argv, env=env)
        left = snap.diff(ignore=expect_new)
        if snap.shared_only(left):
            for p in expect_new:
                if p and os.path.exists(p):
                    os.unlink(p)
            again = shimlib.Snapshot(*trees)
            fixture.run(argv, env=env)
            left2 = again.diff(ignore=expect_new)
            # (a log the call writes is now the repetition's: the same lines)
            left = "" if not left2 else "%s\n(repeated: %s)" % (left, left2)
        return r, left

    def expect_error(self, name, argv, env, needles, rc=1, log=None):
        label = "%s %s" % (self.rt_name, name)
        r, left = self.run(argv, env, expect_new=(log,) if log else ())
        self.chk.eq(label + ": exit code", r.returncode, rc, r)
        self.chk.check(label + ": stderr is one execaff-shim line",
                       r.stderr.startswith(PREFIX) and r.stderr.count("\n") == 1, r)
        for n in needles:
            self.chk.contains(label + ": message names %r" % n, r.stderr, n)
        self.chk.eq(label + ": nothing left behind", left, "")
        return r

    def exec_argv(self, c, args=("true",), form="cli", globals_=(), process=None):
        argv = [self.shim, "--root", c.root] + list(globals_) + ["exec"]
        if form == "cli":
            return argv + [c.id] + list(args)
        if process is None:
            process = c.process_json(list(args))
        return argv + ["--process", c.write_process(process), c.id]

    # -- the cases
    def config_errors(self):
        rt = self.rt
        missing = self.path("missing.json")
        cases = [
            ("EXECAFF_CONFIG names a missing file", missing,
             [missing, "No such file or directory"]),
            ("config without a runtime", self.config("nort.json", {}),
             ["no runtime configured", self.path("nort.json")]),
            ("config owned by uid 65534",
             self.config("nobody.json", {"runtime": rt}, uid=65534),
             [self.path("nobody.json"), "owned by uid 65534, not root"]),
            ("config group-writable (664)",
             self.config("g.json", {"runtime": rt}, mode=0o664),
             [self.path("g.json"), "writable by group or others (mode 664)"]),
            ("config other-writable (646)",
             self.config("o.json", {"runtime": rt}, mode=0o646),
             [self.path("o.json"), "writable by group or others (mode 646)"]),
            ("config invalid JSON",
             self.config("bad.json", "{runtime: %s}" % rt),
             [self.path("bad.json"), "malformed JSON near byte offset"]),
            ("config half-written",
             self.config("half.json", json.dumps(
                 {"runtime": rt, "handler_default": "first"})[:25]),
             [self.path("half.json"), "malformed JSON near byte offset"]),
            ("config empty", self.config("empty.json", ""),
             [self.path("empty.json"), "empty"]),
            ("config unknown key",
             self.config("key.json", {"runtime": rt, "handler_defualt": "first"}),
             [self.path("key.json"), 'unknown key "handler_defualt"']),
            ("config bad on_failure",
             self.config("onf.json", {"runtime": rt, "on_failure": "ignore"}),
             [self.path("onf.json"), '"on_failure" must be', '"ignore"']),
            ("config runtime is the shim",
             self.config("self.json", {"runtime": self.shim}),
             ["is execaff-shim itself"]),
        ]
        for name, cfg, needles in cases:
            env = shimlib.shim_env(config=cfg)
            self.expect_error(name + " (exec)", self.exec_argv(self.pinned), env, needles)
            if name not in PASSES_THROUGH:  # test_node_config.py: state runs, with a warning
                self.expect_error(name + " (state)",
                                  [self.shim, "--root", self.plain.root, "state", self.plain.id],
                                  env, needles)
            # Errors go to --log FILE too (podman shows the runtime's log).
            log = self.path("cfg-err.log")
            self.expect_error(name + " (exec, --log json)",
                              self.exec_argv(self.pinned, globals_=[
                                  "--log", log, "--log-format", "json"]),
                              env, needles, log=log)
            self.check_json_log(name + " (exec, --log json)", log, "error", needles)

    def runtime_errors(self):
        link = self.path("runc")
        if not os.path.lexists(link):
            os.symlink(self.shim, link)
        cases = [
            ("EXECAFF_RUNTIME is the shim", self.shim, ["is execaff-shim itself"]),
            ("EXECAFF_RUNTIME is a symlink to the shim", link, ["is execaff-shim itself"]),
            ("EXECAFF_RUNTIME relative", os.path.basename(self.rt),
             ["must be an absolute path", "EXECAFF_RUNTIME"]),
            ("EXECAFF_RUNTIME missing", self.path("no-such-runtime"),
             [self.path("no-such-runtime"), "not executable"]),
        ]
        for name, runtime, needles in cases:
            env = shimlib.shim_env(runtime=runtime)
            self.expect_error(name + " (exec)", self.exec_argv(self.plain), env, needles)
            self.expect_error(name + " (create)",
                              [self.shim, "--root", self.plain.root, "create", "--bundle",
                               self.plain.bundle.dir, "never-created"], env, needles)

    def decision_errors(self):
        env = shimlib.shim_env(runtime=self.rt)
        bad = ANNOTATION + ' "firstt"'
        for form in ("cli", "process"):
            self.expect_error("annotation firstt (%s)" % form,
                              self.exec_argv(self.bad_value, form=form), env,
                              [bad, "expected \"first\", \"first-core\", \"disable\" or a CPU list",
                               self.bad_value.id])
            self.expect_error("annotation 0 outside cpuset 1 (%s)" % form,
                              self.exec_argv(self.outside, form=form), env,
                              [ANNOTATION, "is not within the container's cpuset \"1\""])
            self.expect_error("annotation 5 (not online) outside cpuset 0-1 (%s)" % form,
                              self.exec_argv(self.offline, form=form), env,
                              [ANNOTATION, "\"5\" is not within the container's cpuset \"0-1\""])
        for field in ({"final": "a"}, {"initial": "a", "final": "0"}):
            key = "final" if field.get("final") == "a" else "initial"
            process = self.plain.process_json(["true"], execCPUAffinity=field)
            self.expect_error("process file execCPUAffinity.%s \"a\"" % key,
                              self.exec_argv(self.plain, form="process", process=process),
                              env, ["process.execCPUAffinity." + key, '"a"'])
        # housekeeping_cpus "0" while the caller may only use CPU 1: no
        # housekeeping CPU for the runtime's helpers, an error (not CPU 0).
        cfg = self.config("hk.json", {"runtime": self.rt, "housekeeping_cpus": "0"})
        self.expect_error("housekeeping_cpus 0, caller on CPU 1",
                          ["/usr/bin/taskset", "-c", "1"] + self.exec_argv(self.pinned),
                          shimlib.shim_env(config=cfg), ["no housekeeping CPU"])
        # --log FILE --log-format json: the error is a JSON line there too.
        log = self.path("decision.log")
        for name, c, process, needles in (
                ("annotation firstt", self.bad_value, None, [bad]),
                ("process file execCPUAffinity",
                 self.plain, self.plain.process_json(["true"], execCPUAffinity={"final": "a"}),
                 ["process.execCPUAffinity.final"])):
            label = "%s, --log json" % name
            self.expect_error(label, self.exec_argv(
                c, form="process", process=process,
                globals_=["--log", log, "--log-format", "json"]), env, needles, log=log)
            self.check_json_log(label, log, "error", needles)
        # text format: runc's logrus shape
        self.expect_error("annotation firstt, --log text",
                          self.exec_argv(self.bad_value, globals_=["--log", log]),
                          env, [bad], log=log)
        text = read(log)
        self.chk.check("%s annotation firstt, --log text: a level=error line" % self.rt_name,
                       text.count("\n") == 1 and "level=error" in text and bad.replace(
                           '"', '\\"') in text, text)
        os.unlink(log)

    def check_json_log(self, name, log, level, needles):
        label = "%s %s" % (self.rt_name, name)
        text = read(log)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            objs = [json.loads(ln) for ln in lines]
        except ValueError:
            self.chk.check(label + ": log is JSON lines", False, text)
            return
        ok = len(objs) == 1 and objs[0].get("level") == level and \
            objs[0].get("msg", "").startswith(PREFIX) and "time" in objs[0] and \
            all(n in objs[0].get("msg", "") for n in needles)
        self.chk.check(label + ": one {\"level\":\"%s\",\"msg\":...} line in --log" % level,
                       ok, text)
        if os.path.exists(log):
            os.unlink(log)

    def run_unpinned(self):
        cfg = self.config("unpinned.json", {"runtime": self.rt, "on_failure": "run-unpinned"})
        env = shimlib.shim_env(config=cfg)
        script = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status"]
        for form in ("cli", "process"):
            label = "%s on_failure=run-unpinned %s" % (self.rt_name, form)
            r, left = self.run(self.exec_argv(self.bad_value, script, form=form), env)
            self.chk.eq(label + ": exec runs (rc 0)", r.returncode, 0, r)
            self.chk.eq(label + ": unpinned", shimlib.allowed_lists(r.stdout), ["0-1"], r)
            self.chk.check(label + ": warning on stderr",
                           r.stderr.startswith(PREFIX) and "running it unpinned" in r.stderr
                           and ANNOTATION in r.stderr, r)
            self.chk.eq(label + ": nothing left behind", left, "")
        log = self.path("unpinned.log")
        label = "%s on_failure=run-unpinned --log json" % self.rt_name
        r, left = self.run(self.exec_argv(self.bad_value, script, globals_=[
            "--log", log, "--log-format", "json"]), env, expect_new=(log,))
        self.chk.eq(label + ": exec runs (rc 0)", r.returncode, 0, r)
        # An exec run unpinned is said on stderr too, not only in the node's
        # log: the person running it must see it (issue 11).
        self.chk.check(label + ": the warning is stderr's one line",
                       r.stderr.startswith(PREFIX) and r.stderr.count("\n") == 1 and
                       "running it unpinned" in r.stderr, r)
        self.chk.eq(label + ": nothing left behind", left, "")
        self.check_json_log("on_failure=run-unpinned --log json", log, "warning",
                            ["running it unpinned"])

    def debug_logging(self):
        """--debug or "debug": true: the decision is logged — on stderr, or
        in --log FILE in the runtime's format; the exec itself still works."""
        cfg = self.config("debug.json", {"runtime": self.rt, "debug": True})
        log = self.path("debug.log")
        script = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status"]
        cases = [
            ("--debug, stderr", shimlib.shim_env(runtime=self.rt), ["--debug"], None),
            ('"debug": true, stderr', shimlib.shim_env(config=cfg), [], None),
            ("--debug --log json", shimlib.shim_env(runtime=self.rt),
             ["--debug", "--log", log, "--log-format", "json"], "json"),
            ('"debug": true, --log text', shimlib.shim_env(config=cfg), ["--log", log], "text"),
        ]
        for name, env, globals_, fmt in cases:
            for c, pinned in ((self.pinned, True), (self.plain, False)):
                label = "%s debug %s (%s)" % (self.rt_name, name,
                                              "pinned" if pinned else "not pinned")
                r, left = self.run(self.exec_argv(c, script, globals_=globals_), env,
                                   expect_new=(log,))
                self.chk.eq(label + ": exec works", (r.returncode, shimlib.allowed_lists(
                    r.stdout)), (0, ["0" if pinned else "0-1"]), r)
                want = 'decision for "%s"' % c.id
                if fmt is None:
                    lines = [ln for ln in r.stderr.splitlines() if want in ln]
                    ok = len(lines) == 1 and lines[0].startswith(PREFIX) and \
                        ('"pinned":%s' % ("true" if pinned else "false")) in lines[0]
                    self.chk.check(label + ": decision on stderr", ok, r)
                else:
                    text = read(log)
                    lines = [ln for ln in text.splitlines()
                             if "decision for" in ln and c.id in ln]
                    if fmt == "json":
                        try:
                            objs = [json.loads(ln) for ln in lines]
                        except ValueError:
                            objs = []
                        ok = len(objs) == 1 and objs[0].get("level") == "debug" and \
                            objs[0]["msg"].startswith(PREFIX + want) and \
                            ('"pinned":%s' % ("true" if pinned else "false")) in objs[0]["msg"]
                    else:
                        ok = len(lines) == 1 and lines[0].startswith('time="') and \
                            ('level=debug msg="%sdecision for' % PREFIX) in lines[0]
                    self.chk.check(label + ": decision in --log (%s)" % fmt, ok, text)
                    self.chk.check(label + ": not on stderr", PREFIX not in r.stderr, r)
                    if os.path.exists(log):
                        os.unlink(log)
                self.chk.eq(label + ": nothing left behind", left, "")

    def same_as_runtime(self):
        """Errors the runtime reports: exactly its exit code and message."""
        env = shimlib.shim_env(runtime=self.rt)
        root = self.plain.root
        cases = [
            ("exec missing container id", ["exec", "no-such-id", "true"]),
            ("exec --process, missing container id",
             ["exec", "--process", self.plain.write_process(["true"]), "no-such-id"]),
            ("exec without a container id", ["exec"]),
            ("exec --process of a missing file",
             ["exec", "--process", self.path("nope.json"), self.pinned.id]),
            ("state missing container id", ["state", "no-such-id"]),
            ("delete missing container id", ["delete", "no-such-id"]),
        ]
        log = self.path("rt.log")
        for name, args in cases:
            for globals_ in ([], ["--log", log, "--log-format", "json"]):
                label = "%s %s%s" % (self.rt_name, name, " (--log json)" if globals_ else "")
                results, logs = [], []
                for binary in (self.shim, self.rt):
                    r, left = self.run([binary, "--root", root] + globals_ + args, env,
                                       expect_new=(log,))
                    results.append(r)
                    logs.append(shimlib.normalise(read(log)) if globals_ else "")
                    if os.path.exists(log):
                        os.unlink(log)
                    if binary == self.shim:
                        self.chk.eq(label + ": nothing left behind", left, "")
                shim_r, rt_r = results
                self.chk.check(label + ": exit code %d is the runtime's" % shim_r.returncode,
                               shim_r.returncode == rt_r.returncode and shim_r.returncode != 0,
                               "shim: %s\nruntime: %s" % (shim_r, rt_r))
                # The runtime gets the shim's argv[0] untouched, and usage
                # errors name it: compare with the path masked.
                self.chk.eq(label + ": stderr is the runtime's",
                            shimlib.normalise(shim_r.stderr, [(self.shim, "<RT>")]),
                            shimlib.normalise(rt_r.stderr, [(self.rt, "<RT>")]))
                self.chk.eq(label + ": --log is the runtime's",
                            logs[0].replace(self.shim, "<RT>"), logs[1].replace(self.rt, "<RT>"))

    def failing_runtime(self):
        fail = shimlib.write_script(self.path("runc-fail"),
                                    "#!/bin/sh\necho out; echo boom >&2; exit 3\n")
        killed = shimlib.write_script(self.path("runc-killed"), "#!/bin/sh\nkill -9 $$\n")
        cases = [
            ("state", [self.shim, "--root", self.plain.root, "state", self.plain.id]),
            ("exec unpinned", self.exec_argv(self.plain)),
            ("exec pinned (cli)", self.exec_argv(self.pinned)),
            ("exec pinned (process)", self.exec_argv(self.pinned, form="process")),
        ]
        for name, argv in cases:
            for runtime, want in ((fail, 3), (killed, -9)):
                label = "%s failing runtime (%s) %s" % (
                    self.rt_name, "exit 3" if want == 3 else "SIGKILL", name)
                r, left = self.run(argv, shimlib.shim_env(runtime=runtime))
                self.chk.eq(label + ": status passes through", r.returncode, want, r)
                if want == 3:
                    self.chk.eq(label + ": output passes through", (r.stdout, r.stderr),
                                ("out\n", "boom\n"))
                self.chk.eq(label + ": nothing left behind", left, "")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def main():
    shimlib.common_setup(min_cpus=2)
    if not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("the test process may not use CPUs 0-1")
    shim = shimlib.shim_path()
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes():
        workdir = shimlib.workdir("execaff-err-")
        t = None
        try:
            t = ErrorTests(chk, rt_name, rt, shim, workdir)
            for part in (t.config_errors, t.runtime_errors, t.decision_errors,
                         t.run_unpinned, t.debug_logging, t.same_as_runtime,
                         t.failing_runtime):
                try:
                    part()
                except Exception as e:
                    chk.error("%s %s" % (rt_name, part.__name__), e)
        except Exception as e:
            chk.error("%s setup" % rt_name, e)
        finally:
            if t is not None:
                t.cleanup()
            shutil.rmtree(workdir, ignore_errors=True)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
