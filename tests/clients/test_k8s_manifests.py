#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""contrib/kubernetes's manifests: decoded by kubectl, and the DaemonSet's
init container run for real from the image build-image.sh makes.

`test_k8s_manifests.py kubectl` (checked with kubectl 1.32 and Debian's 1.20,
which setup-debian.sh installs when there is none; no API server here):
* every object with a pod template (DaemonSet, Pod) is decoded into the
  Kubernetes API Go types by kubectl and encoded again
  (`kubectl set env --local -o json`, which works on typed objects and
  needs no server); every field of the file must come back — a misspelt or
  misplaced field is dropped by the typed decode and fails the test;
* every document goes through `kubectl create --dry-run=client -o json`.
  Client dry-run still asks the server for discovery (kind -> resource)
  and, unless --validate=false, for the OpenAPI schema; there is no API
  server here, so kubectl talks to a discovery-only stub (a few static
  APIResourceLists: namespaces, configmaps, pods, daemonsets,
  runtimeclasses, as Kubernetes serves them) with --validate=false.  This
  checks that kubectl parses each document and maps its apiVersion/kind;
  it is not the server's validation;
* RuntimeClass has no pod template: its fields are checked against
  node.k8s.io/v1's (handler, overhead, scheduling);
* the names agree: RuntimeClass handlers are the CRI-O drop-in's and the
  containerd block's, the pod's runtimeClassName exists, the DaemonSet's
  nodeSelector is the RuntimeClasses' scheduling.nodeSelector.

