#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What each runtime under test does with process.execCPUAffinity, bare.

No shim: the runtime of tests/runtimes.txt alone, a busybox container with
cpuset "0-1", execs whose field varies.  The exec'd process and a child it
forks must be where the runtime's `applies` column says:

* applies no (runc 1.1.5, crun 1.8.1): the field changes nothing, every
  exec runs on the whole cpuset.
* applies field (contrib/install-peers.sh: runc 1.3.6, crun 1.21, 1.28):
  `final` is applied; `initial` alone leaves the process on initial (from
  kernel 6.2 on the cgroup join keeps cpuset ∩ mask, and nothing resets it
  afterwards; not checked on older kernels).  A field in config.json's
  process: runc's exec takes it (CLI form, and a process file without a
  field of its own); crun's exec ignores it.  A process file's own field
  wins over config.json's.

These are the facts the shim's expectations over the peers rest on; a new
release that changes one fails here, by name.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_runtime_field.py [runtime ...]   (names of tests/runtimes.txt;
default: runc crun)
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402

CPUSET = "0-1"
SCRIPT = 'grep Cpus_allowed_list /proc/$$/status; grep Cpus_allowed_list /proc/self/status'
ABSENT = object()       # the process file carries no field


# name, config.json's field, form ("cli" or a process file's field),
# expected CPUs by applies (a dict by kind where the kinds differ; None:
# not checked here, with the reason).
def cases():
    initial_only = "0" if fixture.kernel_keeps_requested_mask() else None
    return [
        ("no field", None, ABSENT, {"no": CPUSET, "field": CPUSET}),
        ("final 1", None, {"final": "1"}, {"no": CPUSET, "field": "1"}),
        ("initial 0 final 1", None, {"initial": "0", "final": "1"},
         {"no": CPUSET, "field": "1"}),
        ("initial 0 alone", None, {"initial": "0"}, {"no": CPUSET, "field": initial_only}),
        ("config final 1, cli", {"final": "1"}, "cli",
         {"no": CPUSET, "field": {"runc": "1", "crun": CPUSET}}),
        ("config final 1, process file without one", {"final": "1"}, ABSENT,
         {"no": CPUSET, "field": {"runc": "1", "crun": CPUSET}}),
        ("config final 1, process file final 0", {"final": "1"}, {"final": "0"},
         {"no": CPUSET, "field": "0"}),
    ]


def check_runtime(chk, rt_name, rt, applies, kind):
    containers = {}
    try:
        for name, config_field, form, expected in cases():
            label = "%s %s" % (rt_name, name)
            want = expected[applies]
            if isinstance(want, dict):
                want = want[kind]
            if want is None:
                print("--   %s: not checked (kernel %s resets the mask on the cgroup join)"
                      % (label, os.uname().release), flush=True)
                continue
            key = repr(config_field)
            if key not in containers:
                c = fixture.Container(rt, cpus=CPUSET, start=False)
                containers[key] = c
                if config_field is not None:
                    c.bundle.config["process"]["execCPUAffinity"] = config_field
                    c.bundle.write_config()
                c.create()
                c.start()
            c = containers[key]
            if form == "cli":
                r = c.exec(["sh", "-c", SCRIPT])
            else:
                proc = c.process_json(["sh", "-c", SCRIPT])
                proc.pop("execCPUAffinity", None)
                if form is not ABSENT:
                    proc["execCPUAffinity"] = form
                r = c.exec_process(proc)
            chk.eq(label + ": exec'd process and child on %s" % want,
                   (r.returncode, shimlib.allowed_lists(r.stdout)), (0, [want, want]), r)
    finally:
        for c in containers.values():
            c.cleanup()


def main():
    shimlib.common_setup(min_cpus=2)
    if not shimlib.parse_cpus(CPUSET) <= os.sched_getaffinity(0):
        fixture.skip("the test process may not use CPUs %s" % CPUSET)
    chk = shimlib.Checks()
    selected = shimlib.runtimes()
    known = [rt for rt in selected if rt.applies in ("no", "field")]
    for rt in selected:
        if rt not in known:
            print("SKIP %s: applies %s; this test knows no and field of tests/runtimes.txt"
                  % (rt[0], rt.applies), flush=True)
    if not known:
        fixture.skip("no runtime whose applies is no or field (names of tests/runtimes.txt)")
    for rt in known:
        rt_name, path = rt
        try:
            check_runtime(chk, rt_name, path, rt.applies, rt.kind)
        except Exception as e:  # noqa: BLE001
            chk.error("%s setup" % rt_name, e)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
