# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real clients of execaff-shim: a private containerd and a CRI v1 client.

Runs under Debian's /usr/bin/python3 (grpcio, grpc_tools); the meson
registration calls it so.  What is here:

* ``cri_modules()``: cri_v1.proto (next to this file) compiled with
  grpc_tools.protoc into a temp dir at run time; returns (pb2, pb2_grpc).
* ``oci_image_tar()``: an OCI image layout tarball (oci-layout, index.json,
  manifest, config, one uncompressed layer) of the busybox rootfs the
  integration fixture builds, for ``ctr images import``.  Nothing is pulled.
* ``PrivateDaemon``: what every CRI daemon a test starts shares: a temp
  dir of its own, the pods it runs, their cgroup parents, its log; the
  leftovers (mounts under the dir, the pods' cgroups) and their report.
* ``Containerd``: containerd started by the test with its own root, state,
  config (contrib/containerd/config.toml, paths substituted) and sockets
  in a temp dir; stopped and cleaned up (pods, shims, runc state, mounts,
  cgroups, shim sockets) on every exit path, through the integration
  fixture's cleanup registry (atexit and SIGTERM/SIGINT/SIGHUP).
  (CRI-O: criolib.Crio.)
* ``Cri``: RuntimeService calls over the gRPC socket, each with a
  deadline, plus ``stream_exec``: the client side of the streaming
  server's websocket exec (v4.channel.k8s.io), as kubectl's exec reaches
  it through the API server.
"""

import base64
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import uuid

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import fixture  # noqa: E402
import shimlib  # noqa: E402

CONTRIB_CONFIG = os.path.join(SRC, "contrib", "containerd", "config.toml")
NAMESPACE = "k8s.io"          # the CRI plugin's containerd namespace
IMAGE = "localhost/execaff-test/busybox:1"

# The paths contrib/containerd/config.toml names; each must be there, and
# the test replaces each by its own (so a rotted file fails the test).
CONFIG_PATHS = ("/var/lib/containerd", "/run/containerd", "/opt/containerd",
                "/opt/cni/bin", "/etc/cni/net.d", "/usr/local/bin/execaff-shim")
CONFIG_SANDBOX_IMAGE = 'sandbox_image = "registry.k8s.io/pause:3.6"'
HOST_DIRS = ("/run/containerd", "/run/containerd/s", "/run/containerd/fifo")


def require_tools():
    """Skips (77) when the machine lacks containerd, ctr, grpc or runc."""
    for tool in ("containerd", "ctr", "containerd-shim-runc-v2", "runc"):
        if fixture.find_runtime(tool) is None:
            fixture.skip("%s not installed (apt-get install containerd runc)" % tool)
    require_grpc()


def require_grpc():
    """Skips (77) without the grpc modules of Debian's python."""
    try:
        import grpc  # noqa: F401
        import grpc_tools.protoc  # noqa: F401
    except ImportError as e:
        fixture.skip("%s: run with Debian's /usr/bin/python3 and install "
                     "python3-grpcio python3-grpc-tools (%s)" % (sys.executable, e))


# ------------------------------------------------------------- CRI stubs

_modules = None


def cri_modules():
    global _modules
    if _modules is None:
        from grpc_tools import protoc
        out = shimlib.workdir("execaff-cri-stubs-")
        proto = os.path.join(HERE, "cri_v1.proto")
        rc = protoc.main(["protoc", "-I" + HERE, "--python_out=" + out,
                          "--grpc_python_out=" + out, proto])
        if rc != 0:
            raise RuntimeError("grpc_tools.protoc failed on %s (%d)" % (proto, rc))
        sys.path.insert(0, out)
        import cri_v1_pb2
        import cri_v1_pb2_grpc
        _modules = (cri_v1_pb2, cri_v1_pb2_grpc)
    return _modules


# ------------------------------------------------------------- the image

def _blob(layout, data, media_type):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": "sha256:" + digest, "size": len(data)}


def oci_image_tar(path, name=IMAGE, cmd=("sleep", "3600")):
    """Write an OCI image layout tarball of the fixture's busybox rootfs."""
    bundle = fixture.Bundle(register=True)
    try:
        layer = io.BytesIO()
        with tarfile.open(fileobj=layer, mode="w") as t:
            t.add(bundle.rootfs, arcname=".")
        layer = layer.getvalue()
    finally:
        bundle.cleanup()
    layout = tempfile.mkdtemp(prefix="execaff-oci-")
    try:
        os.makedirs(os.path.join(layout, "blobs", "sha256"))
        layer_desc = _blob(layout, layer, "application/vnd.oci.image.layer.v1.tar")
        config = {
            "architecture": "amd64", "os": "linux",
            "config": {"Env": list(fixture.DEFAULT_ENV), "Cmd": list(cmd),
                       "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        }
        config_desc = _blob(layout, json.dumps(config).encode(),
                            "application/vnd.oci.image.config.v1+json")
        manifest = {"schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": config_desc, "layers": [layer_desc]}
        manifest_desc = _blob(layout, json.dumps(manifest).encode(),
                              "application/vnd.oci.image.manifest.v1+json")
        manifest_desc["annotations"] = {
            "io.containerd.image.name": name,
            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
        with open(os.path.join(layout, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [manifest_desc]}, f)
        with open(os.path.join(layout, "oci-layout"), "w") as f:
            json.dump({"imageLayoutVersion": "1.0.0"}, f)
        with tarfile.open(path, "w") as t:
            for entry in ("oci-layout", "index.json", "blobs"):
                t.add(os.path.join(layout, entry), arcname=entry)
    finally:
        shutil.rmtree(layout, ignore_errors=True)
    return path


# -------------------------------------------------------- the config file

def can_lower_oom_score_adj():
    r = subprocess.run(["/bin/sh", "-c", "echo -998 > /proc/self/oom_score_adj"],
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0

def render_config(paths, shim, sandbox_image):
    """contrib/containerd/config.toml with the test's paths in it."""
    with open(CONTRIB_CONFIG) as f:
        text = f.read()
    for p in CONFIG_PATHS + (CONFIG_SANDBOX_IMAGE,):
        if p not in text:
            raise RuntimeError("%s no longer names %s: the test cannot run the file "
                               "it documents" % (CONTRIB_CONFIG, p))
    sandbox = 'sandbox_image = "%s"' % sandbox_image
    if not can_lower_oom_score_adj():
        # The sandbox's oomScoreAdj is -998 (kubelet's); a host without
        # CAP_SYS_RESOURCE (this kind of VM) refuses it and runc init dies
        # ("can't get final child's PID from pipe").  containerd's own knob
        # keeps it at containerd's score; nothing execaff does depends on it.
        sandbox += "\n  restrict_oom_score_adj = true"
    text = text.replace(CONFIG_SANDBOX_IMAGE, sandbox)
    text = text.replace("/usr/local/bin/execaff-shim", shim)
    for p in CONFIG_PATHS[:-1]:
        text = text.replace(p, paths[p])
    return text


# ----------------------------------------------------- a private CRI daemon

class PrivateDaemon:
    """What the CRI daemons a test starts share: a temp dir holding all of
    theirs, the process and its log, the pods it runs (``pods``, their
    cgroup parents in ``cgroup_parents``), and the leftovers a killed run
    would leave (mounts under the dir, the pods' cgroups).  Registered with
    the fixture's cleanup registry; subclasses define ``cleanup()``."""

    def __init__(self, prefix, log_name):
        self.dir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
        self.proc = None
        self.log_file = None
        self.log = os.path.join(self.dir, log_name)
        self.pods = []
        self.cgroup_parents = []
        fixture._register(self)

    def start(self, argv, ready, env=None, timeout=60, what="the daemon"):
        """Starts argv (its output to self.log) and waits until ready()."""
        self.log_file = open(self.log, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (%d): %s" % (
                    what, self.proc.returncode, self.log_tail()))
            if ready():
                return
            if time.monotonic() > deadline:
                raise RuntimeError("%s not ready in %d s: %s" % (what, timeout, self.log_tail()))
            time.sleep(0.1)

    def log_tail(self, lines=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def pod_started(self, sid):
        self.pods.append(sid)

    def remove_pods(self):
        """Every pod still running, through the CRI (as kubelet would)."""
        if not self.pods or self.proc is None or self.proc.poll() is not None:
            return
        cri = Cri(self)
        try:
            for pod in list(self.pods):
                try:
                    cri.remove_pod(pod)
                except Exception as e:      # the next pod all the same
                    print("cleanup: removing pod %s failed: %s" % (pod, e), file=sys.stderr)
        finally:
            cri.close()

    def stop(self, timeout=20):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @staticmethod
    def _delete_containers(runtime, root):
        """Kill and delete every container left in a runtime's root."""
        for cid in (os.listdir(root) if os.path.isdir(root) else []):
            fixture.run([runtime, "--root", root, "kill", cid, "KILL"], timeout=30)
            fixture.run([runtime, "--root", root, "delete", "--force", cid], timeout=30)

    def _mounts(self):
        with open("/proc/self/mountinfo") as f:
            points = [ln.split()[4].encode().decode("unicode_escape") for ln in f]
        return [p for p in points if p == self.dir or p.startswith(self.dir + "/")]

    def _umount_leftovers(self):
        for p in reversed(self._mounts()):
            subprocess.run(["umount", "-l", p], stderr=subprocess.DEVNULL)

    def _cgroup_dirs(self):
        """Where the pods' cgroup parents are: under every v1 controller,
        and at the top of a cgroup v2 (or the hybrid's unified) tree."""
        out = []
        for parent in self.cgroup_parents:
            for top in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                if not os.path.isdir(top):
                    continue
                for sub in [""] + os.listdir(top):
                    d = os.path.join(top, sub, parent.lstrip("/"))
                    if os.path.isdir(d):
                        out.append(d)
        return out

    def _kill_cgroup_tasks(self):
        """SIGKILL whatever still runs in the pods' cgroups (a container,
        a monitor the daemon left behind)."""
        for d in self._cgroup_dirs():
            for sub, _, files in os.walk(d):
                if "cgroup.procs" not in files:
                    continue
                try:
                    with open(os.path.join(sub, "cgroup.procs")) as f:
                        pids = [int(x) for x in f.read().split()]
                except OSError:
                    continue
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    def _remove_cgroups(self, timeout=5):
        """rmdir the pods' cgroups, deepest first; a cgroup whose killed
        tasks are still exiting is retried until `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            for d in self._cgroup_dirs():
                for sub, _, _ in sorted(os.walk(d), key=lambda w: -len(w[0])):
                    try:
                        os.rmdir(sub)
                    except OSError:
                        pass
            if not self._cgroup_dirs() or time.monotonic() > deadline:
                return
            time.sleep(0.1)

    def leftover_report(self):
        """'' when nothing of ours is left: mounts, cgroups, the temp dir."""
        out = []
        if self._mounts():
            out.append("mounts left: %s" % self._mounts())
        for d in self._cgroup_dirs():
            out.append("cgroup left: %s" % d)
        if os.path.exists(self.dir):
            out.append("temp dir left: %s" % self.dir)
        return "\n".join(out)

    def close_log(self):
        if self.log_file is not None:
            self.log_file.close()
            self.log_file = None

    def remove_dir(self):
        if os.environ.get("EXECAFF_TEST_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------ containerd

class Containerd(PrivateDaemon):
    """A private containerd, its CRI plugin on a socket in a temp dir."""

    def __init__(self, shim, env=None, timeout=60):
        super().__init__("execaff-cri-", "containerd.log")
        self.shim_sockets = []
        # containerd 1.6 puts shim sockets under /run/containerd/s whatever
        # its state dir; the dirs this run creates there are removed again.
        self.made_dirs = [d for d in HOST_DIRS if not os.path.lexists(d)]
        try:
            d = self.dir
            self.paths = {
                "/var/lib/containerd": os.path.join(d, "root"),
                "/run/containerd": os.path.join(d, "state"),
                "/opt/containerd": os.path.join(d, "opt"),
                "/opt/cni/bin": os.path.join(d, "cni-bin"),
                "/etc/cni/net.d": os.path.join(d, "cni-conf"),
            }
            for p in self.paths.values():
                os.makedirs(p)
            self.address = os.path.join(self.paths["/run/containerd"], "containerd.sock")
            self.runc_root = os.path.join(self.paths["/run/containerd"], "runc")
            self.config = os.path.join(d, "config.toml")
            with open(self.config, "w") as f:
                f.write(render_config(self.paths, shim, IMAGE))
            self.start(["containerd", "--config", self.config, "--log-level", "debug"],
                       lambda: os.path.exists(self.address) and re.search(
                           r"^io\.containerd\.grpc\.v1\s+cri\s.*\sok\s*$",
                           self.ctr("plugins", "ls").stdout, re.M),
                       env=env, timeout=timeout, what="containerd")
        except BaseException:
            self.cleanup()
            raise

    def ctr(self, *args, namespace=NAMESPACE, timeout=60, **kw):
        return fixture.run(["ctr", "--address", self.address, "-n", namespace] +
                           [str(a) for a in args], timeout=timeout, **kw)

    def import_image(self, tar):
        r = self.ctr("images", "import", tar)
        if r.returncode != 0:
            raise RuntimeError("ctr images import failed: %s" % r)
        return r

    def pod_started(self, sid):
        super().pod_started(sid)
        self.shim_sockets.append(self.shim_socket(sid))

    # -- leftovers: what a killed containerd would leave behind
    def _shim_pids(self):
        """Our containerd's shims: their -address names our socket."""
        pids = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and \
                    self.address.encode() in argv:
                pids.append(int(pid))
        return pids

    def _runc_leftovers(self):
        for ns in (os.listdir(self.runc_root) if os.path.isdir(self.runc_root) else []):
            self._delete_containers("runc", os.path.join(self.runc_root, ns))

    def leftover_report(self):
        """'' when nothing of ours is left: processes, mounts, cgroups."""
        out = []
        if self._shim_pids():
            out.append("shims running: %s" % self._shim_pids())
        for s in self.shim_sockets:
            if os.path.lexists(s):
                out.append("shim socket left: %s" % s)
        for d in self.made_dirs:
            if os.path.lexists(d):
                out.append("made and left: %s" % d)
        return "\n".join(out + [x for x in [super().leftover_report()] if x])

    def shim_socket(self, sandbox_id, namespace=NAMESPACE):
        """Where containerd 1.6 puts a shim's socket (/run/containerd/s/,
        fixed in containerd, whatever the config's state says): the sha256
        of address/namespace/id."""
        digest = hashlib.sha256(os.path.join(self.address, namespace, sandbox_id)
                                .encode()).hexdigest()
        return os.path.join("/run/containerd/s", digest)

    def cleanup(self):
        fixture._unregister(self)
        try:
            self.remove_pods()
            self.stop()
            for pid in self._shim_pids():       # started by our containerd
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self._runc_leftovers()
            self._umount_leftovers()
            self._remove_cgroups()
            for s in self.shim_sockets:
                if os.path.lexists(s):
                    os.unlink(s)
            for d in reversed(self.made_dirs):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
        finally:
            self.close_log()
            self.remove_dir()


# ------------------------------------------------------------- the client

class Cri:
    def __init__(self, daemon, timeout=60):
        import grpc
        self.grpc = grpc
        self.pb, pb_grpc = cri_modules()
        self.daemon = daemon
        self.timeout = timeout
        self.channel = grpc.insecure_channel("unix://" + daemon.address)
        self.rt = pb_grpc.RuntimeServiceStub(self.channel)

    def close(self):
        self.channel.close()

    def version(self):
        return self.rt.Version(self.pb.VersionRequest(version="v1"), timeout=self.timeout)

    def sandbox_config(self, name, annotations=None, cgroup_parent=None):
        pb = self.pb
        ns = pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD)
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uuid.uuid4().hex,
                                           namespace="execaff-test", attempt=0),
            annotations=dict(annotations or {}),
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=cgroup_parent,
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns)))

    def run_pod(self, handler, annotations=None, cpuset="0-1", args=("sleep", "3600"),
                run_as_user=None, cpu_shares=0, add_capabilities=(), mounts=(),
                before_sandbox=None, before_start=None):
        """A pod on `handler` with one running container; returns
        (sandbox_id, container_id).  run_as_user: the container's uid (with
        no_new_privs, as a restricted pod has it).  cpu_shares: 1024 per
        whole CPU makes it what kubelet sends for a Guaranteed pod.
        add_capabilities: CRI names ("SYS_NICE").  mounts: (host path,
        container path) pairs, read-only.  before_sandbox(cgroup parent):
        called before RunPodSandbox (where kubelet makes the pod's cgroup);
        before_start(sandbox_id, container_id): between CreateContainer and
        StartContainer."""
        pb = self.pb
        name = "execaff-%s" % uuid.uuid4().hex[:12]
        parent = "/" + name                     # cgroupfs: one flat parent per pod
        self.daemon.cgroup_parents.append(parent)
        if before_sandbox is not None:
            before_sandbox(parent)
        cfg = self.sandbox_config(name, annotations, parent)
        sid = self.rt.RunPodSandbox(pb.RunPodSandboxRequest(config=cfg, runtime_handler=handler),
                                    timeout=self.timeout).pod_sandbox_id
        self.daemon.pod_started(sid)
        ccfg = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name="app"),
            image=pb.ImageSpec(image=IMAGE, user_specified_image=IMAGE), command=list(args),
            mounts=[pb.Mount(host_path=h, container_path=c, readonly=True) for h, c in mounts],
            linux=pb.LinuxContainerConfig(
                resources=pb.LinuxContainerResources(cpuset_cpus=cpuset,
                                                     cpu_shares=cpu_shares),
                security_context=pb.LinuxContainerSecurityContext(
                    capabilities=(pb.Capability(add_capabilities=list(add_capabilities))
                                  if add_capabilities else None),
                    namespace_options=pb.NamespaceOption(network=pb.NODE,
                                                         pid=pb.CONTAINER),
                    run_as_user=(None if run_as_user is None else
                                 pb.Int64Value(value=run_as_user)),
                    no_new_privs=run_as_user is not None)))
        cid = self.rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=sid, config=ccfg, sandbox_config=cfg),
            timeout=self.timeout).container_id
        if before_start is not None:
            before_start(sid, cid)
        self.rt.StartContainer(pb.StartContainerRequest(container_id=cid),
                               timeout=self.timeout)
        return sid, cid

    def remove_pod(self, sid):
        """As kubelet ends a pod: its containers stopped first (grace period
        0: SIGKILL), then the sandbox stopped and removed.  (CRI-O's
        StopPodSandbox would give a container that ignores SIGTERM, like
        `sleep` as PID 1, the call's whole deadline before it kills it.)"""
        pb = self.pb
        ctrs = self.rt.ListContainers(pb.ListContainersRequest(
            filter=pb.ContainerFilter(pod_sandbox_id=sid)), timeout=self.timeout).containers
        for c in ctrs:
            if c.state != pb.CONTAINER_EXITED:
                self.rt.StopContainer(pb.StopContainerRequest(container_id=c.id, timeout=0),
                                      timeout=self.timeout)
        self.rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=sid),
                               timeout=self.timeout)
        self.rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=sid),
                                 timeout=self.timeout)
        if sid in self.daemon.pods:
            self.daemon.pods.remove(sid)

    def container_info(self, cid):
        """ContainerStatus(verbose)'s info, each value decoded from JSON."""
        r = self.rt.ContainerStatus(self.pb.ContainerStatusRequest(container_id=cid, verbose=True),
                                    timeout=self.timeout)
        return {k: json.loads(v) for k, v in r.info.items()}

    def exec_sync(self, cid, cmd, timeout=0):
        """(exit_code, stdout, stderr) or ('error', grpc code name, details)."""
        try:
            r = self.rt.ExecSync(self.pb.ExecSyncRequest(container_id=cid, cmd=list(cmd),
                                                         timeout=timeout),
                                 timeout=self.timeout)
        except self.grpc.RpcError as e:
            return ("error", e.code().name, e.details())
        return (r.exit_code, r.stdout.decode(errors="replace"),
                r.stderr.decode(errors="replace"))

    def exec_url(self, cid, cmd, tty=False, stdin=False):
        return self.rt.Exec(self.pb.ExecRequest(
            container_id=cid, cmd=list(cmd), tty=tty, stdin=stdin, stdout=True,
            stderr=not tty), timeout=self.timeout).url

    def stream_exec(self, cid, cmd, tty=False, stdin_data=None):
        """Exec through the streaming server: (exit_code, stdout, stderr)."""
        url = self.exec_url(cid, cmd, tty=tty, stdin=stdin_data is not None)
        return websocket_exec(url, stdin_data=stdin_data, timeout=self.timeout)


