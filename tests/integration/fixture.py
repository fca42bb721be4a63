# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real-container test fixture for execaff (Python 3, stdlib only).

Typical use::

    import fixture
    fixture.require_root()
    rt = fixture.require_runtime("runc")          # exits 77 when missing
    with fixture.Container(rt, cpus="1") as c:
        r = c.exec(["cat", "/proc/self/status"])
        assert r.returncode == 0, r.stderr
        r = c.exec_process({"args": ["true"]})    # exec --process FILE

What it does:

* ``prepare_host()`` runs ``prepare-host.sh`` (next to this file) once per
  process: on a hybrid cgroup host it moves hugetlb off cgroup2 so crun 1.8.1
  accepts the host.  Idempotent.
* ``Bundle`` builds a busybox bundle in a temp dir: rootfs made of
  /bin/busybox (busybox-static) plus one symlink per applet in /bin, the
  usual mount points, and a config.json (terminal false, rootfs writable,
  ``linux.resources.cpu.cpus`` / annotations / process args settable, unique
  ``linux.cgroupsPath``).
* ``Container`` creates and starts the bundle with a given runtime binary and
  a private ``--root`` dir (temp), runs ``exec`` in the CLI form and the
  ``--process FILE`` form, and tears everything down (kill -9, delete
  --force, remove temp dirs) on exit, on exceptions, at interpreter exit and
  on SIGTERM/SIGINT/SIGHUP.
* ``skip(reason)`` exits with 77 (the automake/meson "skipped" code).

Environment knobs: ``EXECAFF_TEST_KEEP=1`` keeps temp dirs (containers are
still deleted); ``EXECAFF_TEST_TMPDIR`` picks the parent of the temp dirs.
"""

import atexit
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))       # tests/: runtimes.py
import runtimes as runtime_list  # noqa: E402
PREPARE_SCRIPT = os.path.join(HERE, "prepare-host.sh")
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
SKIP_CODE = 77
DEFAULT_TIMEOUT = 60

__all__ = [
    "SKIP_CODE", "skip", "require_root", "require_runtime", "find_runtime",
    "prepare_host", "find_busybox", "Bundle", "Container", "run",
    "default_config", "default_process", "Result",
]


# ---------------------------------------------------------------- skipping

def skip(reason):
    """Skip the whole test: print the reason and exit 77."""
    sys.stdout.flush()
    print("SKIP: %s" % reason, file=sys.stderr, flush=True)
    # sys.exit (not os._exit) so that context managers / atexit still clean up.
    sys.exit(SKIP_CODE)


def require_root():
    if os.geteuid() != 0:
        skip("needs root (real containers)")


def find_runtime(name_or_path):
    """Absolute path of a runtime (or tool) binary, or None.

    A name of tests/runtimes.txt gives its binary (runc-1.3.6: the one
    contrib/install-peers.sh installed); any other name is looked up in
    PATH, and a path is taken as it is."""
    listed = runtime_list.find(name_or_path)
    if listed is not None:
        return listed.path
    if os.sep in name_or_path:
        return name_or_path if os.access(name_or_path, os.X_OK) else None
    return shutil.which(name_or_path, path=os.environ.get("PATH", "") +
                        ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")


def require_runtime(name_or_path):
    """Path of the runtime; skips the test (77) when it is not installed."""
    path = find_runtime(name_or_path)
    if path is None:
        listed = runtime_list.find(name_or_path)
        skip(listed.problem if listed else "runtime %r not found" % name_or_path)
    return path


def find_busybox():
    for p in BUSYBOX_CANDIDATES:
        if os.access(p, os.X_OK):
            try:
                out = subprocess.run([p, "--list"], capture_output=True,
                                     text=True, timeout=10)
            except OSError:
                continue
            if out.returncode == 0 and out.stdout.strip():
                return p
    return None


def require_busybox():
    p = find_busybox()
    if p is None:
        skip("static busybox not found (apt-get install busybox-static)")
    # A dynamically linked busybox would need its libraries in the rootfs.
    with open(p, "rb") as f:
        head = f.read(1 << 16)
    if b"ld-linux" in head or b"/lib64/ld-" in head:
        skip("%s is not statically linked (install busybox-static)" % p)
    return p


# ---------------------------------------------------------- host preparation

_prepared = None


def prepare_host(force=False):
    """Run prepare-host.sh once per process.  Returns True when ready."""
    global _prepared
    if _prepared is not None and not force:
        return _prepared
    r = subprocess.run(["/bin/sh", PREPARE_SCRIPT], capture_output=True,
                       text=True, timeout=60)
    _prepared = (r.returncode == 0)
    if not _prepared:
        print("prepare-host.sh failed (%d): %s" % (r.returncode, r.stderr),
              file=sys.stderr)
    return _prepared


# ------------------------------------------------------------ run helpers

class Result(subprocess.CompletedProcess):
    """CompletedProcess with a readable repr for assertion messages."""

    def __str__(self):
        return "argv=%r rc=%r\nstdout=%r\nstderr=%r" % (
            self.args, self.returncode, self.stdout, self.stderr)


def run(argv, timeout=DEFAULT_TIMEOUT, check=False, input=None, **kw):
    """subprocess.run with text capture; returns Result.

    stdout/stderr are captured through unlinked temp files, not pipes: a
    process started with ``exec --detach`` inherits them, and with pipes the
    caller would wait until that process exits.  Pass ``stdout=``/``stderr=``
    to override.
    """
    kw.setdefault("stdin", subprocess.DEVNULL if input is None else None)
    files = {}
    for k in ("stdout", "stderr"):
        if k not in kw or kw[k] is subprocess.PIPE:
            files[k] = kw[k] = tempfile.TemporaryFile()
    try:
        if input is not None:
            kw["stdin"] = subprocess.PIPE
        p = subprocess.Popen(argv, **kw)
        try:
            if input is not None:
                p.stdin.write(input.encode())
                p.stdin.close()
            p.wait(timeout=timeout)
        except BaseException:
            p.kill()
            p.wait()
            raise
        out = {}
        for k, f in files.items():
            f.seek(0)
            out[k] = f.read().decode(errors="replace")
    finally:
        for f in files.values():
            f.close()
    r = Result(argv, p.returncode, out.get("stdout"), out.get("stderr"))
    if check and r.returncode != 0:
        raise RuntimeError("command failed: %s" % r)
    return r


def processes_naming(text):
    """Pids of host processes (not this one) whose command line contains
    `text`."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if text.encode() in f.read():
                    out.append(int(pid))
        except OSError:
            pass
    return out


