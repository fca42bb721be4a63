#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs execaff-shim on one node: the static shim, /etc/execaff/shim.json
# and the CRI's runtime handler (a CRI-O drop-in, or a block appended to
# containerd's config.toml), places the processes that start execs on the
# node's housekeeping CPUs, and optionally restarts what changed.  Run by
# the DaemonSet's privileged init container (contrib/kubernetes/daemonset.yaml)
# with the host's / mounted at --root; usable by hand as well.
#
#   install-node.sh [--root DIR] [--cri crio|containerd|auto]
#                   [--shim FILE] [--config FILE] [--crio-dropin FILE]
#                   [--containerd-snippet FILE] [--housekeeping LIST|none]
#                   [--restart] [--restart-cmd 'COMMAND'] [--uninstall]
#
# Defaults: --root /, --cri auto (CRI-O when DIR/etc/crio exists, else
# containerd when DIR/etc/containerd exists), sources next to this script
# (execaff-shim, shim.json, 99-execaff.conf, execaff-runtime.toml).
#
# The callers (spec/audit.md, caller_on_exclusive_cpu): everything before a
# runtime's first instruction runs on its caller's CPUs, so with the
# housekeeping CPUs H known the installer also writes
#   CRI-O:  DIR/etc/crio/crio.conf.d/99-execaff-infra-cpuset.conf,
#           [crio.runtime] infra_ctr_cpuset = "H" (CRI-O then starts conmon
#           and every runtime under taskset on H);
#   systemd drop-ins DIR/etc/systemd/system/UNIT.service.d/
#           99-execaff-cpu-affinity.conf, CPUAffinity=H, for the CRI's unit
#           (crio or containerd: the containerd shims inherit it) and for
#           kubelet.
# H is --housekeeping LIST, else "housekeeping_cpus" of --config, else
# kubelet's reservedSystemCPUs (DIR/etc/kubernetes/kubelet.conf, then
# DIR/var/lib/kubelet/config.yaml); with none of them, or --housekeeping
# none, those files are not written (and removed if an earlier run wrote
# them).
#
# --restart runs, in DIR by chroot, `systemctl daemon-reload` when a unit's
# drop-in changed and `systemctl restart UNITS` for the units whose files
# changed (the CRI, kubelet), never when nothing changed; --restart-cmd
# COMMAND is run by sh instead, once, with EXECAFF_RESTART_UNITS (the units,
# space-separated) and EXECAFF_DAEMON_RELOAD (true or false) in its
# environment.  --uninstall removes what an install put there (the CRI's
# handler and the placement first, then shim.json and the shim), with the
# same journal and restore.
#
# Guarantees: idempotent (a second run changes nothing and restarts
# nothing); a group- or world-writable or non-root-owned --config, or a
# housekeeping list that is not a CPU list, is refused before anything is
# touched (the shim would refuse such a config at every exec); on any
# failure, the restart included, every file is put back as it was, files
# and directories the run created are removed, and (after a failed
# restart) the units are restarted once more on the old files.
# Exit: 0 installed or unchanged, 1 failed (restored), 2 bad usage.
set -u

me=execaff-install
here=$(cd "$(dirname "$0")" && pwd)
root=/
cri=auto
shim=$here/execaff-shim
config=$here/shim.json
dropin=$here/99-execaff.conf
snippet=$here/execaff-runtime.toml
restart=false
restart_cmd=
uninstall=false
housekeeping=

say() { printf '%s: %s\n' "$me" "$*"; }
die_usage() { printf '%s: %s\n' "$me" "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --root) root=${2:?}; shift ;;
    --cri) cri=${2:?}; shift ;;
    --shim) shim=${2:?}; shift ;;
    --config) config=${2:?}; shift ;;
    --crio-dropin) dropin=${2:?}; shift ;;
    --containerd-snippet) snippet=${2:?}; shift ;;
    --housekeeping) housekeeping=${2:?}; shift ;;
    --restart) restart=true ;;
    --restart-cmd) restart=true; restart_cmd=${2:?}; shift ;;
    --uninstall) uninstall=true ;;
    -h|--help) sed -n '3,/^# Exit:/p' "$0"; exit 0 ;;
    *) die_usage "unknown argument \"$1\" (see --help)" ;;
  esac
  shift
done

root=${root%/}
[ -d "${root:-/}" ] || die_usage "--root \"${root:-/}\": not a directory"

