"""Sources that instantiate, once per C++ signature, the code that registers a kernel.

Registering a kernel (``m.impl(name, fn)``) instantiates torch's boxing and
schema-inference templates for the kernel's C++ function type; at -O0 that is
most of a registration source's compile time (~60 ms per kernel), paid again in
every source for every kernel, although the whole op YAML has about a thousand
distinct signatures for four thousand registrations. So the registration
sources register through ``ATENGEN_LIBRARY_IMPL``, whose
``atengen::LibraryRef::impl<Signature>`` ``atengen/runtime.h`` only declares,
and the files written here instantiate it (explicit instantiation definitions,
from ``atengen/kernel_signatures.h``) once per signature: a registration source
then compiles in a fraction of the time, and editing an operator recompiles its
own shard and, only when it brings a signature no other operator has, one of
these. The schema sources' ``ATENGEN_LIBRARY_FRAGMENT`` is compiled here too
(``LibraryRef::def``, ``LibraryFragmentT``, in every one of these files), so a
library with schemas gets one of these even when it registers no kernel.

A signature goes to a bucket by a stable hash of its text, so a file depends
only on the signatures in it; the bucket count is the fewest power of two that
holds at most AUTO_SIGNATURES_PER_BUCKET signatures on average.
"""

from __future__ import annotations

from collections.abc import Iterable

from atengen.render.output import GeneratedFile
from atengen.render.shards import AUTO_SIGNATURES_PER_BUCKET, Sharding, auto_bucket_count
from atengen.render.templates import Templates

_PREFIX = "KernelSignatures_"


def is_signature_file(f: GeneratedFile) -> bool:
    """Whether `f` is one of the files written here."""
    return f.path.startswith(_PREFIX)


def signature_files(
    signatures: Iterable[str], cuda: bool, templates: Templates, required: bool = False
) -> list[GeneratedFile]:
    """`KernelSignatures_b<i>.cpp` files instantiating LibraryRef::impl for `signatures`
    (for the CUDA library's tree when `cuda`). None for no signatures, unless `required`:
    then one without signatures, for the library's other weak symbols (LibraryRef::def and
    LibraryFragmentT, that its schema sources need)."""
    unique = sorted(set(signatures))
    sharding = Sharding(auto_bucket_count(len(unique), AUTO_SIGNATURES_PER_BUCKET))
    by_bucket: dict[str, list[str]] = {}
    for s in unique:
        by_bucket.setdefault(sharding.shard_of(s), []).append(s)
    if required and not by_bucket:
        by_bucket[sharding.shard_of("")] = []
    return [
        GeneratedFile(
            f"{_PREFIX}{bucket}.cpp",
            templates.render("kernel_signatures.cpp.j2", signatures=sigs),
            cuda,
        )
        for bucket, sigs in sorted(by_bucket.items())
    ]
