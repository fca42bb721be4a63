#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""execaff-shim under podman + conmon, end to end (runc, crun).

The shim is installed for podman as a symlink named like the real runtime
(`runc` / `crun` in a temp dir, pointing at the shim): podman passes
`--log-format=json --log FILE` only to runtimes with those basenames.
podman strips the environment of the runtime calls it makes itself (start,
kill, delete get only PATH and XDG_RUNTIME_DIR; create and exec, through
conmon, get conmon's few variables), so neither EXECAFF_RUNTIME nor
EXECAFF_CONFIG can reach every call: the test writes the default config
/etc/execaff/shim.json (root-owned, 0600) under the flock
/tmp/execaff-etc.lock and restores whatever was there before — also on
failure and on SIGTERM/SIGINT/SIGHUP (shimlib.DefaultConfig).

Cases (image: a busybox rootfs imported under a unique name, removed at
the end; every container removed with `podman rm -f -t 0`):

* run -d --cpuset-cpus 0-1 --annotation exec-cpu-affinity.execaff.io=first:
  `podman exec` of the process and a child it forks → Cpus_allowed_list 0;
  the exec'd process is the user's program (comm); -u 1000 is pinned too;
  -t (a tty, with stdin not a tty) and -i (stdin piped) work and are pinned;
  exit status 7 passes through;
* the same without the annotation → 0-1;
* a missing program (/nope, nope) → podman's usual 127 and message, with and
  without the shim (compared with a container run under the bare runtime);
* a bad annotation value → podman exec fails and podman's message carries
  the shim's error (from the runtime log file);
* a broken shim config after start → podman exec fails and podman's
  message names the config (the error is in the runtime log too).

Exit codes: 0 pass, 1 fail, 77 skip (not root, no podman/conmon, runtime
missing, shim not built).
Usage: test_shim_podman.py [runtime ...]   (default: runc crun)
"""

import os
import shutil
import stat
import sys
import tarfile
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture  # noqa: E402
import shimlib  # noqa: E402
from shimlib import ANNOTATION, DEFAULT_CONFIG, DefaultConfig  # noqa: E402

TIMEOUT = 60
ALLOWED = ["sh", "-c", 'grep Cpus_allowed_list /proc/self/status; '
           'sh -c "grep Cpus_allowed_list /proc/self/status"']


class Podman:
    """A unique busybox image and the containers made from it."""

    def __init__(self, podman, workdir):
        self.podman = podman
        self.workdir = workdir
        self.image = "localhost/execaff-test-%s:latest" % uuid.uuid4().hex[:12]
        self.names = []
        self.image_made = False
        fixture._register(self)
        bundle = fixture.Bundle(register=True)
        try:
            tar = os.path.join(workdir, "rootfs.tar")
            with tarfile.open(tar, "w") as t:
                t.add(bundle.rootfs, arcname=".")
        finally:
            bundle.cleanup()
        r = self.run(["import", tar, self.image])
        os.unlink(tar)
        if r.returncode != 0:
            raise RuntimeError("podman import failed: %s" % r)
        self.image_made = True

    def run(self, args, runtime=None, **kw):
        argv = [self.podman]
        if runtime:
            argv += ["--runtime", runtime]
        kw.setdefault("timeout", TIMEOUT)
        return fixture.run(argv + list(args), **kw)

    def start(self, runtime, annotations=None, cpus="0-1"):
        name = "execaff-%s" % uuid.uuid4().hex[:12]
        self.names.append(name)
        args = ["run", "-d", "--name", name, "--ulimit", "nofile=1024:1024",
                "--ulimit", "nproc=1024:1024", "--cpuset-cpus", cpus]
        for k, v in (annotations or {}).items():
            args += ["--annotation", "%s=%s" % (k, v)]
        r = self.run(args + [self.image, "sleep", "1000"], runtime=runtime)
        if r.returncode != 0:
            raise RuntimeError("podman run failed: %s" % r)
        return name, r.stdout.strip()

    def cleanup(self):
        fixture._unregister(self)
        for name in self.names:
            self.run(["rm", "-f", "-t", "0", name], timeout=30)
        self.names = []
        if self.image_made:
            self.run(["rmi", "-f", self.image], timeout=30)
            self.image_made = False


def check_runtime(chk, pm, cfg, rt_name, rt, shim, workdir):
    link_dir = os.path.join(workdir, "shim-" + rt_name)
    os.mkdir(link_dir)
    kind = shimlib.kind_of(rt_name)
    link = os.path.join(link_dir, kind)     # basename runc / crun
    os.symlink(shim, link)
    cfg.write({"runtime": rt})
    p = "%s podman" % rt_name

    pinned, pinned_id = pm.start(link, {ANNOTATION: "first"})
    plain, _ = pm.start(link)
    chk.check(p + " containers started through the shim", True)
    state = os.path.join("/run", kind, pinned_id)
    chk.check(p + " container state is in the default root %s" % os.path.dirname(state),
              os.path.isdir(state), state)

    def exec_(name, args, opts=(), **kw):
        return pm.run(["exec"] + list(opts) + [name] + list(args), runtime=link, **kw)

    r = exec_(pinned, ALLOWED)
    chk.eq(p + " exec (annotation first): process and child on CPU 0",
           (r.returncode, shimlib.allowed_lists(r.stdout)), (0, ["0", "0"]), r)
    r = exec_(plain, ALLOWED)
    chk.eq(p + " exec (no annotation): process and child on 0-1",
           (r.returncode, shimlib.allowed_lists(r.stdout)), (0, ["0-1", "0-1"]), r)
    r = exec_(pinned, ["cat", "/proc/self/comm"])
    chk.eq(p + " exec (pinned): the process is the user's program", (r.returncode, r.stdout),
           (0, "cat\n"), r)
    r = exec_(pinned, ALLOWED, ["-u", "1000:1000"])
    chk.eq(p + " exec -u 1000:1000 (pinned): on CPU 0",
           (r.returncode, shimlib.allowed_lists(r.stdout)), (0, ["0", "0"]), r)
    r = exec_(pinned, ["sh", "-c", "tty; grep Cpus_allowed_list /proc/self/status"], ["-t"])
    chk.check(p + " exec -t (pinned): a tty, on CPU 0",
              r.returncode == 0 and r.stdout.replace("\r", "").startswith("/dev/pts/")
              and shimlib.allowed_lists(r.stdout) == ["0"], r)
    r = exec_(pinned, ["sh", "-c", "cat; grep Cpus_allowed_list /proc/self/status"], ["-i"],
              input="piped-in\n")
    chk.check(p + " exec -i (pinned): stdin reaches the program, on CPU 0",
              r.returncode == 0 and r.stdout.startswith("piped-in\n")
              and shimlib.allowed_lists(r.stdout) == ["0"], r)
    r = exec_(pinned, ["sh", "-c", "exit 7"])
    chk.eq(p + " exec exit 7 (pinned): status passes through", r.returncode, 7, r)

    # A missing program: podman's usual 127, as with the bare runtime.
    bare, bare_id = pm.start(rt, {ANNOTATION: "first"})
    for prog in ("/nope", "nope"):
        for label, name in (("pinned", pinned), ("unpinned", plain)):
            r = exec_(name, [prog])
            b = pm.run(["exec", bare, prog], runtime=rt)
            got = (r.returncode, r.stderr.replace(link, rt_name).replace(rt, rt_name))
            want = (b.returncode, b.stderr.replace(rt, rt_name))
            chk.eq("%s exec %s (%s): podman's 127 and message, as without the shim" % (
                p, prog, label), got, want, "shim: %s\nbare: %s" % (r, b))
            chk.eq("%s exec %s (%s): exit code 127" % (p, prog, label), r.returncode, 127)

    # The shim's own errors reach podman's message through the runtime log.
    bad, _ = pm.start(link, {ANNOTATION: "firstt"})
    r = exec_(bad, ["true"])
    chk.check(p + " exec with a bad annotation: fails, podman shows the shim's error",
              r.returncode != 0 and "execaff-shim" in r.stderr and
              ANNOTATION in r.stderr and "firstt" in r.stderr, r)
    cfg.write('{"runtime": "%s", "handler_default": "fir' % rt)     # half-written
    r = exec_(pinned, ["true"])
    chk.check(p + " exec with a half-written shim config: fails, podman names the config",
              r.returncode != 0 and DEFAULT_CONFIG in r.stderr and
              "malformed JSON" in r.stderr, r)
    cfg.write({"runtime": rt})
    r = exec_(pinned, ["true"])
    chk.eq(p + " exec after the config is repaired: works again", r.returncode, 0, r)

    r = pm.run(["rm", "-f", "-t", "0", pinned, plain, bad], runtime=link)
    chk.eq(p + " rm -f through the shim", r.returncode, 0, r)
    chk.check(p + " runtime state removed", not os.path.exists(state), state)
    pm.run(["rm", "-f", "-t", "0", bare], runtime=rt)
    os.unlink(link)
    os.rmdir(link_dir)


def default_config_state():
    """What is at DEFAULT_CONFIG (and whether its dir exists)."""
    d = os.path.dirname(DEFAULT_CONFIG)
    if not os.path.lexists(DEFAULT_CONFIG):
        return ("absent", os.path.isdir(d))
    st = os.lstat(DEFAULT_CONFIG)
    with open(DEFAULT_CONFIG, "rb") as f:
        return ("present", f.read(), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def main():
    fixture.require_root()
    fixture.require_busybox()
    if (os.cpu_count() or 1) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        fixture.skip("needs CPUs 0 and 1")
    podman = fixture.find_runtime("podman")
    if podman is None:
        fixture.skip("podman not installed")
    if fixture.find_runtime("conmon") is None and not os.path.exists("/usr/libexec/podman/conmon"):
        fixture.skip("conmon not installed")
    if not fixture.prepare_host():
        print("FAIL: prepare-host.sh failed", file=sys.stderr)
        return 1
    shim = shimlib.shim_path()
    rts = shimlib.runtimes()
    chk = shimlib.Checks()
    workdir = shimlib.workdir("execaff-podman-")
    cfg = DefaultConfig()                 # waits for the flock first
    config_before = default_config_state()
    pm = None
    try:
        pm = Podman(podman, workdir)
        for rt_name, rt in rts:
            try:
                check_runtime(chk, pm, cfg, rt_name, rt, shim, workdir)
            except Exception as e:
                chk.error("%s podman" % rt_name, e)
    except Exception as e:
        chk.error("podman setup", e)
    finally:
        if pm is not None:
            pm.cleanup()
        cfg.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    chk.check("podman image removed",
              pm is None or pm.run(["image", "exists", pm.image]).returncode != 0)
    chk.eq("default config %s as before" % DEFAULT_CONFIG, default_config_state(),
           config_before)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
