# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers shared by the execaff-shim integration tests (stdlib only).

* ``shim_path()`` / ``cli_path()``: the binaries under test, from
  ``EXECAFF_SHIM`` / ``EXECAFF_CLI`` (set by meson) or the default build dir;
  the test is skipped (77) when they are not built.
* ``runtimes()``: the runtimes named on the command line (default: those
  of tests/runtimes.txt that ignore the field, runc and crun) that are
  installed; skips when none is.  ``kind_of(name)``: runc or crun.
* ``Checks``: one printed line per sub-case, failures collected, exit code.
* ``format_cpus()`` / ``allowed_lists()``: a set of CPU ids as a cpuset
  list; the Cpus_allowed_list values in a text.
* ``shim_env()``: the environment for one shim call, isolated from a host
  ``/etc/execaff/shim.json``.
* ``write_config()``: a root-owned 0600 shim config in a temp dir.
* ``Snapshot``: directory listings before/after, to prove that a call left
  nothing behind.
* ``DefaultConfig``: owns /etc/execaff/shim.json (the host's, shared by
  every test and helper) under the flock /tmp/execaff-etc.lock while a test
  needs it, and restores what was there.
"""

import fcntl
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import threading

sys.dont_write_bytecode = True      # keep the source tree clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fixture  # noqa: E402
import runtimes as runtime_list  # noqa: E402  (tests/, put on sys.path by fixture)

# meson sets MALLOC_PERTURB_ for every test to shake out our own heap bugs;
# inherited by the runtimes it makes crun 1.8.1 die of SIGSEGV after an
# `exec --cap ...` (with and without the shim).  These tests are about the
# runtimes' real behaviour (FACTS.md was measured without it).
os.environ.pop("MALLOC_PERTURB_", None)

BUILD_DIR = os.path.join(HERE, "..", "..", "build")
ANNOTATION = "exec-cpu-affinity.execaff.io"
OPENSHIFT_ANNOTATION = "performance.openshift.io/exec-cpu-affinity"
DEFAULT_CONFIG = "/etc/execaff/shim.json"
# Whoever writes DEFAULT_CONFIG holds this flock (flock(1) takes the same).
ETC_LOCK = "/tmp/execaff-etc.lock"


def _binary(env_name, default_rel):
    path = os.environ.get(env_name) or os.path.normpath(
        os.path.join(BUILD_DIR, default_rel))
    if not os.access(path, os.X_OK):
        fixture.skip("%s not built (%s); run ninja -C build or set %s" % (
            os.path.basename(path), path, env_name))
    return os.path.abspath(path)


def shim_path():
    return _binary("EXECAFF_SHIM", "shim/execaff-shim")


def cli_path():
    return _binary("EXECAFF_CLI", "cli/execaff")


class Selected(tuple):
    """(name, path) of one runtime under test, plus .kind and .applies."""

    def __new__(cls, name, path, kind, applies):
        self = tuple.__new__(cls, (name, path))
        self.kind, self.applies = kind, applies
        return self


_kinds = {}


def kind_of(name):
    """runc or crun: the kind of a runtime runtimes() selected."""
    return _kinds[name]


def runtimes(argv=None):
    """[Selected] of the wanted runtimes that are installed.

    Wanted: argv[1:], else the runtimes of tests/runtimes.txt that ignore
    the field (runc, crun).  A name is one of that list (or its binary),
    else a binary's path or a name looked up in PATH whose file name says
    its kind (runc or crun; applies None: not known).  A wanted runtime that is missing is
    reported with the reason; when none is left the test is skipped.
    """
    wanted = (argv if argv is not None else sys.argv)[1:] or runtime_list.names(applies="no")
    found, missing = [], []
    for name in wanted:
        listed = runtime_list.find(name)
        if listed is None and os.sep in name:       # a listed runtime's binary
            listed = next((rt for rt in runtime_list.load() if rt.path and
                           os.path.realpath(rt.path) == os.path.realpath(name)), None)
        if listed is not None:
            rt = Selected(listed.name, listed.path, listed.kind, listed.applies)
            problem = listed.problem
        else:
            path = fixture.find_runtime(name)
            kind = os.path.basename(path or name)
            rt = Selected(kind, os.path.realpath(path), kind, None) if path else None
            problem = "runtime %s: not in %s and not installed" % (name, runtime_list.LIST)
            if path and kind not in runtime_list.KINDS:
                print("FAIL %s: not in %s, and its file name is neither %s" % (
                    name, runtime_list.LIST, " nor ".join(runtime_list.KINDS)), flush=True)
                sys.exit(1)
        if rt is None or rt[1] is None:
            print("SKIP %s" % problem, flush=True)
            missing.append(problem)
        else:
            _kinds[rt[0]] = rt.kind
            found.append(rt)
    if not found:
        fixture.skip("; ".join(missing))
    return found


def common_setup(min_cpus=2):
    """Root, busybox, enough CPUs, a prepared host; skips (77) otherwise."""
    fixture.require_root()
    fixture.require_busybox()
    if (os.cpu_count() or 1) < min_cpus:
        fixture.skip("needs at least %d CPUs" % min_cpus)
    if not fixture.prepare_host():
        print("FAIL: prepare-host.sh failed", file=sys.stderr)
        sys.exit(1)


def run_per_runtime(run_for, workdir_prefix):
    """The usual main(): common_setup(), then run_for(name, path, cli, shim,
    checks, work) once per runtime in a fresh workdir; a setup error fails
    that runtime's sub-cases, not the others'.  Returns the exit code."""
    common_setup()
    cli, shim = cli_path(), shim_path()
    checks = Checks()
    for name, path in runtimes():
        work = workdir(workdir_prefix)
        try:
            run_for(name, path, cli, shim, checks, work)
        except Exception as exc:  # noqa: BLE001
            checks.error("%s setup" % name, exc)
    return checks.finish()


def run_per_runtime_with_default_config(chk, label, check):
    """check(name, path, cfg) once per runtime, holding the host's
    DefaultConfig throughout (the shim's only config under CRI-O, whose
    conmon passes no EXECAFF_* variable); an error fails that runtime's
    sub-cases, not the others'.  Returns the exit code."""
    rts = runtimes()
    cfg = DefaultConfig()
    try:
        for name, path in rts:
            try:
                check(name, path, cfg)
            except Exception as exc:  # noqa: BLE001
                chk.error("%s %s" % (name, label), exc)
    finally:
        cfg.cleanup()
    return chk.finish()


