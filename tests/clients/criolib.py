# SPDX-License-Identifier: LGPL-2.1-or-later
"""A private CRI-O for the client tests, driven through crilib.Cri.

* ``find_crio()``: the crio and pinns that tests/clients/build-crio.sh
  built from ../shared/third_party/, from ``EXECAFF_CRIO_DIR`` (the
  crio-build step of tests/run-all.sh exports it) or the build's cache if
  it is complete; the test is skipped (77), saying how to build it,
  otherwise.  Also conmon (Debian's) and podman (the image import).
* ``Crio``: crio started with everything of its own under a temp dir:
  its config (crio.conf written here, the drop-ins given in a conf.d of
  its own), storage (vfs), run root, socket, pod logs, runtime roots,
  conmon's exit and attach dirs, the pinned namespaces, the exec process
  files (TMPDIR) and the registries/storage/policy files of
  containers/image.  Host-network pods only, so no CNI plugin is used.
  The image (crilib.oci_image_tar) is loaded into that storage with
  podman before crio starts: nothing is pulled.  cleanup() ends the pods
  as kubelet does (crilib.Cri.remove_pod), stops crio, then removes what a
  killed run would leave: conmon and runtime processes, the runtimes'
  container state, mounts, the pods' cgroups.  Registered with the
  fixture's cleanup registry (atexit, SIGTERM/SIGINT/SIGHUP).
"""

import json
import os
import signal
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import crilib  # noqa: E402
from crilib import fixture  # noqa: E402

BUILD_SCRIPT = os.path.join(HERE, "build-crio.sh")
# Where crio keeps its files by default: the config moves each into the
# temp dir, and a path here that appears during the run says one was missed.
DEFAULT_PATHS = ("/etc/crio", "/var/lib/crio", "/run/crio", "/var/log/crio", "/var/run/nri",
                 "/opt/nri", "/etc/nri", "/var/lib/containers/storage/vfs")
DIR_TOKEN = "@CRIO_DIR@"
MONITOR_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]


