#!/usr/bin/env bash
# The Bazel 7 test environment of `./dev test-bazel7`: a Debian sid chroot with Debian's Bazel
# 7.7.1 and its packaged rule sets, which this machine's Debian 12 does not package (its Bazel is
# 4.2.3, without Bzlmod). Bazel 8 and 9 turn WORKSPACE off; 7.7.1 with --noenable_workspace takes
# the path their users take, and is the newest Bazel Debian packages.
#
#   devtools/bazel7/chroot.sh setup      make the chroot once and keep it as a tarball (CACHE below);
#                                    unpack it when the unpacked copy is missing or stale
#   devtools/bazel7/chroot.sh run CMD..  run CMD in the chroot, in this checkout's directory
#
# `run` works in a mount and PID namespace of its own (unshare): the mounts (proc, /dev, a /dev/shm
# of its own, this checkout, the venv's base interpreter, the pip configuration) are seen by no
# other process and vanish with it, and the Bazel servers CMD leaves are killed when it ends. A
# /dev/shm of its own because the tests' .bazelrc sets --sandbox_base=/dev/shm: with the host's,
# a Bazel in here and one outside shared one sandbox directory.
#
# The packages are pinned (PACKAGES); a cached tarball whose stamp names other pins is made again.
# Where nothing can be installed and no tarball is cached, `setup` fails with one line.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=devtools/lib/debian_root.sh
source "$ROOT/devtools/lib/debian_root.sh"
CACHE="${RULES_ATEN_BAZEL7_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rules_aten/bazel7}"
# Debian sid's versions when this was written; `apt-get install pkg=version` refuses others, so a
# sid that has moved on fails the set-up with one line instead of testing another Bazel.
PACKAGES=(
  bazel-bootstrap=7.7.1+ds-8+b1
  bazel-rules-cc=0.0.11-3
  bazel-platforms=0.0.10-4
  bazel-skylib=1.9.1-2
  bazel-rules-java=7.6.5-8
  bazel-rules-proto=6.0.0-2
  bazel-rules-python=0.22.1-3
  bazel-rules-shell=0.4.0-1
  bazel-features=1.11.0-2
  bazel-rules-license=0.0.7-2
  bazel-lib=3.7.2-2
  g++
)
# Bumped when what setup writes into the chroot changes, so that a cached tarball is made again.
LAYOUT=1
STAMP="layout=$LAYOUT ${PACKAGES[*]}"
TARBALL="$CACHE/sid-bazel7.tar"
UNPACKED="$CACHE/root"
# The stub modules (see write_stub_modules), inside the chroot.
STUBS=/usr/local/share/rules_aten_bazel7/modules

log() { echo "bazel7: $*" >&2; }
die() { echo "bazel7: $*" >&2; exit 1; }

# The four modules bazel_tools' MODULE.bazel depends on that Debian does not package (buildozer,
# protobuf, zlib, apple_support): without them every Bzlmod build looks for them in the Bazel
# Central Registry and fails offline. Empty modules stand in, as in Debian's own autopkgtests;
# nothing rules_aten builds uses them.
write_stub_modules() {
  local dir="$1$STUBS" name
  for name in protobuf apple_support zlib buildozer; do
    mkdir -p "$dir/$name"
    echo "module(name = \"$name\")" >"$dir/$name/MODULE.bazel"
    : >"$dir/$name/BUILD.bazel"
  done
  cat >"$dir/zlib/BUILD.bazel" <<'EOF'
cc_library(
    name = "zlib",
    linkopts = ["-lz"],
    visibility = ["//visibility:public"],
)
EOF
  # bazel_tools names the extension for `bazel mod tidy`, which the tests do not run.
  cat >"$dir/buildozer/buildozer_binary.bzl" <<'EOF'
def _impl(rctx):
    rctx.file("BUILD.bazel", "")

_repo = repository_rule(implementation = _impl)

buildozer_binary = module_extension(implementation = lambda mctx: _repo(name = "buildozer_binary"))
EOF
  {
    echo ""
    echo "# rules_aten's Bazel 7 tests: stand-ins for bazel_tools' unpackaged dependencies."
    for name in protobuf apple_support zlib buildozer; do
      echo "common --override_module=$name=$STUBS/$name"
    done
  } >>"$1/etc/bazel/bazelrc"
}

