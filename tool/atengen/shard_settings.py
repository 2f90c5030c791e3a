"""The values of --shards that are not bucket counts, shared by the CLI (which parses the flag
without importing the emitters) and atengen.emit.shards (which applies them)."""

# --shards=auto: per file set (a dispatch key's registrations, a namespace's schemas), the
# fewest buckets, a power of two, that hold at most AUTO_OPERATORS_PER_BUCKET operators on
# average (so 24 to 48). With the precompiled header (rules/private/pch.bzl) a source costs
# ~1.2 CPU s plus ~0.085 s and ~6 MB per operator (g++ -std=c++20, no -O). 48 is where the whole
# op YAML compiles in about the CPU time of torchgen's few large sources (fewer operators per
# source would pay the 1.2 s more often) and its largest source, a Meta bucket, peaks at
# ~850 MB (more would pass 1 GB). A one-operator edit recompiles ~4-6 CPU s per key it touches;
# `--shards=0` makes that ~1.3 s.
AUTO = "auto"
AUTO_OPERATORS_PER_BUCKET = 48

# The kernel-signature sources (atengen.emit.kernel_signatures): the fewest power-of-two buckets
# of at most this many signatures on average. A signature costs ~60 ms to instantiate (g++, no
# -O), so a bucket compiles in ~1 s (the precompiled header) plus ~1-2 s; it recompiles only when
# an edit brings or removes a signature of its own.
AUTO_SIGNATURES_PER_BUCKET = 32
