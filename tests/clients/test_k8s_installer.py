#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""contrib/kubernetes/install-node.sh in throwaway root directories.

The script the DaemonSet's init container runs, run for real (as root: it
chowns), twice over: under Debian's /bin/sh (dash, GNU tools) and under
busybox sh with only busybox's applets on PATH (what the installer image
holds).  The restart of the CRI is a recording command (--restart-cmd):
there is no systemd here.

Cases, for each shell:
* CRI-O node: shim (0755), /etc/execaff/shim.json (0644) and the drop-in
  installed, byte for byte, root-owned; the CRI restarted once;
* a second run changes nothing (same inodes, mtimes, bytes) and restarts
  nothing; a changed shim.json changes that file only and restarts once;
* a config given as a ConfigMap's symlink is judged by its target;
* a world-writable, a group-writable and a non-root-owned config are
  refused with a message naming the file and the reason, before anything
  is touched (the tree is unchanged);
* a failure half-way (the drop-in directory is a file), and a failed
  restart: every file as it was before (old versions restored byte for
  byte, new files and directories removed), exit 1; after the failed
  restart the CRI is restarted again on the old files;
* containerd node: the handler block appended to a version = 2
  config.toml (parsed with tomllib: BinaryName, pod_annotations; the
  node's SystemdCgroup = true followed), the operator's own lines kept;
  a second run leaves the file alone (one block); a config.toml without
  version = 2 is refused, unchanged; a fresh node gets version = 2 + block;
* the handler block the installer appends is, line for line, the one in
  contrib/containerd/config.toml — the file the CRI test runs containerd
  with — so what is installed is what was tested;
* --uninstall puts the node's own files back (CRI-O: the drop-in,
  shim.json and shim removed; containerd: config.toml byte for byte the
  operator's, mode kept), restarts once, is idempotent, and restores the
  installed files when the restart fails;
* bad usage (unknown option, missing source, --cri auto with no CRI) exits 2
  and touches nothing;
* the callers placed (issue 17 §4): with the config's housekeeping_cpus,
  CRI-O's infra_ctr_cpuset drop-in (parsed with tomllib) and CPUAffinity=
  drop-ins for crio.service and kubelet.service (a reset, then the CPUs),
  the units restarted after a daemon-reload; a second run changes nothing;
  --housekeeping overrides the config and changes only those files; on a
  containerd node kubelet's reservedSystemCPUs (kubeadm's YAML, OpenShift's
  JSON kubelet.conf) places containerd.service and kubelet.service and no
  CRI-O file is written; a shim.json change restarts the CRI alone, without
  a reload; a housekeeping list that is no CPU list is refused naming it
  and its source, nothing touched; --housekeeping none and --uninstall
  remove the placement.

Exit codes: 0 pass, 1 fail, 77 skip (not root, busybox-static missing).
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402,F401
from crilib import SRC, fixture, shimlib  # noqa: E402

INSTALLER = os.path.join(SRC, "contrib", "kubernetes", "install-node.sh")
DROPIN = os.path.join(SRC, "contrib", "crio", "99-execaff.conf")
SNIPPET = os.path.join(SRC, "contrib", "containerd", "execaff-runtime.toml")
CONTAINERD_CONFIG = os.path.join(SRC, "contrib", "containerd", "config.toml")
CRI_KEY = "io.containerd.grpc.v1.cri"
CRIO_CPUSET = "etc/crio/crio.conf.d/99-execaff-infra-cpuset.conf"


def tree(root):
    """Every path under root: (type, mode, uid, size, mtime_ns, inode, bytes)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            data = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    data = f.read()
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                                             st.st_uid, st.st_size, st.st_mtime_ns, st.st_ino,
                                             data)
    return out


def content(root):
    """tree() without what a rewrite of equal bytes would change."""
    return {k: (v[0], v[1], v[2], v[6]) for k, v in tree(root).items()}


def node_files(root):
    """The regular files and symlinks of content() (directories an install
    made stay after --uninstall, as package managers leave them)."""
    return {k: v for k, v in content(root).items() if v[0] != stat.S_IFDIR}


class Installer:
    def __init__(self, shell, env, work, shim, config):
        self.shell, self.env, self.work = shell, env, work
        self.shim, self.config = shim, config
        self.restarts = os.path.join(work, "restarts")

    def run(self, root, *extra, config=None, restart="ok", cri=None):
        open(self.restarts, "a").close()
        cmd = 'echo "$EXECAFF_RESTART_UNITS|$EXECAFF_DAEMON_RELOAD" >> %s' % self.restarts
        if restart == "fail":
            cmd += "; exit 3"
        argv = [self.shell, INSTALLER, "--root", root, "--shim", self.shim,
                "--config", config or self.config, "--crio-dropin", DROPIN,
                "--containerd-snippet", SNIPPET, "--restart-cmd", cmd]
        if cri:
            argv += ["--cri", cri]
        return fixture.run(argv + list(extra), env=self.env)

    def restart_log(self):
        """One "UNITS|RELOAD" line per restart since the last call."""
        with open(self.restarts) as f:
            lines = f.read().splitlines()
        os.unlink(self.restarts)
        return lines

    def restart_count(self):
        return len(self.restart_log())


def snippet_tables():
    """The snippet's TOML lines (its leading comment block dropped)."""
    with open(SNIPPET) as f:
        lines = f.read().splitlines()
    body = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return body


