#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Exec latency, stock crun 1.8.1 vs the forked crun, side by side
# (hyperfine -N: no shell in between).  One busybox container, created by
# stock crun; every command execs `true` into that same container:
#
#   stock              stock   exec ID true
#   stock --process    stock   exec --process P ID              (no field)
#   fork               fork    exec ID true
#   fork --process     fork    exec --process P ID              (no field)
#   fork + field       fork    exec --process P+field ID        (initial+final)
#   fork + wide field  fork    exec --process P+wide ID         (initial+final)
#
# The field is {"initial": "C0", "final": "C1"} on a container with cpuset
# "C0-C1" (0-1 on the CI machine): the exec'd process is confined to one CPU,
# so on a busy machine part of its cost is waiting for that CPU.  The wide
# field {"initial": "C0-C1", "final": "C0-C1"} takes the same code path
# (decision, two sched_setaffinity calls, read-backs) without confining it.
# --extra NAME=CRUN adds "NAME" and "NAME + field" rows for another build
# (e.g. the fork linked against a libexecaff.so.1 with a dynamic libstdc++).  Runs are interleaved: ROUNDS rounds, each
# a hyperfine call over all commands in a rotated order with RUNS runs and
# WARMUP warmup runs each, so drift (other load on the machine) hits every
# command alike; the table gives the median of all ROUNDS*RUNS times per
# command and its ratio to "stock".
#
# Usage: bench.sh [--runs N] [--rounds N] [--warmup N] [--stock CRUN]
#                 [--crun FORKED_CRUN] [--extra NAME=CRUN]... [--json FILE]
# Defaults: 10 runs x 5 rounds (50 per command), warmup 5,
# /var/tmp/execaff-crun/{stock,patched}/crun.  Exit 1 when "fork + field"
# is more than 3% over "stock" (the target), 2 on setup errors.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runs=10 rounds=5 warmup=5 json= extra=()
stock=/var/tmp/execaff-crun/stock/crun
crun=/var/tmp/execaff-crun/patched/crun
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --stock) stock=$2; shift ;;
    --crun) crun=$2; shift ;;
    --json) json=$2; shift ;;
    --extra) extra+=("$2"); shift ;;
    -h | --help) sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
command -v hyperfine >/dev/null || { echo "bench.sh: hyperfine not installed (apt-get install hyperfine)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench.sh: needs root" >&2; exit 2; }

exec python3 - "$here" "$stock" "$crun" "$runs" "$rounds" "$warmup" "$json" "${extra[@]}" <<'EOF'
import json, os, statistics, subprocess, sys, tempfile
here, stock, crun, runs, rounds, warmup, json_out = sys.argv[1:8]
extra = [e.split("=", 1) for e in sys.argv[8:]]
runs, rounds, warmup = int(runs), int(rounds), int(warmup)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "integration"))
import fixture

for b in [stock, crun] + [p for _, p in extra]:
    if not os.access(b, os.X_OK):
        sys.exit("bench.sh: no crun at %s (build-crun.sh)" % b)
cpus = sorted(os.sched_getaffinity(0))[:2]
cpuset = "%d-%d" % tuple(cpus) if cpus[1] == cpus[0] + 1 else "%d,%d" % tuple(cpus)

with fixture.Container(stock, cpus=cpuset) as c:
    plain = c.write_process(c.process_json(["true"]))
    field = c.process_json(["true"])
    field["execCPUAffinity"] = {"initial": str(cpus[0]), "final": str(cpus[1])}
    field = c.write_process(field)
    wide = c.process_json(["true"])
    wide["execCPUAffinity"] = {"initial": cpuset, "final": cpuset}
    wide = c.write_process(wide)
    base = lambda rt: [rt, "--root", c.root, "exec"]
    commands = [
        ("stock", base(stock) + [c.id, "true"]),
        ("stock --process", base(stock) + ["--process", plain, c.id]),
        ("fork", base(crun) + [c.id, "true"]),
        ("fork --process", base(crun) + ["--process", plain, c.id]),
        ("fork + field", base(crun) + ["--process", field, c.id]),
        ("fork + wide field", base(crun) + ["--process", wide, c.id]),
    ]
    for name, path in extra:
        commands += [(name, base(path) + [c.id, "true"]),
                     (name + " + field", base(path) + ["--process", field, c.id])]
    # The field really pins with the fork (and is ignored by stock).
    probe = c.process_json(["grep", "Cpus_allowed_list", "/proc/self/status"])
    probe["execCPUAffinity"] = {"initial": str(cpus[0]), "final": str(cpus[1])}
    r = fixture.run(base(crun) + ["--process", c.write_process(probe), c.id])
    print("fork + field runs on: %s" % r.stdout.split()[-1] if r.returncode == 0 else r)

    times = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    for rnd in range(rounds):
        order = commands[rnd % len(commands):] + commands[:rnd % len(commands)]
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            argv = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup),
                    "--runs", str(runs), "--export-json", out.name]
            for name, cmd in order:
                argv += ["-n", name, " ".join(cmd)]
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for res in json.load(open(out.name))["results"]:
                times[res["command"]].extend(res["times"])
                cpu[res["command"]].append(res["user"] + res["system"])

ref = statistics.median(times["stock"])
rows = []
print("\ncrun exec latency, %d runs per command (%d rounds x %d, warmup %d), container cpuset %s"
      % (rounds * runs, rounds, runs, warmup, cpuset))
print("libstdc++ in the fork: %s" % ("dynamic" if "libstdc++" in subprocess.run(
    ["ldd", crun], capture_output=True, text=True).stdout else "not loaded (static in libexecaff.so.1)"))
print("%-26s %10s %10s %10s %9s %12s" % ("command", "median ms", "mean ms", "stddev", "vs stock",
                                         "cpu ms/exec"))
cpu_ref = statistics.mean(cpu["stock"])
for name, _ in commands:
    t = times[name]
    med = statistics.median(t)
    c_ms = statistics.mean(cpu[name])
    rows.append({"command": name, "median_s": med, "mean_s": statistics.mean(t),
                 "stddev_s": statistics.stdev(t), "runs": len(t), "ratio": med / ref,
                 "cpu_s": c_ms, "cpu_ratio": c_ms / cpu_ref})
    print("%-26s %10.2f %10.2f %10.2f %9.3f %6.2f (%5.3f)" % (
        name, med * 1e3, statistics.mean(t) * 1e3, statistics.stdev(t) * 1e3, med / ref,
        c_ms * 1e3, c_ms / cpu_ref))
over = (statistics.median(times["fork + field"]) / ref - 1) * 100
print("\nmedians: fork + field vs stock %+.1f%% (target <= +3%%), vs stock --process %+.1f%%; "
      "fork (no field) vs stock %+.1f%%" % (
          over, (statistics.median(times["fork + field"]) / statistics.median(times["stock --process"]) - 1) * 100,
          (statistics.median(times["fork"]) / ref - 1) * 100))
print("cpu ms/exec: mean user+sys of crun and its children per exec (hyperfine), ratio to stock")
print("load average during the run: %s" % open("/proc/loadavg").read().split()[:3])
if json_out:
    with open(json_out, "w") as f:
        json.dump({"rows": rows, "times": times}, f, indent=1)
sys.exit(0 if over <= 3.0 else 1)
EOF
