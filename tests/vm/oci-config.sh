#!/bin/sh
# oci-config.sh — print an OCI runtime config.json for a busybox bundle.
#
# Used by build-initramfs.sh on the host and shipped into the guest as
# /usr/local/bin/oci-config so that scenarios can make bundles with other
# cpusets or commands. POSIX sh: runs under bash and busybox ash.
#
# Usage: oci-config.sh [--cpus LIST] [--mems LIST] [--root PATH] [--rw]
#                      [--cgroups-path PATH] [--env NAME=VALUE]...
#                      [--exec-cpu-affinity INITIAL[:FINAL]] [--] [ARG...]
#
#   --cpus LIST         linux.resources.cpu.cpus        (default 1-3)
#   --mems LIST         linux.resources.cpu.mems        (default 0)
#   --root PATH         root.path (absolute, or relative to the bundle;
#                       default /bundle/rootfs, the rootfs in the initramfs)
#   --rw                root.readonly=false             (default true)
#   --cgroups-path P    linux.cgroupsPath               (default: unset, the
#                       runtime picks one from the container id)
#   --env NAME=VALUE    extra process.env entry
#   --exec-cpu-affinity INITIAL[:FINAL]
#                       process.execCPUAffinity (runtime-spec 1.2.1); old
#                       runtimes ignore it. FINAL may be empty.
#   ARG...              process.args                    (default: sleep 1000)
#
# Strings may not contain control characters; " and \ are escaped.
set -eu

die() { echo "oci-config: $*" >&2; exit 2; }

# json_str STRING: print STRING as a JSON string literal.
json_str() {
    case $1 in
    *[[:cntrl:]]*) die "control character in string: $1" ;;
    esac
    printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}

# json_list ITEM...: print a JSON array of strings.
json_list() {
    sep=''
    printf '['
    for item in "$@"; do
        printf '%s' "$sep"
        json_str "$item"
        sep=', '
    done
    printf ']'
}

check_cpulist() {
    case $1 in
    *[!0-9,\ -]*) die "not a cpu list: '$1'" ;;
    esac
}

cpus=1-3
mems=0
root=/bundle/rootfs
readonly=true
cgpath=
eca=
extra_env=
while [ $# -gt 0 ]; do
    case $1 in
    --cpus) [ $# -ge 2 ] || die "--cpus needs a value"; cpus=$2; shift 2 ;;
    --mems) [ $# -ge 2 ] || die "--mems needs a value"; mems=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || die "--root needs a value"; root=$2; shift 2 ;;
    --rw) readonly=false; shift ;;
    --cgroups-path) [ $# -ge 2 ] || die "--cgroups-path needs a value"; cgpath=$2; shift 2 ;;
    --env)
        [ $# -ge 2 ] || die "--env needs a value"
        case $2 in *=*) ;; *) die "--env wants NAME=VALUE, got '$2'" ;; esac
        extra_env="$extra_env, $(json_str "$2")"
        shift 2 ;;
    --exec-cpu-affinity)
        [ $# -ge 2 ] || die "--exec-cpu-affinity needs a value"; eca=$2; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || set -- sleep 1000
check_cpulist "$cpus"
check_cpulist "$mems"

eca_json=
if [ -n "$eca" ]; then
    case $eca in
    *:*) eca_initial=${eca%%:*}; eca_final=${eca#*:} ;;
    *) eca_initial=$eca; eca_final= ;;
    esac
    check_cpulist "$eca_initial"
    check_cpulist "$eca_final"
    eca_json="\"execCPUAffinity\": {\"initial\": $(json_str "$eca_initial")"
    [ -z "$eca_final" ] || eca_json="$eca_json, \"final\": $(json_str "$eca_final")"
    eca_json="$eca_json},
        "
fi

cg_json=
[ -z "$cgpath" ] || cg_json="\"cgroupsPath\": $(json_str "$cgpath"),
        "

caps='"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP",
                "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
                "CAP_KILL", "CAP_AUDIT_WRITE", "CAP_SYS_NICE"'

cat <<EOF
{
    "ociVersion": "1.0.2",
    "process": {
        "terminal": false,
        "user": {"uid": 0, "gid": 0},
        "args": $(json_list "$@"),
        "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"$extra_env],
        "cwd": "/",
        ${eca_json}"capabilities": {
            "bounding": [$caps],
            "effective": [$caps],
            "permitted": [$caps]
        },
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": true
    },
    "root": {"path": $(json_str "$root"), "readonly": $readonly},
    "hostname": "execaff",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "nodev", "mode=1777", "size=65536k"]}
    ],
    "linux": {
        ${cg_json}"resources": {
            "devices": [{"allow": false, "access": "rwm"}],
            "cpu": {"cpus": $(json_str "$cpus"), "mems": $(json_str "$mems")}
        },
        "namespaces": [
            {"type": "pid"}, {"type": "network"}, {"type": "ipc"},
            {"type": "uts"}, {"type": "mount"}
        ],
        "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
            "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
            "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
        "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
            "/proc/sysrq-trigger"]
    }
}
EOF
