"""Per-dispatch-key registration sources, sharded by operator.

Which wrapper an (op, key) pair gets:
- an op in a structured group: the structured meta/impl wrapper when the
  group's out= op has a structured kernel for the key; the meta-only wrapper
  for ``Meta``;
- a generated variant: our own composite kernel (spec section 2);
- a view_copy op under CompositeExplicitAutogradNonFunctional: the view, cloned;
- under ``Functionalize``: what `functionalization.functionalize_plan` says;
- otherwise, when the op's dispatch table names the key: a direct call.
"""

from __future__ import annotations

from collections.abc import Iterable

from atengen.emit.functionalize import (
    FUNCTIONALIZE_KEY,
    is_generated_view_copy,
    mutation_call,
    view_call,
    view_copy_call,
)
from atengen.emit.output import GeneratedFile
from atengen.emit.shards import Sharding, root_name
from atengen.emit.templates import render
from atengen.emit.wrappers import (
    Wrapper,
    direct_wrapper,
    generated_wrapper,
    make_wrapper,
    structured_wrapper,
)
from atengen.errors import AtengenError
from atengen.model.dispatch_keys import STRUCTURED_DISPATCH_KEYS
from atengen.model.functionalization import DecomposePlan, MutationPlan, functionalize_plan
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel

# Keys whose kernels compile into the CUDA library; the rest go to the CPU side.
CUDA_KEYS = frozenset({"CUDA", "SparseCUDA", "SparseCsrCUDA", "QuantizedCUDA", "NestedTensorCUDA"})
# Keys the installed (CPU or CUDA) torch can serve. MPS, XPU, MTIA, HPU and the
# like need a torch built for them, so their kernels are left out.
SERVABLE_KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "QuantizedCPU",
    "QuantizedCUDA",
    "QuantizedMeta",
    "SparseCPU",
    "SparseCUDA",
    "SparseMeta",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "SparseCsrMeta",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "NestedTensorMeta",
    "MkldnnCPU",
    "ZeroTensor",
    FUNCTIONALIZE_KEY,
)
UNSERVABLE_KEYS = frozenset(
    {
        "MPS",
        "XPU",
        "MTIA",
        "SparseMPS",
        "SparseCsrMPS",
        "SparseXPU",
        "SparseCsrXPU",
        "NestedTensorHPU",
        "NestedTensorXPU",
    }
)


def wrappers_for(model: OperatorModel, f: NativeFunction, key: str) -> Wrapper | None:
    if key == FUNCTIONALIZE_KEY:
        return _functionalize_wrapper(model, f)
    if key == "CompositeExplicitAutogradNonFunctional":
        view_group = model.view_group_of.get(id(f))
        if is_generated_view_copy(f, view_group):
            return make_wrapper(f, key, "view_copy", fz=view_copy_call(f, view_group))
    group = model.group_of.get(id(f))
    if group is not None and group.structured and f is not group.mutable:
        if key == "Meta":
            return structured_wrapper(f, group, key, "meta")
        out_kernel = group.out.dispatch.get(key)
        if key in STRUCTURED_DISPATCH_KEYS and out_kernel is not None and out_kernel.structured:
            return structured_wrapper(f, group, key, "impl")
        # Backends without kernels of their own (XLA, ...) get functional and
        # inplace variants that compute shapes with meta() and call the out= op.
        if key == "CompositeExplicitAutogradNonFunctional" and f is not group.out:
            return structured_wrapper(f, group, key, "out_op")
    if f.generated:
        if key != "CompositeExplicitAutograd" or group is None:
            return None
        return generated_wrapper(f, group, key)
    if key in f.dispatch:
        return direct_wrapper(f, key)
    return None


def _functionalize_wrapper(model: OperatorModel, f: NativeFunction) -> Wrapper | None:
    plan = functionalize_plan(model, f)
    if plan is None:
        return None
    if isinstance(plan, DecomposePlan):
        # Registered with its own composite kernel, so that it decomposes into
        # the views functionalization handles before functionalization sees it.
        w = direct_wrapper(f, "CompositeImplicitAutograd")
        return make_wrapper(f, FUNCTIONALIZE_KEY, "direct", call=w.call, kernel_decl=w.kernel_decl)
    if isinstance(plan, MutationPlan):
        return make_wrapper(f, FUNCTIONALIZE_KEY, "fz_mutation", fz=mutation_call(plan))
    return make_wrapper(f, FUNCTIONALIZE_KEY, "fz_view", fz=view_call(plan))


