"""Sources for an external backend: its kernel class header and registration shards.

The emitter of external backends (after ``backend.spec`` and ``backend.model``):

- ``<include_prefix>/<Backend>NativeFunctions.h``: a struct of static kernel
  declarations (the backend's C++ API), sorted and deduplicated, and the impl
  classes of the structured ops the backend claims (derived from torch's meta
  classes: the backend defines only their ``impl``);
- ``Register<Key>_<shard>.cpp`` for the backend key and, with ``autograd:``,
  for ``Autograd<Backend>``: wrappers with the exact dispatcher signature that
  call the backend's static methods, plus generated out=/inplace wrappers for
  operators whose functional variant alone has a kernel, and the structured
  functional/in-place/out= wrappers (the op registrations' own, see
  ``emit.wrappers.structured_wrapper``) of claimed structured groups.

Shards follow ``emit.shards`` (one per operator root, or N stable buckets);
a shard includes only the class header, ``extra_headers`` and what its own
wrappers use. Includes are relative to the include root (never absolute), so
the sources compile in any sandbox or checkout.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from atengen.api.calls import MissingArgument, functional_call_args, int_expr, native_args
from atengen.api.declarations import (
    native_declaration,
    wrapper_name,
    wrapper_params,
    wrapper_returns,
)
from atengen.api.device import device_handling
from atengen.api.structured import impl_params, meta_class
from atengen.api.wrappers import StructuredCall, structured_wrapper
from atengen.backend.model import BackendKernel, ExternalBackend, StructuredClaim
from atengen.facts import torch_facts
from atengen.model.native_function import NativeFunction
from atengen.model.schema import SchemaKind
from atengen.render.output import GeneratedFile
from atengen.render.shards import ShardSetting
from atengen.render.templates import Templates


@dataclass(frozen=True)
class BackendWrapper:
    """One registered function: a direct call of a kernel, or a copy-back wrapper."""

    op_name: str  # what m.impl() registers: `add.Tensor`
    cpp_name: str
    returns: str
    params: tuple[str, ...]
    call: str  # the kernel call expression
    device_check: tuple[str, ...] = ()
    device_guard: str = ""
    # copy-back wrappers (out=/inplace from a functional kernel): the copy op,
    # (result expression, destination) pairs, a tensor-list destination to copy
    # element-wise, and what the wrapper returns ("" for void)
    copy_op: str = ""
    copies: tuple[tuple[str, str], ...] = ()
    copy_list: str = ""
    return_expr: str = ""
    structured: StructuredCall | None = None  # a structured group's generated wrapper


def header_path(backend: ExternalBackend, include_prefix: str) -> str:
    name = f"{backend.spec.backend}NativeFunctions.h"
    return f"{include_prefix.strip('/')}/{name}" if include_prefix.strip("/") else name


def declarations(backend: ExternalBackend) -> list[str]:
    """Backend key's declarations, then the autograd key's; each sorted, none repeated."""
    out: list[str] = []
    for key in backend.spec.keys:
        decls = sorted(
            {
                native_declaration(k.f, k.kernel, symint=k.symint)
                for k in backend.kernels
                if k.key == key
            }
        )
        out += [d for d in decls if d not in out]
    return out


def structured_classes(backend: ExternalBackend) -> list[tuple[str, str, str]]:
    """(impl class, torch's meta class, impl() parameters) of each claimed structured op."""
    return [
        (c.impl_class, meta_class(c.group), ", ".join(impl_params(c.group)))
        for c in backend.structured
    ]


def header_file(
    backend: ExternalBackend, include_prefix: str, templates: Templates
) -> GeneratedFile:
    spec = backend.spec
    text = templates.render(
        "backend_native_functions.h.j2",
        source=os.path.basename(spec.path),
        backend=spec.backend,
        cpp_namespace=spec.cpp_namespace,
        class_name=spec.class_name,
        declarations=declarations(backend),
        meta_headers=sorted({_meta_header(c) for c in backend.structured}),
        structured=structured_classes(backend),
    )
    return GeneratedFile(header_path(backend, include_prefix), text)


def registration_files(
    backend: ExternalBackend, sharding: ShardSetting, include_prefix: str, templates: Templates
) -> list[GeneratedFile]:
    return [
        GeneratedFile(path, _shard_text(backend, key, wrappers, include_prefix, templates))
        for path, key, wrappers in _registration_shards(backend, sharding)
    ]


def registration_paths(backend: ExternalBackend, sharding: ShardSetting) -> set[str]:
    """The paths registration_files writes, without rendering them."""
    return {path for path, _, _ in _registration_shards(backend, sharding)}


def _registration_shards(
    backend: ExternalBackend, sharding: ShardSetting
) -> list[tuple[str, str, list[BackendWrapper]]]:
    shards = sharding.group(f for f in backend.model.functions if f.namespace == "aten")
    result = []
    for key in backend.spec.keys:
        for (_, shard), functions in shards:
            wrappers = [w for f in functions if (w := wrapper_for(backend, f, key))]
            if wrappers:
                result.append((f"Register{key}_{shard}.cpp", key, wrappers))
    return result


def _meta_header(claim: StructuredClaim) -> str:
    return f"<ATen/ops/{claim.group.out.name.name.base}_meta.h>"


def wrapper_for(backend: ExternalBackend, f: NativeFunction, key: str) -> BackendWrapper | None:
    claim = backend.structured_group_of.get(id(f))
    if claim is not None:
        if key != backend.spec.backend or f is claim.group.mutable:
            return None
        impl = f"{backend.spec.cpp_namespace}::{claim.impl_class}"
        w = structured_wrapper(
            f, claim.group, key, "impl", impl_class_name=impl, output_names=backend.output_names
        )
        return _wrapper(backend, f, key, call="", structured=w.structured)
    k = backend.kernel_for(f, key)
    if k is not None:
        return _wrapper(backend, f, key, call=_kernel_call(backend, k, native_args(f, k.kernel)))
    functional = backend.wrapped_from(f, key)
    if functional is None:
        return None
    return _copy_back_wrapper(backend, f, key, functional)


def copy_back_warnings(backend: ExternalBackend) -> tuple[str, ...]:
    """`file:line: warning:` lines for the copy ops the generated out= and in-place wrappers call
    (at::_copy_from_and_resize, at::_copy_from) that the backend YAML does not list: they run on
    the backend's tensors, so without a kernel every such wrapper fails when it is called. One
    line per copy op, at the first functional kernel whose wrappers need it."""
    listed = {e.name.split(".")[0] for e in backend.spec.supported + backend.spec.autograd}
    first: dict[str, tuple[BackendKernel, NativeFunction, int]] = {}
    for f in backend.model.functions:
        for key in backend.spec.keys:
            functional = backend.wrapped_from(f, key)
            if functional is None:
                continue
            w = _copy_back_wrapper(backend, f, key, functional)
            op = w.copy_op.removeprefix("at::") if w is not None else ""
            if not op or op in listed:
                continue
            known = first.get(op)
            first[op] = (known[0], known[1], known[2] + 1) if known else (functional, f, 1)
    name, key = os.path.basename(backend.spec.path), backend.spec.backend
    return tuple(
        f"{k.entry.loc}: warning: the generated wrapper of '{f.name}'"
        + (f" (and {n - 1} more)" if n > 1 else "")
        + f" calls at::{op} on {key} tensors, which {name} does not list: list '{op}' under "
        f"supported (unless another library registers it for {key}), or "
        + ("those wrappers fail" if n > 1 else "that wrapper fails")
        + " when called"
        for op, (k, f, n) in sorted(first.items())
    )


def _kernel_call(backend: ExternalBackend, k: BackendKernel, args: Sequence[str]) -> str:
    spec = backend.spec
    return f"{spec.cpp_namespace}::{spec.class_name}::{k.kernel}({', '.join(args)})"


def _wrapper(
    backend: ExternalBackend,
    f: NativeFunction,
    key: str,
    *,
    call: str,
    copy_op: str = "",
    copies: tuple[tuple[str, str], ...] = (),
    copy_list: str = "",
    return_expr: str = "",
    structured: StructuredCall | None = None,
) -> BackendWrapper:
    check, guard = _device_handling(backend, f)
    return BackendWrapper(
        op_name=str(f.name),
        cpp_name=wrapper_name(key, f),
        returns=wrapper_returns(f),
        params=wrapper_params(f),
        call=call,
        device_check=check,
        device_guard=guard,
        copy_op=copy_op,
        copies=copies,
        copy_list=copy_list,
        return_expr=return_expr,
        structured=structured,
    )


def _copy_back_wrapper(
    backend: ExternalBackend, f: NativeFunction, key: str, functional: BackendKernel
) -> BackendWrapper | None:
    """out= via at::_copy_from_and_resize, inplace via at::_copy_from (gen_backend_stubs)."""
    target = functional.f
    if f.kind is SchemaKind.out:
        try:
            exprs = functional_call_args(f, target, {})
        except MissingArgument:
            return None  # the out= op lacks an argument the functional op needs
        dests = [a.name for a in f.func.arguments.out]
        copy_op = "at::_copy_from_and_resize"
    elif f.kind is SchemaKind.inplace:
        own = {a.name for a in f.func.arguments.flat_all}
        if any(a.name not in own for a in target.func.arguments.flat_all):
            return None
        exprs = [a.name for a in target.func.arguments.flat_all]
        dests = ["self"]
        copy_op = "at::_copy_from"
    else:
        return None  # mutable ops: their extra outputs have no place to be copied back
    args = [
        e if functional.symint or e != a.name else int_expr(a)
        for a, e in zip(target.func.arguments.flat_all, exprs, strict=True)
    ]
    n = len(target.func.returns)
    out_list = f.func.arguments.out[0] if f.kind is SchemaKind.out and not f.func.returns else None
    if out_list is not None:  # `Tensor(a!)[] out -> ()`: copy element by element
        if n != 1:
            return None
        copies: tuple[tuple[str, str], ...] = ()
        return_expr = ""
    else:
        if n != len(dests):
            return None
        copies = tuple(
            ("atg_result" if n == 1 else f"::std::get<{i}>(atg_result)", d)
            for i, d in enumerate(dests)
        )
        return_expr = dests[0] if n == 1 else f"::std::forward_as_tuple({', '.join(dests)})"
    return _wrapper(
        backend,
        f,
        key,
        call=_kernel_call(backend, functional, args),
        copy_op=copy_op,
        copies=copies,
        copy_list=out_list.name if out_list is not None else "",
        return_expr=return_expr,
    )


def _device_handling(backend: ExternalBackend, f: NativeFunction) -> tuple[tuple[str, ...], str]:
    """Same-device checks and a device guard when the backend YAML says `device_guard: True`
    (the op's own device_check and device_guard still apply). The guard is device-generic
    (c10::DeviceGuard finds the backend's guard implementation at run time)."""
    if not backend.spec.device_guard:
        return (), ""
    copies = str(f.name.name) in torch_facts.CROSS_DEVICE_COPY_OPS
    return device_handling(f, lazy_init_key=None, check_same_device=not copies)


def _shard_text(
    backend: ExternalBackend,
    key: str,
    wrappers: list[BackendWrapper],
    include_prefix: str,
    templates: Templates,
) -> str:
    includes = ["<ATen/core/Tensor.h>", '"atengen/guarded_library.h"']
    if any(w.structured for w in wrappers):
        includes += ["<ATen/TensorMeta.h>", '"atengen/runtime.h"']
    if any(w.structured and w.structured.output_names for w in wrappers):
        includes.append("<ATen/NamedTensorUtils.h>")  # namedinference::propagate_names
    if any(w.device_check for w in wrappers):
        includes.append("<ATen/core/op_registration/adaption.h>")
    if any(w.device_guard for w in wrappers):
        includes += ["<ATen/DeviceGuard.h>", "<c10/core/DeviceGuard.h>"]
    for op in sorted({w.copy_op for w in wrappers if w.copy_op}):
        includes.append(f"<ATen/ops/{op.removeprefix('at::')}.h>")
    includes.append(f'"{header_path(backend, include_prefix)}"')
    includes += backend.spec.extra_headers
    return templates.render(
        "register_backend.cpp.j2",
        key=key,
        backend=backend.spec.backend,
        roots=sorted({w.op_name.split(".")[0] for w in wrappers}),
        includes=includes,
        wrappers=wrappers,
    )
