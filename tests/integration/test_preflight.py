#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pre-flight against live containers (runc, crun).

Per runtime, a busybox container (cpuset "0-1", annotation `first`) whose
seccomp profile forbids sched_setaffinity (SCMP_ACT_ERRNO, everything else
allowed), so the trampoline could not set final:

* `execaff explain --container-pid` names the profile: the seccomp check
  blocks, quoting sched_setaffinity, and its fix names the forked crun;
* through the shim with on_failure "fail": exit 1 before anything runs
  (the exec's program, which would write a file in the container, never
  ran), the reason on stderr and in --log;
* with on_failure "run-unpinned": the exec runs, unpinned (its affinity is
  the caller's "0-1", not final "0"), with a warning in --log (on stderr
  when there is no --log);
* with "debug": the whole pre-flight report is logged;
* a container without the profile: the pre-flight passes and the exec is
  pinned to "0" (the check must be able to say yes); with "debug", that
  exec in the --process form says it read and parsed the process file
  once, config.json once and /proc/<init>/cgroup once (issue 18);
* `exec --env A=b ID sh` there: the shim pins it with runc and hands it to
  crun, which finds no sh (its --env replaces the environment), and
  explain's program check says the same, by the config's runtime or by
  --runtime.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_preflight.py [runtime ...]   (default: runc crun)
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

FORBID = {"defaultAction": "SCMP_ACT_ALLOW",
          "syscalls": [{"names": ["sched_setaffinity"], "action": "SCMP_ACT_ERRNO",
                        "errnoRet": 1}]}
PROBE = ["sh", "-c", "echo ran > /ran; grep Cpus_allowed_list /proc/self/status"]


def container(path, seccomp):
    def edit(config):
        if seccomp is not None:
            config["linux"]["seccomp"] = seccomp
    return fixture.Container(path, cpus="0-1", annotations={ANNOTATION: "first"},
                             edit_config=edit)


