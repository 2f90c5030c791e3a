"""Backward nodes: what a node class saves, and what its apply() computes, as the view-model
``templates/autograd_node.j2`` writes the C++ of.

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
from atengen.facts.wheel_facts import AutogradHelpers
from atengen.model.native_function import NativeFunction

# Value types (as cpp_names.value_type gives them) of what a node saves as SavedVariables.
SAVED_TENSOR = frozenset({"at::Tensor", "::std::optional<at::Tensor>"})
SAVED_TENSOR_LIST = frozenset({"at::TensorList", "::std::vector<at::Tensor>"})
# `Tensor?[]` (index's indices): saved like a list, absent entries as undefined tensors.
SAVED_OPTIONAL_TENSOR_LIST = frozenset({"c10::List<::std::optional<at::Tensor>>"})
# Differentiable input types: one edge each, or one edge per list element. `at::Tensor &` is the
# self of an in-place op's own entry.
SINGLE_INPUT = frozenset(
    {"const at::Tensor &", "at::Tensor &", "const ::std::optional<at::Tensor> &"}
)
_LIST_INPUT = frozenset({"at::TensorList"})

# Non-owning C++ types a node must store as an owning copy: (member type, conversion).
OWNING = {
    "c10::SymIntArrayRef": ("::std::vector<c10::SymInt>", ".vec()"),
    "at::IntArrayRef": ("::std::vector<int64_t>", ".vec()"),
    "c10::string_view": ("std::string", ""),
    # A foreach op's list of scalars, saved for the formulas of its elements.
    "at::ArrayRef<at::Scalar>": ("::std::vector<at::Scalar>", ".vec()"),
    # `zeros_like(x)` saves x's sizes and options; libtorch's own TypeAndSize::zeros() is not
    # exported, so the generated file defines SizesAndOptions.
    "torch::autograd::generated::TypeAndSize": ("SizesAndOptions", ""),
}


def unsupported(info: DifferentiabilityInfo, what: str) -> AtengenError:
    return AtengenError(info.loc, f"autograd codegen does not support {what} yet ('{info.name}')")


def unexported_helpers(
    info: DifferentiabilityInfo, forward: tuple[ForwardDerivative, ...], helpers: AutogradHelpers
) -> list[tuple[str, bool]]:
    """The helpers of torch's FunctionsManual.h that info's formulas use and the wheel does not
    export, each with whether a formula calls it (or only names it): formula by formula, and
    sorted within one."""
    used: dict[str, bool] = {}
    for formula in [d.formula for d in info.derivatives] + [x.formula for x in forward]:
        names = free_names(formula)
        for name in sorted(names.keys() & helpers.unexported_names):
            used[name] = used.get(name, False) or names[name]
    return list(used.items())


def manual_helpers(
    info: DifferentiabilityInfo, forward: tuple[ForwardDerivative, ...], helpers: AutogradHelpers
) -> frozenset[str]:
    """The helpers of torch's FunctionsManual.h that info's formulas use; an error for one the
    wheel does not export, which would otherwise surface as an undefined symbol at load time."""
    missing = unexported_helpers(info, forward, helpers)
    if missing:
        name, called = missing[0]
        what = f"calls {name}(), a helper" if called else f"uses {name}, a name"
        raise AtengenError(
            info.loc,
            f"a formula of '{info.name}' {what} of "
            "torch/csrc/autograd/FunctionsManual.h that the torch wheel does not export; write "
            "the formula with at:: operators instead",
        )
    used = set()
    for formula in [d.formula for d in info.derivatives] + [x.formula for x in forward]:
        used |= free_names(formula).keys() & helpers.callable_names
    return frozenset(used)


@dataclass(frozen=True)
class InputRange:
    name: str
    is_list: bool


def input_ranges(info: DifferentiabilityInfo) -> tuple[InputRange, ...]:
    ranges = []
    for a in info.args_with_derivatives:
        if a.cpp_type in SINGLE_INPUT:
            ranges.append(InputRange(a.name, False))
        elif a.cpp_type in _LIST_INPUT:
            ranges.append(InputRange(a.name, True))
        else:
            raise unsupported(info, f"gradients of '{a.name}' ({a.cpp_type})")
    return tuple(ranges)


def saved_kind(info: DifferentiabilityInfo, s: SavedAttribute) -> str:
    """'tensor', 'list', 'optional_list' or 'value'."""
    if s.cpp_type in SAVED_TENSOR:
        return "tensor"
    if s.cpp_type in SAVED_TENSOR_LIST:
        return "list"
    if s.cpp_type in SAVED_OPTIONAL_TENSOR_LIST:
        return "optional_list"
    if "Tensor>" in s.cpp_type or s.cpp_type.endswith("ITensorListRef"):
        raise unsupported(info, f"saving '{s.name}' ({s.cpp_type})")
    return "value"


@dataclass(frozen=True)
class SavedValue:
    """What a backward node keeps of an input or an output of the op (or a property of one)."""

    name: str  # as formulas name it; a tensor's or a list's member is `<name>_`
    expr: str  # what the autograd kernel saves: an expression of the inputs, or the output
    # "tensor" (a SavedVariable), "list" or "optional_list" (of SavedVariables) or "value"
    kind: str
    is_output: bool
    member_type: str  # a value's member: an owning copy of a view type (IntArrayRef...)
    conversion: str  # of a saved input to member_type, such as `.vec()`
    # An in-place kernel saves a copy of `self`: the op is about to overwrite it.
    clone: bool = False


def saved_values(info: DifferentiabilityInfo) -> tuple[SavedValue, ...]:
    """What info's node saves: the inputs, then the outputs."""
    saved = []
    for attrs, is_output in ((info.all_saved_inputs, False), (info.all_saved_outputs, True)):
        for s in attrs:
            member_type, conversion = OWNING.get(s.cpp_type, (s.cpp_type, ""))
            expr = s.name if is_output else s.expr
            kind = saved_kind(info, s)
            saved.append(SavedValue(s.name, expr, kind, is_output, member_type, conversion))
    return tuple(saved)


