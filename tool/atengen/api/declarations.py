"""C++ names and declarations of kernels and of the wrappers that register them."""

from __future__ import annotations

from atengen.api.cpp_types import (
    TypeOptions,
    cpp_arguments,
    dispatcher_options,
    function_type_of,
    returns_type,
)
from atengen.cached import cached_on_first_argument
from atengen.model.native_function import NativeFunction


def wrapper_name(key: str, f: NativeFunction) -> str:
    """The registered wrapper of f for a dispatch key: `wrapper_CPU_add_Tensor`."""
    return f"wrapper_{key}_{f.name.unambiguous_name()}"


def wrapper_params(f: NativeFunction) -> tuple[str, ...]:
    """The wrapper's parameters: exactly the dispatcher signature, so the dispatcher can check it."""
    return wrapper_declaration(f)[1]


def wrapper_returns(f: NativeFunction) -> str:
    return wrapper_declaration(f)[0]


# Cached per function: a function gets a wrapper for each of its keys (a whole-YAML run makes
# ~8,000 wrappers of ~3,000 functions). NativeFunction compares by identity, and the cache holds
# its keys, so an entry never outlives its function; the bound only caps what in-process runs of
# the CLI (tests) keep alive.
@cached_on_first_argument
def wrapper_declaration(f: NativeFunction) -> tuple[str, tuple[str, ...], str]:
    """(return type, parameters, C++ function type) of the wrapper. The function type,
    `at::Tensor (const at::Tensor &)`, the same as the op's in the wheel's `<op>_ops.h`, is what
    `atengen::LibraryRef::impl<Signature>` is instantiated for (see aten/kernel_signatures.py)."""
    opts = dispatcher_options(f)
    args = cpp_arguments(f.func, opts)
    returns = returns_type(f.func.returns, opts)
    return returns, tuple(a.decl() for a in args), function_type_of(returns, args)


def native_declaration(f: NativeFunction, kernel: str, *, symint: bool | None = None) -> str:
    """`ret kernel(args)` in the native API.

    SymInt kernels take SymInts, others plain ints; by default a kernel is SymInt when its name
    says so (`_symint`), as the op YAML's convention is. Backends say it explicitly.
    """
    if symint is None:
        symint = "_symint" in kernel
    opts = TypeOptions(
        symint=symint,
        const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
        ilistref_for_tensor_lists=f.part_of_structured_group,
    )
    args = ", ".join(a.decl() for a in cpp_arguments(f.func, opts))
    # Returns keep SymInt even for kernels that take plain ints (as in the wheel's _native.h).
    return f"{wrapper_returns(f)} {kernel}({args})"


def dispatch_kernel_declaration(f: NativeFunction, key: str) -> str:
    """The declaration of the kernel f's op-YAML dispatch table names for key."""
    return native_declaration(f, f.dispatch[key].kernel)
