"""Backward nodes: what a node class saves, and its apply() body.

A node has one output edge per differentiable input, in argument order; a tensor-list input
has one edge per element, so the edges of each input are an index range computed from the
list sizes saved when the node is built. Formulas see saved tensors as `at::Tensor` (an
absent optional tensor as an undefined one) and saved tensor lists as
`std::vector<at::Tensor>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.autograd.formulas import free_names, uses
from atengen.autograd.model import DifferentiabilityInfo, ForwardDerivative, SavedAttribute
from atengen.errors import AtengenError
from atengen.torch_facts import AUTOGRAD_HELPERS_CALLABLE, AUTOGRAD_HELPERS_NOT_EXPORTED

# Value types (as cpp_names.value_type gives them) of what a node saves as SavedVariables.
SAVED_TENSOR = frozenset({"at::Tensor", "::std::optional<at::Tensor>"})
SAVED_TENSOR_LIST = frozenset({"at::TensorList", "::std::vector<at::Tensor>"})
# Differentiable input types: one edge each, or one edge per list element.
_SINGLE_INPUT = frozenset({"const at::Tensor &", "const ::std::optional<at::Tensor> &"})
_LIST_INPUT = frozenset({"at::TensorList"})

# Non-owning C++ types a node must store as an owning copy: (member type, conversion).
OWNING = {
    "c10::SymIntArrayRef": ("::std::vector<c10::SymInt>", ".vec()"),
    "at::IntArrayRef": ("::std::vector<int64_t>", ".vec()"),
    "c10::string_view": ("std::string", ""),
    # `zeros_like(x)` saves x's sizes and options; libtorch's own TypeAndSize::zeros() is not
    # exported, so the generated file defines SizesAndOptions.
    "torch::autograd::generated::TypeAndSize": ("SizesAndOptions", ""),
}


def unsupported(info: DifferentiabilityInfo, what: str) -> AtengenError:
    return AtengenError(info.loc, f"autograd codegen does not support {what} yet ('{info.name}')")


def manual_helpers(
    info: DifferentiabilityInfo, forward: tuple[ForwardDerivative, ...]
) -> frozenset[str]:
    """The helpers of torch's FunctionsManual.h that info's formulas use; an error for one the
    wheel does not export, which would otherwise surface as an undefined symbol at load time."""
    used = set()
    for formula in [d.formula for d in info.derivatives] + [x.formula for x in forward]:
        names = free_names(formula)
        missing = sorted(names.keys() & AUTOGRAD_HELPERS_NOT_EXPORTED)
        if missing:
            name = missing[0]
            what = f"calls {name}(), a helper" if names[name] else f"uses {name}, a name"
            raise AtengenError(
                info.loc,
                f"a formula of '{info.name}' {what} of torch/csrc/autograd/FunctionsManual.h "
                "that the torch wheel does not export; write the formula with at:: operators "
                "instead",
            )
        used |= names.keys() & AUTOGRAD_HELPERS_CALLABLE
    return frozenset(used)


@dataclass(frozen=True)
class InputRange:
    name: str
    is_list: bool


def input_ranges(info: DifferentiabilityInfo) -> tuple[InputRange, ...]:
    ranges = []
    for a in info.args_with_derivatives:
        if a.cpp_type in _SINGLE_INPUT:
            ranges.append(InputRange(a.name, False))
        elif a.cpp_type in _LIST_INPUT:
            ranges.append(InputRange(a.name, True))
        else:
            raise unsupported(info, f"gradients of '{a.name}' ({a.cpp_type})")
    return tuple(ranges)


def saved_kind(info: DifferentiabilityInfo, s: SavedAttribute) -> str:
    """'tensor', 'list' or 'value'."""
    if s.cpp_type in SAVED_TENSOR:
        return "tensor"
    if s.cpp_type in SAVED_TENSOR_LIST:
        return "list"
    if "Tensor>" in s.cpp_type or s.cpp_type.endswith("ITensorListRef"):
        raise unsupported(info, f"saving '{s.name}' ({s.cpp_type})")
    return "value"


def node(info: DifferentiabilityInfo, namespace: str) -> dict:
    """The template's data for info's backward node class."""
    ranges = input_ranges(info)
    members, released, unpack = [], [], []
    for attrs, is_output in ((info.all_saved_inputs, False), (info.all_saved_outputs, True)):
        owner = "getptr()" if is_output else "nullptr"
        for s in attrs:
            kind = saved_kind(info, s)
            if kind == "tensor":
                members.append(f"torch::autograd::SavedVariable {s.name}_")
                released.append(f"{s.name}_.reset_data();")
                unpack.append(f"auto {s.name} = {s.name}_.unpack({owner});")
            elif kind == "list":
                members += [
                    f"std::vector<torch::autograd::SavedVariable> {s.name}_",
                    f"bool {s.name}_released_ = false",
                ]
                released += [
                    f"for (auto& v : {s.name}_) v.reset_data();",
                    f"{s.name}_released_ = true;",
                ]
                unpack += [
                    f"TORCH_CHECK(!{s.name}_released_, torch::autograd::ERR_BACKWARD_TWICE);",
                    f"auto {s.name} = unpack_saved_list({s.name}_, {owner});",
                ]
            else:
                members.append(f"{OWNING.get(s.cpp_type, (s.cpp_type,))[0]} {s.name}")
    members += [f"size_t {r.name}_size_ = 0" for r in ranges if r.is_list]
    index_ranges, begin = [], "0"
    for r in ranges:
        end = f"{begin} + {r.name}_size_" if r.is_list else f"{begin} + 1"
        index_ranges.append(f"const torch::autograd::IndexRange {r.name}_ix{{{begin}, {end}}};")
        begin = f"{r.name}_ix.second"
    if any(uses(d.formula, "retain_variables") for d in info.derivatives):
        # A formula that would reuse a saved buffer unless the graph is retained: a node
        # cannot tell whether backward runs again, so it always takes the copying branch.
        unpack.append("const bool retain_variables = true;")
    if any(uses(d.formula, "grad") for d in info.derivatives):
        unpack.append("const auto& grad = grads[0];")
    for i, g in enumerate(info.available_named_gradients):
        unpack.append(f"const auto& {g} = grads[{i}];")
    names = [r.name for r in ranges]
    derivatives = []
    for d in info.derivatives:
        for v in d.var_names:
            if v not in names:
                raise unsupported(info, f"a formula for '{v}', which is not differentiable here")
        derivatives.append({"vars": list(d.var_names), "formula": d.formula})
    return {
        "cls": info.op,
        "name": f"{namespace}::{info.op}",
        "entry": f"{info.func.namespace}::{info.func.func.name}",
        "location": str(info.loc),
        "members": members,
        "released": released,
        "index_ranges": index_ranges,
        "unpack": unpack,
        "derivatives": derivatives,
    }