case $cri in
  auto)
    if [ -d "$root/etc/crio" ]; then cri=crio
    elif [ -d "$root/etc/containerd" ]; then cri=containerd
    else die_usage "--cri auto: neither $root/etc/crio nor $root/etc/containerd exists; say --cri crio or --cri containerd"
    fi ;;
  crio|containerd) ;;
  *) die_usage "--cri \"$cri\": expected crio, containerd or auto" ;;
esac

# --- checks on the inputs, before anything is touched
need_file() {  # need_file WHAT PATH
  [ -f "$2" ] && [ -r "$2" ] || die_usage "$1 \"$2\": no such readable file"
}
check_sources() {
need_file --shim "$shim"
need_file --config "$config"
[ -x "$shim" ] || die_usage "--shim \"$shim\": not executable"
# find -H: a ConfigMap's file is a symlink into ..data; judge its target.
if [ -n "$(find -H "$config" -prune -perm -0002)" ]; then
  die_usage "--config \"$config\" is world-writable; execaff-shim refuses such a config (make it 0644, owned by root)"
fi
if [ -n "$(find -H "$config" -prune -perm -0020)" ]; then
  die_usage "--config \"$config\" is group-writable; execaff-shim refuses such a config (make it 0644, owned by root)"
fi
if [ -z "$(find -H "$config" -prune -user 0)" ]; then
  die_usage "--config \"$config\" is not owned by root; execaff-shim refuses such a config"
fi
[ -s "$config" ] || die_usage "--config \"$config\" is empty"
if [ "$cri" = crio ]; then need_file --crio-dropin "$dropin"; else need_file --containerd-snippet "$snippet"; fi
}
[ "$uninstall" = true ] || check_sources

# --- the housekeeping CPUs the callers are placed on ("" when none)
is_cpu_list() { printf '%s' "$1" | grep -Eqx '[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*'; }
# setting_of KEY FILE: the value of "KEY": "V", KEY: V or KEY: "V" in a JSON or
# YAML file (comment lines skipped, the last one wins); "" when absent.
setting_of() {
  grep -v '^[[:space:]]*#' "$2" | tr '\n' ' ' | sed -n \
    -e 's/.*"\{0,1\}'"$1"'"\{0,1\}[[:space:]]*:[[:space:]]*["'"'"']\([^"'"'"']*\)["'"'"'].*/\1/p' \
    -e 's/.*"\{0,1\}'"$1"'"\{0,1\}[[:space:]]*:[[:space:]]*\([0-9][0-9,-]*\).*/\1/p' |
    tr -d ' '
}
housekeeping_from=
if [ "$uninstall" = false ]; then
  if [ -n "$housekeeping" ]; then
    housekeeping_from="--housekeeping"
  elif grep -q '"housekeeping_cpus"' "$config"; then
    housekeeping=$(setting_of housekeeping_cpus "$config")
    housekeeping_from="\"housekeeping_cpus\" of $config"
  else
    for f in "$root/etc/kubernetes/kubelet.conf" "$root/var/lib/kubelet/config.yaml"; do
      [ -f "$f" ] && grep -q '^[^#]*reservedSystemCPUs' "$f" || continue
      housekeeping=$(setting_of reservedSystemCPUs "$f")
      housekeeping_from="kubelet's reservedSystemCPUs in $f"
      break
    done
  fi
  if [ "$housekeeping" = none ]; then
    housekeeping=
  elif [ -n "$housekeeping_from" ] && ! is_cpu_list "$housekeeping"; then
    die_usage "housekeeping CPUs \"$housekeeping\" (from $housekeeping_from) are not a CPU list such as 0-1,4"
  fi
fi

containerd_toml=$root/etc/containerd/config.toml
begin_mark='# BEGIN execaff (contrib/kubernetes/install-node.sh; do not edit this block)'
end_mark='# END execaff'
if [ "$cri" = containerd ] && [ -f "$containerd_toml" ] &&
   ! grep -Eq '^[[:space:]]*version[[:space:]]*=[[:space:]]*2[[:space:]]*(#.*)?$' "$containerd_toml"; then
  die_usage "$containerd_toml is not a version = 2 config (containerd 1.6/1.7); add the execaff handler by hand (contrib/containerd/config.toml)"
fi

# --- the journal: what this run changed, to undo it
work=$(mktemp -d "${TMPDIR:-/tmp}/execaff-install.XXXXXX") || { say "cannot make a temp dir" >&2; exit 1; }
journal=$work/journal
: >"$journal"
changed=0
n=0

