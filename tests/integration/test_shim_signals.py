#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A signal sent to the shim reaches the exec'd process, as with the bare runtime.

The shim execve()s the runtime, so the pid the caller holds is the runtime's
and the runtime's own signal forwarding applies.  For runc and crun, on an
opted-in (pinned) container: start `exec ID sleep 300` in the foreground
through the bare runtime and through the shim, wait until the sleep runs,
send SIGTERM (then, separately, SIGINT) to the pid the caller started, and
compare how the exec ends: the same exit status both ways, the sleep gone,
and — through the shim — the sleep ran on the pinned CPU while it lived.

usage: test_shim_signals.py [runc] [crun]; exit 0 pass, 1 fail, 77 skip.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402

CPUSET = "0-1"


def sleeps_in(container):
    """Host pids of `sleep 300` processes in the container's cgroup."""
    init_cgroup = open("/proc/%d/cgroup" % container.pid).read()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if open("/proc/%s/cmdline" % entry).read() != "sleep\x00300\x00":
                continue
            if open("/proc/%s/cgroup" % entry).read() == init_cgroup:
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def run_and_signal(argv, env, container, sig):
    """Starts argv, waits for its sleep, signals argv's pid; returns
    (exit status, the sleep's Cpus_allowed_list, sleeps left after)."""
    before = set(sleeps_in(container))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    started = []
    while time.monotonic() < deadline and not started:
        started = [p for p in sleeps_in(container) if p not in before]
        time.sleep(0.05)
    cpus = None
    if started:
        status = open("/proc/%d/status" % started[0]).read()
        cpus = shimlib.allowed_lists(status)[0] if shimlib.allowed_lists(status) else None
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    time.sleep(0.2)
    left = [p for p in sleeps_in(container) if p not in before]
    return rc, cpus, left, bool(started)


def main():
    shimlib.common_setup()
    shim = shimlib.shim_path()
    chk = shimlib.Checks()
    for name, rt in shimlib.runtimes():
        env = shimlib.shim_env(runtime=rt)
        with fixture.Container(rt, cpus=CPUSET,
                               annotations={shimlib.ANNOTATION: "first"}) as c:
            for sig in (signal.SIGTERM, signal.SIGINT):
                label = "%s %s" % (name, sig.name)
                bare = run_and_signal([rt, "--root", c.root, "exec", c.id, "sleep", "300"],
                                      env, c, sig)
                shimmed = run_and_signal([shim, "--root", c.root, "exec", c.id, "sleep", "300"],
                                         env, c, sig)
                chk.check(label + ": the exec started (bare, shim)", bare[3] and shimmed[3])
                chk.eq(label + ": same exit status as the bare runtime", shimmed[0], bare[0])
                chk.check(label + ": the signal ended the exec (not a hang, not 0)",
                          shimmed[0] not in ("hung", 0), shimmed)
                chk.eq(label + ": no sleep left behind (shim)", shimmed[2], [])
                chk.eq(label + ": the sleep ran pinned on the first CPU", shimmed[1], "0")
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
