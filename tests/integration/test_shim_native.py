#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim over runtimes that apply execCPUAffinity themselves (issue 16
§2, spec/native.md): runc >= 1.3.0 and crun >= 1.19, found by
`"native": "detect"` from their `--version`.

The runtime the shim execs is a recorder: a shell script that writes down
the argv it was given, the bytes of the process file it was handed and the
CPUs it starts on, then execs the real runtime (`--version` is forwarded,
so detection sees the real runtime's answer).  That is what shows the
native path: the runtime was handed no trampoline — the user's args in the
process file, no extra --preserve-fds — and exactly one decision.

Containers: busybox, cpuset 0-1; the shim's config says housekeeping_cpus
"1", so an annotation "1" decides initial "1", final "1", distinct from the
fields the cases carry ("0").  Cases:

* field only (process file initial 0 / final 0): the runtime gets the argv
  and the file byte for byte; the runtime itself starts on initial (0);
* annotation overriding the field: the process file handed on carries the
  decision only, every other member as it was;
* annotation without a field: the same, and in the CLI form a process file
  the runtime would have built itself — checked against the bare runtime's
  own CLI form with user, cwd, env, caps (and runc's additional gids);
* config.json's field: runc reads it itself (argv untouched), crun does not
  (a process file carrying it);
* nothing opted in: byte for byte, nothing applied to the runtime.

In every pinned case the exec'd process and its child are on the decided
final CPUs.

Usage: test_shim_native.py [RUNTIME ...]   (names of tests/runtimes.txt or
binaries; default: the runtimes listed as applying the field)
Exit codes: 0 pass, 1 fail, 77 skip (not root, runtime not installed or
older than the native versions, < 2 CPUs, shim not built).
"""

import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

CPUSET = "0-1"
HOUSEKEEPING = "1"
AFFINITY = ('grep Cpus_allowed_list /proc/$$/status; '
            'grep Cpus_allowed_list /proc/self/status')

# The recorder: argv (one per line, NUL-free in these tests), the process
# file's bytes, the CPUs the runtime starts on; then the real runtime.
RECORDER = r"""#!/bin/sh
real=%(real)s
case "$1" in --version) exec "$real" "$@";; esac
log=%(log)s
{
  echo "== argv"
  for a in "$@"; do printf '%%s\n' "$a"; done
  echo "== cpus"
  grep Cpus_allowed_list /proc/$$/status
  prev=
  for a in "$@"; do
    if [ "$prev" = --process ] || [ "$prev" = -p ]; then
      echo "== process"; cat "$a"; echo
    fi
    prev=$a
  done
} > "$log"
exec "$real" "$@"
"""


def parse_record(path):
    with open(path) as f:
        text = f.read()
    sections, name = {}, None
    for line in text.split("\n"):
        m = re.match(r"^== (\w+)$", line)
        if m:
            name = m.group(1)
            sections[name] = []
        elif name is not None:
            sections[name].append(line)
    argv = sections.get("argv", [])
    while argv and argv[-1] == "":
        argv.pop()
    cpus = shimlib.allowed_lists("\n".join(sections.get("cpus", [])))
    process = "\n".join(sections["process"]).rstrip("\n") if "process" in sections else None
    return {"argv": argv, "cpus": cpus[0] if cpus else None, "process": process}


class Native:
    def __init__(self, chk, name, real, kind, shim, work):
        self.chk, self.real, self.shim, self.work = chk, real, shim, work
        self.kind = kind                              # runc or crun
        self.name = name
        self.record = os.path.join(work, "record")
        # Named like the real one, as a node installs the shim beside it.
        os.makedirs(os.path.join(work, "rt"))
        self.recorder = shimlib.write_script(
            os.path.join(work, "rt", self.kind),
            RECORDER % {"real": real, "log": self.record})
        self.config = shimlib.write_config(os.path.join(work, "shim.json"), {
            "runtime": self.recorder, "housekeeping_cpus": HOUSEKEEPING})
        self.env = shimlib.shim_env(config=self.config)
        self.containers = []

    def container(self, annotations=None, config_field=None):
        def edit(config):
            if config_field is not None:
                config["process"]["execCPUAffinity"] = config_field
        c = fixture.Container(self.real, cpus=CPUSET, annotations=annotations or {},
                              edit_config=edit)
        self.containers.append(c)
        return c

    def cleanup(self):
        for c in self.containers:
            c.cleanup()

    def run(self, argv):
        if os.path.exists(self.record):
            os.unlink(self.record)
        r = fixture.run(argv, env=self.env)
        rec = parse_record(self.record) if os.path.exists(self.record) else None
        return r, rec

    def process_argv(self, c, proc):
        path = c.write_process(proc)
        with open(path) as f:
            original = f.read()
        return [self.shim, "--root", c.root, "exec", "--process", path, c.id], original

    def landed(self, label, r, final):
        self.chk.eq(label + ": rc", r.returncode, 0, r)
        self.chk.eq(label + ": process and child on final %s" % final,
                    shimlib.allowed_lists(r.stdout), [final, final], r)

    def no_trampoline(self, label, rec, args):
        """The runtime was handed the user's program, not the trampoline."""
        if rec is None:
            self.chk.check(label + ": the runtime was started", False)
            return None
        handed = json.loads(rec["process"]) if rec["process"] is not None else None
        self.chk.check(label + ": no trampoline (no --preserve-fds added, args are the user's)",
                       "--preserve-fds" not in rec["argv"] and handed is not None
                       and handed.get("args") == args, rec)
        return handed

    # -- the cases
    def field_only(self):
        label = "%s field only" % self.name
        c = self.container()
        proc = c.process_json(["sh", "-c", AFFINITY])
        proc["execCPUAffinity"] = {"initial": "0", "final": "0"}
        argv, original = self.process_argv(c, proc)
        r, rec = self.run(argv)
        self.landed(label, r, "0")
        if self.no_trampoline(label, rec, proc["args"]) is None:
            return
        self.chk.eq(label + ": argv byte for byte", rec["argv"], argv[1:], rec)
        self.chk.eq(label + ": process file byte for byte", rec["process"], original, rec)
        self.chk.eq(label + ": the runtime starts on initial", rec["cpus"], "0", rec)

    def annotation_over_field(self):
        label = "%s annotation over the field" % self.name
        c = self.container({ANNOTATION: "1"})
        proc = c.process_json(["sh", "-c", AFFINITY])
        proc["execCPUAffinity"] = {"initial": "0", "final": "0"}
        argv, original = self.process_argv(c, proc)
        r, rec = self.run(argv)
        self.landed(label, r, "1")
        handed = self.no_trampoline(label, rec, proc["args"])
        if handed is None:
            return
        self.chk.eq(label + ": the decision only", handed.get("execCPUAffinity"),
                    {"initial": "1", "final": "1"}, rec)
        rest = dict(handed)
        rest.pop("execCPUAffinity", None)
        want = dict(proc)
        want.pop("execCPUAffinity")
        self.chk.eq(label + ": every other member as it was", rest, want)
        self.chk.check(label + ": handed as an fd, not the caller's file",
                       re.match(r"^/proc/self/fd/\d+$",
                                rec["argv"][rec["argv"].index("--process") + 1]) is not None,
                       rec)
        self.chk.eq(label + ": the runtime starts on initial", rec["cpus"], "1", rec)

    def annotation_without_field(self):
        label = "%s annotation, no field" % self.name
        c = self.container({ANNOTATION: "1"})
        proc = c.process_json(["sh", "-c", AFFINITY])
        proc.pop("execCPUAffinity", None)
        argv, _ = self.process_argv(c, proc)
        r, rec = self.run(argv)
        self.landed(label, r, "1")
        handed = self.no_trampoline(label, rec, proc["args"])
        if handed is not None:
            self.chk.eq(label + ": the decision", handed.get("execCPUAffinity"),
                        {"initial": "1", "final": "1"}, rec)
        self.emulated_control(c, proc)
        self.cli_form(c)

    def emulated_control(self, c, proc):
        """The observable can tell: with "native": false the same exec is
        handed the trampoline (args[0] an inherited fd, --preserve-fds)."""
        label = "%s annotation, \"native\": false (control)" % self.name
        config = shimlib.write_config(os.path.join(self.work, "shim-emulated.json"), {
            "runtime": self.recorder, "housekeeping_cpus": HOUSEKEEPING, "native": False})
        argv, _ = self.process_argv(c, proc)
        if os.path.exists(self.record):
            os.unlink(self.record)
        r = fixture.run(argv, env=shimlib.shim_env(config=config))
        self.landed(label, r, "1")
        rec = parse_record(self.record) if os.path.exists(self.record) else None
        handed = json.loads(rec["process"]) if rec and rec["process"] else {}
        self.chk.check(label + ": the trampoline is what the runtime starts",
                       "--preserve-fds" in rec["argv"] and
                       re.match(r"^/proc/self/fd/\d+$", handed.get("args", [""])[0])
                       is not None and "execCPUAffinity" not in handed, rec)

    def cli_form(self, c):
        """The CLI form, converted: the runtime gets the process it would
        have built itself, carrying the decision."""
        label = "%s annotation, CLI form" % self.name
        script = ('id; pwd; env | sort; cat /proc/$$/limits; '
                  'grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Cpus_allowed_list)" '
                  '/proc/$$/status; grep Cpus_allowed_list /proc/self/status')
        options = ["-u", "1000:1000", "--cwd", "/tmp", "--env", "FOO=bar baz",
                   "--env=PATH=/bin:/usr/bin", "--cap", "CAP_SYS_NICE"]
        tail = options + [c.id, "sh", "-c", script]
        r, rec = self.run([self.shim, "--root", c.root, "exec"] + tail)
        bare = fixture.run([self.real, "--root", c.root, "exec"] + tail)
        both = "shim: %s\nbare: %s" % (r, bare)
        self.chk.eq(label + ": rc", (r.returncode, bare.returncode), (0, 0), both)
        self.chk.eq(label + ": user, cwd, env, caps, limits as the bare runtime's CLI form",
                    r.stdout, bare.stdout.replace("Cpus_allowed_list:\t%s" % CPUSET,
                                                  "Cpus_allowed_list:\t1"), both)
        self.chk.contains(label + ": really uid 1000", r.stdout, "uid=1000")
        self.chk.eq(label + ": pinned", shimlib.allowed_lists(r.stdout), ["1", "1"], r)
        handed = self.no_trampoline(label, rec, ["sh", "-c", script])
        if handed is not None:
            self.chk.eq(label + ": the decision", handed.get("execCPUAffinity"),
                        {"initial": "1", "final": "1"}, rec)
            self.chk.eq(label + ": the runtime gets the id last, options gone",
                        rec["argv"][-3:-1] + rec["argv"][-1:],
                        ["--process", rec["argv"][-2], c.id], rec)
        if self.kind == "runc":
            # Not converted (runc's own parser gives one -g value twice):
            # the emulated path, with runc's own result.
            label = "%s annotation, CLI form with -g (emulated)" % self.name
            tail = ["-g", "5", c.id, "sh", "-c", "grep Groups /proc/$$/status; " + AFFINITY]
            r, rec = self.run([self.shim, "--root", c.root, "exec"] + tail)
            bare = fixture.run([self.real, "--root", c.root, "exec"] + tail)
            both = "shim: %s\nbare: %s" % (r, bare)
            self.chk.eq(label + ": as the bare runtime", (r.returncode, r.stdout), (
                0, bare.stdout.replace("Cpus_allowed_list:\t%s" % CPUSET,
                                       "Cpus_allowed_list:\t1")), both)
            self.chk.check(label + ": the trampoline ran", rec is not None
                           and "--preserve-fds" in rec["argv"], rec)

    def config_field(self):
        label = "%s config.json field" % self.name
        c = self.container(config_field={"initial": "0", "final": "0"})
        proc = c.process_json(["sh", "-c", AFFINITY])
        proc.pop("execCPUAffinity", None)
        argv, original = self.process_argv(c, proc)
        r, rec = self.run(argv)
        self.landed(label, r, "0")
        if self.no_trampoline(label, rec, proc["args"]) is None:
            return
        if self.kind == "runc":
            # runc applies config.json's field when the process has none.
            self.chk.eq(label + ": runc reads it itself: argv byte for byte",
                        rec["argv"], argv[1:], rec)
            self.chk.eq(label + ": process file byte for byte", rec["process"], original)
        else:
            # crun applies the process's field only: it must be handed one.
            self.chk.eq(label + ": crun is handed the field",
                        json.loads(rec["process"]).get("execCPUAffinity"),
                        {"initial": "0", "final": "0"}, rec)

    def not_opted_in(self):
        label = "%s not opted in" % self.name
        c = self.container()
        proc = c.process_json(["sh", "-c", AFFINITY])
        proc.pop("execCPUAffinity", None)
        argv, original = self.process_argv(c, proc)
        r, rec = self.run(argv)
        self.chk.eq(label + ": rc", r.returncode, 0, r)
        if rec is None:
            self.chk.check(label + ": the runtime was started", False)
            return
        self.chk.eq(label + ": argv byte for byte", rec["argv"], argv[1:], rec)
        self.chk.eq(label + ": process file byte for byte", rec["process"], original, rec)
        self.chk.eq(label + ": the runtime's CPUs untouched", rec["cpus"],
                    shimlib.format_cpus(os.sched_getaffinity(0)), rec)


def version_is_native(real):
    r = fixture.run([real, "--version"])
    first = (r.stdout or "").split("\n")[0]
    m = re.match(r"^(runc|crun) version (\d+)\.(\d+)(?:\.(\d+))?", first)
    if not m:
        return False, first
    v = (int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))
    return v >= ((1, 3, 0) if m.group(1) == "runc" else (1, 19, 0)), first


def main():
    shimlib.common_setup(min_cpus=2)
    if not shimlib.parse_cpus(CPUSET) <= os.sched_getaffinity(0):
        fixture.skip("the test process may not use CPUs %s" % CPUSET)
    wanted = sys.argv[1:] or shimlib.runtime_list.names(applies="field")
    shim = shimlib.shim_path()
    chk = shimlib.Checks()
    for rt in shimlib.runtimes([sys.argv[0]] + wanted):
        name, real = rt
        native, first = version_is_native(real)
        if not native:
            print("SKIP %s says %r: not a runtime that applies the field" % (real, first))
            continue
        n = Native(chk, name, real, rt.kind, shim, shimlib.workdir("execaff-native-"))
        try:
            for case in (n.field_only, n.annotation_over_field, n.annotation_without_field,
                         n.config_field, n.not_opted_in):
                try:
                    case()
                except Exception as exc:  # noqa: BLE001
                    chk.error("%s %s" % (name, case.__name__), exc)
        finally:
            n.cleanup()
    if chk.passed + len(chk.failures) == 0:
        fixture.skip("none of %s applies the field" % ", ".join(wanted))
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