restore() {
  # newest first
  sed -n '1!G;h;$p' "$journal" | while IFS='|' read -r kind path saved; do
    case $kind in
      file) if [ -n "$saved" ]; then cp -P -p "$saved" "$path.execaff-restore" && mv -f "$path.execaff-restore" "$path"
            else rm -f "$path"; fi ;;
      dir) rmdir "$path" 2>/dev/null ;;
    esac
  done
}

fail() {
  say "FAILED: $*" >&2
  restore
  say "restored every file as it was" >&2
  if [ "$restart_done" = true ]; then
    say "restarting $restart_units on the old files" >&2
    run_restart || say "the restart on the old files failed too" >&2
  fi
  rm -rf "$work"
  exit 1
}
restart_done=false
trap 'fail "interrupted"' HUP INT TERM

make_dirs() {  # make_dirs DIR: mkdir -p, journalling each new level
  [ -d "$1" ] && return 0
  make_dirs "$(dirname "$1")" || return 1
  mkdir "$1" 2>/dev/null || return 1
  echo "dir|$1|" >>"$journal"
}

# put SRC DEST MODE: DEST becomes SRC's bytes, root-owned, MODE; journalled.
put() {
  src=$1 dest=$2 mode=$3
  if [ -f "$dest" ] && [ ! -L "$dest" ] && cmp -s "$src" "$dest" &&
     [ -n "$(find "$dest" -prune -perm "$mode" -user 0)" ]; then
    say "unchanged $dest"
    return 0
  fi
  make_dirs "$(dirname "$dest")" || fail "cannot create the directory of $dest"
  if [ -L "$dest" ] || { [ -e "$dest" ] && [ ! -f "$dest" ]; }; then
    fail "$dest exists and is not a regular file"
  fi
  saved=
  if [ -e "$dest" ]; then
    n=$((n + 1))
    saved=$work/saved.$n
    cp -p "$dest" "$saved" || fail "cannot back up $dest"
  fi
  echo "file|$dest|$saved" >>"$journal"
  tmp=$dest.execaff-new
  cp "$src" "$tmp" && chown 0:0 "$tmp" && chmod "$mode" "$tmp" && mv -f "$tmp" "$dest" ||
    { rm -f "$tmp"; fail "cannot write $dest"; }
  changed=$((changed + 1))
  say "installed $dest"
}

# unput DEST: DEST removed; journalled.
unput() {
  dest=$1
  if [ ! -e "$dest" ] && [ ! -L "$dest" ]; then
    say "absent $dest"
    return 0
  fi
  n=$((n + 1))
  saved=$work/saved.$n
  cp -P -p "$dest" "$saved" || fail "cannot back up $dest"
  echo "file|$dest|$saved" >>"$journal"
  rm -f "$dest" || fail "cannot remove $dest"
  changed=$((changed + 1))
  say "removed $dest"
}

# The config.toml without the installer's block (to $work/config.toml).
strip_block() {
  awk -v b="$begin_mark" -v e="$end_mark" '$0 == b {skip = 1} !skip {print} $0 == e {skip = 0}' \
    "$containerd_toml" >"$work/config.toml" || fail "cannot read $containerd_toml"
}

toml_mode() {
  if [ -f "$containerd_toml" ]; then echo "0$(stat -c %a "$containerd_toml")"; else echo 0644; fi
}

# The units to restart, and whether systemd must reload its units first.
restart_units=
reload=false
# restart_if_changed BEFORE UNIT [reload]: UNIT restarts when a file changed
# since the count BEFORE (a unit's own drop-in also needs the reload).
restart_if_changed() {
  [ "$changed" -gt "$1" ] || return 0
  case " $restart_units " in *" $2 "*) ;; *) restart_units="${restart_units:+$restart_units }$2" ;; esac
  [ "${3:-}" != reload ] || reload=true
}

run_restart() {
  if [ -n "$restart_cmd" ]; then
    EXECAFF_RESTART_UNITS=$restart_units EXECAFF_DAEMON_RELOAD=$reload sh -c "$restart_cmd"
  else
    { [ "$reload" = false ] || chroot "${root:-/}" systemctl daemon-reload; } &&
      chroot "${root:-/}" systemctl restart $restart_units
  fi
}

