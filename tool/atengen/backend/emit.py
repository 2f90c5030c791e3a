"""Sources for an external backend: its kernel class header and registration shards.

Third layer for external backends (after ``backend_yaml`` and ``backend_model``):

- ``<include_prefix>/<Backend>NativeFunctions.h``: a struct of static kernel
  declarations (the backend's C++ API), sorted and deduplicated;
- ``Register<Key>_<shard>.cpp`` for the backend key and, with ``autograd:``,
  for ``Autograd<Backend>``: wrappers with the exact dispatcher signature that
  call the backend's static methods, plus generated out=/inplace wrappers for
  operators whose functional variant alone has a kernel.

Shards follow ``emit/shards.py`` (one per operator root, or N stable buckets);
a shard includes only the class header, ``extra_headers`` and what its own
wrappers use. Includes are relative to the include root (never absolute), so
the sources compile in any sandbox or checkout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from atengen.backend.model import BackendKernel, ExternalBackend
from atengen.emit.cpp_types import cpp_arguments, dispatcher_options, returns_type
from atengen.emit.output import GeneratedFile
from atengen.emit.shards import Sharding, root_name
from atengen.emit.templates import render
from atengen.emit.wrappers import (
    int_expr,
    native_args,
    native_declaration,
    out_call_args,
    wrapper_name,
)
from atengen.model.native_function import NativeFunction
from atengen.model.schema import SchemaKind

# Copies between the backend and other devices: their YAML entries keep the default
# `device_check: ExactSame`, which gen_backend_stubs honours under `device_guard: True`, so that
# every .to()/.cpu() fails the check. We skip the check for them.
_CROSS_DEVICE_OPS = frozenset({"_copy_from", "_copy_from_and_resize"})


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


def header_path(backend: ExternalBackend, include_prefix: str) -> str:
    name = f"{backend.spec.backend}NativeFunctions.h"
    return f"{include_prefix.strip('/')}/{name}" if include_prefix.strip("/") else name


def kernel_declaration(k: BackendKernel) -> str:
    """The native-API declaration of k's static method (SymInt only for `_symint` kernels)."""
    return native_declaration(k.f, k.kernel, symint=k.symint)


def declarations(backend: ExternalBackend) -> list[str]:
    """Backend key's declarations, then the autograd key's; each sorted, none repeated."""
    out: list[str] = []
    for key in backend.spec.keys:
        decls = sorted({kernel_declaration(k) for k in backend.kernels if k.key == key})
        out += [d for d in decls if d not in out]
    return out


def header_file(backend: ExternalBackend, include_prefix: str) -> GeneratedFile:
    spec = backend.spec
    text = render(
        "backend_native_functions.h.j2",
        source=os.path.basename(spec.path),
        backend=spec.backend,
        cpp_namespace=spec.cpp_namespace,
        class_name=spec.class_name,
        declarations=declarations(backend),
    )
    return GeneratedFile(header_path(backend, include_prefix), text)


def registration_files(
    backend: ExternalBackend, sharding: Sharding, include_prefix: str
) -> list[GeneratedFile]:
    by_shard: dict[str, list[NativeFunction]] = {}
    for f in backend.model.functions:
        if f.namespace == "aten":
            by_shard.setdefault(sharding.shard_of(root_name(f)), []).append(f)
    files = []
    for key in backend.spec.keys:
        for shard, functions in sorted(by_shard.items()):
            wrappers = [
                w
                for f in sorted(functions, key=lambda f: str(f.name))
                if (w := wrapper_for(backend, f, key))
            ]
            if wrappers:
                text = _shard_text(backend, key, wrappers, include_prefix)
                files.append(GeneratedFile(f"Register{key}_{shard}.cpp", text))
    return files


def wrapper_for(backend: ExternalBackend, f: NativeFunction, key: str) -> BackendWrapper | None:
    k = backend.kernel_for(f, key)
    if k is not None:
        return _wrapper(backend, f, key, call=_kernel_call(backend, k, native_args(f, k.kernel)))
    functional = backend.wrapped_from(f, key)
    if functional is None:
        return None
    return _copy_back_wrapper(backend, f, key, functional)


def _kernel_call(backend: ExternalBackend, k: BackendKernel, args: list[str]) -> str:
    spec = backend.spec
    return f"{spec.cpp_namespace}::{spec.class_name}::{k.kernel}({', '.join(args)})"


def _wrapper(backend: ExternalBackend, f: NativeFunction, key: str, **kw) -> BackendWrapper:
    opts = dispatcher_options(f)
    check, guard = _device_handling(backend, f)
    return BackendWrapper(
        op_name=str(f.name),
        cpp_name=wrapper_name(key, f),
        returns=returns_type(f.func.returns, opts),
        params=tuple(a.decl() for a in cpp_arguments(f.func, opts)),
        device_check=check,
        device_guard=guard,
        **kw,
    )


def _copy_back_wrapper(
    backend: ExternalBackend, f: NativeFunction, key: str, functional: BackendKernel
) -> BackendWrapper | None:
    """out= via at::_copy_from_and_resize, inplace via at::_copy_from (gen_backend_stubs)."""
    target = functional.f
    if f.kind is SchemaKind.out:
        try:
            exprs = out_call_args(f, target)
        except ValueError:
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
    (c10::DeviceGuard, which finds the backend's guard implementation at run time), and there
    is no lazy device initialisation: that is CUDA's, and a backend initialises on load."""
    args = f.func.arguments
    if not backend.spec.device_guard:
        return (), ""
    tensors = [a for a in args.out + args.flat_positional if a.type.is_tensor_like()]
    same_device = f.device_check == "ExactSame" and str(f.name.name) not in _CROSS_DEVICE_OPS
    check = tuple(a.name for a in tensors) if same_device else ()
    if not f.device_guard:
        return check, ""
    if args.tensor_options is not None:
        return check, "const c10::DeviceGuard atg_device_guard(device_or_default(device));"
    # self decides the device when it is a tensor, then outputs, then other inputs
    self_arg = args.self_arg
    if self_arg is not None and self_arg.type.is_tensor_like():
        tensors.insert(0, self_arg)
    if not tensors:
        return check, ""
    return check, f"const c10::OptionalDeviceGuard atg_device_guard(device_of({tensors[0].name}));"


def _shard_text(
    backend: ExternalBackend, key: str, wrappers: list[BackendWrapper], include_prefix: str
) -> str:
    includes = ["<ATen/core/Tensor.h>", "<torch/library.h>"]
    if any(w.device_check for w in wrappers):
        includes.append("<ATen/core/op_registration/adaption.h>")
    if any(w.device_guard for w in wrappers):
        includes += ["<ATen/DeviceGuard.h>", "<c10/core/DeviceGuard.h>"]
    for op in sorted({w.copy_op for w in wrappers if w.copy_op}):
        includes.append(f"<ATen/ops/{op.removeprefix('at::')}.h>")
    includes.append(f'"{header_path(backend, include_prefix)}"')
    includes += backend.spec.extra_headers
    return render(
        "register_backend.cpp.j2",
        key=key,
        backend=backend.spec.backend,
        roots=sorted({w.op_name.split(".")[0] for w in wrappers}),
        includes=includes,
        wrappers=wrappers,
    )
