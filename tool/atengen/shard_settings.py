"""The values of --shards that are not bucket counts, shared by the CLI (which parses the flag
without importing the emitters) and atengen.emit.shards (which applies them)."""

# --shards=auto: per file set (a dispatch key's registrations, a namespace's schemas), the
# fewest buckets, a power of two, that hold at most AUTO_OPERATORS_PER_BUCKET operators on
# average (so 16 to 32). With the precompiled header (rules/private/pch.bzl) and the kernel
# signatures instantiated elsewhere (emit/kernel_signatures.py), a registration source costs
# ~1.0 CPU s plus ~10 ms per kernel (g++ -std=c++20, no -O): a one-kernel edit recompiles
# ~1.2-1.5 CPU s per key it touches, and the whole op YAML's sources cost about torchgen's few
# large ones. Fewer operators per source would pay the 1.0 s more often for little gain.
AUTO = "auto"
AUTO_OPERATORS_PER_BUCKET = 32

# The kernel-signature sources (atengen.emit.kernel_signatures): the fewest power-of-two buckets
# of at most this many signatures on average. A signature costs ~60 ms to instantiate (g++, no
# -O), so a bucket compiles in ~1 s (the precompiled header) plus ~1-2 s; it recompiles only when
# an edit brings or removes a signature of its own.
AUTO_SIGNATURES_PER_BUCKET = 32
