# Making a Debian root file system with debootstrap and apt, for the scripts of devtools/ that need
# a distribution this machine does not run (sourced, not run). Needs root.
#
#   debian_mirror                         the Debian mirror this machine's apt uses
#   make_debian_root SUITE DIR LOG PKG..  debootstrap --variant=minbase SUITE into DIR, then
#                                         apt-get install PKG.. in it; the output goes to LOG and
#                                         a failure returns 1 after one line on stderr

# The Debian mirror this machine's apt uses (a suite on it is what debootstrap fetches).
debian_mirror() {
  local uri
  uri="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* |
    grep -oE 'https?://[^ ]*/debian/?' | grep -v security | head -n1 || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

ensure_debootstrap() {
  command -v debootstrap >/dev/null 2>&1 && return 0
  # (dev's apt lock file: .ci/run sets up several slices at the same time)
  DEBIAN_FRONTEND=noninteractive flock "${TMPDIR:-/tmp}/rules_aten-apt.lock" \
    apt-get -o DPkg::Lock::Timeout=900 install -y -qq debootstrap >/dev/null 2>&1
}

make_debian_root() {
  local suite="$1" dir="$2" log="$3" mirror
  shift 3
  mirror="$(debian_mirror)"
  if ! ensure_debootstrap; then
    echo "cannot install debootstrap" >&2
    return 1
  fi
  rm -rf "$dir"
  if ! debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$log" 2>&1; then
    echo "debootstrap of $suite from $mirror failed ($log)" >&2
    return 1
  fi
  # A Release file is valid for a week; a machine whose clock or mirror snapshot is older reads
  # it as expired.
  echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99rules-aten"
  if ! unshare --mount --pid --fork --propagation private bash -c '
      set -e
      mount -t proc proc "$0/proc"
      mount --rbind /dev "$0/dev"
      cp /etc/resolv.conf "$0/etc/resolv.conf" 2>/dev/null || true
      chroot "$0" apt-get update -qq
      DEBIAN_FRONTEND=noninteractive chroot "$0" apt-get install -y -qq --no-install-recommends "$@"
      chroot "$0" apt-get clean' "$dir" "$@" >>"$log" 2>&1; then
    echo "apt-get install in $suite failed ($(grep -m1 -E '^E:' "$log" || tail -n1 "$log"))" >&2
    return 1
  fi
}