@dataclass(frozen=True)
class BackwardFormula:
    inputs: tuple[str, ...]  # the differentiable inputs it gives gradients of
    formula: str


@dataclass(frozen=True)
class BackwardNode:
    """A backward node class, as ``templates/autograd_node.j2`` writes it."""

    name: str  # the C++ struct
    qualified_name: str  # what its name() says: `<namespace>::<name>`
    entry: str  # the function of its derivatives entry
    location: str  # where the entry is
    saved: tuple[SavedValue, ...]
    inputs: tuple[InputRange, ...]  # differentiable inputs: one range of edges each, in order
    # A formula reading retain_variables (to reuse a saved buffer unless the graph is retained):
    # a node cannot tell whether backward runs again, so it always takes the copying branch.
    retain_variables: bool
    reads_grad: bool  # a formula reads `grad` (the first output's gradient)
    named_gradients: tuple[str, ...]  # `grad_<output>`, in the order of the grads vector
    formulas: tuple[BackwardFormula, ...]
    # A functional `_foreach_` op's node: each formula is the per-tensor op's, for element `i`
    # of the output list (`grads[i]`), and gives one gradient per element of its input list.
    foreach: bool = False

    @property
    def saves_optional_lists(self) -> bool:
        return any(s.kind == "optional_list" for s in self.saved)

    @property
    def uses_sizes_and_options(self) -> bool:
        return any(s.member_type == "SizesAndOptions" for s in self.saved if s.kind == "value")


def backward_node(info: DifferentiabilityInfo, namespace: str) -> BackwardNode:
    """The backward node class of info."""
    ranges = input_ranges(info)
    saved = saved_values(info)
    names = [r.name for r in ranges]
    for d in info.derivatives:
        for v in d.var_names:
            if v not in names:
                raise unsupported(info, f"a formula for '{v}', which is not differentiable here")
    foreach = is_foreach(info.func)
    if foreach:
        for d in info.derivatives:
            if len(d.var_names) > 1:
                raise unsupported(info, "a foreach op's formula for several inputs")
        for r in ranges:
            if not r.is_list:
                raise unsupported(info, f"a foreach op's gradient of the single tensor '{r.name}'")
    return BackwardNode(
        name=info.node,
        qualified_name=f"{namespace}::{info.node}",
        entry=f"{info.func.namespace}::{info.func.func.name}",
        location=str(info.loc),
        saved=saved,
        inputs=ranges,
        retain_variables=any(uses(d.formula, "retain_variables") for d in info.derivatives),
        reads_grad=any(uses(d.formula, "grad") for d in info.derivatives),
        named_gradients=tuple(info.available_named_gradients),
        formulas=tuple(BackwardFormula(d.var_names, d.formula) for d in info.derivatives),
        foreach=foreach,
    )


def is_foreach(f: NativeFunction) -> bool:
    return f.name.name.base.startswith("_foreach_")
