"""The values of --shards that are not bucket counts, shared by the CLI (which parses the flag
without importing the emitters) and atengen.render.shards (which applies them)."""

# --shards=auto: per file set (a dispatch key's registrations, a namespace's schemas), the
# fewest buckets, a power of two, that hold at most AUTO_OPERATORS_PER_BUCKET operators on
# average (so 24 to 48). With the light precompiled header (rules/private/pch.bzl) and the kernel
# signatures compiled apart (aten/kernel_signatures.py), a registration source costs ~0.3 CPU s
# plus ~10 ms per kernel (g++ -std=c++20, no -O): a one-kernel edit recompiles ~0.6-0.9 CPU s per
# key it touches. Smaller buckets would make that little cheaper, and write and compile more
# files for the whole op YAML.
AUTO = "auto"
AUTO_OPERATORS_PER_BUCKET = 48

# The kernel-signature sources (atengen.aten.kernel_signatures): the fewest power-of-two buckets
# of at most this many signatures on average. A signature costs ~60 ms to instantiate (g++, no
# -O), so a bucket compiles in ~1 s (the full precompiled header) plus ~2-4 s; it recompiles only
# when an edit brings or removes a signature of its own.
AUTO_SIGNATURES_PER_BUCKET = 64