# ------------------------------------------------------------- reporting

class Checks:
    """Collects sub-case results; prints one line per sub-case and ends with
    "N passed, N failed, N skipped" (contrib/crun/ci.sh and tests/run-all.sh
    read that line from contrib/crun/test_exec_affinity.py).  ``only``:
    substrings that select the sub-cases to run (``wanted``)."""

    def __init__(self, prefix="", only=()):
        self.prefix = prefix
        self.only = list(only)
        self.failures = []
        self.passed = 0
        self.skipped = 0

    def wanted(self, name):
        return not self.only or any(o in name for o in self.only)

    def skip(self, name, why):
        """A sub-case this machine cannot run, and why."""
        self.skipped += 1
        print("SKIP %s%s  # %s" % (self.prefix, name, why), flush=True)

    def check(self, name, ok, detail=""):
        label = "%s%s" % (self.prefix, name)
        if ok:
            self.passed += 1
            print("ok   %s" % label, flush=True)
        else:
            self.failures.append(label)
            print("FAIL %s%s" % (label, ("\n     " + str(detail).replace(
                "\n", "\n     ")) if detail else ""), flush=True)
        return ok

    def eq(self, name, got, want, detail=""):
        ok = got == want
        extra = "" if ok else "got  %r\nwant %r%s" % (
            got, want, ("\n" + str(detail)) if detail else "")
        return self.check(name, ok, extra)

    def contains(self, name, text, needle, detail=""):
        ok = text is not None and needle in text
        extra = "" if ok else "%r not in %r%s" % (
            needle, text, ("\n" + str(detail)) if detail else "")
        return self.check(name, ok, extra)

    def error(self, name, exc):
        """A sub-case that could not run at all counts as failed."""
        import traceback
        return self.check(name, False, "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__)))

    def finish(self):
        total = self.passed + len(self.failures)
        if self.failures:
            print("\n%d of %d sub-cases FAILED:" % (len(self.failures), total))
            for f in self.failures:
                print("  %s" % f)
        print("\n%d passed, %d failed, %d skipped" % (
            self.passed, len(self.failures), self.skipped))
        return 1 if self.failures else 0


# ------------------------------------------------------------ environment

_isolation_dir = None


def _isolation_config():
    """An empty config for when the host has /etc/execaff/shim.json.

    The tests must not depend on (or be changed by) a host-wide config.
    """
    global _isolation_dir
    if _isolation_dir is None:
        _isolation_dir = workdir("execaff-shimcfg-")
    path = os.path.join(_isolation_dir, "empty.json")
    if not os.path.exists(path):
        write_config(path, {})
    return path


def shim_env(runtime=None, config=None, **extra):
    """os.environ with EXECAFF_RUNTIME / EXECAFF_CONFIG as asked.

    runtime=None leaves EXECAFF_RUNTIME unset; config=None leaves
    EXECAFF_CONFIG unset unless the host has a default config, which is
    then masked by an empty one.  extra: more variables (value None unsets).
    """
    env = dict(os.environ)
    for k in ("EXECAFF_RUNTIME", "EXECAFF_CONFIG"):
        env.pop(k, None)
    if runtime is not None:
        env["EXECAFF_RUNTIME"] = runtime
    if config is not None:
        env["EXECAFF_CONFIG"] = config
    elif os.path.lexists(DEFAULT_CONFIG):
        env["EXECAFF_CONFIG"] = _isolation_config()
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def write_config(path, obj_or_text, mode=0o600, uid=0):
    """Write a shim config (dict -> JSON, str -> as is) owned by uid."""
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chown(path, uid, -1)
    os.chmod(path, mode)
    return path


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


class _TempDir:
    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)
        fixture._register(self)       # removed on exit and on SIGTERM/INT/HUP

    def cleanup(self):
        fixture._unregister(self)
        shutil.rmtree(self.path, ignore_errors=True)


