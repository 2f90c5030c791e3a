"""Autograd-key kernels (and ADInplaceOrView kernels) of one function, as the view-models
``templates/autograd_kernels.j2`` writes the C++ of.

- functional and in-place ops: record the backward node, save what the formulas need,
  redispatch below autograd, then attach the outputs to the node and set forward-mode tangents;
- out= ops: refuse inputs or outputs that require grad and tangents, as torch's own out= ops do
  (autograd does not differentiate through out=), then redispatch;
- ADInplaceOrView: bump the version counters of what a mutating op wrote, or make a view op's
  output a view of its base.

Kernels call the operator below them through `api/calls.py`'s OpRef: aten ops through
`at::_ops::<op>::redispatch`, custom ops through a typed handle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from atengen.api.calls import OpRef
from atengen.api.cpp_types import cpp_arguments, dispatcher_options
from atengen.autograd.cpp_names import formula_outputs, return_names
from atengen.autograd.foreach import ElementForward
from atengen.autograd.formulas import uses
from atengen.autograd.model import DEFAULT_KEY, DifferentiabilityInfo, FunctionDerivatives
from atengen.autograd.nodes import (
    OWNING,
    SINGLE_INPUT,
    SavedValue,
    is_foreach,
    saved_values,
    unsupported,
)
from atengen.autograd.signature import KernelSignature, handle_var, kernel_signature
from atengen.model.native_function import NativeFunction
from atengen.model.schema import SchemaKind
from atengen.model.schema_types import ListType


@dataclass(frozen=True)
class ForwardFormula:
    output: str  # whose tangent it computes
    formula: str


@dataclass(frozen=True)
class AutogradKernel:
    """The Autograd-key kernel of a functional or in-place op."""

    kind: ClassVar[str] = "autograd"
    signature: KernelSignature
    base_name: str  # the op's name in error messages
    in_place: bool
    node: str  # the backward node class; "" when nothing is differentiable
    differentiable_inputs: tuple[str, ...]
    list_inputs: tuple[str, ...]  # differentiable tensor lists: the node records their sizes
    saved_inputs: tuple[SavedValue, ...]
    outputs: tuple[str, ...]  # as the formulas name them
    graph_outputs: tuple[str, ...]  # the outputs the node gets gradients for
    # Those of graph_outputs that are tensor lists (a foreach op's; a view op's several views):
    # each element is an output of the node.
    list_outputs: tuple[str, ...]
    saved_outputs: tuple[SavedValue, ...]
    forward: tuple[ForwardFormula, ...]  # none: forward AD is an error
    tangent_inputs: tuple[str, ...]  # inputs whose tangents forward formulas read
    primals: tuple[str, ...]  # inputs whose primals (`x_p`) forward formulas read
    original_self: bool  # forward formulas read self's value from before an in-place op
    # In-place: a formula computing self's new tangent out of place reads self's tangent,
    # which is overwritten after it runs; under grad mode it reads a copy (a graph through the
    # formula may have saved it), as in torch.
    clone_self_tangent: bool
    # output_differentiability's condition (a C++ expression of the inputs): false, the output
    # is not differentiable, backward or forward, as in torch's kernels.
    condition: str
    # A functional foreach op's forward AD, element by element (then `forward` is empty).
    element_forward: ElementForward | None = None


def autograd_kernel(
    fd: FunctionDerivatives,
    info: DifferentiabilityInfo,
    op: OpRef,
    element_forward: ElementForward | None = None,
) -> AutogradKernel:
    """The kernel of a functional or in-place op; a functional foreach op's forward AD is
    element_forward (foreach.py)."""
    f = fd.func
    inplace = f.kind is SchemaKind.inplace
    diff = [a.name for a in info.args_with_derivatives]
    types = {a.name: a.cpp_type for a in info.args_with_derivatives}
    saved = saved_values(info)
    foreach = is_foreach(f)
    forward = () if foreach else (fd.forward_derivatives or {}).get(DEFAULT_KEY, ())
    tangent_inputs = sorted(
        {n for x in forward for n in (x.required_inputs_fw_grad or ()) if n in diff}
    )
    for n in tangent_inputs:
        if types[n] not in SINGLE_INPUT:
            raise unsupported(info, f"a forward formula reading the tangents of '{n}'")
    outputs = [n for n, _ in formula_outputs(info.func)]
    output_types = dict(formula_outputs(info.func))
    graph_outputs = []
    if info.has_derivatives:
        graph_outputs = (
            ["self"] if inplace else _differentiable_outputs(info, outputs, output_types)
        )
        for t in graph_outputs:
            if not inplace and output_types[t] not in _GRAPH_OUTPUT_TYPES:
                raise unsupported(info, f"the output '{t}' ({output_types[t]}) in a graph")
    inplace_forward = forward[0] if inplace and forward else None
    formulas = []
    for x in forward:
        if len(x.var_names) != 1:
            raise unsupported(info, "a forward formula for several outputs")
        formulas.append(ForwardFormula(x.var_names[0], x.formula))
    return AutogradKernel(
        signature=kernel_signature(f, op, "autograd"),
        base_name=str(f.func.name.name),
        in_place=inplace,
        node=info.node if info.has_derivatives else "",
        differentiable_inputs=tuple(diff),
        list_inputs=tuple(n for n in diff if types[n] == "at::TensorList"),
        saved_inputs=tuple(
            dataclasses.replace(s, clone=inplace and s.expr == "self")
            for s in saved
            if not s.is_output
        ),
        outputs=tuple(outputs),
        graph_outputs=tuple(graph_outputs),
        list_outputs=tuple(
            t for t in graph_outputs if not inplace and output_types[t] == _TENSOR_VECTOR
        ),
        saved_outputs=tuple(s for s in saved if s.is_output),
        forward=tuple(formulas),
        tangent_inputs=tuple(tangent_inputs),
        primals=tuple(sorted({n for x in forward for n in (x.required_inputs_primal or ())})),
        original_self=any(x.required_original_self_value for x in forward),
        # torch's kernels clone it for the formulas they reuse, whether copied into self's
        # tangent or applied to it directly; the in-place op's own formula only when copied.
        clone_self_tangent=inplace_forward is not None
        and "self" in tangent_inputs
        and uses(inplace_forward.formula, "self_t")
        and (inplace_forward.is_reusing_outplace_formula or inplace_forward.copies_into_self_t),
        condition=(info.output_differentiability_conditions or ("",))[0],
        element_forward=element_forward,
    )


_TENSOR_VECTOR = "::std::vector<at::Tensor>"
# A tensor list output is an output of the node per element: a foreach op's results, and a view
# op's several views (as `chunk` returns them; torch's ADInplaceOrView kernel made them views).
_GRAPH_OUTPUT_TYPES = frozenset({"at::Tensor", _TENSOR_VECTOR})


def _differentiable_outputs(
    info: DifferentiabilityInfo, outputs: list[str], types: dict[str, str]
) -> list[str]:
    """The outputs the node gets gradients for. Without output_differentiability: the tensor
    and tensor-list outputs, and of those only the first when the formulas read the single
    `grad` (as in torch, where `cummax`'s indices or `frexp`'s exponent never require grad)."""
    if info.output_differentiability:
        return [n for n, d in zip(outputs, info.output_differentiability, strict=True) if d]
    # Tensor lists too: differentiable, so that the caller refuses them rather than leaving
    # them out of the graph.
    tensors = [n for n in outputs if "at::Tensor" in types[n]]
    if any(uses(d.formula, "grad") for d in info.derivatives):
        return tensors[:1]
    return tensors


@dataclass(frozen=True)
class OutKernel:
    """The Autograd-key kernel of an out= op: autograd does not differentiate through it, so
    inputs that would need gradients, outputs that require grad, and tangents are errors."""

    kind: ClassVar[str] = "out"
    signature: KernelSignature
    base_name: str  # the op's name in the requires-grad error
    unambiguous_name: str  # its name in the forward AD error
    differentiable_inputs: tuple[str, ...]
    outputs: tuple[str, ...]  # the out arguments


def out_kernel(f: NativeFunction, info: DifferentiabilityInfo, op: OpRef) -> OutKernel:
    return OutKernel(
        signature=kernel_signature(f, op, "autograd"),
        base_name=str(f.func.name.name),
        unambiguous_name=f.name.unambiguous_name(),
        differentiable_inputs=tuple(a.name for a in info.args_with_derivatives),
        outputs=tuple(a.name for a in f.func.arguments.out),
    )


@dataclass(frozen=True)
class BumpVersionKernel:
    """The ADInplaceOrView kernel of an in-place or out= op: bumps the version counter of every
    argument it writes, so that saved tensors can tell they were overwritten."""

    kind: ClassVar[str] = "bump_version"
    signature: KernelSignature
    mutated: tuple[str, ...]
    mutated_lists: tuple[str, ...]  # those that are tensor lists (`_foreach_exp_`'s self)
    returns: tuple[str, ...]  # the names of what it returns (the mutated arguments)


def inplace_or_view_kernel(f: NativeFunction, op: OpRef) -> BumpVersionKernel | None:
    args = cpp_arguments(f.func, dispatcher_options(f))
    mutated = [a for a in args if a.argument.is_write]
    names = return_names(f)
    if not mutated or f.is_view_op:
        return None
    return BumpVersionKernel(
        kernel_signature(f, op, "inplace_or_view"),
        tuple(a.name for a in mutated),
        tuple(a.name for a in mutated if isinstance(a.argument.type, ListType)),
        names,
    )


@dataclass(frozen=True)
class ViewState:
    """An argument of a view op that replaying it needs, kept by its ViewFunc."""

    name: str
    member_type: str  # an owning type: `::std::vector<int64_t>` for an `at::IntArrayRef`
    conversion: str  # of the parameter to member_type, such as `.vec()`
    kind: str  # "symint", "symints", "tensor" (what ViewFunc lists and sets) or "value"


@dataclass(frozen=True)
class ViewReplay:
    """A torch::autograd::ViewFunc of a view op: what autograd calls to recreate the view on
    another base, where as_strided cannot (or view replay is on), as torch's kernels record."""

    struct: str
    base: str  # the op's argument the view is taken of
    call: str  # what calls the op: `<handle>().call`
    arguments: tuple[str, ...]  # the op's arguments, in order
    state: tuple[ViewState, ...]  # every argument but the base