`test_k8s_manifests.py image` (podman): build-image.sh builds the image
(FROM scratch: Debian's static busybox + the static shim; nothing pulled);
the DaemonSet's init container — its command and args as parsed from
daemonset.yaml, the ConfigMap's shim.json mounted the way kubelet mounts a
ConfigMap (..data symlinks, defaultMode) — runs in it against a throwaway
host root (a CRI-O node with a recording `systemctl` for the restart the
args ask for): files installed, the CRI restarted once; run again: nothing
changed, no restart.  The image is removed afterwards.

Exit codes: 0 pass, 1 fail, 77 skip (kubectl / podman missing; the image
part also needs root and busybox-static).
"""

import http.server
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import uuid

import yaml

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402,F401
from crilib import SRC, fixture, shimlib  # noqa: E402

K8S = os.path.join(SRC, "contrib", "kubernetes")
MANIFESTS = ("daemonset.yaml", "runtimeclass.yaml", "pod.yaml")
SENTINEL = "EXECAFF_MANIFEST_CHECK"
RUNTIMECLASS_FIELDS = {"apiVersion", "kind", "metadata", "handler", "overhead", "scheduling"}
RUNTIMECLASS_SCHEDULING = {"nodeSelector", "tolerations"}

# What a Kubernetes 1.32 API server lists for the kinds the manifests use.
DISCOVERY = {
    "/api/v1": ("v1", [("namespaces", "Namespace", False), ("configmaps", "ConfigMap", True),
                       ("pods", "Pod", True)]),
    "/apis/apps/v1": ("apps/v1", [("daemonsets", "DaemonSet", True)]),
    "/apis/node.k8s.io/v1": ("node.k8s.io/v1", [("runtimeclasses", "RuntimeClass", False)]),
}


def documents(name):
    path = os.path.join(K8S, name)
    with open(path) as f:
        return [(path, d) for d in yaml.safe_load_all(f) if d]


def kubectl_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["HOME"] = shimlib.workdir("execaff-kubectl-home-")     # no ~/.kube config
    return env


def lost_fields(given, got, path=""):
    """Paths of `given` that `got` lacks or changed (got may add defaults)."""
    if isinstance(given, dict):
        if not isinstance(got, dict):
            return [path or "/"]
        out = []
        for k, v in given.items():
            if k not in got:
                out.append("%s/%s" % (path, k))
            else:
                out += lost_fields(v, got[k], "%s/%s" % (path, k))
        return out
    if isinstance(given, list):
        if not isinstance(got, list) or len(got) != len(given):
            return [path]
        out = []
        for i, (a, b) in enumerate(zip(given, got)):
            out += lost_fields(a, b, "%s[%d]" % (path, i))
        return out
    return [] if given == got else ["%s (%r became %r)" % (path, given, got)]


def drop_sentinel(obj):
    spec = obj["spec"]["template"]["spec"] if obj["kind"] != "Pod" else obj["spec"]
    for key in ("containers", "initContainers"):
        for c in spec.get(key, []):
            c["env"] = [e for e in c.get("env", []) if e["name"] != SENTINEL]
            if not c["env"]:
                del c["env"]
    return obj


class Discovery(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path == "/api":
            body = {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                    "serverAddress": "127.0.0.1"}]}
        elif path == "/apis":
            groups = [{"name": gv.split("/")[0],
                       "versions": [{"groupVersion": gv, "version": "v1"}],
                       "preferredVersion": {"groupVersion": gv, "version": "v1"}}
                      for gv, _ in DISCOVERY.values() if "/" in gv]
            body = {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        elif path in DISCOVERY:
            gv, resources = DISCOVERY[path]
            body = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                    "resources": [{"name": n, "singularName": "", "namespaced": ns, "kind": k,
                                   "verbs": ["create", "delete", "get", "list", "patch",
                                             "update", "watch"]}
                                  for n, k, ns in resources]}
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def check_kubectl(chk):
    kubectl = fixture.find_runtime("kubectl")
    if kubectl is None:
        fixture.skip("kubectl not installed")
    env = kubectl_env()
    work = shimlib.workdir("execaff-manifests-")
    docs = [d for m in MANIFESTS for d in documents(m)]

    # The check must be able to fail: a misspelt field is lost in the decode.
    ds = [d for _, d in docs if d["kind"] == "DaemonSet"][0]
    bad = json.loads(json.dumps(ds))
    bad["spec"]["template"]["spec"]["initContainers"][0]["imagePullPolcy"] = "Always"
    docs_checked = [("a DaemonSet with a misspelt field (must fail)", bad)] + docs
    for path, doc in docs_checked:
        label = "%s %s/%s" % (os.path.basename(path), doc["kind"], doc["metadata"]["name"])
        if doc["kind"] in ("DaemonSet", "Pod"):
            one = os.path.join(work, uuid.uuid4().hex + ".json")
            with open(one, "w") as f:
                json.dump(doc, f)
            r = fixture.run([kubectl, "set", "env", "--local", "-o", "json", "-f", one,
                             "%s=1" % SENTINEL], env=env)
            try:
                got = drop_sentinel(json.loads(r.stdout))
                lost = lost_fields(doc, got)
            except (ValueError, KeyError) as e:
                lost = ["kubectl output: %s" % e]
            if doc is bad:
                chk.check("the typed decode drops a misspelt field (the check can fail)",
                          r.returncode == 0 and any("imagePullPolcy" in x for x in lost), lost)
                continue
            chk.eq("kubectl decodes %s into the API types, every field kept" % label,
                   (r.returncode, lost), (0, []), r)
        elif doc["kind"] == "RuntimeClass":
            extra = sorted(set(doc) - RUNTIMECLASS_FIELDS) + sorted(
                set(doc.get("scheduling", {})) - RUNTIMECLASS_SCHEDULING)
            chk.eq("%s: only node.k8s.io/v1 RuntimeClass fields" % label, extra, [])

    # create --dry-run=client against the discovery stub
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d" % server.server_address[1]
        r = fixture.run([kubectl, "--server", url, "create", "--dry-run=client",
                         "--validate=false", "-o", "json"] +
                        sum((["-f", os.path.join(K8S, m)] for m in MANIFESTS), []), env=env)
        try:
            items, text, at = [], r.stdout, 0         # one JSON object per document
            dec = json.JSONDecoder()
            while text[at:].strip():
                obj, end = dec.raw_decode(text[at:].lstrip())
                at = len(text) - len(text[at:].lstrip()) + end
                items += obj["items"] if obj.get("kind") == "List" else [obj]
            got = [(i["kind"], i["metadata"]["name"]) for i in items]
        except (ValueError, KeyError) as e:
            got = repr(e)
        chk.eq("kubectl create --dry-run=client -o json: every document, in order",
               (r.returncode, got),
               (0, [(d["kind"], d["metadata"]["name"]) for _, d in docs]), r)
    finally:
        server.shutdown()

    # the names agree with the CRI configs
    classes = {d["metadata"]["name"]: d for _, d in docs if d["kind"] == "RuntimeClass"}
    with open(os.path.join(SRC, "contrib", "crio", "99-execaff.conf")) as f:
        crio = f.read()
    with open(os.path.join(SRC, "contrib", "containerd", "execaff-runtime.toml")) as f:
        containerd = f.read()
    handlers = {c["handler"]: ("[crio.runtime.runtimes.%s]" % c["handler"] in crio or
                               'containerd.runtimes.%s]' % c["handler"] in containerd)
                for c in classes.values()}
    chk.check("every RuntimeClass handler is the CRI-O drop-in's or the containerd block's",
              handlers and all(handlers.values()), handlers)
    pods = [d for _, d in docs if d["kind"] == "Pod"]
    chk.check("the pod's runtimeClassName is one of the RuntimeClasses",
              all(p["spec"].get("runtimeClassName") in classes for p in pods), pods)
    ds = [d for _, d in docs if d["kind"] == "DaemonSet"][0]
    selectors = {json.dumps(c.get("scheduling", {}).get("nodeSelector"), sort_keys=True)
                 for c in classes.values()}
    chk.eq("the DaemonSet installs on the nodes the RuntimeClasses schedule to",
           selectors, {json.dumps(ds["spec"]["template"]["spec"]["nodeSelector"],
                                  sort_keys=True)})


def configmap_volume(parent, data, mode):
    """A directory laid out as kubelet lays out a ConfigMap volume."""
    ts = os.path.join(parent, "..2026_12_01_00_00_00.000000001")
    os.makedirs(ts)
    for name, text in data.items():
        with open(os.path.join(ts, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(ts, name), mode)
        os.symlink("..data/" + name, os.path.join(parent, name))
    os.symlink(os.path.basename(ts), os.path.join(parent, "..data"))
    return parent


def check_image(chk):
    fixture.require_root()
    busybox = fixture.require_busybox()
    podman = fixture.find_runtime("podman")
    if podman is None:
        fixture.skip("podman not installed")
    shim = shimlib.shim_path()
    work = shimlib.workdir("execaff-k8s-image-")
    tag = "localhost/execaff-test/node-installer:%s" % uuid.uuid4().hex[:12]
    docs = [d for _, d in documents("daemonset.yaml")]
    ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
    cm = [d for d in docs if d["kind"] == "ConfigMap"][0]
    pod = ds["spec"]["template"]["spec"]
    init = pod["initContainers"][0]
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}

    r = fixture.run(["sh", os.path.join(K8S, "build-image.sh"), "--shim", shim,
                     "--busybox", busybox, "--tag", tag], timeout=300)
    if not chk.eq("build-image.sh builds the image (FROM scratch, nothing pulled)",
                  r.returncode, 0, r):
        return
    try:
        # the host: a CRI-O node whose systemctl records what it is asked
        host = os.path.join(work, "host")
        os.makedirs(os.path.join(host, "etc", "crio"))
        os.makedirs(os.path.join(host, "bin"))
        shutil.copy2(busybox, os.path.join(host, "bin", "busybox"))
        os.symlink("busybox", os.path.join(host, "bin", "sh"))
        shimlib.write_script(os.path.join(host, "bin", "systemctl"),
                             '#!/bin/sh\necho "$*" >> /systemctl.calls\n')
        mode = volumes["config"]["configMap"]["defaultMode"]
        cfgdir = configmap_volume(os.path.join(work, "configmap"), cm["data"], mode)
        argv = [podman, "run", "--rm", "--network", "none", "--privileged",
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                "-v", "%s:%s" % (host, mounts["host"]),
                "-v", "%s:%s:ro" % (cfgdir, mounts["config"]),
                "--entrypoint", init["command"][0], tag] + init["args"]
        calls = os.path.join(host, "systemctl.calls")

        r = fixture.run(argv, timeout=120)
        want = {"usr/local/bin/execaff-shim": shim,
                "etc/crio/crio.conf.d/99-execaff.conf":
                    os.path.join(SRC, "contrib", "crio", "99-execaff.conf")}
        ok = r.returncode == 0
        for rel, src in want.items():
            with open(src, "rb") as a, open(os.path.join(host, rel), "rb") as b:
                ok = ok and a.read() == b.read()
        with open(os.path.join(host, "etc/execaff/shim.json")) as f:
            ok = ok and f.read() == cm["data"]["shim.json"]
        st = os.stat(os.path.join(host, "etc/execaff/shim.json"))
        ok = ok and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o644
        chk.check("the DaemonSet's init container, run in the image: shim, the ConfigMap's "
                  "shim.json (root, 0644) and the CRI-O drop-in on the host", ok, r)
        with open(calls) as f:
            chk.eq("the init container restarted the CRI once (chroot /host systemctl)",
                   f.read(), "restart crio\n")
        os.unlink(calls)
        r = fixture.run(argv, timeout=120)
        chk.check("the init container again (a pod restart): nothing to do, no restart",
                  r.returncode == 0 and "nothing to do" in r.stdout and
                  not os.path.exists(calls), r)
    finally:
        fixture.run([podman, "rmi", "-f", tag], timeout=60)
    r = fixture.run([podman, "image", "exists", tag])
    chk.check("the test image is removed", r.returncode != 0)


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "kubectl"
    chk = shimlib.Checks("k8s %s: " % what)
    try:
        {"kubectl": check_kubectl, "image": check_image}[what](chk)
    except Exception as e:
        chk.error(what, e)
    return chk.finish()


if __name__ == "__main__":
    socket.setdefaulttimeout(60)
    sys.exit(main())
