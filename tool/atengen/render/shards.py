"""Which shard file an operator's kernels go to.

An operator is identified by its root name (``add`` for add.Tensor, add_.Tensor
and add.out; ``and`` for __and__), the same unit as the wheel's per-operator
headers ``ATen/ops/<root>_native.h``. A shard depends only on the operators in
it, so adding, removing or editing one operator changes one shard per key.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from atengen.model.native_function import NativeFunction, root_name

# `auto`: per file set (a dispatch key's registrations, a namespace's schemas), the fewest
# buckets, a power of two, that hold at most AUTO_OPERATORS_PER_BUCKET operators on average (so
# 24 to 48). With the light precompiled header (rules/private/rules/pch.bzl) and the kernel signatures
# compiled apart (aten/kernel_signatures.py), a registration source costs ~0.3 CPU s plus ~10 ms
# per kernel (g++ -std=c++20, no -O): a one-kernel edit recompiles ~0.6-0.9 CPU s per key it
# touches. Smaller buckets would make that little cheaper, and write and compile more files for
# the whole op YAML.
AUTO = "auto"
AUTO_OPERATORS_PER_BUCKET = 48

# The kernel-signature sources (aten/kernel_signatures.py): the fewest power-of-two buckets of at
# most this many signatures on average. A signature costs ~60 ms to instantiate (g++, no -O), so
# a bucket compiles in ~1 s (the full precompiled header) plus ~2-4 s; it recompiles only when an
# edit brings or removes a signature of its own.
AUTO_SIGNATURES_PER_BUCKET = 64


def auto_bucket_count(count: int, per_bucket: int) -> int:
    """The fewest buckets, a power of two, that hold at most `per_bucket` of `count` on average."""
    buckets = 1
    while count > buckets * per_bucket:
        buckets *= 2
    return buckets


@dataclass(frozen=True)
class Sharding:
    """A resolved sharding. ``buckets == 0``: one shard per operator. Otherwise a fixed number
    of buckets chosen by a stable hash of the operator name (crc32, not Python's salted hash),
    so bucket contents do not depend on which other ops exist."""

    buckets: int

    def shard_of(self, root: str) -> str:
        """The shard of an operator root (or of any stable name, such as a signature)."""
        if self.buckets == 0:
            return root
        return self._bucket_name(zlib.crc32(root.encode()) % self.buckets)

    def _bucket_name(self, i: int) -> str:
        # Zero-padded so that files sort in bucket order.
        return f"b{i:0{len(str(self.buckets - 1))}d}"


@dataclass(frozen=True)
class ShardSetting:
    """What ``--shards`` and the rules' ``shards`` attribute ask for: ``auto``, or a bucket count
    (0: one shard per operator). ``resolve`` turns it into the Sharding of one file set.

    ``auto``: the bucket count of each file set is the smallest power of two that puts at most
    AUTO_OPERATORS_PER_BUCKET of its operators in a bucket on average. An operator stays in its
    bucket while the count stays, which is until the set's size crosses a power of two (then
    that set's buckets are redrawn once).
    """

    count: int | None  # None: auto

    @staticmethod
    def parse(text: str) -> ShardSetting:
        """``auto`` or a non-negative decimal count; ValueError (with the reason) otherwise."""
        if text == AUTO:
            return ShardSetting(None)
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"not {AUTO} or an integer: {text!r}") from None
        if value < 0:
            raise ValueError(f"must be {AUTO} or 0 or more, got {value}")
        return ShardSetting(value)

    @staticmethod
    def fixed(buckets: int) -> ShardSetting:
        return ShardSetting(buckets)

    @property
    def auto(self) -> bool:
        return self.count is None

    def __str__(self) -> str:
        return AUTO if self.count is None else str(self.count)

    def resolve(self, operators: int) -> Sharding:
        """The sharding of a file set of ``operators`` operators."""
        if self.count is not None:
            return Sharding(self.count)
        return Sharding(auto_bucket_count(operators, AUTO_OPERATORS_PER_BUCKET))

    def group(
        self, functions: Iterable[NativeFunction]
    ) -> list[tuple[tuple[str, str], list[NativeFunction]]]:
        """((namespace, shard), functions) pairs: shards in order, functions by name within.
        The functions are one file set: with ``auto``, the bucket count is that of their
        operators (all namespaces)."""
        functions = list(functions)
        sharding = self.resolve(len({(f.namespace, root_name(f)) for f in functions}))
        by_shard: dict[tuple[str, str], list[NativeFunction]] = {}
        for f in functions:
            by_shard.setdefault((f.namespace, sharding.shard_of(root_name(f))), []).append(f)
        return [(k, sorted(fns, key=lambda f: str(f.name))) for k, fns in sorted(by_shard.items())]
