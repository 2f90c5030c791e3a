"""The C++ signature of a generated kernel, and the operator below it that it redispatches to
(see api/calls.py's OpRef): aten ops through `at::_ops::<op>::redispatch`, custom ops through a
typed handle."""

from __future__ import annotations

from dataclasses import dataclass

from atengen.api.calls import OpRef
from atengen.api.cpp_types import cpp_arguments, dispatcher_options, returns_type
from atengen.model.native_function import NativeFunction


def handle_var(op: OpRef) -> str:
    """The C++ function returning op's typed handle (custom ops only)."""
    name = op.name.split("::", 1)[1]
    return f"op_{name}__{op.overload}" if op.overload else f"op_{name}"


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's C++ signature (after the DispatchKeySet), and the op it redispatches to."""

    op: str  # the overload it is registered for: `add.Tensor`
    function: str
    returns: str
    parameters: tuple[str, ...]
    arguments: tuple[str, ...]  # the parameters' names, passed on
    redispatch: str  # `at::_ops::<op>::redispatch`, or `<handle>().redispatch` for custom ops


def kernel_signature(f: NativeFunction, op: OpRef, suffix: str) -> KernelSignature:
    opts = dispatcher_options(f)
    args = cpp_arguments(f.func, opts)
    return KernelSignature(
        op=str(f.name),
        function=f"{f.name.unambiguous_name()}_{suffix}",
        returns=returns_type(f.func.returns, opts),
        parameters=tuple(a.decl() for a in args),
        arguments=tuple(a.name for a in args),
        redispatch=(
            f"{op.aten_call.removesuffix('::call')}::redispatch"
            if op.aten_call
            else f"{handle_var(op)}().redispatch"
        ),
    )
