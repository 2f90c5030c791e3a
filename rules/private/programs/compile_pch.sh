#!/bin/bash
# Usage: compile_pch.sh PLAN [KIND GCH STAMP HEADER TEXT COUNT COMPILER COMPILER_ARGS...]...
# The action of aten_pch (pch.bzl), for each KIND side by side: writes HEADER, the header to
# precompile, and compiles it into GCH with COMPILER and its arguments (COUNT words in all: a C++
# compile's command line, "-x c++-header" among them), then writes STAMP, a comment with GCH's
# SHA-256 that the sources include after it.
# HEADER is TEXT when the plan says that KIND pays (PLAN lists it), else empty: an empty
# precompiled header is made in a tenth of a second, and the sources, which include their own
# headers after it, parse them as if there were none.
set -eu
plan="$1"
shift
stamps=()
gchs=()
pids=()
while [ "$#" -gt 0 ]; do
  kind="$1" gch="$2" stamp="$3" header="$4" text="$5" count="$6"
  shift 6
  if grep -qx "$kind" "$plan"; then
    cp "$text" "$header"
  else
    : >"$header"
  fi
  "${@:1:$count}" &
  pids+=("$!")
  gchs+=("$gch")
  stamps+=("$stamp")
  shift "$count"
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=$?
done
[ "$status" -eq 0 ] || exit "$status"
for i in "${!gchs[@]}"; do
  digest=$(sha256sum "${gchs[$i]}")
  echo "// ${digest%% *}" >"${stamps[$i]}"
done
