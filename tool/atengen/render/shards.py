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
from atengen.shard_settings import AUTO, AUTO_OPERATORS_PER_BUCKET


def auto_bucket_count(count: int, per_bucket: int) -> int:
    """The fewest buckets, a power of two, that hold at most `per_bucket` of `count` on average."""
    buckets = 1
    while count > buckets * per_bucket:
        buckets *= 2
    return buckets


@dataclass(frozen=True)
class Sharding:
    """``buckets == 0``: one shard per operator. Otherwise a fixed number of
    buckets chosen by a stable hash of the operator name (crc32, not Python's
    salted hash), so bucket contents do not depend on which other ops exist.

    ``auto``: the bucket count of each file set (a dispatch key's registrations, a namespace's
    schemas) is the smallest power of two that puts at most AUTO_OPERATORS_PER_BUCKET of its
    operators in a bucket on average. An operator stays in its bucket while the count stays,
    which is until the set's size crosses a power of two (then that key's buckets are redrawn
    once).
    """

    buckets: int = 0
    auto: bool = False

    @staticmethod
    def of(shards: int | str) -> Sharding:
        """The sharding a --shards value names: ``"auto"``, or a bucket count (0: per operator)."""
        return Sharding(auto=True) if shards == AUTO else Sharding(int(shards))

    def for_operators(self, count: int) -> Sharding:
        """The fixed sharding of a file set of ``count`` operators."""
        if not self.auto:
            return self
        return Sharding(auto_bucket_count(count, AUTO_OPERATORS_PER_BUCKET))

    def shard_of(self, root: str) -> str:
        """The shard of an operator root (or of any stable name, such as a signature)."""
        if self.auto:
            raise ValueError("an automatic sharding is resolved with for_operators() first")
        if self.buckets == 0:
            return root
        return self._bucket_name(zlib.crc32(root.encode()) % self.buckets)

    def _bucket_name(self, i: int) -> str:
        # Zero-padded so that files sort in bucket order.
        return f"b{i:0{len(str(self.buckets - 1))}d}"

    def group(
        self, functions: Iterable[NativeFunction]
    ) -> list[tuple[tuple[str, str], list[NativeFunction]]]:
        """((namespace, shard), functions) pairs: shards in order, functions by name within.
        With ``auto``, the bucket count is that of the functions' operators (all namespaces)."""
        functions = list(functions)
        sharding = self.for_operators(len({(f.namespace, root_name(f)) for f in functions}))
        by_shard: dict[tuple[str, str], list[NativeFunction]] = {}
        for f in functions:
            by_shard.setdefault((f.namespace, sharding.shard_of(root_name(f))), []).append(f)
        return [(k, sorted(fns, key=lambda f: str(f.name))) for k, fns in sorted(by_shard.items())]