def check_shell(chk, label, inst, work):
    p = label + ": "
    n = [0]

    def fresh(*dirs):
        n[0] += 1
        root = os.path.join(work, "%s-root%d" % (label, n[0]))
        os.makedirs(root)
        for d in dirs:
            os.makedirs(os.path.join(root, d))
        return root

    # --- CRI-O node
    root = fresh("etc/crio")
    r = inst.run(root)
    files = {"usr/local/bin/execaff-shim": (inst.shim, 0o755),
             "etc/execaff/shim.json": (inst.config, 0o644),
             "etc/crio/crio.conf.d/99-execaff.conf": (DROPIN, 0o644)}
    t = content(root)
    ok = r.returncode == 0
    for rel, (src, mode) in files.items():
        with open(src, "rb") as f:
            ok = ok and t.get(rel) == (stat.S_IFREG, mode, 0, f.read())
    chk.check(p + "CRI-O node: shim, shim.json and drop-in installed, root-owned, modes",
              ok, "%s\n%s" % (r, sorted(t)))
    chk.eq(p + "CRI-O node: the CRI restarted once, no reload (no placement)", inst.restart_log(),
           ["crio|false"])

    before = tree(root)
    r = inst.run(root)
    chk.check(p + "second run: nothing to do, tree untouched (inodes, mtimes, bytes)",
              r.returncode == 0 and "nothing to do" in r.stdout and tree(root) == before, r)
    chk.eq(p + "second run: no restart", inst.restart_count(), 0)

    cfg2 = shimlib.write_config(os.path.join(work, label + "-cfg2.json"),
                                {"runtime": "/usr/bin/crun"}, mode=0o644)
    before = tree(root)
    r = inst.run(root, config=cfg2)
    after = tree(root)
    changed = sorted(k for k in after if after[k] != before.get(k) and
                     after[k][0] == stat.S_IFREG)
    chk.eq(p + "a changed shim.json: only that file changes", (r.returncode, changed),
           (0, ["etc/execaff/shim.json"]), r)
    chk.eq(p + "a changed shim.json: one restart, of the CRI alone", inst.restart_log(),
           ["crio|false"])

    # ConfigMap style: ..data/shim.json behind a symlink (the link is 0777)
    cm = os.path.join(work, label + "-configmap")
    os.makedirs(os.path.join(cm, "..data"))
    shimlib.write_config(os.path.join(cm, "..data", "shim.json"), {"runtime": "/usr/bin/runc"},
                         mode=0o644)
    os.symlink("..data/shim.json", os.path.join(cm, "shim.json"))
    r = inst.run(root, config=os.path.join(cm, "shim.json"))
    chk.check(p + "a ConfigMap's symlinked config is judged by its target and installed",
              r.returncode == 0 and "installed %s/etc/execaff/shim.json" % root in r.stdout, r)
    inst.restart_count()

    # --- refused configs: nothing touched
    for what, mode, uid in (("world-writable", 0o646, 0), ("group-writable", 0o664, 0),
                            ("not owned by root", 0o644, 1000)):
        bad = shimlib.write_config(os.path.join(work, "%s-bad-%d.json" % (label, mode)),
                                   {"runtime": "/usr/bin/runc"}, mode=mode, uid=uid)
        before = tree(root)
        r = inst.run(root, config=bad)
        chk.check(p + "a %s config is refused, naming it; nothing touched" % what,
                  r.returncode == 2 and bad in r.stderr and what.split()[0] in r.stderr and
                  tree(root) == before, r)
        chk.eq(p + "a %s config: no restart" % what, inst.restart_count(), 0)

    # --- failure half-way: the drop-in directory is a file
    root = fresh("etc/crio", "etc/execaff")
    shimlib.write_config(os.path.join(root, "etc/execaff/shim.json"), {"runtime": "old"},
                         mode=0o644)
    with open(os.path.join(root, "etc/crio/crio.conf.d"), "w") as f:
        f.write("not a directory\n")
    before = content(root)
    r = inst.run(root)
    chk.check(p + "failure half-way (drop-in dir is a file): exit 1, says so, restored",
              r.returncode == 1 and "FAILED" in r.stderr and "restored" in r.stderr and
              content(root) == before, "%s\nbefore %s\nafter  %s" % (r, sorted(before),
                                                                     sorted(content(root))))
    chk.eq(p + "failure half-way: no restart", inst.restart_count(), 0)

    # --- a failed restart: restored, and the CRI restarted on the old files
    root = fresh("etc/crio")
    before = content(root)
    r = inst.run(root, restart="fail")
    chk.check(p + "failed restart: exit 1, every file and new directory removed",
              r.returncode == 1 and content(root) == before, "%s\n%s" % (r, sorted(content(root))))
    chk.eq(p + "failed restart: the CRI restarted again on the old files",
           inst.restart_count(), 2)

    # --- containerd node, an operator's version = 2 config with systemd cgroups
    root = fresh("etc/containerd")
    toml = os.path.join(root, "etc/containerd/config.toml")
    own = ('version = 2\n# the operator\'s own\n'
           '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
           '  SystemdCgroup = true\n')
    with open(toml, "w") as f:
        f.write(own)
    r = inst.run(root)
    with open(toml) as f:
        text = f.read()
    try:
        parsed = tomllib.loads(text)
        rt = parsed["plugins"][CRI_KEY]["containerd"]["runtimes"]
        got = (rt["execaff"]["runtime_type"], rt["execaff"]["pod_annotations"],
               rt["execaff"]["options"]["BinaryName"], rt["execaff"]["options"]["SystemdCgroup"],
               rt["runc"]["options"]["SystemdCgroup"])
    except (tomllib.TOMLDecodeError, KeyError) as e:
        got = repr(e)
    chk.eq(p + "containerd node: block appended, valid TOML, SystemdCgroup follows runc's",
           (r.returncode, got), (0, ("io.containerd.runc.v2", [shimlib.ANNOTATION],
                                     "/usr/local/bin/execaff-shim", True, True)), r)
    chk.check(p + "containerd node: the operator's lines kept at the top",
              text.startswith(own), text)
    inst.restart_count()
    before = tree(root)
    r = inst.run(root)
    chk.check(p + "containerd second run: nothing to do, one block",
              r.returncode == 0 and tree(root) == before and text.count("# BEGIN execaff") == 1, r)
    chk.eq(p + "containerd second run: no restart", inst.restart_count(), 0)

    root = fresh("etc/containerd")
    toml = os.path.join(root, "etc/containerd/config.toml")
    with open(toml, "w") as f:
        f.write('[plugins.cri]\n  sandbox_image = "x"\n')        # version 1
    before = content(root)
    r = inst.run(root)
    chk.check(p + "containerd version 1 config: refused, unchanged",
              r.returncode == 2 and "version = 2" in r.stderr and content(root) == before, r)
    inst.restart_count()

    root = fresh("etc/containerd")
    r = inst.run(root, cri="containerd")
    try:
        with open(os.path.join(root, "etc/containerd/config.toml"), "rb") as f:
            parsed = tomllib.load(f)
        got = (parsed["version"], parsed["plugins"][CRI_KEY]["containerd"]["runtimes"]
               ["execaff"]["options"]["SystemdCgroup"])
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        got = repr(e)
    chk.eq(p + "containerd node without config.toml: version = 2 and the block (cgroupfs)",
           (r.returncode, got), (0, (2, False)), r)
    inst.restart_count()

    # --- --uninstall: back to the node's own files
    root = fresh("etc/crio")
    with open(os.path.join(root, "etc/crio/crio.conf"), "w") as f:
        f.write("[crio]\n")                                     # the operator's
    before = node_files(root)
    r1 = inst.run(root)
    inst.restart_count()
    r = inst.run(root, "--uninstall")
    chk.check(p + "--uninstall (CRI-O): drop-in, shim.json and shim removed, the node's "
              "files as before", r1.returncode == 0 and r.returncode == 0 and
              node_files(root) == before, "%s\n%s" % (r, sorted(node_files(root))))
    chk.eq(p + "--uninstall (CRI-O): the CRI restarted once", inst.restart_count(), 1)
    r = inst.run(root, "--uninstall")
    chk.check(p + "--uninstall again: nothing to do, no restart",
              r.returncode == 0 and "nothing to do" in r.stdout and inst.restart_count() == 0, r)
    inst.run(root)
    inst.restart_count()
    installed = content(root)
    r = inst.run(root, "--uninstall", restart="fail")
    chk.check(p + "--uninstall with a failed restart: exit 1, everything as installed",
              r.returncode == 1 and content(root) == installed, r)
    chk.eq(p + "--uninstall with a failed restart: the CRI restarted again",
           inst.restart_count(), 2)

    root = fresh("etc/containerd")
    toml = os.path.join(root, "etc/containerd/config.toml")
    with open(toml, "w") as f:
        f.write(own)
    os.chmod(toml, 0o600)
    before = node_files(root)
    inst.run(root)
    inst.restart_count()
    r = inst.run(root, "--uninstall")
    chk.check(p + "--uninstall (containerd): config.toml byte for byte the operator's, "
              "mode kept, shim and shim.json gone", r.returncode == 0 and node_files(root) == before,
              "%s\n%s" % (r, node_files(root)))
    inst.restart_count()

    check_placement(chk, p, inst, work, fresh)

    # --- bad usage
    root = fresh("etc/crio")
    before = content(root)
    for args, why in ((["--bogus"], "unknown argument"),
                      (["--shim", os.path.join(work, "nope")], "no such readable file")):
        r = inst.run(root, *args)
        chk.check(p + "bad usage %s: exit 2, %r, nothing touched" % (args[0], why),
                  r.returncode == 2 and why in r.stderr and content(root) == before, r)
    empty = fresh()
    r = inst.run(empty)
    chk.check(p + "--cri auto on a node with neither CRI: exit 2, says so",
              r.returncode == 2 and "neither" in r.stderr and os.listdir(empty) == [], r)
    inst.restart_count()


