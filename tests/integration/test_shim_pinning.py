#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim pins exec'd processes in real containers (runc, crun).

For each runtime: busybox containers with cpuset "0-1" (created and started
through the shim), one per annotation / config.json variant.  Each decision
case execs, through the shim, in the CLI form and the --process form:

    sh -c 'grep Cpus_allowed_list /proc/$$/status;      # the exec'd process
           grep Cpus_allowed_list /proc/self/status;    # a child it forks
           sh -c "grep Cpus_allowed_list /proc/self/status"'  # a grandchild

and checks all three against the expected final CPUs — and against what
`execaff explain` says for the same inputs.  For pinned execs it also checks
that the exec'd process is the user's program exactly as under the bare
runtime: the same fd set (`ls /proc/self/fd`), /proc/self/exe, comm and
argv, also with a caller's --preserve-fds and $LISTEN_FDS; user, env,
cwd, capabilities and rlimits as under the bare runtime.

Exit codes: 0 pass, 1 fail, 77 skip (not root, no runtime, < 2 CPUs,
shim not built).
Usage: test_shim_pinning.py [runtime ...]   (default: runc crun)
"""

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION, OPENSHIFT_ANNOTATION  # noqa: E402

CPUSET = "0-1"
FORMS = ("cli", "process")
AFFINITY_SCRIPT = ('grep Cpus_allowed_list /proc/$$/status; '
                   'grep Cpus_allowed_list /proc/self/status; '
                   'sh -c "grep Cpus_allowed_list /proc/self/status"')


def first_core_expectation():
    """CPU 0 and its SMT siblings, within the cpuset."""
    path = "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"
    try:
        with open(path) as f:
            siblings = shimlib.parse_cpus(f.read())
    except OSError:
        siblings = {0}
    return shimlib.format_cpus((siblings | {0}) & shimlib.parse_cpus(CPUSET))


# name, container annotations, config.json process.execCPUAffinity,
# process-file execCPUAffinity, shim config handler_default, forms, expected
def cases():
    return [
        ("none", {}, None, None, None, FORMS, CPUSET),
        ("annotation-first", {ANNOTATION: "first"}, None, None, None, FORMS, "0"),
        ("annotation-list-1", {ANNOTATION: "1"}, None, None, None, FORMS, "1"),
        ("annotation-first-core", {ANNOTATION: "first-core"}, None, None, None,
         FORMS, first_core_expectation()),
        ("process-field-final-1", {}, None, {"final": "1"}, None, ("process",), "1"),
        ("config-field-final-1", {}, {"final": "1"}, None, None, FORMS, "1"),
        ("handler-default-first", {}, None, None, "first", FORMS, "0"),
        ("opt-out-annotation+default-first", {ANNOTATION: "disable"}, None, None,
         "first", FORMS, CPUSET),
        ("openshift-disable+default-first", {OPENSHIFT_ANNOTATION: "disable"}, None,
         None, "first", FORMS, CPUSET),
    ]


class Runner:
    def __init__(self, chk, rt_name, rt, shim, cli, workdir):
        self.chk, self.rt_name, self.rt = chk, rt_name, rt
        self.shim, self.cli, self.workdir = shim, cli, workdir
        self.base_env = shimlib.shim_env(runtime=rt)
        self.containers = {}

    def container(self, annotations, config_field):
        key = (json.dumps(annotations, sort_keys=True), json.dumps(config_field))
        if key not in self.containers:
            c = fixture.Container(self.shim, cpus=CPUSET, annotations=annotations,
                                  start=False, env=self.base_env)
            if config_field is not None:
                c.bundle.config["process"]["execCPUAffinity"] = config_field
                c.bundle.write_config()
            c.create()
            c.start()
            self.containers[key] = c
        return self.containers[key]

    def cleanup(self):
        for c in self.containers.values():
            c.cleanup()
        self.containers.clear()

    def env_for(self, handler_default):
        if handler_default is None:
            return self.base_env
        path = os.path.join(self.workdir, "shim-%s.json" % handler_default)
        shimlib.write_config(path, {"runtime": self.rt,
                                    "handler_default": handler_default})
        # The runtime comes from the file only: EXECAFF_RUNTIME unset.
        return shimlib.shim_env(config=path)

    @staticmethod
    def process_file(c, args, process_field):
        proc = c.process_json(args)
        proc.pop("execCPUAffinity", None)   # the config's field stays in config
        if process_field is not None:
            proc["execCPUAffinity"] = process_field
        return c.write_process(proc)

    def exec_argv(self, runtime, c, form, args, process_field=None, exec_args=()):
        argv = [runtime, "--root", c.root, "exec"]
        if form == "cli":
            return argv + list(exec_args) + [c.id] + list(args)
        path = self.process_file(c, args, process_field)
        return argv + ["--process", path] + list(exec_args) + [c.id]

    # -- the decision cases
    def affinity_case(self, name, annotations, config_field, process_field,
                      handler_default, forms, expected):
        c = self.container(annotations, config_field)
        env = self.env_for(handler_default)
        for form in forms:
            label = "%s %s %s" % (self.rt_name, name, form)
            argv = self.exec_argv(self.shim, c, form, ["sh", "-c", AFFINITY_SCRIPT],
                                  process_field)
            r = fixture.run(argv, env=env)
            got = shimlib.allowed_lists(r.stdout)
            self.chk.eq(label + ": rc", r.returncode, 0, r)
            self.chk.eq(label + ": Cpus_allowed_list of process, child, grandchild",
                        got, [expected] * 3, r)
            self.explain_case(label, c, form, process_field, handler_default, expected)

    def explain_case(self, label, c, form, process_field, handler_default, expected):
        """The CLI's decision for the same inputs predicts what was seen."""
        argv = [self.cli, "explain", "--bundle", c.bundle.dir,
                "--container-pid", str(c.pid)]
        if form == "process":
            argv += ["--process", self.process_file(c, ["true"], process_field)]
        if handler_default is not None:
            argv += ["--handler-default", handler_default]
        r = fixture.run(argv)
        try:
            d = json.loads(r.stdout)
        except ValueError:
            self.chk.check(label + ": execaff explain", False, r)
            return
        if expected == CPUSET:
            self.chk.eq(label + ": execaff explain says not pinned",
                        d.get("pinned"), False, r.stdout)
        else:
            self.chk.eq(label + ": execaff explain final",
                        (d.get("pinned"), d.get("final")), (True, expected), r.stdout)

    # -- the exec'd process is the user's program
    def identity_cases(self):
        c = self.container({ANNOTATION: "first"}, None)
        env = self.base_env
        probes = [
            # (name, args, literal expectation or None)
            ("fd set (ls /proc/self/fd)", ["ls", "/proc/self/fd"], None),
            ("exe", ["readlink", "/proc/self/exe"], "/bin/busybox\n"),
            ("comm", ["cat", "/proc/self/comm"], "cat\n"),
            ("argv", ["cat", "/proc/self/cmdline"], "cat\0/proc/self/cmdline\0"),
            ("exec'd sh: comm, exe, argv, fds, affinity",
             ["sh", "-c", 'cat /proc/$$/comm; readlink /proc/$$/exe; '
              'tr "\\0" " " < /proc/$$/cmdline; echo; ls /proc/$$/fd; '
              'grep Cpus_allowed_list /proc/$$/status'], None),
        ]
        for form in FORMS:
            for name, args, literal in probes:
                label = "%s pinned identity %s %s" % (self.rt_name, form, name)
                shim_r = fixture.run(self.exec_argv(self.shim, c, form, args), env=env)
                bare_r = fixture.run(self.exec_argv(self.rt, c, form, args))
                ok = (shim_r.returncode == bare_r.returncode == 0 and
                      shim_r.stdout == self.expect_bare(bare_r.stdout, name))
                self.chk.check(label + ": same as bare runtime", ok,
                               "shim: %s\nbare: %s" % (shim_r, bare_r))
                if literal is not None:
                    self.chk.eq(label + ": literal", shim_r.stdout, literal, shim_r)
            self.preserve_fds_case(c, form)
            self.process_settings_case(c, form)

    @staticmethod
    def expect_bare(bare_stdout, name):
        # Unpinned the bare runtime runs on the whole cpuset; the shim's
        # output differs in exactly that line.
        if "affinity" in name:
            return bare_stdout.replace("Cpus_allowed_list:\t%s" % CPUSET,
                                       "Cpus_allowed_list:\t0")
        return bare_stdout

    def process_settings_case(self, c, form):
        """User, environment, cwd, capabilities, rlimits and no_new_privs of
        the exec reach the program as under the bare runtime (the process
        file the shim rewrites keeps them all)."""
        label = "%s pinned identity %s user/env/cwd/caps/rlimits" % (self.rt_name, form)
        script = ('id; pwd; env | sort; cat /proc/$$/limits; '
                  'grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Cpus_allowed_list)" '
                  '/proc/$$/status')
        args = ["sh", "-c", script]

        def argv(runtime):
            base = [runtime, "--root", c.root, "exec"]
            if form == "cli":
                return base + ["-u", "1000:1000", "--cwd", "/tmp", "-e", "FOO=bar baz",
                               "-e", "PATH=/bin:/usr/bin", "--cap", "CAP_SYS_NICE",
                               c.id] + args
            proc = c.process_json(args, user={"uid": 1000, "gid": 1000,
                                              "additionalGids": [5]},
                                  cwd="/tmp", env=["FOO=bar baz", "PATH=/bin"],
                                  # NOFILE soft == hard: runc 1.1.5's own Go
                                  # start-up races with a lower soft limit
                                  rlimits=[{"type": "RLIMIT_NOFILE", "hard": 512,
                                            "soft": 512},
                                           {"type": "RLIMIT_CORE", "hard": 4096,
                                            "soft": 1024}])
            proc.pop("execCPUAffinity", None)
            return base + ["--process", c.write_process(proc), c.id]
        shim_r = fixture.run(argv(self.shim), env=self.base_env)
        bare_r = fixture.run(argv(self.rt))
        both = "shim: %s\nbare: %s" % (shim_r, bare_r)
        self.chk.eq(label + ": rc", (shim_r.returncode, bare_r.returncode), (0, 0), both)
        self.chk.eq(label + ": same as bare runtime", shim_r.stdout,
                    self.expect_bare(bare_r.stdout, "affinity"), both)
        self.chk.contains(label + ": really uid 1000", shim_r.stdout, "uid=1000")
        self.chk.eq(label + ": pinned", shimlib.allowed_lists(shim_r.stdout), ["0"], shim_r)

    def preserve_fds_case(self, c, form):
        """Fds the caller passes on: its --preserve-fds, and for crun also
        $LISTEN_FDS (socket activation), still reach the program at their
        numbers, and the trampoline's fd does not reach it at all."""
        hold = os.path.join(self.workdir, "preserved-fd")
        with open(hold, "w") as f:
            f.write("preserved\n")
        script = 'ls /proc/$$/fd; cat <&3; cat <&4; grep Cpus_allowed_list /proc/$$/status'
        variants = (
            ("--preserve-fds 1", "", ["--preserve-fds", "1"]),
            ("LISTEN_FDS=1", "export LISTEN_PID=$$ LISTEN_FDS=1; ", []),
            ("LISTEN_FDS=1 + --preserve-fds 1", "export LISTEN_PID=$$ LISTEN_FDS=1; ",
             ["--preserve-fds", "1"]),
        )
        for name, prelude, exec_args in variants:
            label = "%s pinned identity %s %s" % (self.rt_name, form, name)
            # fds 3 and 4 of the runtime call are `hold`, opened by sh.
            wrap = ["/bin/sh", "-c", prelude + 'f=$1; shift; exec "$@" 3<"$f" 4<"$f"',
                    "sh", hold]
            argv_tail = ["sh", "-c", script]
            shim_r = fixture.run(wrap + self.exec_argv(
                self.shim, c, form, argv_tail, exec_args=exec_args), env=self.base_env)
            bare_r = fixture.run(wrap + self.exec_argv(
                self.rt, c, form, argv_tail, exec_args=exec_args))
            both = "shim: %s\nbare: %s" % (shim_r, bare_r)
            self.chk.eq(label + ": rc as bare runtime", shim_r.returncode, bare_r.returncode,
                        both)
            self.chk.eq(label + ": fds, their content and stderr as bare runtime",
                        (shim_r.stdout, shim_r.stderr),
                        (self.expect_bare(bare_r.stdout, "affinity"), bare_r.stderr), both)
            self.chk.eq(label + ": pinned", shimlib.allowed_lists(shim_r.stdout), ["0"],
                        shim_r)


def check_runtime(chk, rt_name, rt, shim, cli):
    workdir = shimlib.workdir("execaff-pin-")
    runner = Runner(chk, rt_name, rt, shim, cli, workdir)
    try:
        for case in cases():
            try:
                runner.affinity_case(*case)
            except Exception as e:
                chk.error("%s %s" % (rt_name, case[0]), e)
        try:
            runner.identity_cases()
        except Exception as e:
            chk.error("%s identity" % rt_name, e)
    finally:
        runner.cleanup()
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    shimlib.common_setup(min_cpus=2)
    if not shimlib.parse_cpus(CPUSET) <= os.sched_getaffinity(0):
        fixture.skip("the test process may not use CPUs %s" % CPUSET)
    shim, cli = shimlib.shim_path(), shimlib.cli_path()
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes():
        check_runtime(chk, rt_name, rt, shim, cli)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
