#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Exec latency, stock crun vs the forked crun (1.8.1-based unless --base
# 1.21), side by side.  Two
# busybox containers created by stock crun (cpuset C0-C1, "0-1" on the CI
# machine); every command execs `true` into one of them:
#
#   stock              stock   exec ID true
#   stock --process    stock   exec --process P ID              (no field)
#   fork               fork    exec ID true
#   fork --process     fork    exec --process P ID              (no field)
#   fork + field       fork    exec --process P+field ID        (initial+final)
#   fork + wide field  fork    exec --process P+wide ID         (initial+final)
#   fork + annotation  fork    exec --process P POD             (no field; POD's
#                              config.json has exec-cpu-affinity.execaff.io:
#                              first, CRI-O's way of opting a pod in)
#
# Every fork command runs with EXECAFF_CONFIG naming a node config with
# housekeeping_cpus "C0" (the execaff node config the fork reads on every
# exec, as on a node set up for it): the file is opened, checked and parsed
# each time.  --no-node-config: no file at all (EXECAFF_CONFIG unset, and
# /etc/execaff an empty tmpfs in a private mount namespace), where the fork
# pays one failed open.
#
# The field is {"initial": "C0", "final": "C1"}: the exec'd process is
# confined to one CPU, so on a busy machine part of its cost is waiting for
# that CPU.  The wide field {"initial": "C0-C1", "final": "C0-C1"} takes the
# same code path (load, decision, two sched_setaffinity calls, read-backs)
# without confining it.  --extra NAME=CRUN adds "NAME" and "NAME + field"
# rows for another build (e.g. an older fork, or crun 1.21, which applies
# the field itself).  --first-image-pin adds "fork + field, 1st image" and
# "fork + annotation, 1st image": the same commands with
# "crun_first_image_pin": true in the node config (the fork narrows itself
# before its re-execution, DESIGN.md 4.6).
#
# Method: ROUNDS rounds; each round runs every command once, in a new random
# order (posix_spawn, output to /dev/null, wall time from spawn to reap).
# Samples of different commands are thus taken milliseconds apart, so
# drift and other load on the machine hit all of them alike — hyperfine's blocks of one command at a time did not, and moved
# medians by more than the effect measured.  The table gives each command's
# median over all rounds and, the steadier figure, the median over rounds of
# its ratio to "stock" in the same round; CPU is user+sys of crun and the
# children it reaps (wait4), which excludes the exec'd program.
#
# --base 1.21 takes the 1.21 builds (/var/tmp/execaff-crun/{stock,patched}-1.21)
# and adds Debian's own crun 1.21 binary as "crun 1.21" (--extra, installed
# by contrib/install-peers.sh beside trixie's glibc, libsystemd, libseccomp,
# libcap and libyajl): "fork + field vs crun 1.21 + field" is the fork
# against the runtime that applies the same field itself.  For that to
# compare the code and not the libraries, the stock and fork binaries run
# as copies relinked (patchelf: interpreter and RPATH) onto the peer's
# libraries: with the host's, bookworm's libsystemd alone (NEEDED
# libgcrypt, liblzma, libzstd, liblz4, libgpg-error, loaded by both of
# crun's images) made the same crun 1.21 source 12 % slower per exec than
# Debian's binary.  --host-libs keeps the host's libraries.
#
# Usage: bench.sh [--base 1.8.1|1.21] [--host-libs] [--rounds N] [--warmup N]
#                 [--stock CRUN] [--crun FORKED_CRUN] [--extra NAME=CRUN]...
#                 [--json FILE] [--no-node-config] [--first-image-pin]
# Defaults: 400 rounds, 20 warmup rounds, /var/tmp/execaff-crun/{stock,patched}/crun.
# Exit 1 when "fork + field" is more than 3% over "stock" (the target, by the
# paired ratio), 2 on setup errors.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
args=("$@")
rounds=400 warmup=20 json= extra=() node_config=present first_image=no
base=1.8.1 stock='' crun='' host_libs=no
peer_121=/var/tmp/execaff-peers/crun-1.21/crun
while [ $# -gt 0 ]; do
    case $1 in
    --base) base=$2; shift ;;
    --host-libs) host_libs=yes ;;
    --rounds) rounds=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --stock) stock=$2; shift ;;
    --crun) crun=$2; shift ;;
    --json) json=$2; shift ;;
    --extra) extra+=("$2"); shift ;;
    --no-node-config) node_config=absent ;;
    --first-image-pin) first_image=yes ;;
    -h | --help) sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "bench.sh: needs root" >&2; exit 2; }
case $base in
1.8.1) suffix= ;;
1.21) suffix=-1.21 ;;
*) echo "bench.sh: unknown --base $base (1.8.1 or 1.21)" >&2; exit 2 ;;
esac
stock=${stock:-/var/tmp/execaff-crun/stock$suffix/crun}
crun=${crun:-/var/tmp/execaff-crun/patched$suffix/crun}
if [ "$node_config" = absent ] && [ "$first_image" = yes ]; then
    echo "bench.sh: --first-image-pin needs the node config" >&2; exit 2
