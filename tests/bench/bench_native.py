#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An opted-in exec through the shim over a runtime that applies
execCPUAffinity itself: native (the runtime is handed the decision) against
emulated (the same runtime, "native": false: the trampoline), beside the
bare runtime given a process file that already carries the decision — the
floor of the native path (issue 16 §2).  Also `<runtime> --version` alone:
what a cold detection spends in the probe (the rest: bench_native_detect).

One container per runtime (cpuset = every online CPU, annotation first),
`exec --process F ID true`; hyperfine -N in ROUNDS rounds of RUNS runs per
command, the commands rotated each round (bench_shim.py's method), and the
paired per-round difference to the bare runtime.  The shim reads a node
config (housekeeping_cpus) on every call; its native answer is cached
before timing (the cached hit is what every exec but the first pays).

The cost in floors (issue 16 §4: native over runc 1.3.6 <= 1.15): the
floor (tests/bench/exec_floor.c) only execs the runtime with the decided
file, and floors = (native - bare) / (floor - bare), paired per round.

usage: bench_native.py [--runs N] [--rounds R] [--shim SHIM] [--floor EXE] RUNTIME...
       (default: the peers of contrib/install-peers.sh that are installed)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "..", "build")
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import fixture  # noqa: E402
from bench_shim import interleaved  # noqa: E402

PEERS = ("/var/tmp/execaff-peers/runc-1.3.6/runc", "/var/tmp/execaff-peers/crun-1.21/crun",
         "/var/tmp/execaff-peers/crun-1.28/crun")


def write_config(directory, name, obj):
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, json.dumps(obj).encode())
    os.close(fd)
    return path


def paired(per_round, label, base="bare"):
    return statistics.median(s - b for s, b in zip(per_round[label], per_round[base]))


def floors(per_round, label):
    ratios = [(s - b) / (f - b) for s, b, f in
              zip(per_round[label], per_round["bare"], per_round["floor"]) if f > b]
    return statistics.median(ratios) if ratios else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--shim", default=os.path.join(BUILD, "shim", "execaff-shim"))
    ap.add_argument("--floor", default=os.path.join(BUILD, "tests", "bench", "exec_floor"))
    ap.add_argument("runtimes", nargs="*")
    args = ap.parse_args()
    fixture.require_root()
    fixture.prepare_host()
    shim = os.path.abspath(args.shim)
    runtimes = args.runtimes or [p for p in PEERS if os.access(p, os.X_OK)]
    if not runtimes:
        fixture.skip("no runtime given and no peer installed")
    cpus = open("/sys/devices/system/cpu/online").read().strip()
    housekeeping = cpus.split(",")[0].split("-")[0]
    work = tempfile.mkdtemp(prefix="execaff-bench-native-")
    rows = []
    try:
        for rt in runtimes:
            rt = os.path.realpath(rt)
            version = fixture.run([rt, "--version"]).stdout.split("\n")[0]
            base = {"runtime": rt, "housekeeping_cpus": housekeeping}
            native_cfg = write_config(work, "native-%d.json" % len(rows), base)
            emulated_cfg = write_config(work, "emulated-%d.json" % len(rows),
                                        dict(base, native=False))
            with fixture.Container(rt, cpus=cpus, annotations={
                    "exec-cpu-affinity.execaff.io": "first"}) as c:
                plain = c.write_process(c.process_json(["true"]))
                # What the native path hands the runtime: the decision.
                explain = json.loads(fixture.run([
                    os.path.join(BUILD, "cli", "execaff"), "explain", "--bundle", c.bundle.dir,
                    "--container-pid", str(c.pid), "--housekeeping", housekeeping]).stdout)
                decided = c.process_json(["true"])
                decided["execCPUAffinity"] = {"initial": explain["initial"],
                                              "final": explain["final"]}
                decided = c.write_process(decided)
                tail = f"--root {c.root} exec --process {{}} {c.id}"
                # Warm the cache and check both paths pin before timing.
                for cfg, mark in ((native_cfg, "native: "), (emulated_cfg, "emulated: ")):
                    r = fixture.run([shim, "--debug", "--root", c.root, "exec", "--process",
                                     plain, c.id], env=dict(os.environ, EXECAFF_CONFIG=cfg))
                    if r.returncode != 0 or mark not in r.stderr:
                        sys.exit(f"{rt}: the {mark.strip(': ')} path did not run: {r}")
                # Every command goes through `env` (to set EXECAFF_CONFIG),
                # the bare one too, so the differences stay the shim's.
                named = [
                    ("bare", f"env EXECAFF_CONFIG={native_cfg} {rt} {tail.format(decided)}"),
                    ("floor", f"env EXECAFF_CONFIG={native_cfg} EXECAFF_RUNTIME={rt} "
                              f"{os.path.abspath(args.floor)} {tail.format(decided)}"),
                    ("native", f"env EXECAFF_CONFIG={native_cfg} {shim} {tail.format(plain)}"),
                    ("emulated", f"env EXECAFF_CONFIG={emulated_cfg} {shim} {tail.format(plain)}"),
                ]
                _, per_round = interleaved(named, args.rounds, args.runs, dict(os.environ))
                version_probe, _ = interleaved([("version", f"{rt} --version")], 5, 10,
                                               dict(os.environ))
            med = {n: statistics.median(v) * 1e3 for n, v in per_round.items()}
            rows.append({
                "runtime": version, "median_ms": med,
                "native_added_ms": paired(per_round, "native") * 1e3,
                "native_floors": floors(per_round, "native"),
                "emulated_floors": floors(per_round, "emulated"),
                "emulated_added_ms": paired(per_round, "emulated") * 1e3,
                "emulated_minus_native_ms": paired(per_round, "emulated", "native") * 1e3,
                "version_probe_ms": statistics.median(version_probe["version"]) * 1e3,
            })
    finally:
        subprocess.run(["rm", "-rf", work])
    load = open("/proc/loadavg").read().split()[:3]
    print(f"hyperfine -N, medians of per-round medians, ms: {args.rounds} rounds x {args.runs} "
          f"runs, rotated; load average {load}")
    print("| runtime | bare (decision in the file) | shim native | shim emulated "
          "| native added (paired) | emulated added (paired) | emulated − native (paired) "
          "| `--version` | native floors | emulated floors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = r["median_ms"]
        print(f"| {r['runtime']} | {m['bare']:.2f} | {m['native']:.2f} | {m['emulated']:.2f} "
              f"| {r['native_added_ms']:+.2f} | {r['emulated_added_ms']:+.2f} "
              f"| {r['emulated_minus_native_ms']:+.2f} | {r['version_probe_ms']:.2f} "
              f"| **{r['native_floors']:.2f}** | {r['emulated_floors']:.2f} |")


if __name__ == "__main__":
    main()
