"""How a schema argument becomes part of a lazy-tensor IR node.

An IR node stores every argument of its operator. Tensor-like arguments become
*operands* (IR values, edges of the graph); everything else becomes an
*attribute* (a member copied into the node, hashed, compared for reuse and
printed by ToString). The rules follow LTC's, so that existing backends'
nodes and kernels keep their shape:

- ``Tensor`` -> a value; ``Tensor?`` -> an optional value; ``Tensor[]`` -> one
  value (the list is gathered into a single node first); ``Tensor?[]`` -> a
  ``c10::List`` of optional values.
- ``Scalar`` -> a value (the kernel turns the scalar into a constant node),
  unless the node treats scalars as constants: then an ``at::Scalar`` attribute.
- ``SymInt`` -> a value when the op is SymInt-aware (listed under ``symint``,
  or a non-native node), else an ``int64_t`` attribute. ``SymInt[]`` is always
  an ``int64_t`` vector attribute: LTC has no node for a list of sizes.
- Lists become ``std::vector`` (nodes own their data; the ``ArrayRef`` the
  kernel receives would dangle), ``str`` stays ``c10::string_view`` in the
  signature but is stored as ``std::string``.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.model.schema import Argument, FunctionSchema
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type

# Attribute types by schema base type (the C++ spelling LTC nodes use).
_ATTRIBUTE_TYPES = {
    "ScalarType": "at::ScalarType",
    "int": "int64_t",
    "bool": "bool",
    "float": "double",
    "str": "c10::string_view",
    "Device": "at::Device",
    "Generator": "at::Generator",
    "Layout": "at::Layout",
    "MemoryFormat": "at::MemoryFormat",
}


class UnsupportedType(ValueError):
    """A schema type no lazy IR node can hold; the caller adds which op and argument."""


@dataclass(frozen=True)
class LazyArg:
    """One argument of an IR node, in schema order."""

    name: str
    schema_type: Type
    cpp_type: str  # as the node constructor takes it (by const reference)
    is_value: bool  # an operand (IR value) rather than an attribute
    keyword: bool  # kwarg-only in the schema (TorchScript lowering passes it by name)
    is_wrapped_scalar: bool  # a Scalar (or optional/list of one) the kernel wraps in a node
    is_symint_value: bool  # a SymInt (or SymInt?) carried as an IR value
    is_generator: bool
    is_tensor_list: bool  # `Tensor[]`, gathered into one value

    @property
    def is_optional(self) -> bool:
        return isinstance(self.schema_type, OptionalType)

    @property
    def member_type(self) -> str:
        """The node member's type: strings are owned, never views."""
        if self.cpp_type == "c10::string_view":
            return "std::string"
        if self.cpp_type == "::std::optional<c10::string_view>":
            return "::std::optional<std::string>"
        return self.cpp_type


def ir_type(t: Type, value_class: str, *, symint: bool, scalars_as_constants: bool) -> str:
    """The C++ type of an argument of schema type t inside an IR node."""
    if isinstance(t, BaseType):
        if t.name == "Tensor":
            return value_class
        if t.name == "Scalar":
            return "at::Scalar" if scalars_as_constants else value_class
        if t.name == "SymInt":
            return value_class if symint else "int64_t"
        if t.name in _ATTRIBUTE_TYPES:
            return _ATTRIBUTE_TYPES[t.name]
        raise UnsupportedType(str(t))
    if isinstance(t, OptionalType):
        inner = ir_type(
            t.elem, value_class, symint=symint, scalars_as_constants=scalars_as_constants
        )
        return f"::std::optional<{inner}>"
    if isinstance(t, ListType):
        elem = str(t.elem)
        if elem == "Tensor?":
            return f"c10::List<::std::optional<{value_class}>>"
        if elem == "Tensor":
            return "torch::lazy::Value"  # the list arrives as one value (GetTensorList)
        if elem == "SymInt":
            return "::std::vector<int64_t>"
        inner = ir_type(
            t.elem, value_class, symint=symint, scalars_as_constants=scalars_as_constants
        )
        return f"::std::vector<{inner}>"
    raise UnsupportedType(str(t))


def _holds_value(t: Type, *, symint: bool, scalars_as_constants: bool) -> bool:
    if isinstance(t, BaseType):
        return (
            t.name == "Tensor"
            or (t.name == "Scalar" and not scalars_as_constants)
            or (t.name == "SymInt" and symint)
        )
    if isinstance(t, ListType) and str(t.elem) == "SymInt":
        return False
    if isinstance(t, OptionalType | ListType):
        return _holds_value(t.elem, symint=symint, scalars_as_constants=scalars_as_constants)
    return False


def _is_scalar_like(t: Type) -> bool:
    if isinstance(t, BaseType):
        return t.name == "Scalar"
    return isinstance(t, OptionalType | ListType) and _is_scalar_like(t.elem)


def _is_symint(t: Type) -> bool:
    return isinstance(t, BaseType) and t.name == "SymInt"


def lazy_arg(
    a: Argument, value_class: str, *, keyword: bool, symint: bool, scalars_as_constants: bool
) -> LazyArg:
    t = a.type
    cpp = ir_type(t, value_class, symint=symint, scalars_as_constants=scalars_as_constants)
    return LazyArg(
        name=a.name,
        schema_type=t,
        cpp_type=cpp,
        is_value=_holds_value(t, symint=symint, scalars_as_constants=scalars_as_constants),
        keyword=keyword,
        is_wrapped_scalar=_is_scalar_like(t),
        is_symint_value=symint
        and (_is_symint(t) or (isinstance(t, OptionalType) and _is_symint(t.elem))),
        is_generator=str(t).rstrip("?") == "Generator",
        is_tensor_list=isinstance(t, ListType) and str(t.elem) == "Tensor",
    )


def lazy_args(
    func: FunctionSchema, value_class: str, *, symint: bool, scalars_as_constants: bool
) -> tuple[LazyArg, ...]:
    """Positional arguments, then kwarg-only ones (TensorOptions spread out), then outs.

    Raises UnsupportedType naming the first argument no node can hold.
    """
    args = func.arguments
    positional = args.flat_positional
    keyword = args.flat_kwarg_only + args.out
    out = []
    for a, kw in [(a, False) for a in positional] + [(a, True) for a in keyword]:
        try:
            out.append(
                lazy_arg(
                    a,
                    value_class,
                    keyword=kw,
                    symint=symint,
                    scalars_as_constants=scalars_as_constants,
                )
            )
        except UnsupportedType as e:
            raise UnsupportedType(f"argument '{a.name}' has type {a.type}") from e
    return tuple(out)