fi
if [ "$node_config" = absent ] && [ -e /etc/execaff ] && [ -z "${EXECAFF_BENCH_PRIVATE_ETC:-}" ]; then
    # Hide the host's node config from this run only.
    exec unshare -m env EXECAFF_BENCH_PRIVATE_ETC=1 bash -c \
        'mount --make-rprivate / && mount -t tmpfs -o mode=0755 execaff-bench /etc/execaff && exec "$@"' \
        bash "$0" "${args[@]}"
fi

relinked=
if [ "$base" = 1.21 ] && [ -x "$peer_121" ]; then
    extra+=("crun 1.21=$peer_121")
    peer_lib=$(dirname "$peer_121")/lib
    if [ "$host_libs" = no ]; then
        command -v patchelf >/dev/null || { echo "bench.sh: --base 1.21 needs patchelf (or --host-libs)" >&2; exit 2; }
        relinked=$(mktemp -d /tmp/execaff-bench-relinked.XXXXXX)
        for b in stock crun; do
            cp "${!b}" "$relinked/$b"
            patchelf --set-interpreter "$peer_lib/ld-linux-x86-64.so.2" --set-rpath "$peer_lib" --force-rpath \
                "$relinked/$b"
            printf -v "$b" '%s' "$relinked/$b"
        done
        echo "stock and fork relinked onto $peer_lib (Debian crun 1.21's libraries): $relinked" >&2
    fi
fi

rc=0
python3 - "$here" "$stock" "$crun" "$rounds" "$warmup" "$json" "$node_config" "$first_image" \
    "${extra[@]}" <<'PY' || rc=$?
import json, os, random, statistics, subprocess, sys, time
here, stock, crun, rounds, warmup, json_out, node_mode, first_image = sys.argv[1:9]
extra = [e.split("=", 1) for e in sys.argv[9:]]
rounds, warmup = int(rounds), int(warmup)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "integration"))
import fixture

for b in [stock, crun] + [p for _, p in extra]:
    if not os.access(b, os.X_OK):
        sys.exit("bench.sh: no crun at %s (build-crun.sh)" % b)
cpus = sorted(os.sched_getaffinity(0))[:2]
cpuset = "%d-%d" % tuple(cpus) if cpus[1] == cpus[0] + 1 else "%d,%d" % tuple(cpus)
devnull = os.open(os.devnull, os.O_RDWR)


