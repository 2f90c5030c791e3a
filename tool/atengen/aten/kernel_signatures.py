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

A custom operator whose schema types torch's C shim carries in every supported
release (registers_boxed) has its kernels registered boxed, through the shim
(``m.impl_boxed``): its signature's code here is atengen::call_boxed, which
needs ATen/core/Tensor.h and torch's stable conversions, not torch/library.h
(4 s of a small library's 5 s source; atengen/library.h says what it costs a
call). A file includes torch/library.h only for the typed signatures it
instantiates, and, on the CPU side, for schema definitions with tags, which
not every release's shim takes, and for the library objects of the keys the
shim cannot name.

A signature goes to a bucket by a stable hash of its text, so a file depends
only on the signatures in it; the bucket count is the fewest power of two that
holds at most AUTO_SIGNATURES_PER_BUCKET signatures on average.
"""

from __future__ import annotations

from collections.abc import Iterable

from atengen.model.native_function import NativeFunction
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type
from atengen.render.output import GeneratedFile
from atengen.render.shards import AUTO_SIGNATURES_PER_BUCKET, Sharding, auto_bucket_count
from atengen.render.templates import Templates

_PREFIX = "KernelSignatures_"


# The schema types atengen/boxed_kernels.h converts, in their C++ spellings of
# api/cpp_types.py: as arguments, base types, the optionals of some and lists (any size) of
# some; as results, base types and lists of tensors.
# SymInt is not among them: its kernels take c10::SymInt, which the shim cannot carry.
_BOXED_BASES = frozenset({"Tensor", "int", "float", "bool", "str", "ScalarType"})
_BOXED_OPTIONALS = frozenset({"Tensor", "int", "float", "bool", "ScalarType"})
_BOXED_LISTS = frozenset({"Tensor", "int", "float"})
_BOXED_RESULTS = frozenset({"Tensor", "int", "float", "bool"})
_BOXED_RESULT_LISTS = frozenset({"Tensor"})


def registers_boxed(f: NativeFunction) -> bool:
    """Whether `f`'s kernels are registered boxed: an operator of a custom namespace (aten's
    have C++ callers, whose typed calls would box their arguments) whose argument and result
    types atengen/boxed_kernels.h converts."""
    return (
        f.namespace != "aten"
        and all(_boxed_argument(a.type) for a in f.func.arguments.flat_all)
        and all(_boxed_result(r.type) for r in f.func.returns)
    )


def _named(t: Type, names: frozenset[str]) -> bool:
    return isinstance(t, BaseType) and t.name in names


def _boxed_argument(t: Type) -> bool:
    if isinstance(t, OptionalType):
        return _named(t.elem, _BOXED_OPTIONALS)
    if isinstance(t, ListType):
        return _named(t.elem, _BOXED_LISTS)
    return _named(t, _BOXED_BASES)


def _boxed_result(t: Type) -> bool:
    if isinstance(t, ListType):
        return _named(t.elem, _BOXED_RESULT_LISTS)
    return _named(t, _BOXED_RESULTS)


def is_signature_file(f: GeneratedFile) -> bool:
    """Whether `f` is one of the files written here."""
    return f.path.startswith(_PREFIX)


def signature_files(
    typed: Iterable[str],
    boxed: Iterable[str],
    cuda: bool,
    templates: Templates,
    required: bool = False,
    tagged: bool = False,
    typed_library: bool = False,
) -> list[GeneratedFile]:
    """`KernelSignatures_b<i>.cpp` files instantiating LibraryRef::impl for the `typed`
    signatures and atengen::call_boxed for the `boxed` ones (for the CUDA library's tree when
    `cuda`). None for no signatures, unless `required`: then one without signatures, for the
    library's other weak symbols (LibraryRef::def and LibraryFragmentT, that its schema sources
    need). `tagged`: the schema sources define operators with tags; `typed_library`: a
    registration source registers under a key torch's C shim cannot name (TypedLibraryImplT).
    Either makes every file include torch/library.h, as a typed signature makes its own."""
    unique = sorted({(s, False) for s in typed} | {(s, True) for s in boxed})
    sharding = Sharding(auto_bucket_count(len(unique), AUTO_SIGNATURES_PER_BUCKET))
    by_bucket: dict[str, list[tuple[str, bool]]] = {}
    for s, is_boxed in unique:
        by_bucket.setdefault(sharding.shard_of(s), []).append((s, is_boxed))
    if required and not by_bucket:
        by_bucket[sharding.shard_of("")] = []
    return [
        GeneratedFile(
            f"{_PREFIX}{bucket}.cpp",
            templates.render(
                "kernel_signatures.cpp.j2",
                signatures=[s for s, is_boxed in sigs if not is_boxed],
                boxed=[s for s, is_boxed in sigs if is_boxed],
                tagged=tagged,
                typed_library=typed_library,
            ),
            cuda,
        )
        for bucket, sigs in sorted(by_bucket.items())
    ]
