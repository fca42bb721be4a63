#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Smoke test of the real-container fixture.

For each of runc and crun: start a busybox container whose cpuset is "1",
exec `cat /proc/self/status` (CLI form and --process FILE form) and check
that the exec'd process's Cpus_allowed_list is the container's cpuset.

Exit codes: 0 pass, 1 fail, 77 skip (not root, no runtime, < 2 CPUs).
Usage: python3 tests/integration/test_fixture.py [runtime ...]
"""

import os
import sys

sys.dont_write_bytecode = True      # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402

CPUSET = "1"


def check(rt):
    failures = []
    with fixture.Container(rt, cpus=CPUSET,
                           annotations={"test.execaff.io/smoke": "1"}) as c:
        st = c.state()
        if st.get("status") != "running":
            failures.append("%s: state is %r" % (rt, st.get("status")))
        forms = (
            ("cli", lambda: c.exec(["cat", "/proc/self/status"])),
            ("process-file", lambda: c.exec_process(["cat", "/proc/self/status"])),
        )
        for form, fn in forms:
            r = fn()
            got = fixture.status_field(r.stdout, "Cpus_allowed_list") \
                if r.returncode == 0 else None
            ok = (got == CPUSET)
            print("%-5s %-12s rc=%d Cpus_allowed_list=%s %s" % (
                os.path.basename(rt), form, r.returncode, got,
                "ok" if ok else "FAIL"))
            if not ok:
                failures.append("%s %s: %s" % (rt, form, r))
        # exit status is passed through
        r = c.exec(["sh", "-c", "exit 7"])
        if r.returncode != 7:
            failures.append("%s: exit 7 gave %s" % (rt, r))
    return failures


def main():
    fixture.require_root()
    if os.cpu_count() < 2:
        fixture.skip("needs at least 2 CPUs")
    wanted = sys.argv[1:] or fixture.runtime_list.names(applies="no")
    runtimes = [p for p in map(fixture.find_runtime, wanted) if p]
    if not runtimes:
        fixture.skip("none of %s installed" % ", ".join(wanted))
    if not fixture.prepare_host():
        print("FAIL: prepare-host.sh failed", file=sys.stderr)
        return 1
    failures = []
    for rt in runtimes:
        failures += check(rt)
    for f in failures:
        print("FAIL: %s" % f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