def unit_dropin(root, unit):
    return os.path.join(root, "etc/systemd/system/%s.service.d/99-execaff-cpu-affinity.conf" % unit)


def cpu_affinity(path):
    """The [Service] CPUAffinity= assignments of a unit drop-in, in order."""
    try:
        with open(path) as f:
            lines = [ln.strip() for ln in f if not ln.startswith("#")]
    except OSError as e:
        return repr(e)
    if "[Service]" not in lines:
        return "no [Service] in %s" % lines
    return [ln.split("=", 1)[1] for ln in lines[lines.index("[Service]"):]
            if ln.startswith("CPUAffinity=")]


def infra_ctr_cpuset(root):
    try:
        with open(os.path.join(root, CRIO_CPUSET), "rb") as f:
            return tomllib.load(f)["crio"]["runtime"]["infra_ctr_cpuset"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        return repr(e)


def placement(root):
    return (infra_ctr_cpuset(root) if os.path.lexists(os.path.join(root, CRIO_CPUSET)) else None,
            {u: cpu_affinity(unit_dropin(root, u)) for u in ("crio", "containerd", "kubelet")
             if os.path.lexists(unit_dropin(root, u))})


def check_placement(chk, p, inst, work, fresh):
    """The callers placed on the housekeeping CPUs (install-node.sh's header)."""
    label = p.rstrip(": ")
    cfg = shimlib.write_config(os.path.join(work, label + "-hk.json"),
                               {"runtime": "/usr/bin/runc", "housekeeping_cpus": "0-1"}, mode=0o644)
    root = fresh("etc/crio")
    r = inst.run(root, config=cfg)
    chk.eq(p + "placement (CRI-O, the config's housekeeping_cpus): infra_ctr_cpuset and "
           "CPUAffinity= for crio and kubelet",
           (r.returncode, placement(root)),
           (0, ("0-1", {"crio": ["", "0-1"], "kubelet": ["", "0-1"]})), r)
    chk.contains(p + "placement: says where the CPUs came from", r.stdout,
                 'housekeeping CPUs 0-1 (from "housekeeping_cpus" of %s)' % cfg, r)
    chk.eq(p + "placement: crio and kubelet restarted once, after a daemon-reload",
           inst.restart_log(), ["crio kubelet|true"])
    before = tree(root)
    r = inst.run(root, config=cfg)
    chk.check(p + "placement second run: nothing to do, no restart",
              r.returncode == 0 and tree(root) == before and inst.restart_count() == 0, r)

    before = content(root)
    r = inst.run(root, "--housekeeping", "2-3,5", config=cfg)
    after = content(root)
    chk.eq(p + "--housekeeping overrides the config; only the placement files change",
           (r.returncode, placement(root),
            sorted(k for k in after if after[k] != before.get(k) and after[k][0] == stat.S_IFREG)),
           (0, ("2-3,5", {"crio": ["", "2-3,5"], "kubelet": ["", "2-3,5"]}),
            sorted([CRIO_CPUSET, os.path.relpath(unit_dropin(root, "crio"), root),
                    os.path.relpath(unit_dropin(root, "kubelet"), root)])), r)
    inst.restart_count()

    before = content(root)
    for bad, source in ((("--housekeeping", "0-x"), "--housekeeping"),
                        ((), '"housekeeping_cpus" of')):
        c = cfg if bad else shimlib.write_config(
            os.path.join(work, label + "-hk-bad.json"),
            '{"runtime": "/usr/bin/runc", "housekeeping_cpus": "zero"}', mode=0o644)
        r = inst.run(root, *bad, config=c)
        chk.check(p + "housekeeping that is no CPU list (%s): exit 2, named with its source, "
                  "nothing touched" % source,
                  r.returncode == 2 and source in r.stderr and "not a CPU list" in r.stderr and
                  content(root) == before and inst.restart_count() == 0, r)

    r = inst.run(root, "--housekeeping", "none", config=cfg)
    chk.eq(p + "--housekeeping none: the placement removed, crio and kubelet restarted",
           (r.returncode, placement(root), inst.restart_log()),
           (0, (None, {}), ["crio kubelet|true"]), r)

    # kubelet's reservedSystemCPUs, kubeadm's YAML and OpenShift's JSON, on containerd nodes
    for rel, text in (("var/lib/kubelet/config.yaml",
                       "kind: KubeletConfiguration\n# reservedSystemCPUs: 7\n"
                       "reservedSystemCPUs: 0,4\ncpuManagerPolicy: static\n"),
                      ("etc/kubernetes/kubelet.conf",
                       '{\n  "kind": "KubeletConfiguration",\n  "reservedSystemCPUs": "0,4",\n'
                       '  "cpuManagerPolicy": "static"\n}\n')):
        root = fresh("etc/containerd", os.path.dirname(rel))
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
        r = inst.run(root)
        chk.eq(p + "containerd node, kubelet's reservedSystemCPUs in %s: containerd.service and "
               "kubelet.service placed, no CRI-O file" % rel,
               (r.returncode, placement(root), inst.restart_log()),
               (0, (None, {"containerd": ["", "0,4"], "kubelet": ["", "0,4"]}),
                ["containerd kubelet|true"]), r)

    root = fresh("etc/crio")
    before = node_files(root)
    inst.run(root, config=cfg)
    inst.restart_count()
    r = inst.run(root, "--uninstall")
    chk.eq(p + "--uninstall removes the placement with the rest; crio and kubelet restarted",
           (r.returncode, node_files(root) == before, inst.restart_log()),
           (0, True, ["crio kubelet|true"]), r)


def main():
    fixture.require_root()
    busybox = fixture.require_busybox()
    shim = shimlib.shim_path()
    chk = shimlib.Checks("installer ")
    work = shimlib.workdir("execaff-k8s-installer-")
    config = shimlib.write_config(os.path.join(work, "shim.json"),
                                  {"runtime": "/usr/bin/runc", "on_failure": "fail"}, mode=0o644)

    with open(CONTAINERD_CONFIG) as f:
        tested = [ln.strip() for ln in f.read().splitlines()
                  if ln.strip() and not ln.lstrip().startswith("#")]
    body = snippet_tables()
    at = [i for i in range(len(tested)) if tested[i:i + len(body)] == body]
    chk.check("the installer's containerd block is contrib/containerd/config.toml's "
              "(the file the CRI test runs)", bool(at), "\n".join(body))

    bbdir = os.path.join(work, "busybox-bin")
    os.mkdir(bbdir)
    for applet in subprocess.run([busybox, "--list"], capture_output=True, text=True,
                                 check=True).stdout.split():
        os.symlink(busybox, os.path.join(bbdir, applet))
    shells = (("dash", "/bin/sh", dict(os.environ)),
              ("busybox", os.path.join(bbdir, "sh"), {"PATH": bbdir}))
    for label, shell, env in shells:
        try:
            check_shell(chk, label, Installer(shell, env, work, shim, config), work)
        except Exception as e:
            chk.error(label, e)
    shutil.rmtree(work, ignore_errors=True)
    return chk.finish()


if __name__ == "__main__":
    sys.exit(main())