def keys_in_use(
    model: OperatorModel,
    functions: Iterable[NativeFunction],
    candidates: Iterable[str] = SERVABLE_KEYS,
) -> list[str]:
    """The candidate keys that at least one selected function has a wrapper for."""
    candidates = list(candidates)
    used = set()
    for f in functions:
        for key in candidates:
            if key not in used and wrappers_for(model, f, key) is not None:
                used.add(key)
    return [k for k in candidates if k in used]


def registration_files(
    model: OperatorModel,
    functions: list[NativeFunction],
    keys: list[str],
    sharding: Sharding,
) -> list[GeneratedFile]:
    """One file per (key, namespace, shard) that registers at least one kernel."""
    for key in keys:
        if key in UNSERVABLE_KEYS or key not in SERVABLE_KEYS:
            raise AtengenError(None, f"dispatch key '{key}' cannot be generated for this torch")
    by_shard: dict[tuple[str, str], list[NativeFunction]] = {}
    for f in functions:
        shard = (f.namespace, sharding.shard_of(root_name(f)))
        by_shard.setdefault(shard, []).append(f)
    files = []
    for key in keys:
        for (namespace, shard), fns in sorted(by_shard.items()):
            text = _shard_text(model, key, namespace, fns)
            if text is None:
                continue
            stem = shard if namespace == "aten" else f"{namespace}_{shard}"
            files.append(GeneratedFile(f"Register{key}_{stem}.cpp", text, key in CUDA_KEYS))
    return files


def _shard_text(
    model: OperatorModel,
    key: str,
    namespace: str,
    functions: list[NativeFunction],
) -> str | None:
    functions = sorted(functions, key=lambda f: str(f.name))  # deterministic order
    wrappers = []
    roots = set()  # only operators with a kernel for this key: a shard's bytes
    native_roots = set()  # must not depend on operators it does not register
    for f in functions:
        try:
            w = wrappers_for(model, f, key)
        except ValueError as e:
            raise AtengenError(f.loc, f"cannot generate {key} kernel for '{f.name}': {e}") from None
        if w is not None:
            wrappers.append(w)
            roots.add(root_name(f))
            if w.kind in ("direct", "structured"):  # they call at::native kernels
                native_roots.add(root_name(f))
    if not wrappers:
        return None
    roots = sorted(roots)
    return render(
        "register_shard.cpp.j2",
        key=key,
        roots=roots,
        namespace=namespace,
        includes=_includes(namespace, sorted(native_roots), wrappers),
        kernel_declarations=_kernel_declarations(wrappers),
        wrappers=wrappers,
    )


def _includes(namespace: str, native_roots: list[str], wrappers: list[Wrapper]) -> list[str]:
    # Headers dominate compile time, so a shard includes only what it uses.
    includes = ["<ATen/core/Tensor.h>", "<torch/library.h>", '"atengen/runtime.h"']
    if any(w.kind == "structured" for w in wrappers):
        includes.append("<ATen/TensorMeta.h>")
    if any(w.device_check for w in wrappers):
        includes.append("<ATen/core/op_registration/adaption.h>")
    if any(w.kind.startswith("fz_") for w in wrappers):
        includes.append('"atengen/functionalize.h"')
    includes += sorted({op.header for w in wrappers for op in w.op_refs() if op.header})
    if any(w.device_guard for w in wrappers):
        # device_of(), DeviceGuard and at::globalContext() (lazy device init)
        includes += ["<ATen/Context.h>", "<ATen/DeviceGuard.h>", "<c10/core/DeviceGuard.h>"]
    if namespace == "aten":
        includes += [f"<ATen/ops/{root}_native.h>" for root in native_roots]
    return includes


def _kernel_declarations(wrappers: list[Wrapper]) -> list[tuple[str, list[str]]]:
    by_ns: dict[str, set[str]] = {}
    for w in wrappers:
        if w.kernel_decl is not None:
            by_ns.setdefault(w.kernel_decl[0], set()).add(w.kernel_decl[1])
    return [(ns, sorted(decls)) for ns, decls in sorted(by_ns.items())]
