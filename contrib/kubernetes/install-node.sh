#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs execaff-shim on one node: the static shim, /etc/execaff/shim.json
# and the CRI's runtime handler (a CRI-O drop-in, or a block appended to
# containerd's config.toml), optionally restarting the CRI.  Run by the
# DaemonSet's privileged init container (contrib/kubernetes/daemonset.yaml)
# with the host's / mounted at --root; usable by hand as well.
#
#   install-node.sh [--root DIR] [--cri crio|containerd|auto]
#                   [--shim FILE] [--config FILE] [--crio-dropin FILE]
#                   [--containerd-snippet FILE] [--restart]
#                   [--restart-cmd 'COMMAND'] [--uninstall]
#
# Defaults: --root /, --cri auto (CRI-O when DIR/etc/crio exists, else
# containerd when DIR/etc/containerd exists), sources next to this script
# (execaff-shim, shim.json, 99-execaff.conf, execaff-runtime.toml).
# --restart runs `chroot DIR systemctl restart crio|containerd` (or
# --restart-cmd, run by sh) after a change, never when nothing changed.
# --uninstall removes what an install put there (the CRI's handler first,
# then shim.json and the shim), with the same journal and restore.
#
# Guarantees: idempotent (a second run changes nothing and restarts
# nothing); a group- or world-writable or non-root-owned --config is
# refused before anything is touched (the shim would refuse it at every
# exec); on any failure, the restart included, every file is put back as
# it was, files and directories the run created are removed, and (after a
# failed restart) the CRI is restarted once more on the old files.
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
    --restart) restart=true ;;
    --restart-cmd) restart=true; restart_cmd=${2:?}; shift ;;
    --uninstall) uninstall=true ;;
    -h|--help) sed -n '3,30p' "$0"; exit 0 ;;
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
    say "restarting $cri on the old files" >&2
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

run_restart() {
  if [ -n "$restart_cmd" ]; then sh -c "$restart_cmd"
  else chroot "${root:-/}" systemctl restart "$cri"
  fi
}

if [ "$uninstall" = true ]; then
  if [ "$cri" = crio ]; then
    unput "$root/etc/crio/crio.conf.d/99-execaff.conf"
  elif [ -f "$containerd_toml" ] && grep -qxF "$begin_mark" "$containerd_toml"; then
    strip_block
    put "$work/config.toml" "$containerd_toml" "$(toml_mode)"
  fi
  unput "$root/etc/execaff/shim.json"
  unput "$root/usr/local/bin/execaff-shim"
  done_what="removed"
else
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
fi

if [ "$changed" -eq 0 ]; then
  say "nothing to do: execaff is $done_what for $cri under ${root:-/}"
  rm -rf "$work"
  exit 0
fi
if [ "$restart" = true ]; then
  say "restarting $cri"
  restart_done=true
  run_restart || fail "restarting $cri failed"
fi
trap - HUP INT TERM
rm -rf "$work"
say "done: $changed file(s) changed for $cri under ${root:-/}"
