"""How generated C++ calls other operators and kernels: shared by every emitter.

- `OpRef`/`op_ref`: an operator called through the dispatcher;
- `functional_call_args`: the arguments for calling a functional op from one of its mutating
  variants (functionalization, generated out= kernels, backends' copy-back wrappers);
- `int_expr`/`native_args`: dispatcher values adapted to kernels that take plain ints.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.api.declarations import wrapper_declaration
from atengen.cached import cached_on_first_argument
from atengen.errors import CannotGenerate
from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument
from atengen.model.schema_types import ListType, OptionalType


@dataclass(frozen=True)
class OpRef:
    """An operator the generated code calls through the dispatcher.

    aten ops are called as ``at::_ops::<op>::call``: declared in the wheel's light
    ``ATen/ops/<root>_ops.h`` and compiled into libtorch, so a shard does not instantiate the
    dispatcher's call templates for them (half of a shard's compile time otherwise). Custom ops
    have no such declarations; they are looked up once into a typed handle
    (``atengen::find_op``).
    """

    name: str  # aten::add_
    overload: str
    cpp_type: str  # `ret (args)`
    aten_call: str = ""  # at::_ops::add__Tensor::call, for aten ops
    header: str = ""  # <ATen/ops/add_ops.h>, for aten ops


# Cached per function, as wrapper_declaration is (api/declarations.py says why that is safe).
@cached_on_first_argument
def op_ref(f: NativeFunction) -> OpRef:
    aten = f.namespace == "aten"
    return OpRef(
        f"{f.namespace}::{f.name.name}",
        f.name.overload_name,
        wrapper_declaration(f)[2],
        aten_call=f"at::_ops::{f.name.unambiguous_name()}::call" if aten else "",
        header=f"<ATen/ops/{f.name.name.base}_ops.h>" if aten else "",
    )


class MissingArgument(CannotGenerate):
    """The functional op takes an argument its mutating variant cannot supply."""


# An out= op has no TensorOptions: its functional op takes them from the out tensor.
_OPTIONS_FROM_OUT = {
    "dtype": "{out}.scalar_type()",
    "layout": "{out}.layout()",
    "device": "{out}.device()",
}


def functional_call_args(
    f: NativeFunction, functional: NativeFunction, names: dict[str, str]
) -> list[str]:
    """Arguments for calling ``functional`` from ``f``, a mutating variant of it.

    Arguments are matched by name (``names`` renames f's arguments, e.g. to their unwrapped
    locals); TensorOptions that only the functional op takes come from f's first out= tensor.
    Raises MissingArgument when ``functional`` takes an argument ``f`` cannot supply.
    """
    own = {a.name: names.get(a.name, a.name) for a in f.func.arguments.flat_all}
    outs = f.func.arguments.out
    args = []
    for a in functional.func.arguments.flat_all:
        if a.name in own:
            args.append(own[a.name])
        elif a.name == "pin_memory" and outs:
            args.append("::std::nullopt" if isinstance(a.type, OptionalType) else "false")
        elif a.name in _OPTIONS_FROM_OUT and outs:
            expr = _OPTIONS_FROM_OUT[a.name].format(out=own[outs[0].name])
            args.append(
                f"::std::make_optional({expr})" if isinstance(a.type, OptionalType) else expr
            )
        else:
            raise MissingArgument(
                f"{functional.name} takes '{a.name}', which {f.name} does not have"
            )
    return args


def int_expr(a: Argument) -> str:
    """A dispatcher SymInt value as a plain int, for kernels that are not SymInt-aware."""
    t, n = a.type, a.name
    s = str(t)
    if s == "SymInt":
        return f"{n}.guard_int(__FILE__, __LINE__)"
    if isinstance(t, ListType) and str(t.elem) == "SymInt":
        return f"C10_AS_INTARRAYREF_SLOW({n})"
    if isinstance(t, OptionalType) and str(t.elem) == "SymInt":
        return (
            f"{n}.has_value() ? ::std::make_optional({n}->guard_int(__FILE__, __LINE__)) "
            ": ::std::nullopt"
        )
    if (
        isinstance(t, OptionalType)
        and isinstance(t.elem, ListType)
        and str(t.elem.elem) == "SymInt"
    ):
        return (
            f"{n}.has_value() ? ::std::make_optional(C10_AS_INTARRAYREF_SLOW(*{n})) "
            ": ::std::nullopt"
        )
    return n


def native_args(f: NativeFunction, kernel: str) -> tuple[str, ...]:
    """f's arguments for calling ``kernel``: SymInts as they are for `_symint` kernels, else ints."""
    return _native_args(f, "_symint" in kernel)


# Cached per function, as op_ref is: most functions have kernels for several keys.
@cached_on_first_argument
def _native_args(f: NativeFunction, symint: bool) -> tuple[str, ...]:
    return tuple(a.name if symint else int_expr(a) for a in f.func.arguments.flat_all)