# The placement of the callers (see the header): each file written when the
# housekeeping CPUs are known, removed otherwise (and by --uninstall).
crio_cpuset_dropin=$root/etc/crio/crio.conf.d/99-execaff-infra-cpuset.conf
unit_dropin() { echo "$root/etc/systemd/system/$1.service.d/99-execaff-cpu-affinity.conf"; }
written_by='# Written by contrib/kubernetes/install-node.sh (execaff); --uninstall removes it.'
place() {  # place UNIT: the unit's CPUAffinity= drop-in (or its removal)
  before=$changed
  dest=$(unit_dropin "$1")
  if [ -n "$housekeeping" ]; then
    # An empty assignment first: CPUAffinity= lines are merged, not replaced.
    printf '%s\n%s\n[Service]\nCPUAffinity=\nCPUAffinity=%s\n' "$written_by" \
      "# The processes that start execs run on the node's housekeeping CPUs." \
      "$housekeeping" >"$work/$1.conf"
    put "$work/$1.conf" "$dest" 0644
  elif [ -e "$dest" ]; then
    unput "$dest"
  fi
  restart_if_changed "$before" "$1" reload
}
place_crio() {  # CRI-O's infra_ctr_cpuset drop-in (or its removal)
  before=$changed
  if [ -n "$housekeeping" ]; then
    printf '%s\n%s\n%s\n[crio.runtime]\ninfra_ctr_cpuset = "%s"\n' "$written_by" \
      "# CRI-O starts conmon and every runtime call under taskset on these CPUs," \
      "# the node's housekeeping CPUs, and runs infra containers there." \
      "$housekeeping" >"$work/infra-cpuset.conf"
    put "$work/infra-cpuset.conf" "$crio_cpuset_dropin" 0644
  elif [ -e "$crio_cpuset_dropin" ]; then
    unput "$crio_cpuset_dropin"
  fi
  restart_if_changed "$before" crio
}

if [ "$uninstall" = true ]; then
  housekeeping=
  before=$changed
  if [ "$cri" = crio ]; then
    unput "$root/etc/crio/crio.conf.d/99-execaff.conf"
  elif [ -f "$containerd_toml" ] && grep -qxF "$begin_mark" "$containerd_toml"; then
    strip_block
    put "$work/config.toml" "$containerd_toml" "$(toml_mode)"
  fi
  restart_if_changed "$before" "$cri"
  [ "$cri" = containerd ] || place_crio
  place "$cri"
  place kubelet
  before=$changed
  unput "$root/etc/execaff/shim.json"
  unput "$root/usr/local/bin/execaff-shim"
  restart_if_changed "$before" "$cri"
  done_what="removed"
else
  before=$changed
  put "$shim" "$root/usr/local/bin/execaff-shim" 0755
  put "$config" "$root/etc/execaff/shim.json" 0644
  done_what="installed"

  if [ "$cri" = crio ]; then
    put "$dropin" "$root/etc/crio/crio.conf.d/99-execaff.conf" 0644
  else
    # The handler block, appended to config.toml (or replacing the block an
    # earlier run appended); the cgroup driver follows the runc handler's.
    new=$work/config.toml
    block=$work/block
    systemd=false
    if [ -f "$containerd_toml" ]; then
      grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true' "$containerd_toml" && systemd=true
      strip_block
    else
      printf 'version = 2\n' >"$new"
    fi
    if grep -q 'containerd\.runtimes\.execaff\]' "$new"; then
      fail "$containerd_toml already defines a runtime \"execaff\" outside the installer's block; remove it or the block"
    fi
    sed "s/^\([[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*\)false/\1$systemd/" "$snippet" >"$block" ||
      fail "cannot read $snippet"
    { printf '%s\n' "$begin_mark"; cat "$block"; printf '%s\n' "$end_mark"; } >>"$new"
    put "$new" "$containerd_toml" "$(toml_mode)"
  fi
  restart_if_changed "$before" "$cri"
  if [ -n "$housekeeping" ]; then
    say "placing $cri and kubelet on the housekeeping CPUs $housekeeping (from $housekeeping_from)"
  elif [ -n "$housekeeping_from" ]; then
    say "--housekeeping none: $cri and kubelet are not placed"
  else
    say "no housekeeping CPUs known (no --housekeeping, no \"housekeeping_cpus\" in the config, no kubelet reservedSystemCPUs): $cri and kubelet are not placed"
  fi
  [ "$cri" = containerd ] || place_crio
  place "$cri"
  place kubelet
fi

if [ "$changed" -eq 0 ]; then
  say "nothing to do: execaff is $done_what for $cri under ${root:-/}"
  rm -rf "$work"
  exit 0
fi
if [ "$restart" = true ]; then
  say "restarting $restart_units"
  restart_done=true
  run_restart || fail "restarting $restart_units failed"
fi
trap - HUP INT TERM
rm -rf "$work"
say "done: $changed file(s) changed for $cri under ${root:-/}"