# -------------------------------------------- the streaming server's exec

V4_PROTOCOL = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR = 0, 1, 2, 3


class WebSocket:
    """The client half of RFC 6455, enough for channel.k8s.io: binary
    messages, masked client frames, ping/pong, close."""

    def __init__(self, url, protocol, timeout):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http":
            raise RuntimeError("streaming URL %r: only http:// is served here" % url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = u.path + ("?" + u.query if u.query else "")
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n"
               "Origin: http://%s\r\n\r\n" % (path, u.netloc, key, protocol, u.netloc))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("streaming server closed during the handshake: %r" % head)
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        lines = head.decode(errors="replace").split("\r\n")
        if not lines[0].startswith("HTTP/1.1 101"):
            raise RuntimeError("websocket upgrade refused: %s" % lines[0])
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (ln.partition(":") for ln in lines[1:])}
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != accept:
            raise RuntimeError("bad Sec-WebSocket-Accept: %r" % headers)
        self.protocol = headers.get("sec-websocket-protocol", "")

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def send(self, payload, opcode=0x2):
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def recv(self):
        """The next data message's payload; None when the server closed."""
        message = b""
        while True:
            try:
                b0, b1 = self._read(2)
            except EOFError:
                return None
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:                       # close
                try:
                    self.send(payload[:2], opcode=0x8)
                except OSError:
                    pass
                return None
            if opcode == 0x9:                       # ping
                self.send(payload, opcode=0xA)
                continue
            if opcode == 0xA:
                continue
            message += payload
            if b0 & 0x80:
                return message

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def websocket_exec(url, stdin_data=None, timeout=60):
    """Run the exec behind a streaming URL: (exit_code, stdout, stderr).

    The v4 protocol ends with one message on the error channel: a
    metav1.Status, "Success", or "Failure" with reason NonZeroExitCode and
    the code in details.causes[ExitCode]."""
    ws = WebSocket(url, V4_PROTOCOL, timeout)
    try:
        if ws.protocol != V4_PROTOCOL:
            raise RuntimeError("server chose protocol %r, not %s" % (ws.protocol, V4_PROTOCOL))
        if stdin_data is not None:
            ws.send(bytes([STDIN]) + stdin_data.encode())
        out, err, status = b"", b"", None
        while True:
            msg = ws.recv()
            if msg is None:
                break
            if not msg:
                continue
            channel, data = msg[0], msg[1:]
            if channel == STDOUT:
                out += data
            elif channel == STDERR:
                err += data
            elif channel == ERROR and data:
                status = json.loads(data)
    finally:
        ws.close()
    if status is None:
        raise RuntimeError("exec stream ended without a status")
    if status.get("status") == "Success":
        code = 0
    else:
        causes = (status.get("details") or {}).get("causes") or []
        codes = [c.get("message") for c in causes if c.get("reason") == "ExitCode"]
        if not codes:
            raise RuntimeError("exec failed: %s" % status)
        code = int(codes[0])
    return code, out.decode(errors="replace"), err.decode(errors="replace")


def normalise_ids(text, ids):
    for i, x in enumerate(ids):
        text = text.replace(x, "<ID%d>" % i)
    return re.sub(r"\b[0-9a-f]{64}\b", "<ID>", text)