# ------------------------------------------------------- cleanup registry

_live = []           # objects with a .cleanup() method, newest last
_handlers_installed = False


def _cleanup_all():
    while _live:
        obj = _live.pop()
        try:
            obj.cleanup()
        except Exception as e:          # never let one failure stop the rest
            print("fixture cleanup of %r failed: %s" % (obj, e), file=sys.stderr)


def _on_signal(signum, frame):
    _cleanup_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _register(obj):
    global _handlers_installed
    if not _handlers_installed:
        atexit.register(_cleanup_all)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            try:
                if signal.getsignal(s) in (signal.SIG_DFL, signal.default_int_handler):
                    signal.signal(s, _on_signal)
            except ValueError:          # not the main thread
                pass
        _handlers_installed = True
    _live.append(obj)


def _unregister(obj):
    try:
        _live.remove(obj)
    except ValueError:
        pass


def _keep():
    return os.environ.get("EXECAFF_TEST_KEEP") == "1"


def _mkdtemp(prefix):
    return tempfile.mkdtemp(prefix=prefix,
                            dir=os.environ.get("EXECAFF_TEST_TMPDIR") or None)


# ------------------------------------------------------------ config.json

DEFAULT_CAPS = [
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
    "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
]

DEFAULT_ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
]


def default_process(args):
    return {
        "terminal": False,
        "user": {"uid": 0, "gid": 0},
        "args": list(args),
        "env": list(DEFAULT_ENV),
        "cwd": "/",
        "capabilities": {k: list(DEFAULT_CAPS) for k in
                         ("bounding", "effective", "permitted")},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": True,
    }


def default_config(args, cpus=None, mems=None, annotations=None,
                   cgroups_path=None, hostname="execaff-test"):
    resources = {"devices": [{"allow": False, "access": "rwm"}]}
    if cpus is not None or mems is not None:
        resources["cpu"] = {}
        if cpus is not None:
            resources["cpu"]["cpus"] = cpus
        if mems is not None:
            resources["cpu"]["mems"] = mems
    cfg = {
        "ociVersion": "1.0.2",
        "process": default_process(args),
        "root": {"path": "rootfs", "readonly": False},
        "hostname": hostname,
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666",
                         "mode=0620"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777",
                         "size=65536k"]},
            {"destination": "/dev/mqueue", "type": "mqueue",
             "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", "mode=1777"]},
        ],
        "annotations": dict(annotations or {}),
        "linux": {
            "resources": resources,
            "cgroupsPath": cgroups_path,
            "namespaces": [{"type": t} for t in
                           ("pid", "network", "ipc", "uts", "mount")],
            "maskedPaths": [
                "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                "/proc/latency_stats", "/proc/timer_list",
                "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
                "/proc/scsi",
            ],
            "readonlyPaths": [
                "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                "/proc/sysrq-trigger",
            ],
        },
    }
    if cgroups_path is None:
        del cfg["linux"]["cgroupsPath"]
    return cfg