def workdir(prefix):
    """A temp dir removed at exit, also when the test is killed by a
    signal (fixture's cleanup registry); returns its path."""
    return _TempDir(prefix).path


# ------------------------------------------------------------- cpu lists

def parse_cpus(text):
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpus(cpus):
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
        run = [c]
    if run:
        out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
    return ",".join(out)


def allowed_lists(text):
    """Every Cpus_allowed_list value in a text, in order."""
    return re.findall(r"Cpus_allowed_list:\s*(\S+)", text or "")


def check_pinned_beside_bare(chk, label, results, pinned="0", bare="0-1", runtime="runc"):
    """results maps pinned / bare / plain / disabled to (exit code, output
    holding two Cpus_allowed_list lines: the exec'd process and its child).
    The pinned exec and its child are on `pinned`, the bare runtime's on
    `bare`, and the pod without the annotation or with `disable` gives the
    bare runtime's bytes."""
    chk.eq("%s pinned: process and child on CPU %s" % (label, pinned),
           (results["pinned"][0], allowed_lists(results["pinned"][1])), (0, [pinned, pinned]),
           results["pinned"])
    chk.eq("%s bare %s: on %s (it ignores the annotation)" % (label, runtime, bare),
           (results["bare"][0], allowed_lists(results["bare"][1])), (0, [bare, bare]),
           results["bare"])
    for k in ("plain", "disabled"):
        chk.eq("%s %s: byte-identical to bare %s" % (label, k, runtime), results[k],
               results["bare"])



# --------------------------------------------------------------- listings

def _walk(top):
    out = set()
    if not os.path.isdir(top):
        return out
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, n), top))
    return out