def read_log(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def run_for(name, path, cli, shim, checks, work):
    with container(path, FORBID) as c:
        r = fixture.run([cli, "explain", "--bundle", c.bundle.dir, "--container-pid",
                         str(c.pid), "--caller-cpus", "0-1"])
        doc = json.loads(r.stdout) if r.returncode == 0 else {}
        pre = doc.get("preflight") or {}
        seccomp = [k for k in pre.get("checks", []) if k["name"] == "seccomp"]
        checks.check("%s explain: seccomp blocks" % name,
                     pre.get("emulated_path_ok") is False and seccomp and seccomp[0]["blocking"], r)
        checks.contains("%s explain names sched_setaffinity" % name,
                        seccomp[0]["detail"] if seccomp else "", "sched_setaffinity: fails with errno 1")
        checks.contains("%s explain names the fix" % name,
                        seccomp[0]["fix"] if seccomp else "", "forked crun")
        program = [k for k in pre.get("checks", []) if k["name"] == "program"]
        checks.check("%s explain found the program" % name, program and program[0]["ok"], pre)

        marker = os.path.join(c.bundle.dir, "rootfs", "ran")
        for mode in ("fail", "run-unpinned"):
            config = shimlib.write_config(os.path.join(work, mode + ".json"),
                                          {"runtime": path, "on_failure": mode, "debug": True})
            env = shimlib.shim_env(config=config)
            log = os.path.join(work, mode + ".log")
            if os.path.exists(marker):
                os.unlink(marker)
            r = fixture.run([shim, "--root", c.root, "--log", log, "--log-format", "json",
                             "exec", c.id] + PROBE, env=env)
            text = read_log(log)
            if mode == "fail":
                checks.eq("%s fail: exit 1" % name, r.returncode, 1, r)
                checks.contains("%s fail: reason on stderr" % name, r.stderr,
                                "pre-flight seccomp: the container's seccomp profile stops the "
                                "trampoline: sched_setaffinity")
                checks.check("%s fail: nothing ran" % name, not os.path.exists(marker), r)
                checks.contains("%s fail: reason in --log" % name, text, '"level":"error"')
            else:
                checks.eq("%s run-unpinned: exit 0" % name, r.returncode, 0, r)
                checks.contains("%s run-unpinned: ran unpinned" % name, r.stdout,
                                "Cpus_allowed_list:\t0-1")
                checks.contains("%s run-unpinned: warning in --log" % name, text,
                                '"level":"warning"')
                # Without --log the warning goes to stderr (with one, stderr
                # stays the program's: shim/runtime_log.cpp).
                r = fixture.run([shim, "--root", c.root, "exec", c.id] + PROBE, env=env)
                checks.contains("%s run-unpinned: warning on stderr without --log" % name,
                                r.stderr, "running it unpinned (on_failure = \"run-unpinned\")")
            checks.contains("%s %s: debug logs the report" % (name, mode), text,
                            "pre-flight: {\\\"emulated_path_ok\\\":false")

    with container(path, None) as c:
        config = shimlib.write_config(os.path.join(work, "plain.json"), {"runtime": path})
        r = fixture.run([shim, "--root", c.root, "exec", c.id] + PROBE,
                        env=shimlib.shim_env(config=config))
        checks.eq("%s no profile: exit 0" % name, r.returncode, 0, r)
        checks.contains("%s no profile: pinned to final" % name, r.stdout,
                        "Cpus_allowed_list:\t0\n")

        # The shim and explain resolve the program with one function
        # (libexecaff/src/exec_program.hpp): with --env, crun replaces the
        # environment (no PATH left: "sh" is not found, crun exits 255) and
        # runc appends to it.  explain takes the rules from the config's
        # runtime, or from --runtime.
        exec_opts, command = ["--env", "A=b"], ["sh", "-c", "true"]
        r = fixture.run([shim, "--root", c.root, "exec"] + exec_opts + [c.id] + command,
                        env=shimlib.shim_env(config=config))
        runs = r.returncode == 0
        checks.eq("%s --env: the bare runtime's outcome (255 only with crun)" % name,
                  r.returncode, 255 if shimlib.kind_of(name) == "crun" else 0, r)
        base = [cli, "explain", "--bundle", c.bundle.dir, "--container-pid", str(c.pid),
                "--caller-cpus", "0-1"] + exec_opts
        for label, extra in (("config's runtime", ["--config", config]),
                             ("--runtime runc", ["--runtime", "runc"]),
                             ("--runtime crun", ["--runtime", "crun"])):
            r = fixture.run(base + extra + command)
            pre = (json.loads(r.stdout) if r.returncode == 0 else {}).get("preflight") or {}
            found = [k["ok"] for k in pre.get("checks", []) if k["name"] == "program"]
            want = runs if label == "config's runtime" else label.endswith("runc")
            checks.eq("%s explain --env A=b sh, %s: program %s" % (
                name, label, "found" if want else "not found"), found, [want], r)
        check_read_once(name, c, shim, path, checks, work)


def tally(text, what):
    """{name: count} from the shim's debug line "files read: A x1, ...;
    JSON parsed: B x1, ...; JSON skimmed: C x1, ..." (shim/exec_command.cpp);
    `what` is "files", "json" or "skimmed"."""
    m = re.search(r"files read: (.*); JSON parsed: (.*); JSON skimmed: (.*)", text)
    if not m:
        return None
    part = m.group({"files": 1, "json": 2, "skimmed": 3}[what])
    if part == "(none)":
        return {}
    return {k: int(n) for k, n in re.findall(r'((?:[^,]|,(?! ))+?) x(\d+)(?:, |$)', part)}


def check_read_once(name, c, shim, path, checks, work):
    """Issue 18: one opted-in --process exec, pinned and emulated (the
    pre-flight runs, the program is looked up, the shim joins the
    container's cpuset early), reads and parses the process file once,
    config.json once, and /proc/<init>/cgroup once.  config.json is read
    once and skimmed once too (what the decision reads, before it is known
    that the emulated path needs the rest); the runtime's state file is
    skimmed, not parsed."""
    # With the early join (pre-6.2 kernels; forced here), which used to
    # look the container's cgroup up a second time.
    config = shimlib.write_config(os.path.join(work, "debug.json"),
                                  {"runtime": path, "debug": True, "early_cpuset_join": True})
    proc = c.write_process(PROBE)
    r = fixture.run([shim, "--root", c.root, "exec", "--process", proc, c.id],
                    env=shimlib.shim_env(config=config))
    checks.eq("%s read once: exit 0" % name, r.returncode, 0, r)
    checks.contains("%s read once: pinned" % name, r.stdout, "Cpus_allowed_list:\t0\n")
    parsed, files = tally(r.stderr, "json"), tally(r.stderr, "files")
    skimmed = tally(r.stderr, "skimmed")
    checks.check("%s read once: the shim logs what it read" % name,
                 parsed is not None and files is not None, r.stderr)
    if parsed is None or files is None:
        return
    process_file = 'process file "%s"' % proc
    configs = {k: n for k, n in parsed.items() if k.startswith("config ")}
    cgroup = '"/proc/%d/cgroup"' % c.pid
    checks.eq("%s read once: the process file parsed once" % name, parsed.get(process_file), 1,
              parsed)
    checks.eq("%s read once: config.json parsed once" % name, list(configs.values()), [1],
              parsed)
    checks.eq("%s read once: nothing else parsed" % name,
              sorted(k for k in parsed if k != process_file and k not in configs), [], parsed)
    checks.eq("%s read once: config.json and the runtime state skimmed once each" % name,
              sorted((k.split(" ")[0], n) for k, n in skimmed.items()),
              [("config", 1), ("runtime", 1)], skimmed)
    checks.eq("%s read once: config.json read once" % name,
              [n for k, n in files.items() if k.endswith('config.json"')], [1], files)
    checks.eq("%s read once: the process file read once" % name, files.get('"%s"' % proc), 1,
              files)
    checks.eq("%s read once: /proc/<init>/cgroup read once" % name, files.get(cgroup), 1, files)


def main():
    return shimlib.run_per_runtime(run_for, "execaff-preflight-")


if __name__ == "__main__":
    sys.exit(main())
