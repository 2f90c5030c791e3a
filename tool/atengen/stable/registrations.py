"""A custom namespace's operators registered through the stable ABI.

- ``StableSchema_<ns>_<shard>.cpp``: ``STABLE_TORCH_LIBRARY_FRAGMENT`` defining every schema of
  the shard, autogen'd variants included (as aten/custom_ops.py's schema files do);
- ``RegisterStable<Key>_<ns>_<shard>.cpp``: per dispatch key of the op YAML,
  ``STABLE_TORCH_LIBRARY_IMPL`` registering each kernel boxed by ``TORCH_BOX``;
- ``<ns>/ops/<root>_native.h``: the kernels, declared in stable types (see types.py), for their
  authors to implement.

Sharding is `generate`'s (render/shards.py): one file set per key and one for the schemas.

Kernels live in the C++ namespace the op YAML gives them, except that an unqualified kernel
(which `generate` puts in ``at::native``) lives in the operator's own namespace: a stable-ABI
library defines nothing in torch's namespaces. Like the registration shards of `generate`, each
source declares the kernels it registers instead of including the headers.

Not generated, because each needs torch's unstable C++ API: kernels of autogen'd variants (their
schemas are defined, and a warning names each), structured kernels and ufunc loops (errors),
functionalization and autograd kernels. Schemas are defined without tags: ``def`` with tags
exists only from torch 2.12, and then only for the tags its ``Tag`` conversion lists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from atengen.errors import AtengenError
from atengen.facts import torch_facts
from atengen.model.native_function import NativeFunction, root_name
from atengen.render.output import GeneratedFile
from atengen.render.shards import ShardSetting
from atengen.render.templates import Templates
from atengen.stable.releases import StableTarget
from atengen.stable.signatures import StableSignature, stable_signature
from atengen.stable.types import NotCarried


@dataclass(frozen=True)
class Registration:
    """One ``m.impl`` line and the declaration of the kernel it boxes."""

    op: str  # `scale`, `scale.out`
    kernel: str  # qualified: `myops::scale_cpu`
    cpp_namespace: str
    declaration: str  # `torch::stable::Tensor scale_cpu(const torch::stable::Tensor& self, ...)`


def custom_functions(functions: list[NativeFunction]) -> list[NativeFunction]:
    """The functions stable registrations cover: every namespace but aten's (torch defines and
    registers those itself)."""
    return [f for f in functions if f.namespace != "aten"]


def check_stable(functions: list[NativeFunction], target: StableTarget) -> list[str]:
    """Refuses what stable mode cannot register, one error per operator at its YAML line;
    returns the warnings (autogen'd variants whose kernels are left out)."""
    errors: list[AtengenError] = []
    warnings: list[str] = []
    for f in functions:
        name = f"{f.namespace}::{f.name}"
        if f.generated:
            if f.dispatch:
                warnings.append(
                    f"{f.loc}: warning: '{name}' is autogen'd: stable mode defines its schema "
                    "but generates no kernel for it (that needs torch's unstable C++ API)"
                )
            continue
        problem = _unsupported_feature(f)
        if problem is None and f.dispatch:
            try:
                stable_signature(f.func, target, mutable_refs=True)
            except NotCarried as e:
                problem = e.reason
        if problem is not None:
            errors.append(AtengenError(f.loc, f"'{name}' in stable mode: {problem}"))
    if errors:
        raise AtengenError.combine(errors)
    return warnings


def _unsupported_feature(f: NativeFunction) -> str | None:
    # (A structured_delegate has no kernel of its own: its structured op is the one refused.)
    if f.structured or f.structured_inherits:
        return (
            "structured kernels need ATen's meta and impl classes (torch's unstable C++ "
            "API); give it a plain kernel per key"
        )
    if f.ufunc_inner_loop:
        return "ufunc_inner_loop needs ATen's unstable C++ API"
    return None


def kernel_namespace(f: NativeFunction, key: str) -> str:
    """See the module's docstring: unqualified kernels live in the operator's namespace."""
    ns = f.dispatch[key].cpp_namespace
    return f.namespace if ns == "at::native" else ns


def registration(f: NativeFunction, key: str, target: StableTarget) -> Registration:
    meta = f.dispatch[key]
    sig = stable_signature(f.func, target, mutable_refs=True)
    ns = kernel_namespace(f, key)
    return Registration(str(f.name), f"{ns}::{meta.kernel}", ns, _declaration(sig, meta.kernel))


def _declaration(sig: StableSignature, kernel: str) -> str:
    return f"{sig.return_type} {kernel}({', '.join(p.decl() for p in sig.params)})"


def stable_includes(target: StableTarget) -> list[str]:
    """The headers that declare every stable type a signature may use for ``target``."""
    includes = [
        "torch/csrc/stable/device.h",
        "torch/csrc/stable/tensor.h",
        "torch/headeronly/core/Layout.h",
        "torch/headeronly/core/MemoryFormat.h",
        "torch/headeronly/core/ScalarType.h",
        "torch/headeronly/util/HeaderOnlyArrayRef.h",
    ]
    if "torch::stable::Generator" in target.conversions:
        includes.insert(1, "torch/csrc/stable/generator.h")
    return includes


def schema_files(
    functions: list[NativeFunction], sharding: ShardSetting, templates: Templates
) -> list[GeneratedFile]:
    files = []
    for (ns, shard), fns in sharding.group(functions):
        text = templates.render(
            "stable_schema.cpp.j2",
            namespace=ns,
            roots=sorted({root_name(f) for f in fns}),
            # json.dumps gives a valid C++ string literal for these ASCII schemas.
            schemas=[json.dumps(f"{f.namespace}::{f.registered_schema}") for f in fns],
        )
        files.append(GeneratedFile(f"StableSchema_{ns}_{shard}.cpp", text))
    return files


def registration_files(
    functions: list[NativeFunction],
    target: StableTarget,
    sharding: ShardSetting,
    templates: Templates,
) -> list[GeneratedFile]:
    by_key: dict[str, list[NativeFunction]] = {}
    for f in functions:
        if not f.generated:
            for key in f.dispatch:
                by_key.setdefault(key, []).append(f)
    files = []
    for key in sorted(by_key):
        for (ns, shard), fns in sharding.group(by_key[key]):
            regs = [registration(f, key, target) for f in fns]
            text = templates.render(
                "stable_register.cpp.j2",
                namespace=ns,
                key=key,
                includes=stable_includes(target),
                roots=sorted({root_name(f) for f in fns}),
                declarations=_by_namespace(regs),
                registrations=regs,
            )
            # Marked for a CUDA library: `--cuda_output_dir` keeps them apart, so that a build
            # without a CUDA toolkit (no CUDA kernels to register) can leave them out.
            files.append(
                GeneratedFile(
                    f"RegisterStable{key}_{ns}_{shard}.cpp", text, key in torch_facts.CUDA_KEYS
                )
            )
    return files


def native_headers(
    functions: list[NativeFunction], target: StableTarget, templates: Templates
) -> list[GeneratedFile]:
    """`<ns>/ops/<root>_native.h` for each root with kernels to implement."""
    by_root: dict[tuple[str, str], list[Registration]] = {}
    for f in functions:
        if not f.generated:
            for key in f.dispatch:
                regs = by_root.setdefault((f.namespace, root_name(f)), [])
                regs.append(registration(f, key, target))
    files = []
    for (ns, root), regs in sorted(by_root.items()):
        text = templates.render(
            "stable_native.h.j2",
            namespace=ns,
            root=root,
            includes=stable_includes(target),
            declarations=_by_namespace(regs),
        )
        files.append(GeneratedFile(f"{ns}/ops/{root}_native.h", text))
    return files


def _by_namespace(regs: list[Registration]) -> list[tuple[str, list[str]]]:
    by_ns: dict[str, set[str]] = {}
    for r in regs:
        by_ns.setdefault(r.cpp_namespace, set()).add(r.declaration)
    return [(ns, sorted(decls)) for ns, decls in sorted(by_ns.items())]
