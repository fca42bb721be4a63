#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shim side by side with the bare runtime (issue 3's targets).

For runc and crun: one opted-in container (annotation first, cpuset = every
online CPU) and hyperfine -N medians over RUNS runs, after warm-up, of
    bare `exec ID true` vs `execaff-shim exec ID true` (pinned, emulated)
    bare `state ID`     vs `execaff-shim state ID`    (pass-through)
and the shim's peak RSS.  ru_maxrss survives execve (the kernel folds the
old mm's high-water mark into the process's), so running the shim with a
tiny static program (busybox) as its "runtime" measures the shim's own peak.
Also the floor: a 10-line static program that only execs the runtime, to
show what any exec-based wrapper costs on this machine.

usage: bench_shim.py [--runs N] [--json OUT] [SHIM]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import fixture  # noqa: E402


def hyperfine(commands, runs, env):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = ["hyperfine", "-N", "--warmup", "5", "--runs", str(runs), "--export-json", out.name]
        subprocess.run(argv + commands, check=True, env=env, stdout=subprocess.DEVNULL)
        data = json.load(open(out.name))
    return [r["median"] * 1000 for r in data["results"]]  # ms


def peak_rss_kib(argv, env):
    # GNU time forks from a small process; a fork of this Python process
    # would fold Python's own 12 MB into the child's ru_maxrss.
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, env=env, capture_output=True,
                       text=True)
    return int(r.stderr.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("shim", nargs="?", default=os.path.join(HERE, "..", "..", "build", "shim",
                                                           "execaff-shim"))
    args = ap.parse_args()
    fixture.require_root()
    shim = os.path.abspath(args.shim)
    cpus = open("/sys/devices/system/cpu/online").read().strip()
    rows = []
    for name in ("runc", "crun"):
        rt = fixture.require_runtime(name)
        env = dict(os.environ, EXECAFF_RUNTIME=rt)
        env.pop("EXECAFF_CONFIG", None)
        with fixture.Container(rt, cpus=cpus,
                               annotations={"exec-cpu-affinity.execaff.io": "first"}) as c:
            # Check the shim really pins before timing it.
            r = fixture.run([shim, "--root", c.root, "exec", c.id, "grep", "Cpus_allowed_list",
                             "/proc/self/status"], env=env)
            first = cpus.split(",")[0].split("-")[0]
            if r.returncode != 0 or not r.stdout.strip().endswith("\t" + first):
                sys.exit(f"{name}: the shim did not pin: {r}")
            bare_exec = f"{rt} --root {c.root} exec {c.id} true"
            shim_exec = f"{shim} --root {c.root} exec {c.id} true"
            bare_state = f"{rt} --root {c.root} state {c.id}"
            shim_state = f"{shim} --root {c.root} state {c.id}"
            e = hyperfine([bare_exec, shim_exec], args.runs, env)
            s = hyperfine([bare_state, shim_state], args.runs, env)
            # Peak RSS: the whole opted-in decision, then exec of a tiny
            # static program instead of the runtime.
            rss_env = dict(env, EXECAFF_RUNTIME="/bin/busybox")
            rss = max(peak_rss_kib([shim, "--root", c.root, "exec", c.id, "true"], rss_env)
                      for _ in range(5))
            rss_state = peak_rss_kib([shim, "--root", c.root, "state", c.id], rss_env)
        rows.append({"runtime": name, "exec_bare_ms": e[0], "exec_shim_ms": e[1],
                     "exec_added_ms": e[1] - e[0], "state_bare_ms": s[0], "state_shim_ms": s[1],
                     "state_added_ms": s[1] - s[0], "shim_peak_rss_kib_exec": rss,
                     "shim_peak_rss_kib_state": rss_state})
    print(f"medians over {args.runs} runs (hyperfine -N, 5 warm-up), ms; peak RSS of the shim, KiB")
    print("| runtime | exec bare | exec shim | added | state bare | state shim | added |"
          " shim RSS exec | shim RSS state |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['runtime']} | {r['exec_bare_ms']:.2f} | {r['exec_shim_ms']:.2f} | "
              f"{r['exec_added_ms']:+.2f} | {r['state_bare_ms']:.2f} | {r['state_shim_ms']:.2f} | "
              f"{r['state_added_ms']:+.2f} | {r['shim_peak_rss_kib_exec']} | "
              f"{r['shim_peak_rss_kib_state']} |")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