def once(argv, env):
    """Wall seconds and CPU seconds (crun and the children it reaps) of one run."""
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                                       (os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit("bench.sh: %s exited with status %d" % (" ".join(argv), status))
    return wall, ru.ru_utime + ru.ru_stime


with fixture.Container(stock, cpus=cpuset) as c, fixture.Container(
        stock, cpus=cpuset, annotations={"exec-cpu-affinity.execaff.io": "first"}) as pod:
    plain = c.write_process(c.process_json(["true"]))
    field = c.process_json(["true"])
    field["execCPUAffinity"] = {"initial": str(cpus[0]), "final": str(cpus[1])}
    field = c.write_process(field)
    wide = c.process_json(["true"])
    wide["execCPUAffinity"] = {"initial": cpuset, "final": cpuset}
    wide = c.write_process(wide)
    pod_plain = pod.write_process(pod.process_json(["true"]))
    node_config = os.path.join(c._tmp, "node-config.json")
    fd = os.open(node_config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, json.dumps({"housekeeping_cpus": str(cpus[0])}).encode())
    os.close(fd)
    first_config = os.path.join(c._tmp, "node-config-first-image.json")
    fd = os.open(first_config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, json.dumps({"housekeeping_cpus": str(cpus[0]), "crun_first_image_pin": True}).encode())
    os.close(fd)
    first_env = dict(os.environ, EXECAFF_CONFIG=first_config)
    stock_env = dict(os.environ)
    stock_env.pop("EXECAFF_CONFIG", None)
    fork_env = dict(os.environ, EXECAFF_CONFIG=node_config)
    if node_mode == "absent":
        if os.path.lexists("/etc/execaff/shim.json"):
            sys.exit("bench.sh: --no-node-config but /etc/execaff/shim.json exists")
        fork_env, node_config = stock_env, None
    base = lambda rt: [rt, "--root", c.root, "exec"]
    commands = [
        ("stock", base(stock) + [c.id, "true"]),
        ("stock --process", base(stock) + ["--process", plain, c.id]),
        ("fork", base(crun) + [c.id, "true"]),
        ("fork --process", base(crun) + ["--process", plain, c.id]),
        ("fork + field", base(crun) + ["--process", field, c.id]),
        ("fork + wide field", base(crun) + ["--process", wide, c.id]),
        ("fork + annotation", [crun, "--root", pod.root, "exec", "--process", pod_plain, pod.id]),
    ]
    for name, path in extra:
        commands += [(name, base(path) + [c.id, "true"]),
                     (name + " + field", base(path) + ["--process", field, c.id])]
    # Each command's environment: stock's without a node config, the
    # others' with one; the first-image rows with the key.
    envs = {name: stock_env if argv[0] == stock else fork_env for name, argv in commands}
    if first_image == "yes":
        commands += [("fork + field, 1st image", base(crun) + ["--process", field, c.id]),
                     ("fork + annot., 1st image",
                      [crun, "--root", pod.root, "exec", "--process", pod_plain, pod.id])]
        envs.update({name: first_env for name, _ in commands[-2:]})
    # The field and the annotation really pin with the fork (stock ignores both).
    for label, root, cid, fld in (("field", c.root, c.id, field), ("annotation", pod.root, pod.id, None)):
        ctr = c if fld else pod
        probe = ctr.process_json(["grep", "Cpus_allowed_list", "/proc/self/status"])
        if fld:
            probe["execCPUAffinity"] = {"initial": str(cpus[0]), "final": str(cpus[1])}
        r = fixture.run([crun, "--root", root, "exec", "--process", ctr.write_process(probe), cid],
                        env=fork_env)
        print("fork + %s runs on: %s" % (label, r.stdout.split()[-1] if r.returncode == 0 else r))

    times = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    ratios = {name: [] for name, _ in commands}
    walls = []  # per round: {name: wall}, for pairs other than "vs stock"
    rng = random.Random(1)
    for rnd in range(warmup + rounds):
        order = commands[:]
        rng.shuffle(order)
        got = {name: once(argv, envs[name]) for name, argv in order}
        if rnd < warmup:
            continue
        walls.append({name: wall for name, (wall, _) in got.items()})
        for name, (wall, cpu_s) in got.items():
            times[name].append(wall)
            cpu[name].append(cpu_s)
            ratios[name].append(wall / got["stock"][0])



def paired_of(a, b):
    """Median over rounds of a's wall time over b's in the same round."""
    return statistics.median(w[a] / w[b] for w in walls)


ref = statistics.median(times["stock"])
cpu_ref = statistics.median(cpu["stock"])
needed = [l for l in subprocess.run(["readelf", "-dW", crun], capture_output=True,
                                    text=True).stdout.splitlines() if "(NEEDED)" in l]
print("\ncrun exec latency: %d rounds (after %d warmup rounds), each command once per round in "
      "random order; container cpuset %s" % (rounds, warmup, cpuset))
print("libexecaff in the fork: %s" % ("a shared library (NEEDED)" if any("execaff" in l for l in needed)
                                      else "linked in statically"))
print("fork commands read the node config %s (housekeeping_cpus %d) on every exec" % (
    node_config, cpus[0]) if node_config else "no node config (the fork finds none)")
print("%-22s %9s %9s %9s %11s %13s" % ("command", "median ms", "q1 ms", "q3 ms", "vs stock",
                                       "paired ratio"), "  cpu ms (vs stock)")
rows = []
for name, _ in commands:
    t = sorted(times[name])
    q1, med, q3 = statistics.quantiles(t, n=4)
    paired = statistics.median(ratios[name])
    c_ms = statistics.median(cpu[name])
    rows.append({"command": name, "median_s": med, "q1_s": q1, "q3_s": q3, "runs": len(t),
                 "ratio": med / ref, "paired_ratio": paired, "cpu_s": c_ms,
                 "cpu_ratio": c_ms / cpu_ref})
    print("%-22s %9.2f %9.2f %9.2f %11.3f %13.3f   %6.2f (%5.3f)" % (
        name, med * 1e3, q1 * 1e3, q3 * 1e3, med / ref, paired, c_ms * 1e3, c_ms / cpu_ref))
row = {r["command"]: r for r in rows}
over = (row["fork + field"]["paired_ratio"] - 1) * 100
print("\nfork + field vs stock: %+.1f%% paired (%+.1f%% on the medians), target <= +3%%; "
      "fork without the field %+.1f%%; fork + annotation %+.1f%%" % (
          over, (row["fork + field"]["ratio"] - 1) * 100,
          (row["fork --process"]["paired_ratio"] - 1) * 100,
          (row["fork + annotation"]["paired_ratio"] - 1) * 100))
if first_image == "yes":
    print("first-image pin (crun_first_image_pin) against the fork without it, paired: field %+.1f%%, "
          "annotation %+.1f%%" % ((paired_of("fork + field, 1st image", "fork + field") - 1) * 100,
                                  (paired_of("fork + annot., 1st image", "fork + annotation") - 1) * 100))
for name, _ in extra:
    print("fork + field vs %s + field: %.3f paired, cpu %.3f (medians %.2f / %.2f ms)" % (
        name, paired_of("fork + field", name + " + field"),
        row["fork + field"]["cpu_s"] / row[name + " + field"]["cpu_s"],
        row["fork + field"]["cpu_s"] * 1e3, row[name + " + field"]["cpu_s"] * 1e3))
print("load average during the run: %s" % open("/proc/loadavg").read().split()[:3])
if json_out:
    with open(json_out, "w") as f:
        json.dump({"rows": rows, "times": times, "cpu": cpu}, f, indent=1)
sys.exit(0 if over <= 3.0 else 1)
PY
[ -z "$relinked" ] || rm -rf "$relinked"
exit "$rc"