class Snapshot:
    """Listings of some directories, to tell what a call left behind.

    Private trees (the given ones: a container's state dir, the test's work
    dir) are compared strictly.  The shared dirs (/tmp, /dev/shm and the
    default runtime roots) see other processes' activity too — a compiler's
    temp files, another test — so there only entries that are new and still
    there a moment later count, and removals are not judged at all.
    """

    SHARED = ("/tmp", "/dev/shm", "/run/runc", "/run/crun")

    def __init__(self, *trees):
        self.trees = [t for t in trees if t]
        self.data = self._take()

    def _take(self):
        data = {}
        for d in self.SHARED:
            try:
                data[d] = set(os.listdir(d))
            except OSError:
                data[d] = set()
        for t in self.trees:
            data[t] = _walk(t)
        return data

    def diff(self, ignore=(), settle=1.5):
        """'' when nothing was left behind, else a description."""
        import time
        now = self._take()
        lines, shared_new = [], {}
        for d in self.data:
            new = sorted(p for p in now[d] - self.data[d]
                         if os.path.join(d, p) not in ignore)
            if d in self.SHARED:
                if new:
                    shared_new[d] = new
                continue
            gone = sorted(self.data[d] - now[d])
            if new:
                lines.append("new in %s: %s" % (d, new))
            if gone:
                lines.append("removed from %s: %s" % (d, gone))
        # What the call left behind stays; another process's temp files (a
        # compiler's, say) go away soon: wait up to `settle` seconds.
        deadline = time.monotonic() + settle
        while shared_new:
            shared_new = {d: kept for d, kept in (
                (d, [p for p in new if os.path.lexists(os.path.join(d, p))])
                for d, new in shared_new.items()) if kept}
            if not shared_new or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        for d, kept in shared_new.items():
            lines.append("new in %s: %s" % (d, kept))
        return "\n".join(lines)

    def shared_only(self, text):
        """True when every line of a diff() is about a shared dir."""
        return bool(text) and all(
            any(ln.startswith("new in %s:" % d) for d in self.SHARED)
            for ln in text.splitlines())


# ------------------------------------------------------------ normalising

_TIME_RE = re.compile(r'time="[^"]*"')
_JSON_TIME_RE = re.compile(r'"time":"[^"]*"')


def normalise(text, replacements=()):
    """Replace volatile parts (timestamps, ids, paths) by placeholders."""
    if text is None:
        return None
    for old, new in replacements:
        if old:
            text = text.replace(old, new)
    text = _TIME_RE.sub('time="T"', text)
    text = _JSON_TIME_RE.sub('"time":"T"', text)
    return text


# ------------------------------------------------------- the host's config

class DefaultConfig:
    """Owns DEFAULT_CONFIG while the test runs; restores it.

    Takes the flock ETC_LOCK first (waits for whoever holds it), so that
    tests and helpers that write the host's config never interleave;
    released by cleanup(), which also runs at exit and on SIGTERM/INT/HUP.
    """

    def __init__(self):
        self.lock = os.open(ETC_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.dir = os.path.dirname(DEFAULT_CONFIG)
        self.made_dir = not os.path.isdir(self.dir)
        self.saved = None
        if os.path.lexists(DEFAULT_CONFIG):
            st = os.lstat(DEFAULT_CONFIG)
            with open(DEFAULT_CONFIG, "rb") as f:
                self.saved = (f.read(), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
        fixture._register(self)

    def write(self, content):
        os.makedirs(self.dir, mode=0o755, exist_ok=True)
        tmp = DEFAULT_CONFIG + ".execaff-test"
        write_config(tmp, content)
        os.rename(tmp, DEFAULT_CONFIG)       # never a half-written config

    def cleanup(self):
        fixture._unregister(self)
        try:
            if self.saved is not None:
                data, mode, uid, gid = self.saved
                tmp = DEFAULT_CONFIG + ".execaff-test"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.chown(tmp, uid, gid)
                os.chmod(tmp, mode)
                os.rename(tmp, DEFAULT_CONFIG)
                self.saved = None
            else:
                for p in (DEFAULT_CONFIG, DEFAULT_CONFIG + ".execaff-test"):
                    if os.path.lexists(p):
                        os.unlink(p)
                if self.made_dir and os.path.isdir(self.dir):
                    try:
                        os.rmdir(self.dir)
                    except OSError:
                        pass
        finally:
            if self.lock is not None:
                os.close(self.lock)         # releases the flock
                self.lock = None


class FdSocket:
    """A unix socket that accepts and closes the fds sent to it, as the
    caller of --pidfd-socket or --console-socket does; `received` counts
    them."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.received = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    for fd in socket.recv_fds(conn, 16, 4)[1]:
                        os.close(fd)
                        self.received += 1
                except OSError:
                    pass

    def close(self):
        self.sock.close()
        os.unlink(self.path)
