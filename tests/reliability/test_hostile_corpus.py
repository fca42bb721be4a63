#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The hostile-image corpus: every case of hostile_corpus.json through
execaff-shim over a real runtime (issue 11).

Each case is data: what the image holds (files, symlinks, magic links),
which exec (CLI form, --process form, env, cwd, user), or which process
file, annotation or shim configuration, and what must come out: the exit
code, the message (case-insensitive substrings of stderr), stdout, and
optionally that the bare runtime gives the same exit code (and stderr).
Appending a case is appending an object to the JSON list; the file's
"schema" entry says what each key means.

The invariant behind the path cases: an opted-in exec never runs unpinned
because of a look-up the shim could not do.  Every program that runs
prints its own Cpus_allowed_list, which must be the pinned "0".

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_hostile_corpus.py RUNTIME [CASE-NAME-SUBSTRING ...]
Environment: EXECAFF_SHIM (the shim under test), EXECAFF_CORPUS (another
corpus file).
"""

import copy
import json
import os
import re
import shutil
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

CORPUS = os.environ.get("EXECAFF_CORPUS") or os.path.join(HERE, "hostile_corpus.json")
CPUSET = "0-1"


def slug(name):
    """A case name as a file name (crun's --log takes "TYPE:PATH": no colons)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)


def per_runtime(value, kind):
    """A value, or {"runc": v, "crun": v} naming one per kind of runtime."""
    if isinstance(value, dict) and set(value) <= {"runc", "crun"}:
        return value.get(kind)
    return value



class Corpus:
    def __init__(self, chk, rt_name, rt, shim, workdir):
        self.chk, self.rt_name, self.rt, self.shim = chk, rt_name, rt, shim
        self.kind = shimlib.kind_of(rt_name)
        self.workdir = workdir
        self.containers = {}
        self.subst = {"@RUNTIME@": rt, "@SHIM@": shim, "@WORK@": workdir}

    def expand(self, value):
        if isinstance(value, str):
            for k, v in self.subst.items():
                value = value.replace(k, v)
            return value
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            return {k: self.expand(v) for k, v in value.items()}
        return value

    # -- containers, one per distinct "container" spec, started bare
    def container(self, spec):
        spec = spec or {}
        key = json.dumps(spec, sort_keys=True)
        if key not in self.containers:
            annotations = spec.get("annotations", {ANNOTATION: spec.get("annotation", "first")})
            c = fixture.Container(self.rt, cpus=spec.get("cpus", CPUSET),
                                  annotations=annotations, start=False,
                                  args=spec.get("args", ("sleep", "3600")))
            self.apply_image(c, spec.get("image", []))
            if spec.get("process"):
                c.bundle.config["process"].update(spec["process"])
                c.bundle.write_config()
            c.create()
            c.start()
            self.containers[key] = c
            # A case about what the init did first (chroot) execs into it
            # only once the init has done it: `start` returns as the init
            # begins, and an exec racing ahead of its chroot meets the
            # container's root instead of the jail.
            ready = spec.get("ready_comm")
            if ready:
                deadline = time.monotonic() + 10
                comm = None
                comm_path = "/proc/%d/comm" % c.pid  # the init keeps its pid
                while time.monotonic() < deadline:
                    with open(comm_path) as f:
                        comm = f.read().strip()
                    if comm == ready:
                        break
                    time.sleep(0.01)
                else:
                    raise RuntimeError("container init is %r after 10 s, not %r" % (comm, ready))
        return self.containers[key]

    def cleanup(self):
        for c in self.containers.values():
            c.cleanup()

    # -- what the image holds
    def apply_image(self, c, entries):
        """Creates entries under c's rootfs; returns what to remove after."""
        made = []
        root = c.bundle.rootfs

        def host(p):
            return os.path.join(root, p.lstrip("/"))

        def parents(p):
            d = os.path.dirname(p)
            missing = []
            while not os.path.lexists(d):
                missing.append(d)
                d = os.path.dirname(d)
            for m in reversed(missing):
                os.mkdir(m)
                made.append(m)

        for e in entries:
            if "symlink" in e:
                p = host(e["symlink"])
                parents(p)
                os.symlink(e["to"], p)
            elif "dir" in e:
                p = host(e["dir"])
                parents(p)
                os.mkdir(p)
                os.chmod(p, int(e.get("mode", "0755"), 8))
            elif "file" in e:
                p = host(e["file"])
                parents(p)
                with open(p, "w") as f:
                    f.write(e.get("text", ""))
                os.chmod(p, int(e.get("mode", "0644"), 8))
            elif "copy" in e:
                p = host(e["to"])
                parents(p)
                shutil.copy(host(e["copy"]), p)
                os.chmod(p, int(e.get("mode", "0755"), 8))
            else:
                raise ValueError("unknown image entry %r" % e)
            made.append(p)
        return made

    @staticmethod
    def remove(made):
        for p in reversed(made):
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            elif os.path.lexists(p):
                os.unlink(p)

    # -- one exec
    def exec_argv(self, binary, c, case, form):
        ex = case.get("exec", {})
        argv = [binary, "--root", c.root] + list(case.get("globals", [])) + ["exec"]
        if form == "cli":
            return argv + self.expand(list(ex.get("cli_args", []))) + [c.id] + list(ex["args"])
        if "process_text" in case:
            path = os.path.join(self.workdir, "process-%s.json" % slug(case["name"]))
            with open(path, "w") as f:
                f.write(self.expand(case["process_text"]))
        elif "process_path" in case:
            path = self.expand(case["process_path"])
        else:
            proc = c.process_json(list(ex["args"]))
            proc.update(copy.deepcopy(ex.get("process", {})))
            path = c.write_process(proc)
        spelling = ex.get("process_option", "--process")
        named = [spelling + path] if spelling.endswith("=") else [spelling, path]
        if spelling == "-p=":  # argp's -pFILE
            named = ["-p" + path]
        return argv + named + [c.id]

    def check_result(self, label, r, want):
        rc = per_runtime(want.get("rc"), self.kind)
        if rc is not None:
            self.chk.eq(label + ": exit code %s" % rc, r.returncode, rc, r)
        if "stdout" in want:
            self.chk.eq(label + ": stdout", r.stdout, per_runtime(want["stdout"], self.kind), r)
        needles = per_runtime(want.get("stderr_has", []), self.kind) or []
        for n in [needles] if isinstance(needles, str) else needles:
            self.chk.check(label + ": stderr has %r" % n, n.lower() in r.stderr.lower(), r)
        if want.get("stderr_empty"):
            self.chk.eq(label + ": stderr empty", r.stderr, "", r)

    def check_pinned_or_as_bare(self, label, c, case, form, r):
        """Pinned when the bare runtime runs the line, else refused as it
        refuses it: never run unpinned."""
        bare = fixture.run(self.exec_argv(self.rt, c, case, form))
        if bare.returncode == 0:
            self.chk.eq(label + ": exit 0 (the bare runtime runs it)", r.returncode, 0, r)
            self.chk.eq(label + ": pinned", shimlib.allowed_lists(r.stdout), ["0"], r)
        else:
            self.chk.eq(label + ": the bare runtime's exit code %d" % bare.returncode,
                        r.returncode, bare.returncode, r)
            self.chk.eq(label + ": nothing ran", shimlib.allowed_lists(r.stdout), [], r)

    def run_exec_case(self, case):
        want = case["expect"]
        c = self.container(case.get("container"))
        made = self.apply_image(c, case.get("image", []))
        listener = shimlib.FdSocket(self.expand(case["unix_socket"])) if "unix_socket" in case else None
        try:
            for setup in case.get("setup", []):
                r = c.exec(setup)
                self.chk.eq("%s %s: setup %r" % (self.rt_name, case["name"], setup),
                            r.returncode, 0, r)
            ex = case.get("exec", {})
            default_forms = ["process"] if ("process" in ex or "process_text" in case or
                                            "process_path" in case) else ["cli", "process"]
            env = shimlib.shim_env(runtime=self.rt)
            for form in ex.get("forms", default_forms):
                label = "%s %s [%s]" % (self.rt_name, case["name"], form)
                r = fixture.run(self.exec_argv(self.shim, c, case, form), env=env)
                self.check_result(label, r, per_runtime(want, self.kind) or want)
                if case.get("pinned_or_as_bare"):
                    self.check_pinned_or_as_bare(label, c, case, form, r)
                if case.get("same_as_bare") or case.get("same_rc_as_bare"):
                    bare = fixture.run(self.exec_argv(self.rt, c, case, form))
                    self.chk.eq(label + ": exit code as the bare runtime's",
                                r.returncode, bare.returncode, bare)
                if case.get("same_as_bare"):
                    norm = [(c.root, "<root>")]
                    self.chk.eq(label + ": stderr as the bare runtime's",
                                shimlib.normalise(r.stderr, norm),
                                shimlib.normalise(bare.stderr, norm))
        finally:
            self.remove(made)
            if listener is not None:
                listener.close()

    def run_config_case(self, case):
        path = os.path.join(self.workdir, "cfg-%s.json" % slug(case["name"]))
        content = case["config"] if "config" in case else case["config_text"]
        content = self.expand(content)
        shimlib.write_config(path, content, mode=int(case.get("mode", "0600"), 8),
                             uid=case.get("uid", 0))
        env = shimlib.shim_env(config=path, **({"EXECAFF_RUNTIME": self.expand(
            case["runtime_env"])} if "runtime_env" in case else {}))
        c = self.container(case.get("container"))
        for command in case.get("commands", ["exec"]):
            argv = [self.shim, "--root", c.root]
            argv += ["exec", c.id, "true"] if command == "exec" else [command, c.id]
            r = fixture.run(argv, env=env)
            want = case["expect"].get(command, case["expect"])
            self.check_result("%s %s (%s)" % (self.rt_name, case["name"], command), r,
                              self.expand(want))

    def run_create_case(self, case):
        """create through the shim: a bad annotation is warned about at once."""
        log = os.path.join(self.workdir, "create-%s.log" % slug(case["name"]))
        env = shimlib.shim_env(runtime=self.rt)
        c = fixture.Container(self.shim, cpus=case.get("cpus", CPUSET),
                              annotations={ANNOTATION: case["annotation"]}, env=env,
                              start=False, global_args=["--log", log, "--log-format", "json"])
        try:
            label = "%s %s" % (self.rt_name, case["name"])
            err = None
            try:
                c.create()
            except RuntimeError as e:
                err = e
            self.chk.check(label + ": create succeeds", err is None, err)
            out = c.read_init_log()
            logged = open(log).read() if os.path.exists(log) else ""
            needles = case["expect"].get("warning_has", [])
            if needles:
                for n in needles:
                    self.chk.contains(label + ": warning on stderr has %r" % n, out, n)
                lines = [json.loads(ln) for ln in logged.splitlines() if ln.strip()]
                self.chk.check(label + ": one warning line in --log",
                               len([x for x in lines if x.get("level") == "warning" and
                                    all(n in x.get("msg", "") for n in needles)]) == 1, logged)
            else:
                self.chk.eq(label + ": nothing on stderr", out, "")
                self.chk.eq(label + ": nothing in --log", logged, "")
        finally:
            c.cleanup()

    def run(self, case):
        kind = case.get("kind", "exec")
        try:
            {"exec": self.run_exec_case, "config": self.run_config_case,
             "create": self.run_create_case}[kind](case)
        except Exception as e:  # a case that cannot run at all fails
            self.chk.error("%s %s" % (self.rt_name, case["name"]), e)


def main():
    shimlib.common_setup(min_cpus=2)
    shim = shimlib.shim_path()
    with open(CORPUS) as f:
        corpus = json.load(f)
    cases = [c for c in corpus["cases"]]
    names = [c["name"] for c in cases]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        print("FAIL: duplicate case names %s" % dup)
        return 1
    wanted = sys.argv[2:]
    if wanted:
        cases = [c for c in cases if any(w in c["name"] for w in wanted)]
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes(sys.argv[:2]):
        work = shimlib.workdir("execaff-corpus-")
        corpus_run = Corpus(chk, rt_name, rt, shim, work)
        try:
            for case in cases:
                if shimlib.kind_of(rt_name) in case.get("skip_runtimes", []):
                    continue
                corpus_run.run(case)
        finally:
            corpus_run.cleanup()
    print("%d cases" % len(cases))
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
