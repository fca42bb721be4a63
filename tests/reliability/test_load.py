#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""64 concurrent opted-in execs x 5 rounds through execaff-shim (issue 11).

One container (cpuset 0-1, annotation first) per runtime.  Each round
starts 64 execs at once, half in the CLI form and half with --process,
each printing its own Cpus_allowed_list, which must be the pinned "0".
Afterwards nothing may be left behind:

* processes: the container's cgroup holds its init only, no process on
  the host runs the shim, none names the container's state dir;
* memfds: no process on the host or in the container holds one of the
  shim's memfds (memfd:execaff-*);
* cgroups: the container's cpuset cgroup has the same directories as before;
* mounts: the container's mount table, and the host's under the bundle and
  the state dir, are unchanged (the host is shared with other tests);
* files: no new entry in /tmp, /dev/shm, the runtime roots, the
  container's state dir.

Exit codes: 0 pass, 1 fail, 77 skip.
Usage: test_load.py RUNTIME [CONCURRENCY ROUNDS]
"""

import os
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION  # noqa: E402

PINNED = "Cpus_allowed_list:\t0\n"
CPUSET_ROOT = "/sys/fs/cgroup/cpuset"


def processes_running(binary):
    """Pids of host processes whose executable is `binary`."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/exe" % pid) == binary:
                out.append(int(pid))
        except OSError:
            pass
    return out


def shim_memfds():
    """(pid, fd, target) of every fd on the host naming one of the shim's memfds."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        d = "/proc/%s/fd" % pid
        try:
            for fd in os.listdir(d):
                try:
                    t = os.readlink(os.path.join(d, fd))
                except OSError:
                    continue
                if t.startswith("/memfd:execaff"):
                    found.append((int(pid), int(fd), t))
        except OSError:
            pass
    return found


def cgroup_dirs(top=CPUSET_ROOT):
    out = set()
    for dirpath, dirnames, _ in os.walk(top):
        for n in dirnames:
            out.add(os.path.relpath(os.path.join(dirpath, n), top))
    return out


def mount_table(pid="self", under=None):
    """(root, mount point) of every mount; on the host (`under` given) only
    those under these dirs: other tests (podman's) mount and unmount
    elsewhere on the shared host."""
    with open("/proc/%s/mountinfo" % pid) as f:
        rows = [ln.split()[3:5] for ln in f]
    if under is not None:
        rows = [r for r in rows if any(r[1] == d or r[1].startswith(d + "/") for d in under)]
    return sorted(" ".join(r) for r in rows)


def container_procs(c):
    """Pids in the container's cpuset cgroup (v1)."""
    path = os.path.join(CPUSET_ROOT, c.bundle.config["linux"]["cgroupsPath"].lstrip("/"),
                        "cgroup.procs")
    with open(path) as f:
        return sorted(int(x) for x in f.read().split())


def settle(check, timeout=5.0):
    """check() until it returns a falsy value or the timeout; the last value."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if not got or time.monotonic() >= deadline:
            return got
        time.sleep(0.1)


def one_runtime(chk, rt_name, rt, shim, concurrency, rounds):
    env = shimlib.shim_env(runtime=rt)
    with fixture.Container(rt, cpus="0-1", annotations={ANNOTATION: "first"}) as c:
        init = c.pid
        process_file = c.write_process(c.process_json(
            ["grep", "Cpus_allowed_list", "/proc/self/status"]))
        # The host is shared with other tests (containerd's, podman's), which
        # mount and make cgroups of their own: watch what is this container's.
        watched = (c.bundle.dir, c.root)
        own_cgroup = os.path.join(CPUSET_ROOT,
                                  c.bundle.config["linux"]["cgroupsPath"].lstrip("/"))
        before = {"cgroups": cgroup_dirs(own_cgroup), "mounts": mount_table(under=watched),
                  "container mounts": mount_table(init)}
        snap = shimlib.Snapshot(c.root)
        started = time.monotonic()
        for rnd in range(rounds):
            results = [None] * concurrency

            def one(i):
                argv = [shim, "--root", c.root, "exec"]
                argv += (["--process", process_file, c.id] if i % 2 else
                         [c.id, "grep", "Cpus_allowed_list", "/proc/self/status"])
                try:
                    results[i] = fixture.run(argv, env=env, timeout=120)
                except Exception as e:  # a timeout is a failure too
                    results[i] = e

            threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrency)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            bad = [(i, r) for i, r in enumerate(results)
                   if isinstance(r, Exception) or r.returncode != 0 or r.stdout != PINNED]
            chk.check("%s round %d: %d concurrent execs, every one exit 0 and pinned to 0" % (
                rt_name, rnd + 1, concurrency), not bad,
                "\n".join("exec %d: %s" % (i, r) for i, r in bad[:5]))
        elapsed = time.monotonic() - started
        print("%s: %d execs in %.1f s" % (rt_name, concurrency * rounds, elapsed), flush=True)

        settle(lambda: container_procs(c) != [init])
        chk.eq("%s after the load: only the init in the container's cgroup" % rt_name,
               container_procs(c), [init])
        chk.eq("%s after the load: no shim process left" % rt_name,
               settle(lambda: processes_running(shim)), [])
        chk.eq("%s after the load: no runtime process for the container left" % rt_name,
               settle(lambda: fixture.processes_naming(c.root)), [])
        chk.eq("%s after the load: no memfd of the shim held anywhere" % rt_name,
               settle(shim_memfds), [])
        chk.eq("%s after the load: cpuset cgroups as before" % rt_name,
               sorted(cgroup_dirs(own_cgroup) ^ before["cgroups"]), [])
        chk.eq("%s after the load: host mounts as before" % rt_name,
               mount_table(under=watched), before["mounts"])
        chk.eq("%s after the load: container mounts as before" % rt_name,
               mount_table(init), before["container mounts"])
        left = snap.diff(ignore=(process_file,))
        if snap.shared_only(left):
            # New in /tmp or /dev/shm may be another test's: a leak of the
            # shim's would come back with every exec, so run a few more and
            # count only what they leave too.
            again = shimlib.Snapshot(c.root)
            for _ in range(8):
                fixture.run([shim, "--root", c.root, "exec", c.id, "true"], env=env)
            left2 = again.diff(ignore=(process_file,))
            left = "" if not left2 else "%s\n(repeated: %s)" % (left, left2)
        chk.eq("%s after the load: no file left behind" % rt_name, left, "")


def main():
    shimlib.common_setup(min_cpus=2)
    shim = shimlib.shim_path()
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    if not os.path.isdir(CPUSET_ROOT):
        fixture.skip("needs the cgroup v1 cpuset hierarchy at %s" % CPUSET_ROOT)
    chk = shimlib.Checks()
    for rt_name, rt in shimlib.runtimes(sys.argv[:2]):
        try:
            one_runtime(chk, rt_name, rt, shim, concurrency, rounds)
        except Exception as e:
            chk.error("%s load" % rt_name, e)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
