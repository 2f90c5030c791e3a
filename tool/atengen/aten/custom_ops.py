"""Custom operator namespaces: schema definitions and kernel declaration headers.

For ``aten`` the installed torch already defines every schema and declares
every kernel in ``ATen/ops/<root>_native.h``. A custom namespace gets both from
us: ``RegisterSchema_<shard>.cpp`` with ``TORCH_LIBRARY_FRAGMENT`` definitions
(fragments, so each shard defines only its own operators; through the light
``ATENGEN_LIBRARY_FRAGMENT``, whose torch/library.h code the kernel-signature
sources compile, see kernel_signatures.py), and
``<ns>/ops/<root>_native.h`` declaring the kernels its authors implement (for
structured ops: the impl classes, and ``<ns>/ops/<root>_meta.h`` the meta class and
the ``<NS>_META_FUNC``/``<NS>_IMPL_FUNC`` macros, see api/structured.py). The
registration shards declare the kernels they call themselves rather than
include these headers: build systems that track a generated header directory
as one input would otherwise recompile every shard when any header changes.
"""

from __future__ import annotations

import json

from atengen.api.declarations import dispatch_kernel_declaration
from atengen.api.structured import (
    impl_class_declaration,
    macro_prefix,
    meta_class_declaration,
    needs_tensor_iterator,
)
from atengen.errors import AtengenError
from atengen.facts import torch_facts
from atengen.facts.wheel_facts import WheelFacts
from atengen.model.functionalization import is_generated_view_copy
from atengen.model.groups import NativeFunctionsGroup
from atengen.model.native_function import NativeFunction, root_name
from atengen.model.operator_model import OperatorModel
from atengen.model.schema_names import CPP_KEYWORDS
from atengen.model.schema_types import ListType, OptionalType
from atengen.render.output import GeneratedFile
from atengen.render.shards import ShardSetting
from atengen.render.templates import Templates


def check_supported(functions: list[NativeFunction], wheel: WheelFacts | None = None) -> None:
    """Refuses what the target torch (`wheel`'s release; None: every supported one) cannot take:
    ufunc kernels outside aten, and schema types its runtime parser does not know."""
    release = wheel.facts_release if wheel is not None else None
    for f in functions:
        problem = _argument_no_kernel_takes(f) if f.namespace != "aten" else None
        if problem is not None:
            raise AtengenError(f.loc, problem)
        if f.namespace != "aten" and f.ufunc_inner_loop:
            # ufunc kernels are generated from ATen's own ufunc headers
            raise AtengenError(
                f.loc, f"ufunc_inner_loop is only supported in the aten namespace: '{f.name}'"
            )
        for name, releases in torch_facts.SCHEMA_TYPES_OF_RELEASES.items():
            if name in f.func.text and release not in releases and _uses_type(f, name):
                known = f"only the schema parser of torch {' and '.join(releases)} knows"
                raise AtengenError(
                    f.loc,
                    f"'{f.name}' uses type '{name}', which {known}, not torch {wheel.version}'s"
                    if wheel is not None
                    else f"'{f.name}' uses type '{name}', which {known}; without --torch_facts "
                    "of such a wheel, the sources must load into every supported release",
                )


def _argument_no_kernel_takes(f: NativeFunction) -> str | None:
    """Why an ABI-bound kernel cannot take one of a custom op's arguments, or None. The kernels
    take the schema's argument names as their parameters' (stable mode renames keywords)."""
    for a in f.func.arguments.flat_all:
        if a.name in CPP_KEYWORDS:
            return (
                f"argument '{a.name}' of '{f.name}' is a C++ keyword, which the kernel's "
                "parameter cannot be named; rename it in the schema (or build with "
                'aten_codegen(abi = "stable"), which renames it)'
            )
        if _is_nested_list(a.type):
            return (
                f"argument '{a.name}' of '{f.name}' is a list of lists ('{a.type}'), which the "
                "dispatcher cannot hand a C++ kernel; pass it flattened (with its lengths), or "
                "register this op from Python"
            )
    return None


def _is_nested_list(t: object) -> bool:
    """`int[][]`, `str[]?[]`: a list whose elements are lists (optional or not)."""
    while isinstance(t, OptionalType):
        t = t.elem
    if not isinstance(t, ListType):
        return False
    elem = t.elem.elem if isinstance(t.elem, OptionalType) else t.elem
    return isinstance(elem, ListType)


