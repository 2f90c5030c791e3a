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


@dataclass(frozen=True)
class Sharding:
    """``buckets == 0``: one shard per operator. Otherwise a fixed number of
    buckets chosen by a stable hash of the operator name (crc32, not Python's
    salted hash), so bucket contents do not depend on which other ops exist."""

    buckets: int = 0

    def shard_of(self, root: str) -> str:
        if self.buckets == 0:
            return root
        return self._bucket_name(zlib.crc32(root.encode()) % self.buckets)

    def _bucket_name(self, i: int) -> str:
        # Zero-padded so that files sort in bucket order.
        return f"b{i:0{len(str(self.buckets - 1))}d}"

    def group(
        self, functions: Iterable[NativeFunction]
    ) -> list[tuple[tuple[str, str], list[NativeFunction]]]:
        """((namespace, shard), functions) pairs: shards in order, functions by name within."""
        by_shard: dict[tuple[str, str], list[NativeFunction]] = {}
        for f in functions:
            by_shard.setdefault((f.namespace, self.shard_of(root_name(f))), []).append(f)
        return [(k, sorted(fns, key=lambda f: str(f.name))) for k, fns in sorted(by_shard.items())]
