#!/bin/bash
# Usage: pch_plan.sh PLAN TREE...
# Writes PLAN: the kinds of precompiled header (pch.bzl) that pay for themselves over the
# generated sources in the TREEs, one per line. A source asks for its kind on its first line
# (`#ifdef ATENGEN_PCH_FULL`); a kind pays from about as many sources as it costs compiles:
# making the full one costs about 3 of its sources' compiles without it, and saves 0.6 of one per
# source; the light one 4 and 0.5. Its bytes change only when a kind crosses its threshold, so a
# regeneration does not rebuild the headers.
set -eu
plan="$1"
shift
full=$(grep -Rhx '#ifdef ATENGEN_PCH_FULL' "$@" | wc -l)
light=$(grep -Rhx '#ifdef ATENGEN_PCH_LIGHT' "$@" | wc -l)
{
  if [ "$full" -ge 6 ]; then echo full; fi
  if [ "$light" -ge 8 ]; then echo light; fi
} >"$plan"
