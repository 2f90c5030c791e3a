#!/bin/sh
# One stock worker host for tests/remote/engine.py: buildbox-casd and buildbox-worker, with
# buildbox-run-bubblewrap as the runner, in the worker image of devtools/remote/worker_image.sh.
#
#   buildbox_worker.sh IMAGE STATE URL JOBS BOT_ID [STAGING [BOTS]]
#
# BOTS buildbox-workers (JOBS unless given) share JOBS concurrent actions and one buildbox-casd;
# they are named BOT_ID/bot0, BOT_ID/bot1, ...
#
# The engine runs it as `ip netns exec NETNS unshare --mount --pid --fork --kill-child ...`: in
# a network namespace of its own (a veth to the engine: URL is the engine's address on it) and a
# mount and PID namespace that go with it. It makes IMAGE, read-only, the root of that namespace
# (pivot_root: bubblewrap cannot make namespaces under a chroot), with a /proc, the host's /dev, a
# /tmp in memory and STATE/var, the worker's only writable directory, at /var/lib/rules_aten
# (casd's blob cache, the runner's staging, the logs).
#
# The runner is buildbox-run-bubblewrap behind output_paths_runner.pl, which gives it the REAPI v2.1
# form of a v2.0 client's Command (Bazel 4.2.3's), the one thing buildbox 1.4.30 cannot do.
#
# Each action runs under bubblewrap and sees its input root and one toolchain tree of the image,
# chosen by the action's platform property `inject` (buildbox-run-bubblewrap's
# --ro-bind-mount=CONTENT:SRC:DST): `inject=bookworm` gives it the tree of
# /opt/toolchains/bookworm at /usr, `inject=sid` the image's own /usr. A client names the one its
# C++ toolchain needs with --remote_default_exec_properties=inject=...; an action without it sees
# no compiler and no shell.
set -eu
image="$1" state="$2" url="$3" jobs="$4" bot="$5" bots="${7:-$4}"
# How buildbox-casd makes an action's input root: copy-or-link (hard links into its blob cache,
# a file at a time) or fuse (buildbox-fuse, which shows the tree without making it).
staging="${6:-copy-or-link}"
new="$state/root"
mkdir -p "$new" "$state/var"
mount --bind "$image" "$new"
mount -o remount,bind,ro "$new"
mount -t proc proc "$new/proc"
mount --rbind /dev "$new/dev"
mount -t tmpfs -o size=2g tmpfs "$new/tmp"
mount --bind "$state/var" "$new/var/lib/rules_aten"
# This script's directory, read-only, for the runner in front of bubblewrap's.
mount --bind "$(cd "$(dirname "$0")" && pwd)" "$new/opt/rules_aten"
mount -o remount,bind,ro "$new/opt/rules_aten"
cd "$new"
pivot_root . .
umount -l .
cd /

var=/var/lib/rules_aten
# The runner's sandbox: a toolchain tree's directories, each bound read-only (bubblewrap binds
# directories, not the merged /usr's links /bin and /lib).
tree_args() {
  name="$1" tree="$2"
  for pair in usr:/usr usr/bin:/bin usr/sbin:/sbin usr/lib:/lib usr/lib64:/lib64 \
    etc/alternatives:/etc/alternatives etc/ld.so.cache:/etc/ld.so.cache \
    etc/passwd:/etc/passwd etc/group:/etc/group; do
    src="$tree/${pair%%:*}"
    [ -e "$src" ] || continue
    printf -- '--runner-arg=--ro-bind-mount=%s:%s:%s\n' "$name" "$src" "${pair#*:}"
  done
}

buildbox-casd --cas-remote="$url" --bind="unix:$var/casd.sock" --quota-high=8G \
  --log-level=warning "$var/cas" >"$var/casd.log" 2>&1 &
i=0
while [ ! -S "$var/casd.sock" ]; do
  i=$((i + 1))
  if [ "$i" -gt 300 ]; then
    echo "buildbox-casd did not open $var/casd.sock: $(tail -n 3 "$var/casd.log")" >&2
    exit 1
  fi
  sleep 0.1
done
# worker BOT [exec]: one buildbox-worker, named BOT, running JOBS/BOTS actions at a time.
worker() {
  name="$1"
  shift
  # shellcheck disable=SC2046
  "$@" buildbox-worker \
    --bots-remote="$url" \
    --cas-remote="unix:$var/casd.sock" \
    --buildbox-run=/opt/rules_aten/output_paths_runner.pl \
    --runner-arg=--staging-mode="$staging" \
    $(tree_args bookworm /opt/toolchains/bookworm) \
    $(tree_args sid "") \
    --platform OSFamily=linux \
    --platform inject=bookworm \
    --platform inject=sid \
    --concurrent-jobs=$((jobs / bots)) \
    --max-wait-time=5 \
    "$name"
}
# (The engine gives each job a worker of its own: a worker waits a quarter of a second after each
# UpdateBotSession, so a worker of JOBS actions holds a finished action's slot that long before
# it asks for the next, while an idle worker of its own is already asking.) The last worker is
# this script's process.
i=1
while [ "$i" -lt "$bots" ]; do
  worker "$bot/bot$i" >"$var/worker$i.log" 2>&1 &
  i=$((i + 1))
done
worker "$bot/bot0" exec