# Mounts for a command in the chroot $1 (called inside the namespace: all of them go with it).
mount_chroot() {
  local r="$1" base_python venv_target
  mount -t proc proc "$r/proc"
  mount --rbind /dev "$r/dev"
  mount -t tmpfs -o size=4g tmpfs "$r/dev/shm"
  # This checkout, read-write, at the same path: its tests write workspaces next to nothing but
  # /tmp, and Bazel writes its bazel-* links and MODULE.bazel.lock here.
  mkdir -p "$r$ROOT"
  mount --bind "$ROOT" "$r$ROOT"
  # RULES_ATEN_BAZEL7_SHARE: a directory of the host's, read-write at the same path (the remote
  # slice's workspaces and output bases, which it builds with the Bazel in here).
  if [[ -n "${RULES_ATEN_BAZEL7_SHARE:-}" ]]; then
    mkdir -p "$r$RULES_ATEN_BAZEL7_SHARE"
    mount --bind "$RULES_ATEN_BAZEL7_SHARE" "$r$RULES_ATEN_BAZEL7_SHARE"
  fi
  # The venv (.venv may be a link to another checkout's) and its base interpreter, read-only.
  venv_target="$(readlink -f "$ROOT/.venv")"
  base_python="$(readlink -f "$venv_target/bin/python")"
  base_python="$(dirname "$(dirname "$base_python")")"
  local dir
  for dir in "$venv_target" "$base_python" "$(readlink -f "$ROOT/node_modules" 2>/dev/null || true)"; do
    [[ -n "$dir" && -d "$dir" && "$dir" != "$ROOT"/* ]] || continue
    mkdir -p "$r$dir"
    mount --bind -o ro "$dir" "$r$dir"
    mount -o remount,bind,ro "$r$dir"
  done
  # pip (for @rules_aten_pip): the host's configuration, CA certificates (over the chroot's: the
  # host's environment names /etc/ssl/certs/ca-certificates.crt in SSL_CERT_FILE,
  # REQUESTS_CA_BUNDLE and PIP_CERT, and this machine's proxy is signed by a CA only the host's
  # bundle has) and local package indexes.
  mkdir -p "$r/etc/ssl/certs" "$r/root/.config"
  mount --bind -o ro /etc/ssl/certs "$r/etc/ssl/certs"
  [[ -f /etc/pip.conf ]] && cp /etc/pip.conf "$r/etc/pip.conf"
  [[ -d "$HOME/.config/pip" ]] && rm -rf "$r/root/.config/pip" && cp -r "$HOME/.config/pip" "$r/root/.config/pip"
  for dir in /opt/wheels /opt/pypi /opt/pypi-more; do
    [[ -d "$dir" ]] || continue
    mkdir -p "$r$dir"
    mount --bind -o ro "$dir" "$r$dir"
  done
  cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}

cmd_setup() {
  mkdir -p "$CACHE"
  # One setup at a time: `./dev test-bazel7` and `./dev test-remote` both make sure of the chroot,
  # and .ci/run runs them side by side. The second waits, then finds it made.
  exec 9>"$CACHE/setup.lock"
  flock 9
  if [[ ! -f "$TARBALL" || "$(cat "$TARBALL.stamp" 2>/dev/null)" != "$STAMP" ]]; then
    make_tarball
  else
    log "skip: $TARBALL matches the pinned packages"
  fi
  if [[ -f "$UNPACKED/.rules_aten_stamp" && "$(cat "$UNPACKED/.rules_aten_stamp")" == "$STAMP" ]]; then
    log "skip: $UNPACKED is unpacked"
    return
  fi
  log "unpacking $TARBALL into $UNPACKED"
  rm -rf "$UNPACKED"
  mkdir -p "$UNPACKED"
  tar -C "$UNPACKED" -xf "$TARBALL"
  echo "$STAMP" >"$UNPACKED/.rules_aten_stamp"
}

make_tarball() {
  local start=$SECONDS build="$CACHE/build.tmp"
  log "debootstrap sid and apt-get install ${PACKAGES[*]}"
  make_debian_root sid "$build" "$CACHE/debootstrap.log" "${PACKAGES[@]}" ||
    die "the chroot could not be made ($CACHE/debootstrap.log), and no usable $TARBALL is cached"
  write_stub_modules "$build"
  tar -C "$build" -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
  echo "$STAMP" >"$TARBALL.stamp"
  # The tree just tarred is the unpacked copy (no second unpacking).
  rm -rf "$UNPACKED"
  echo "$STAMP" >"$build/.rules_aten_stamp"
  mv "$build" "$UNPACKED"
  log "made $TARBALL in $((SECONDS - start)) s"
}

# Inside the namespace: mount, then run the command in the chroot with the host's environment
# (PATH first the chroot's own), in this checkout.
cmd_inside() {
  local r="$UNPACKED"
  mount_chroot "$r"
  cd /
  exec chroot "$r" /usr/bin/env \
    PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
    HOME=/root \
    RULES_ATEN_BAZEL7=1 \
    bash -c 'cd "$0" && exec "$@"' "$ROOT" "$@"
}

cmd_run() {
  [[ -f "$UNPACKED/.rules_aten_stamp" ]] || die "no chroot at $UNPACKED: run devtools/bazel7/chroot.sh setup"
  # (PID namespace: when the command ends, the Bazel servers it started end with it, and with the
  # last process of the namespace its mounts go.)
  unshare --mount --pid --fork --propagation private "$0" inside "$@"
}

case "${1:-}" in
  setup) shift; cmd_setup "$@" ;;
  run) shift; cmd_run "$@" ;;
  inside) shift; cmd_inside "$@" ;;
  *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