# ----------------------------------------------------------------- bundle

class Bundle:
    """A busybox bundle in its own temp dir.

    ``config`` is the dict written to config.json; change it and call
    ``write_config()`` before creating the container.
    """

    MOUNT_POINTS = ("proc", "sys", "dev", "dev/pts", "dev/shm", "dev/mqueue",
                    "tmp", "etc", "root", "run", "var/tmp")

    def __init__(self, args=("sleep", "3600"), cpus=None, mems=None,
                 annotations=None, cgroups_path=None, name=None,
                 register=True):
        self.name = name or "execaff-%s" % uuid.uuid4().hex[:12]
        if cgroups_path is None:
            # flat and unique: nothing is left behind in the cgroup tree
            cgroups_path = "/%s" % self.name
        self.dir = _mkdtemp("execaff-bundle-")
        if register:                  # a Container cleans up its own bundle
            _register(self)
        try:
            self.rootfs = os.path.join(self.dir, "rootfs")
            self._build_rootfs()
            self.config = default_config(args, cpus=cpus, mems=mems,
                                         annotations=annotations,
                                         cgroups_path=cgroups_path)
            self.write_config()
        except BaseException:
            self.cleanup()
            raise

    @property
    def config_path(self):
        return os.path.join(self.dir, "config.json")

    def _build_rootfs(self):
        bb = require_busybox()
        os.makedirs(os.path.join(self.rootfs, "bin"))
        for d in self.MOUNT_POINTS:
            os.makedirs(os.path.join(self.rootfs, d), exist_ok=True)
        os.chmod(os.path.join(self.rootfs, "tmp"), 0o1777)
        shutil.copy2(bb, os.path.join(self.rootfs, "bin", "busybox"))
        applets = subprocess.run([bb, "--list"], capture_output=True,
                                 text=True, check=True).stdout.split()
        for a in applets:
            if a == "busybox" or "/" in a:
                continue
            os.symlink("busybox", os.path.join(self.rootfs, "bin", a))
        for d in ("sbin", "usr/bin", "usr/sbin"):
            # /sbin -> /bin etc., so every PATH entry finds the applets
            os.makedirs(os.path.dirname(os.path.join(self.rootfs, d)),
                        exist_ok=True)
            os.symlink("/bin", os.path.join(self.rootfs, d))
        with open(os.path.join(self.rootfs, "etc", "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n")
        with open(os.path.join(self.rootfs, "etc", "group"), "w") as f:
            f.write("root:x:0:\n")

    def write_config(self):
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)

    def cleanup(self):
        _unregister(self)
        if self.dir and os.path.isdir(self.dir) and not _keep():
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def __repr__(self):
        return "Bundle(%s)" % self.dir


# --------------------------------------------------------------- container

