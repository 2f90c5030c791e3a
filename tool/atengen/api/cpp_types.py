"""C++ spellings of schema types for the dispatcher API and the native kernel API.

The dispatcher API is what ``TORCH_LIBRARY_IMPL`` kernels receive; its
signature for every op is also in the wheel's ``ATen/ops/<op>_ops.h``
(``using schema = ...``), which the tests compare against. The native API is
what ``at::native::<kernel>`` functions in ``<op>_native.h`` take: the same,
except that kernels whose name lacks ``_symint`` take plain ints for SymInts.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument, FunctionSchema, Return
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type

# Value types: passed by value, the same in every API.
_BASE_VALUE_TYPES = {
    "int": "int64_t",
    "float": "double",
    "str": "c10::string_view",
    "bool": "bool",
    "Generator": "at::Generator",
    "ScalarType": "at::ScalarType",
    "Dimname": "at::Dimname",
    "DimVector": "at::DimVector",
    "Layout": "at::Layout",
    "Device": "at::Device",
    "DeviceIndex": "at::DeviceIndex",
    "MemoryFormat": "at::MemoryFormat",
    "QScheme": "at::QScheme",
    "Storage": "at::Storage",
    "Stream": "at::Stream",
    "SymBool": "c10::SymBool",
    "GraphModule": "torch::jit::Module",
}


@dataclass(frozen=True)
class TypeOptions:
    """What varies between the APIs and between ops."""

    symint: bool = True  # SymInt stays SymInt (dispatcher, `_symint` kernels)
    const_ref_for_mutable_tensors: bool = False  # `use_const_ref_for_mutable_tensors`
    ilistref_for_tensor_lists: bool = False  # structured ops take ITensorListRef


def _value_type(t: Type, opts: TypeOptions) -> str | None:
    if isinstance(t, BaseType):
        if t.name in ("Tensor", "Scalar"):
            return None
        if t.name == "SymInt":
            return "c10::SymInt" if opts.symint else "int64_t"
        return _BASE_VALUE_TYPES.get(t.name)
    if isinstance(t, OptionalType):
        elem = _value_type(t.elem, opts)
        return None if elem is None else f"::std::optional<{elem}>"
    if isinstance(t, ListType) and str(t.elem) == "bool" and t.size is not None:
        return f"::std::array<bool,{t.size}>"
    return None


def argument_type(t: Type, *, mutable: bool, opts: TypeOptions) -> str:
    value = _value_type(t, opts)
    if value is not None:
        return value
    s = str(t)
    if s == "Tensor":
        return (
            "at::Tensor &"
            if mutable and not opts.const_ref_for_mutable_tensors
            else "const at::Tensor &"
        )
    if s == "Scalar":
        return "const at::Scalar &"
    if isinstance(t, OptionalType):
        elem = str(t.elem)
        if elem == "Tensor":
            # Mutable or not: the dispatcher checks a kernel's parameter types against the
            # schema, and takes only an optional for `Tensor?` (an `at::Tensor &` for
            # `Tensor(a!)?`, torchgen's spelling, aborts the process at registration).
            return "const ::std::optional<at::Tensor> &"
        if elem == "Scalar":
            return "const ::std::optional<at::Scalar> &"
        list_elem = str(t.elem.elem) if isinstance(t.elem, ListType) else None
        if list_elem == "int":
            return "at::OptionalIntArrayRef"
        if list_elem == "SymInt":
            return "at::OptionalSymIntArrayRef" if opts.symint else "at::OptionalIntArrayRef"
        inner = argument_type(t.elem, mutable=mutable, opts=opts)
        if inner.startswith("const ") and inner.endswith(" &"):
            # An optional holds a value, not a reference: `str[]?` (no aten op has one).
            return f"const ::std::optional<{inner[len('const ') : -len(' &')]}> &"
        return f"::std::optional<{inner}>"
    if isinstance(t, ListType):
        elem = str(t.elem)
        if elem == "int":
            return "at::IntArrayRef"
        if elem == "SymInt":
            return "c10::SymIntArrayRef" if opts.symint else "at::IntArrayRef"
        if elem == "Tensor":
            return (
                "const at::ITensorListRef &" if opts.ilistref_for_tensor_lists else "at::TensorList"
            )
        if elem == "Scalar":
            return "at::ArrayRef<at::Scalar>"
        if elem == "Dimname":
            return "at::DimnameList"
        if elem == "Tensor?":
            return "const c10::List<::std::optional<at::Tensor>> &"
        if elem == "str":
            # The dispatcher unboxes a string list into a c10::List only (no aten op has one).
            return "const c10::List<::std::string> &"
        return f"at::ArrayRef<{argument_type(t.elem, mutable=mutable, opts=opts)}>"
    raise ValueError(f"no C++ argument type for '{t}'")


def return_type(r: Return, opts: TypeOptions) -> str:
    return _return_type(r.type, mutable=r.is_write, opts=opts)


def _return_type(t: Type, *, mutable: bool, opts: TypeOptions) -> str:
    value = _value_type(t, opts)
    if value is not None:
        return value
    s = str(t)
    if s == "Tensor":
        if not mutable:
            return "at::Tensor"
        return "const at::Tensor &" if opts.const_ref_for_mutable_tensors else "at::Tensor &"
    if s == "Scalar":
        return "at::Scalar"
    if isinstance(t, ListType) and t.size is None and not mutable:
        return f"::std::vector<{_return_type(t.elem, mutable=False, opts=opts)}>"
    if isinstance(t, OptionalType) and str(t.elem) == "Tensor":
        # An optional holds a Tensor, never a reference (`Tensor(a!)?`, which only custom
        # namespaces return, is a Tensor? to the dispatcher).
        return f"::std::optional<{_return_type(t.elem, mutable=False, opts=opts)}>"
    raise ValueError(f"no C++ return type for '{t}'")


def returns_type(returns: tuple[Return, ...], opts: TypeOptions) -> str:
    if not returns:
        return "void"
    if len(returns) == 1:
        return return_type(returns[0], opts)
    return "::std::tuple<" + ",".join(return_type(r, opts) for r in returns) + ">"


def schema_order_arguments(func: FunctionSchema) -> tuple[Argument, ...]:
    """Dispatcher argument order: positionals, kwarg-only (TensorOptions scattered), outs."""
    return func.arguments.flat_all


@dataclass(frozen=True)
class CppArgument:
    name: str
    type: str
    argument: Argument

    def decl(self) -> str:
        return f"{self.type} {self.name}"


def cpp_arguments(func: FunctionSchema, opts: TypeOptions) -> tuple[CppArgument, ...]:
    return tuple(
        CppArgument(a.name, argument_type(a.type, mutable=a.is_write, opts=opts), a)
        for a in schema_order_arguments(func)
    )


def dispatcher_options(f: NativeFunction) -> TypeOptions:
    """How f's arguments look in the dispatcher API (and so in its registered wrappers)."""
    return TypeOptions(
        symint=True,
        const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
        ilistref_for_tensor_lists=f.part_of_structured_group,
    )


def function_type(func: FunctionSchema, opts: TypeOptions) -> str:
    """`ret (arg, arg)`: the shape of `using schema = ...` in `<op>_ops.h`."""
    return function_type_of(returns_type(func.returns, opts), cpp_arguments(func, opts))


def function_type_of(returns: str, args: tuple[CppArgument, ...]) -> str:
    """function_type, from the return type and arguments the caller already has."""
    return f"{returns} ({', '.join(a.type for a in args)})"