# The parameter types a ViewFunc keeps (see nodes.OWNING for the arrays), and how ViewFunc
# lists them.
_VIEW_STATE_KINDS = {
    "c10::SymInt": "symint",
    "c10::SymIntArrayRef": "symints",
    "const at::Tensor &": "tensor",
    "int64_t": "value",
    "bool": "value",
    "double": "value",
    "at::IntArrayRef": "value",
    "const at::Scalar &": "value",
    "at::ScalarType": "value",
}


def _view_replay(f: NativeFunction, op: OpRef, base: str) -> ViewReplay | None:
    """None where an argument's type is not one a ViewFunc here keeps: then autograd replays
    the view with as_strided, which it can for any strided tensor."""
    args = cpp_arguments(f.func, dispatcher_options(f))
    state = []
    for a in args:
        if a.name == base:
            continue
        kind = _VIEW_STATE_KINDS.get(a.type)
        if kind is None:
            return None
        value = a.type.removeprefix("const ").removesuffix(" &")
        member_type, conversion = OWNING.get(value, (value, ""))
        state.append(ViewState(a.name, member_type, conversion, kind))
    struct = "".join(part.title() for part in f.name.unambiguous_name().split("_")) + "ViewFunc"
    call = f"{op.aten_call}" if op.aten_call else f"{handle_var(op)}().call"
    return ViewReplay(struct, base, call, tuple(a.name for a in args), tuple(state))


@dataclass(frozen=True)
class ViewKernel:
    """The ADInplaceOrView kernel of a view op (`Tensor(a) self -> Tensor(a)`): its output
    becomes a differentiable view of the aliased input."""

    kind: ClassVar[str] = "view"
    signature: KernelSignature
    base: str  # the input the output aliases
    replay: ViewReplay | None  # None: autograd replays the view with as_strided


def view_kernel(f: NativeFunction, info: DifferentiabilityInfo, op: OpRef) -> ViewKernel:
    returns = f.func.returns
    if len(returns) != 1 or returns[0].annotation is None or str(returns[0].type) != "Tensor":
        raise unsupported(info, "view ops that do not return exactly one Tensor")
    aliases = returns[0].annotation.alias_set
    bases = [
        a
        for a in f.func.arguments.flat_non_out
        if a.annotation is not None and a.annotation.alias_set == aliases
    ]
    if len(bases) != 1 or str(bases[0].type) != "Tensor":
        raise unsupported(info, "view ops whose output aliases no single Tensor input")
    base = bases[0].name
    return ViewKernel(kernel_signature(f, op, "inplace_or_view"), base, _view_replay(f, op, base))