def _uses_type(f: NativeFunction, name: str) -> bool:
    def named(t: object) -> bool:
        inner = getattr(t, "elem", None)
        return named(inner) if inner is not None else getattr(t, "name", None) == name

    return any(named(a.type) for a in f.func.arguments.flat_all) or any(
        named(r.type) for r in f.func.returns
    )


def schema_files(
    functions: list[NativeFunction],
    sharding: ShardSetting,
    templates: Templates,
    c10_tags: frozenset[str] = torch_facts.C10_TAGS,
) -> list[GeneratedFile]:
    files = []
    for (ns, shard), fns in sharding.group(f for f in functions if f.namespace != "aten"):
        text = templates.render(
            "register_schema.cpp.j2",
            namespace=ns,
            roots=sorted({root_name(f) for f in fns}),
            # json.dumps gives a valid C++ string literal for these ASCII schemas.
            schemas=[_schema_def(f, c10_tags) for f in fns],
        )
        files.append(GeneratedFile(f"RegisterSchema_{ns}_{shard}.cpp", text))
    return files


def defines_with_tags(
    functions: list[NativeFunction], c10_tags: frozenset[str] = torch_facts.C10_TAGS
) -> bool:
    """Whether a schema source defines one of `functions` with tags (through torch/library.h,
    which the kernel-signature sources then include: see kernel_signatures.py)."""
    return any(_c10_tags(f, c10_tags) for f in functions if f.namespace != "aten")


def _c10_tags(f: NativeFunction, c10_tags: frozenset[str]) -> list[str]:
    return sorted(t for t in f.tags if t in c10_tags)


def _schema_def(f: NativeFunction, c10_tags: frozenset[str]) -> str:
    schema = json.dumps(f"{f.namespace}::{f.registered_schema}")
    tags = _c10_tags(f, c10_tags)
    if not tags:
        return schema
    return f"{schema}, {{{', '.join(f'at::Tag::{t}' for t in tags)}}}"


def native_headers(
    model: OperatorModel, functions: list[NativeFunction], templates: Templates
) -> list[GeneratedFile]:
    """`<ns>/ops/<root>_native.h` for each custom-namespace root with kernels to implement."""
    decls: dict[tuple[str, str], dict[str, set[str]]] = {}
    metas: dict[tuple[str, str], list[NativeFunctionsGroup]] = {}
    for f in functions:
        if f.namespace == "aten" or f.generated:
            continue
        group = model.group_of.get(id(f))
        if f.structured and group is not None:
            metas.setdefault((f.namespace, root_name(f)), []).append(group)
        for key, meta in f.dispatch.items():
            if key == "CompositeExplicitAutogradNonFunctional" and is_generated_view_copy(
                f, model.view_group_of.get(id(f))
            ):
                continue  # we generate the view_copy kernel
            decl = (
                impl_class_declaration(group, key)
                if meta.structured and group is not None
                else dispatch_kernel_declaration(f, key)
            )
            ns_decls = decls.setdefault((f.namespace, root_name(f)), {})
            ns_decls.setdefault(meta.cpp_namespace, set()).add(decl)
    files = []
    for ns, root in sorted(decls.keys() | metas.keys()):
        groups = metas.get((ns, root), [])
        meta_header = f"{ns}/ops/{root}_meta.h"
        if groups:
            text = templates.render(
                "custom_meta.h.j2",
                namespace=ns,
                root=root,
                prefix=macro_prefix(ns),
                tensor_iterator=any(needs_tensor_iterator(g) for g in groups),
                classes=[meta_class_declaration(g, templates) for g in groups],
            )
            files.append(GeneratedFile(meta_header, text))
        by_ns = decls.get((ns, root), {})
        text = templates.render(
            "custom_native.h.j2",
            namespace=ns,
            root=root,
            meta_header=meta_header if groups else "",
            by_namespace=[(cpp_ns, sorted(ds)) for cpp_ns, ds in sorted(by_ns.items())],
        )
        files.append(GeneratedFile(f"{ns}/ops/{root}_native.h", text))
    return files
