#!/usr/bin/env bash
# The remote-execution slice's worker image: a root file system of another distribution than this
# machine's, with BuildGrid's stock worker suite, buildbox, from Debian's packages.
#
#   devtools/remote/worker_image.sh setup    make it once (IMAGE below); again when PACKAGES change
#   devtools/remote/worker_image.sh path     print the image's directory
#
# IMAGE/ is Debian sid (minbase) with buildbox (buildbox-casd, buildbox-worker and
# buildbox-run-bubblewrap) and sid's g++. The workers run in it (tests/remote/engine.py enters it
# with pivot_root, in network and mount namespaces of their own). Actions never see it: each runs
# under buildbox-run-bubblewrap in a toolchain tree, which is what a build's C++ toolchain names:
#
#   IMAGE/                            the toolchain of a client on Debian sid (Bazel 7.7.1 in
#                                     devtools/bazel7/chroot.sh): gcc 16
#   IMAGE/opt/toolchains/bookworm/    the toolchain of a client on Debian 12 (this machine's
#                                     Bazel 4.2.3): Debian bookworm (minbase) with g++-12
#
# Neither holds a Python interpreter: the build declares its own.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=devtools/lib/debian_root.sh
source "$ROOT/devtools/lib/debian_root.sh"
CACHE="${RULES_ATEN_REMOTE_WORKER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rules_aten/remote-worker}"
IMAGE="$CACHE/image"
# sid's versions when this was written: `apt-get install pkg=version` refuses others, so a sid
# that has moved on fails the set-up with one line instead of testing another worker.
PACKAGES=(buildbox=1.4.30+dfsg-1+b1 g++-16 binutils)
# The compiler of this machine's autoconfigured toolchain (@local_config_cc names gcc 12's paths).
BOOKWORM_PACKAGES=(g++-12 binutils)
LAYOUT=1
STAMP="layout=$LAYOUT ${PACKAGES[*]} bookworm: ${BOOKWORM_PACKAGES[*]}"

log() { echo "remote worker image: $*" >&2; }
die() { echo "remote worker image: $*" >&2; exit 1; }

# /usr/bin/gcc and friends: minbase has no `gcc` and `g++` links (the gcc and g++ packages make
# them), and Bazel's autoconfigured toolchain runs /usr/bin/gcc.
link_compiler() {
  local dir="$1" version="$2" tool
  for tool in gcc g++ cpp gcc-ar gcc-nm gcc-ranlib; do
    [[ -e "$dir/usr/bin/$tool-$version" ]] || continue
    ln -sfn "$tool-$version" "$dir/usr/bin/$tool"
  done
  ln -sfn gcc "$dir/usr/bin/cc"
  ln -sfn g++ "$dir/usr/bin/c++"
}

cmd_setup() {
  if [[ "$(cat "$IMAGE/.rules_aten_stamp" 2>/dev/null)" == "$STAMP" ]]; then
    log "skip: $IMAGE matches the pinned packages"
    return
  fi
  local start=$SECONDS build="$CACHE/image.tmp"
  mkdir -p "$CACHE"
  log "debootstrap sid and apt-get install ${PACKAGES[*]}"
  make_debian_root sid "$build" "$CACHE/sid.log" "${PACKAGES[@]}" ||
    die "the worker image could not be made; see $CACHE/sid.log"
  link_compiler "$build" 16
  log "debootstrap bookworm and apt-get install ${BOOKWORM_PACKAGES[*]}"
  make_debian_root bookworm "$build/opt/toolchains/bookworm" "$CACHE/bookworm.log" \
    "${BOOKWORM_PACKAGES[@]}" || die "the bookworm toolchain could not be made; see $CACHE/bookworm.log"
  link_compiler "$build/opt/toolchains/bookworm" 12
  if find "$build" -name 'python3*' -path '*/bin/*' | grep -q .; then
    die "the image holds a Python interpreter: $(find "$build" -name 'python3*' -path '*/bin/*' | head -n1)"
  fi
  # Mount points of the worker host (tests/remote/buildbox_worker.sh): its writable directory,
  # and the directory of its runner script.
  mkdir -p "$build/var/lib/rules_aten" "$build/opt/rules_aten"
  echo "$STAMP" >"$build/.rules_aten_stamp"
  rm -rf "$IMAGE"
  mv "$build" "$IMAGE"
  log "made $IMAGE in $((SECONDS - start)) s ($(du -sh "$IMAGE" | cut -f1))"
}

case "${1:-}" in
  setup) cmd_setup ;;
  path) echo "$IMAGE" ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