class Container:
    """A running busybox container under ``runtime`` with a private --root.

    ``runtime``: path or name of runc/crun (or the shim).  ``root``: state
    dir; a temp dir by default.  ``global_args``: extra runtime flags put
    before the command (e.g. ["--systemd-cgroup"]).  ``env``: environment
    for every runtime call (None: inherit), e.g. to tell a shim which real
    runtime to use.  ``start=False``: only build the bundle; call
    ``create()``/``start()`` yourself.  ``edit_config``: a function given
    the bundle's config dict to change before the container is created.
    """

    def __init__(self, runtime, cpus=None, mems=None, annotations=None,
                 args=("sleep", "3600"), root=None, container_id=None,
                 global_args=(), prepare=True, start=True,
                 timeout=DEFAULT_TIMEOUT, env=None, edit_config=None):
        self.runtime = find_runtime(runtime) or runtime
        self.env = env
        self.id = container_id or "execaff-%s" % uuid.uuid4().hex[:12]
        self.global_args = list(global_args)
        self.timeout = timeout
        self.created = False
        self._own_root = root is None
        self._tmp = _mkdtemp("execaff-ctr-")
        _register(self)
        try:
            self.root = root or os.path.join(self._tmp, "root")
            os.makedirs(self.root, exist_ok=True)
            if prepare and not prepare_host():
                raise RuntimeError("host preparation failed (prepare-host.sh)")
            self.bundle = Bundle(args=args, cpus=cpus, mems=mems,
                                 annotations=annotations, name=self.id,
                                 register=False)
            if edit_config is not None:
                edit_config(self.bundle.config)
                self.bundle.write_config()
            if start:
                self.create()
                self.start()
        except BaseException:
            self.cleanup()
            raise

    # -- plumbing
    def rt(self, *args, **kw):
        """Run ``runtime --root R [global_args] args...``; returns Result."""
        kw.setdefault("timeout", self.timeout)
        kw.setdefault("env", self.env)
        return run(self.argv(*args), **kw)

    def argv(self, *args):
        return [self.runtime, "--root", self.root] + self.global_args + \
            [str(a) for a in args]

    @property
    def init_log(self):
        return os.path.join(self._tmp, "init.log")

    # -- lifecycle
    def create(self):
        # terminal=false: the container's init inherits the runtime's stdio,
        # so give it a file (a pipe would keep communicate() waiting forever).
        with open(self.init_log, "ab") as log:
            r = run(self.argv("create", "--bundle", self.bundle.dir, self.id),
                    stdout=log, stderr=subprocess.STDOUT, timeout=self.timeout,
                    env=self.env)
        self.created = True          # even a failed create may leave state
        if r.returncode != 0:
            raise RuntimeError("%s create failed (%d): %s" % (
                self.runtime, r.returncode, self.read_init_log()))

    def start(self):
        r = self.rt("start", self.id)
        if r.returncode != 0:
            raise RuntimeError("%s start failed: %s" % (self.runtime, r))
        return r

    def read_init_log(self):
        try:
            with open(self.init_log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def state(self):
        r = self.rt("state", self.id)
        if r.returncode != 0:
            raise RuntimeError("state failed: %s" % r)
        return json.loads(r.stdout)

    @property
    def pid(self):
        return self.state()["pid"]

    # -- exec
    def exec(self, args, exec_args=(), **kw):
        """CLI form: ``runtime exec [exec_args] ID args...``.

        ``pass_fds=(...)`` keeps those fds open (non-CLOEXEC) in the runtime,
        e.g. together with ``exec_args=["--preserve-fds", "1"]``.
        """
        return self.rt("exec", *exec_args, self.id, *args, **kw)

    def process_json(self, args=None, **overrides):
        """A process object: the container's own process, args replaced."""
        proc = copy.deepcopy(self.bundle.config["process"])
        if args is not None:
            proc["args"] = list(args)
        proc.update(overrides)
        return proc

    def write_process(self, process):
        """Write a process object (dict, or a list of args) to a temp file."""
        if not isinstance(process, dict):
            process = self.process_json(process)
        fd, path = tempfile.mkstemp(prefix="process-", suffix=".json",
                                    dir=self._tmp)
        with os.fdopen(fd, "w") as f:
            json.dump(process, f)
        return path

    def exec_process(self, process, exec_args=(), **kw):
        """``--process FILE`` form.

        ``process``: a full process dict (written as is), a list of args
        (the container's process with those args) or the path of a file.
        """
        if isinstance(process, str):
            path = process
        else:
            path = self.write_process(process)
        return self.rt("exec", "--process", path, *exec_args, self.id, **kw)

    # -- teardown
    def cleanup(self):
        _unregister(self)
        try:
            if self.created:
                run(self.argv("kill", self.id, "KILL"), timeout=30, env=self.env)
                r = run(self.argv("delete", "--force", self.id), timeout=30,
                        env=self.env)
                if r.returncode != 0 or os.path.exists(
                        os.path.join(self.root, self.id)):
                    # retry once: the init may still be exiting
                    time.sleep(0.2)
                    run(self.argv("delete", "--force", self.id), timeout=30,
                        env=self.env)
                self.created = False
        finally:
            b = getattr(self, "bundle", None)
            if b is not None:
                b.cleanup()
            if not _keep():
                shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def __repr__(self):
        return "Container(%s %s root=%s)" % (self.runtime, self.id, self.root)


def kernel_keeps_requested_mask():
    """Linux >= 6.2 remembers the mask asked for with sched_setaffinity
    (user_cpus_ptr, commits 8f9ea86fdf99 and da019032819a) and applies
    `cpuset & requested` when a cpuset cgroup attach sets the mask, falling
    back to the cpuset only when that is empty; older kernels overwrite
    the mask with the cpuset."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (6, 2)


def status_field(text, key):
    """Value of ``key:`` in a /proc/<pid>/status text, or None."""
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k == key:
            return v.strip()
    return None