def find_crio():
    """(crio, pinns, version line) of the built CRI-O; skips (77) without."""
    d = os.environ.get("EXECAFF_CRIO_DIR")
    if not d:
        r = subprocess.run([BUILD_SCRIPT, "--print-cached"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            fixture.skip("no CRI-O build: EXECAFF_CRIO_DIR is unset and %s --print-cached "
                         "says: %s (run that script without --print-cached to build it; "
                         "tests/run-all.sh does)" % (BUILD_SCRIPT, r.stderr.strip()))
        d = r.stdout.strip()
    crio, pinns = os.path.join(d, "bin", "crio"), os.path.join(d, "bin", "pinns")
    for p in (crio, pinns):
        if not os.access(p, os.X_OK):
            fixture.skip("EXECAFF_CRIO_DIR=%s has no executable %s (build-crio.sh's "
                         "output is the directory it prints)" % (d, p))
    try:
        with open(os.path.join(d, "VERSION")) as f:
            version = f.readline().strip()
    except OSError:
        version = "?"
    for tool in ("conmon", "podman"):
        if fixture.find_runtime(tool) is None:
            fixture.skip("%s not installed (apt-get install %s)" % (tool, tool))
    return crio, pinns, version


def _toml(value):
    """A TOML value: strings, booleans and lists of strings are all a
    config here holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(_toml(v) for v in value)
    return json.dumps(str(value))      # a TOML basic string is JSON's


def _table(name, keys):
    return "[%s]\n%s\n" % (name, "".join("%s = %s\n" % (k, _toml(v)) for k, v in keys.items()))


class Crio(crilib.PrivateDaemon):
    """crio under a temp dir.

    runtimes: {handler name: {key: value}} for crio.conf's
    [crio.runtime.runtimes.NAME] tables (each gets monitor_path conmon and
    CRI-O's default monitor_env unless given); default_runtime: one of
    them.  dropins: {file name: text} written to the config dir.  roots:
    {runtime root dir: runtime binary}, the roots whose leftover containers
    cleanup() deletes.  In all of them DIR_TOKEN stands for the temp dir.
    """

    def __init__(self, crio, pinns, runtimes, default_runtime, dropins=None, roots=None,
                 timeout=60):
        super().__init__("execaff-crio-", "crio.log")
        self.absent = [p for p in DEFAULT_PATHS if not os.path.lexists(p)]
        d = self.dir

        def here(text):
            return text.replace(DIR_TOKEN, d) if isinstance(text, str) else text

        self.roots = {here(k): v for k, v in (roots or {}).items()}
        try:
            self.address = os.path.join(d, "crio.sock")
            self.storage = os.path.join(d, "storage")
            self.runroot = os.path.join(d, "runroot")
            self.confd = os.path.join(d, "crio.conf.d")
            self.tmp = os.path.join(d, "tmp")
            for sub in ("crio.conf.d", "tmp", "cni-conf", "cni-bin", "podman-tmp"):
                os.makedirs(os.path.join(d, sub))
            self.env = self._environment()
            crilib.oci_image_tar(os.path.join(self.tmp, "image.tar"))
            self._podman_load(os.path.join(self.tmp, "image.tar"))
            os.unlink(os.path.join(self.tmp, "image.tar"))

            tables = []
            for name, keys in runtimes.items():
                keys = dict({"monitor_path": fixture.find_runtime("conmon"),
                             "monitor_env": MONITOR_ENV},
                            **{k: here(v) for k, v in keys.items()})
                # quoted: a handler's name may hold dots (runc-1.3.6)
                tables.append(_table("crio.runtime.runtimes." + json.dumps(name), keys))
            self.config = os.path.join(d, "crio.conf")
            with open(self.config, "w") as f:
                f.write(self._main_config(pinns, default_runtime) + "\n" +
                        "\n".join(tables))
            for fname, text in (dropins or {}).items():
                with open(os.path.join(self.confd, fname), "w") as f:
                    f.write(here(text))
            self.start([crio, "--config", self.config, "--config-dir", self.confd],
                       self._ready, env=self.env, timeout=timeout, what="crio")
        except BaseException:
            self.cleanup()
            raise

    def _environment(self):
        """crio's and podman's: containers/image and containers/storage
        read files of the test's only, and temp files go to the dir."""
        d = self.dir
        files = {
            "registries.conf": 'unqualified-search-registries = []\n',
            "storage.conf": '[storage]\ndriver = "vfs"\nrunroot = %s\ngraphroot = %s\n' % (
                json.dumps(self.runroot), json.dumps(self.storage)),
            # CRI-O checks the policy when it creates a container: the
            # test's image is accepted, any other refused.
            "policy.json": json.dumps({
                "default": [{"type": "reject"}],
                "transports": {"docker": {crilib.IMAGE.rsplit(":", 1)[0]: [
                    {"type": "insecureAcceptAnything"}]}}}) + "\n",
        }
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("EXECAFF_") or k == "XDG_RUNTIME_DIR":
                del env[k]
        env.update(TMPDIR=self.tmp,
                   CONTAINERS_REGISTRIES_CONF=os.path.join(d, "registries.conf"),
                   CONTAINERS_STORAGE_CONF=os.path.join(d, "storage.conf"))
        return env

    def _podman_load(self, tar):
        r = fixture.run(["podman", "--root", self.storage, "--runroot", self.runroot,
                         "--storage-driver", "vfs", "--tmpdir",
                         os.path.join(self.dir, "podman-tmp"), "--events-backend", "none",
                         "--cgroup-manager", "cgroupfs", "load", "-i", tar],
                        env=self.env, timeout=120)
        if r.returncode != 0 or crilib.IMAGE not in r.stdout + r.stderr:
            raise RuntimeError("podman load of the test image into %s failed: %s" % (
                self.storage, r))

    def _main_config(self, pinns, default_runtime):
        d = self.dir
        j = os.path.join
        sections = {
            "crio": {
                "root": self.storage, "runroot": self.runroot, "storage_driver": "vfs",
                "log_dir": j(d, "pod-logs"), "version_file": j(d, "crio-version"),
                "version_file_persist": j(d, "crio-version-persist"),
                "clean_shutdown_file": j(d, "clean.shutdown"),
            },
            "crio.api": {"listen": self.address, "stream_address": "127.0.0.1",
                         "stream_port": "0"},
            "crio.runtime": {
                "default_runtime": default_runtime, "cgroup_manager": "cgroupfs",
                "conmon_cgroup": "pod", "hooks_dir": [], "log_level": "debug",
                "container_exits_dir": j(d, "exits"),
                "container_attach_socket_dir": j(d, "attach"),
                "namespaces_dir": j(d, "ns"), "pinns_path": pinns,
                # no pause container: the pods share no PID namespace
                "drop_infra_ctr": True,
                # host-network pods map no port: the host's iptables and
                # nftables are neither needed nor touched
                "disable_hostport_mapping": True,
                # the high-performance hooks' irqbalance files: the test's
                "irqbalance_config_file": j(d, "irqbalance"),
                "irqbalance_config_restore_file": "",
            },
            "crio.image": {"pause_image": crilib.IMAGE, "pause_command": "sleep",
                           "signature_policy": j(d, "policy.json"),
                           "signature_policy_dir": j(d, "policies"),
                           "namespaced_auth_dir": j(d, "auth")},
            "crio.network": {"network_dir": j(d, "cni-conf"), "plugin_dirs": [j(d, "cni-bin")]},
            "crio.metrics": {"enable_metrics": False},
            "crio.nri": {"enable_nri": False},
        }
        return "\n".join(_table(name, keys) for name, keys in sections.items())

    def _ready(self):
        if not os.path.exists(self.address):
            return False
        try:
            cri = crilib.Cri(self, timeout=5)
            try:
                cri.version()
            finally:
                cri.close()
        except Exception:
            return False
        return True

    # -- leftovers: what a killed crio would leave behind
    def _our_pids(self):
        """Processes whose command line names the dir: crio, conmon (its
        bundle, exit and attach dirs are there), a runtime call."""
        return fixture.processes_naming(self.dir)

    def leftover_report(self):
        out = []
        if self._our_pids():
            out.append("processes left: %s" % self._our_pids())
        for p in self.absent:
            if os.path.lexists(p):
                out.append("made outside the temp dir: %s" % p)
        return "\n".join(out + [x for x in [super().leftover_report()] if x])

    def cleanup(self):
        fixture._unregister(self)
        try:
            self.remove_pods()
            self.stop()
            for pid in self._our_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for root, runtime in self.roots.items():
                self._delete_containers(runtime, root)
            self._kill_cgroup_tasks()
            self._umount_leftovers()
            self._remove_cgroups()
        finally:
            self.close_log()
            self.remove_dir()
