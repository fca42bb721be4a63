#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The execaff tool end to end, and the schema against the vectors.

* every case of tests/vectors/cpulist.json through `execaff cpus`: canonical
  output and exit 0, or exit 1 with a message quoting the input;
* the schema's cpuList pattern (spec/schema/exec-cpu-affinity.schema.json)
  accepts every valid case, and every case it accepts that the parser
  rejects is rejected for a reason the pattern cannot express;
* `execaff explain` on bundles made here: decisions as JSON, and clear
  errors with exit 1 for a missing bundle, malformed JSON, bad options;
  the pre-flight (null when not pinned; a profile forbidding
  sched_setaffinity blocks it, naming the fix);
* `execaff audit --root-fs` on the fixture node tests/fixtures/nodes/audit-v2:
  the table, --json (each caller finding's fix, null for the other kinds),
  --prometheus (atomic, nothing left behind), exit statuses 0, 1 and 2,
  and "read-only" in its help.

usage: test_execaff_cli.py EXECAFF_BINARY
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ.get("EXECAFF_SOURCE_ROOT",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def run(*argv):
    return subprocess.run([EXECAFF, *argv], capture_output=True, text=True, timeout=30)


def vectors():
    path = os.path.join(SRC, "tests", "vectors", "cpulist.json")
    return json.load(open(path))["cases"]


def test_cpus():
    for case in vectors():
        r = run("cpus", case["in"])
        if case["out"] == "error":
            check(r.returncode == 1 and json.dumps(case["in"]) in r.stderr,
                  f"cpus {case['in']!r} refused, quoting it ({r.stderr.strip()})")
        elif case["out"] == "unset":
            check(r.returncode == 0 and r.stdout == "\n", f"cpus {case['in']!r} is unset")
        else:
            check(r.returncode == 0 and r.stdout == case["out"] + "\n",
                  f"cpus {case['in']!r} -> {case['out']} (got {r.stdout.strip()!r})")
    # Where the error is: the offset of the id out of range (issue 11).
    for text, needle in (("0-99999", "CPU 99999 at offset 2"), ("1, 3-70000", "CPU 70000 at offset 5"),
                         ("0,7-5", 'range "7-5" at offset 2')):
        r = run("cpus", text)
        check(r.returncode == 1 and needle in r.stderr,
              f"cpus {text!r}: the error says {needle!r} ({r.stderr.strip()})")
    r = run("cpus")
    check(r.returncode == 2 and "usage" in r.stderr, "cpus without a list is a usage error")


def test_schema_pattern():
    schema = json.load(open(os.path.join(SRC, "spec", "schema", "exec-cpu-affinity.schema.json")))
    pattern = re.compile(schema["definitions"]["cpuList"]["pattern"])
    semantic = re.compile(r"runs backwards|names no CPU|above the highest supported id")
    for case in vectors():
        matches = pattern.search(case["in"]) is not None
        if case["out"] != "error":
            check(matches, f"schema pattern accepts valid {case['in']!r}")
        elif matches:
            r = run("cpus", case["in"])
            check(semantic.search(r.stderr) is not None,
                  f"{case['in']!r}: the pattern accepts it, the parser refuses it for a "
                  f"reason no pattern can state ({r.stderr.strip()})")


def write_bundle(directory, config):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        f.write(config if isinstance(config, str) else json.dumps(config))


def test_explain():
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "b")
        write_bundle(bundle, {"process": {"args": ["sh"], "cwd": "/"},
                              "annotations": {"exec-cpu-affinity.execaff.io": "first-core"},
                              "linux": {"resources": {"cpu": {"cpus": "2-5"}}}})
        r = run("explain", "--bundle", bundle, "--caller-cpus", "0-1",
                "--root", os.path.join(SRC, "tests", "fixtures", "nodes", "v2-4cpu"))
        d = json.loads(r.stdout) if r.returncode == 0 else {}
        check(r.returncode == 0 and d.get("pinned") is True and d.get("source") == "annotation",
              f"explain: annotation first-core pins ({r.stdout.strip() or r.stderr.strip()})")
        # v2-4cpu pairs (0,2)(1,3): CPU 2's sibling 0 is outside 2-5.
        check(d.get("final") == "2" and d.get("initial") == "0-2",
              f"explain: final 2, initial 0-2 (got {d.get('final')}, {d.get('initial')})")

        process = os.path.join(tmp, "p.json")
        with open(process, "w") as f:
            json.dump({"args": ["true"], "execCPUAffinity": {"final": "4"}}, f)
        plain = os.path.join(tmp, "plain")
        write_bundle(plain, {"process": {"args": ["sh"]},
                             "linux": {"resources": {"cpu": {"cpus": "2-5"}}}})
        r = run("explain", "--bundle", plain, "--process", process, "--caller-cpus", "0")
        d = json.loads(r.stdout) if r.returncode == 0 else {}
        check(d.get("source") == "process" and d.get("final") == "4" and d.get("initial") is None,
              f"explain: field in the process file ({r.stdout.strip()})")

        # The annotation and an explicit field disagree: the annotation wins
        # (spec/decision-table.md), and explain says so in the reason and in
        # "overridden_field" (issue 11, section 4).
        both = os.path.join(tmp, "both")
        write_bundle(both, {"process": {"args": ["sh"]},
                            "annotations": {"exec-cpu-affinity.execaff.io": "first"},
                            "linux": {"resources": {"cpu": {"cpus": "2-5"}}}})
        r = run("explain", "--bundle", both, "--process", process, "--caller-cpus", "0")
        d = json.loads(r.stdout) if r.returncode == 0 else {}
        check(d.get("source") == "annotation" and d.get("final") == "2",
              f"explain: the annotation wins over the process file's field ({r.stdout.strip()})")
        check(d.get("overridden_field") == {"source": "process", "initial": None, "final": "4"},
              f"explain: overridden_field names the field it did not apply ({r.stdout.strip()})")
        check("overrides the process file's execCPUAffinity (initial not set, final \"4\"), "
              "which is not applied" in d.get("reason", ""),
              f"explain: the reason says the field is not applied ({d.get('reason')!r})")
        r = run("explain", "--bundle", plain, "--process", process, "--caller-cpus", "0")
        d = json.loads(r.stdout) if r.returncode == 0 else {}
        check("overridden_field" not in d, "explain: no overridden_field when nothing is overridden")

        r = run("explain", "--bundle", plain, "--caller-cpus", "0")
        d = json.loads(r.stdout) if r.returncode == 0 else {}
        check(d.get("pinned") is False and d.get("initial") is None and d.get("final") is None,
              "explain: nothing opts in -> not pinned, null sets")

        # Bad input: each a clear message and exit 1.
        cases = [
            (["--bundle", os.path.join(tmp, "missing")], "missing/config.json"),
            (["--bundle", plain, "--caller-cpus", "3-1"], "--caller-cpus"),
            (["--bundle", plain, "--process", os.path.join(tmp, "nope.json")], "nope.json"),
        ]
        broken = os.path.join(tmp, "broken")
        write_bundle(broken, '{"process": {"args": ["sh", ')  # half-written
        cases.append((["--bundle", broken], "malformed JSON"))
        wrong = os.path.join(tmp, "wrong")
        write_bundle(wrong, {"process": {"execCPUAffinity": {"final": 5}}})
        cases.append((["--bundle", wrong], "process.execCPUAffinity.final"))
        outside = os.path.join(tmp, "outside")
        write_bundle(outside, {"annotations": {"exec-cpu-affinity.execaff.io": "9"},
                               "linux": {"resources": {"cpu": {"cpus": "2-5"}}}})
        cases.append((["--bundle", outside, "--caller-cpus", "0"],
                      "is not within the container's cpuset \"2-5\""))
        for argv, needle in cases:
            r = run("explain", *argv)
            check(r.returncode == 1 and needle in r.stderr and r.stdout == "",
                  f"explain {' '.join(argv[-2:])}: exit 1 naming {needle!r} ({r.stderr.strip()})")
        r = run("explain", "--bundle", plain, "--frobnicate")
        check(r.returncode == 2 and "--frobnicate" in r.stderr, "explain: unknown option is usage")
        r = run("explain", "--bundle", plain, "--runtime", "youki")
        check(r.returncode == 2 and "--runtime \"youki\" is not runc or crun" in r.stderr,
              f"explain: --runtime names runc or crun ({r.stderr.strip()})")
        r = run("explain", "--bundle", plain, "--root-fs", os.path.join(tmp, "nope"))
        check(r.returncode == 2 and "--root-fs" in r.stderr,
              f"explain: a missing --root-fs is a usage error, as audit's ({r.stderr.strip()})")
        # The node config audit reads: an absent --config is no config; a
        # directory is an error naming it.
        r = run("explain", "--bundle", plain, "--caller-cpus", "0",
                "--config", os.path.join(tmp, "none.json"))
        check(r.returncode == 0 and json.loads(r.stdout).get("pinned") is False,
              f"explain: an absent --config is no config ({r.stderr.strip()})")
        r = run("explain", "--bundle", plain, "--config", tmp)
        check(r.returncode == 1 and tmp in r.stderr and r.stdout == "",
              f"explain: a --config that is no file is exit 1 naming it ({r.stderr.strip()})")
        r = run("explain", "--help")
        check(r.returncode == 0 and "--runtime runc|crun" in r.stdout, "explain --help: the usage")
        r = run("explain")
        check(r.returncode == 2 and "--bundle" in r.stderr, "explain: --bundle is required")

        r = run("explain", "--bundle", plain, "--caller-cpus", "0")
        check(r.returncode == 0 and json.loads(r.stdout).get("preflight", 0) is None,
              "explain: no pre-flight for an exec that is not pinned")
        forbid = os.path.join(tmp, "forbid")
        write_bundle(forbid, {"process": {"args": ["sh"]},
                              "annotations": {"exec-cpu-affinity.execaff.io": "first"},
                              "mounts": [{"destination": "/proc", "type": "proc"}],
                              "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO",
                                                    "syscalls": [{"names": ["execve", "close"],
                                                                  "action": "SCMP_ACT_ALLOW"}]}}})
        r = run("explain", "--bundle", forbid, "--caller-cpus", "0")
        pre = json.loads(r.stdout).get("preflight") if r.returncode == 0 else None
        seccomp = [c for c in (pre or {}).get("checks", []) if c["name"] == "seccomp"]
        check(pre is not None and pre["emulated_path_ok"] is False and seccomp and
              "sched_setaffinity: fails with errno 1" in seccomp[0]["detail"] and
              "sched_getaffinity: fails with errno 1" in seccomp[0]["detail"] and
              "forked crun" in seccomp[0]["fix"],
              f"explain: a default-deny profile without sched_setaffinity blocks ({r.stdout.strip()})")


