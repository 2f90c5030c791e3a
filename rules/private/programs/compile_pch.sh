#!/bin/bash
# Usage: compile_pch.sh COMPILER GCH STAMP HEADER TEXT PLAN KIND COMPILER_ARGS...
# The action of aten_pch (pch.bzl): writes HEADER, the header to precompile, and compiles it into
# GCH with COMPILER_ARGS (a C++ compile's command line, "-x c++-header" among them), then writes
# STAMP, a comment with GCH's SHA-256 that the sources include after it.
# HEADER is TEXT when the plan says that KIND pays (PLAN lists it), else empty: an empty
# precompiled header is made in a tenth of a second, and the sources, which include their own
# headers after it, parse them as if there were none.
set -eu
compiler="$1" gch="$2" stamp="$3" header="$4" text="$5" plan="$6" kind="$7"
shift 7
if grep -qx "$kind" "$plan"; then
  cp "$text" "$header"
else
  : >"$header"
fi
"$compiler" "$@"
digest=$(sha256sum "$gch")
echo "// ${digest%% *}" >"$stamp"