def test_audit():
    fixture = os.path.join(SRC, "tests", "fixtures", "nodes", "audit-v2")
    with tempfile.TemporaryDirectory() as tmp:
        missing_config = os.path.join(tmp, "none.json")
        r = run("audit", "--root-fs", fixture, "--config", missing_config)
        check(r.returncode == 1 and "escaped_exec" in r.stdout and "120/122" in r.stdout,
              f"audit: findings in the table, exit 1 ({r.returncode}, {r.stderr.strip()})")
        prom = os.path.join(tmp, "execaff.prom")
        r = run("audit", "--root-fs", fixture, "--config", missing_config, "--json",
                "--prometheus", prom)
        d = json.loads(r.stdout) if r.stdout else {}
        kinds = sorted({f["kind"] for f in d.get("findings", [])})
        check(r.returncode == 1 and d.get("read_only") is True and kinds == sorted([
            "escaped_exec", "isolated_cpu_intruder", "min_weight_pinned_exec", "irq_on_isolated",
            "irqbalance_unbanned_isolated", "caller_on_exclusive_cpu", "exec_may_hang"]),
              f"audit --json: every kind of the fixture ({kinds})")
        fixes = {f["comm"]: f["fix"] for f in d.get("findings", [])
                 if f["kind"] == "caller_on_exclusive_cpu"}
        check(sorted(fixes) == ["containerd", "containerd-shim", "crio"] and
              'infra_ctr_cpuset = "0-1"' in fixes["crio"] and
              all(f["fix"] is None for f in d.get("findings", [])
                  if f["kind"] not in ("caller_on_exclusive_cpu", "exec_may_hang")),
              f"audit --json: each caller's fix, null for the other kinds ({fixes})")
        hang = [f for f in d.get("findings", []) if f["kind"] == "exec_may_hang"]
        check(len(hang) == 1 and hang[0]["container"] == "burstable" and
              "exec-cpu-affinity.execaff.io: first" in (hang[0]["fix"] or "") and
              d.get("rt_throttling") == {"runtime_us": -1, "period_us": 1000000, "off": True},
              f"audit --json: exec_may_hang with its fix, RT throttling off ({hang})")
        text = open(prom).read() if os.path.exists(prom) else ""
        check('execaff_audit_escaped_exec{container="guaranteed",root="/run/runc"} 2' in text and
              'execaff_audit_escaped_exec{container="burstable",root="/run/crun"} 0' in text and
              "\nexecaff_audit_irq_on_isolated 1\n" in text and
              "\nexecaff_audit_caller_on_exclusive_cpu 3\n" in text and
              'execaff_audit_exec_may_hang{container="burstable",root="/run/crun"} 1' in text and
              'execaff_audit_exec_may_hang{container="guaranteed",root="/run/runc"} 0' in text and
              "# TYPE execaff_audit_escaped_exec gauge" in text,
              "audit --prometheus: one gauge per kind, labelled by container")
        check(sorted(os.listdir(tmp)) == ["execaff.prom"], "audit --prometheus: no temp file left")
        r = run("audit", "--root-fs", fixture, "--config", missing_config, "--prometheus",
                os.path.join(tmp, "no-such-dir", "x.prom"))
        check(r.returncode == 2 and "no-such-dir" in r.stderr and
              sorted(os.listdir(tmp)) == ["execaff.prom"],
              f"audit: an unwritable --prometheus is exit 2 naming it ({r.stderr.strip()})")
        r = run("audit", "--root-fs", fixture, "--config", missing_config, "--root", "/run/broken")
        check(r.returncode == 2 and "state.json" in r.stderr,
              f"audit: a broken state file is exit 2 naming it ({r.stderr.strip()})")
        r = run("audit", "--root-fs", os.path.join(SRC, "tests", "fixtures", "nodes", "hybrid-v1"),
                "--config", missing_config)
        check(r.returncode == 0 and "no findings" in r.stdout, "audit: a clean node is exit 0")
        r = run("audit", "--root-fs", os.path.join(tmp, "nope"))
        check(r.returncode == 2 and "--root-fs" in r.stderr, "audit: a missing --root-fs is exit 2")
        r = run("audit", "--frobnicate")
        check(r.returncode == 2 and "--frobnicate" in r.stderr, "audit: unknown option is exit 2")
        r = run("audit", "--help")
        check(r.returncode == 0 and "Read-only" in r.stdout, "audit --help says it is read-only")


if __name__ == "__main__":
    EXECAFF = sys.argv[1]
    test_cpus()
    test_schema_pattern()
    test_explain()
    test_audit()
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)
