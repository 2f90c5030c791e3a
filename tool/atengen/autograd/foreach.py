"""`_foreach_` ops: autograd element by element, as view-models for
``templates/autograd_foreach.j2``.

A foreach op applies a per-tensor op to every element of its tensor lists (and the matching
element of its scalar lists). Its derivatives are the per-tensor op's (see matching.py):

- a functional foreach op (`_foreach_exp(Tensor[] self) -> Tensor[]`) records one node for the
  whole call, whose formulas run once per element (nodes.py), and computes the tangent of each
  output element by the per-tensor forward formula, from the tangents of that element's inputs;
- an in-place foreach op (`_foreach_exp_(Tensor(a!)[] self) -> ()`) records one node of the
  per-tensor op per element that requires grad, each saving what the per-tensor op would save,
  rebases each element's history on its node, and updates each element's tangent in place.

The per-tensor formulas name the per-tensor op's arguments (`self`, `other`); `ElementInput`
binds each to the foreach op's element (`self[i]`, `scalars[i]`, or a tensor or scalar shared
by all elements).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from atengen.api.calls import OpRef
from atengen.autograd.formulas import replace_ident, uses
from atengen.autograd.model import DEFAULT_KEY, DifferentiabilityInfo, FunctionDerivatives
from atengen.autograd.nodes import SavedValue, saved_values, unsupported
from atengen.autograd.signature import KernelSignature, kernel_signature
from atengen.model.native_function import NativeFunction
from atengen.model.schema_types import ListType


@dataclass(frozen=True)
class ElementInput:
    """An argument as the per-tensor formulas name it, and what it is for element `i`."""

    name: str  # `self`, `other`: the per-tensor op's (or, functional, the foreach op's) name
    expr: str  # `self[i]`; a tensor or scalar shared by every element: its name


@dataclass(frozen=True)
class ElementForward:
    """Forward AD of a foreach op, one element at a time: each element's formula reads the
    tangents (`<name>_t`) and primals (`<name>_p`) of that element's inputs."""

    list_arg: str  # the tensor list the op iterates over (its length is the output's)
    size_checks: tuple[str, ...]  # other tensor lists read by index: must be as long
    tangents: tuple[ElementInput, ...]
    primals: tuple[ElementInput, ...]
    output: str  # whose tangents it sets: `result` (the output list), `self` (in place)
    formula: str  # of element `i`
    original_self: bool  # reads the element's value from before the in-place op
    in_place: bool


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _element(f: NativeFunction, name: str) -> str:
    a = next(a for a in f.func.arguments.flat_non_out if a.name == name)
    return f"{name}[i]" if isinstance(a.type, ListType) else name


def _tensor_lists(f: NativeFunction) -> list[str]:
    return [
        a.name
        for a in f.func.arguments.flat_non_out
        if isinstance(a.type, ListType) and a.type.is_tensor_like()
    ]


def functional_forward(
    fd: FunctionDerivatives, info: DifferentiabilityInfo
) -> ElementForward | None:
    """The element-wise forward AD of a functional foreach op; None without a formula. Its
    info's formulas already name the foreach op's arguments, element `i` of lists included."""
    forward = (fd.forward_derivatives or {}).get(DEFAULT_KEY, ())
    if not forward:
        return None
    if len(forward) != 1 or forward[0].var_names != ("result",):
        raise unsupported(info, "a foreach op's forward formulas other than one for 'result'")
    x = forward[0]
    f = fd.func
    diff = {a.name for a in info.args_with_derivatives}
    tangents = _unique(n for n in x.required_inputs_fw_grad or () if n in diff)
    primals = _unique(x.required_inputs_primal or ())
    lists = _tensor_lists(f)
    return ElementForward(
        list_arg=lists[0],
        size_checks=tuple(n for n in lists[1:] if n in tangents),
        tangents=tuple(ElementInput(n, _element(f, n)) for n in tangents),
        primals=tuple(ElementInput(n, _element(f, n)) for n in primals),
        output="result",
        formula=x.formula,
        original_self=False,
        in_place=False,
    )


@dataclass(frozen=True)
class ForeachInplaceKernel:
    """The Autograd-key kernel of an in-place foreach op: a node of the per-tensor op per
    element of `self` that requires grad (see the module's docstring)."""

    kind: ClassVar[str] = "foreach_inplace"
    signature: KernelSignature
    list_arg: str  # `self`, the list written in place
    size_checks: tuple[str, ...]  # the other tensor lists, read by index: must be as long
    node: str  # the per-tensor op's node class; "" when nothing is differentiable
    differentiable_inputs: tuple[str, ...]  # the foreach op's arguments, whole
    element_inputs: tuple[str, ...]  # element `i` of each: the edges of node `i`
    saved_inputs: tuple[SavedValue, ...]  # expressions of element `i`
    saved_outputs: tuple[SavedValue, ...]  # `result`: the element, after the op
    forward: ElementForward | None


def _argument_names(f: NativeFunction, info: DifferentiabilityInfo) -> dict[str, str]:
    """The per-tensor op's argument names -> the foreach op's. A trailing argument the foreach
    op lacks (the per-tensor op's `alpha`) is left out."""
    pairs = zip(f.func.arguments.flat_non_out, info.func.func.arguments.flat_non_out, strict=False)
    return {ref.name: mine.name for mine, ref in pairs}


def _bind(expr: str, elements: dict[str, str], info: DifferentiabilityInfo) -> str:
    """expr, written with the per-tensor op's argument names, for element `i` (elements: those
    names -> element expressions)."""
    for ref in info.func.func.arguments.flat_non_out:
        if uses(expr, ref.name):
            if ref.name not in elements:
                raise unsupported(
                    info,
                    f"a foreach op whose per-tensor formulas read '{ref.name}', which it lacks",
                )
            expr = replace_ident(expr, ref.name, elements[ref.name])
    return expr


def foreach_inplace_kernel(
    fd: FunctionDerivatives, info: DifferentiabilityInfo, op: OpRef
) -> ForeachInplaceKernel:
    f = fd.func
    if info.output_differentiability_conditions or info.used_named_gradients:
        raise unsupported(info, "an in-place foreach op of this per-tensor op's formulas")
    ref_to_mine = _argument_names(f, info)
    names = {ref: _element(f, mine) for ref, mine in ref_to_mine.items()}
    diff = [a.name for a in info.args_with_derivatives]
    for n in diff:
        if n not in names:
            raise unsupported(info, f"a foreach op without the per-tensor op's input '{n}'")
    saved = saved_values(info)
    saved_inputs = []
    for s in saved:
        if s.is_output:
            continue
        expr = _bind(s.expr, names, info)
        saved_inputs.append(dataclasses.replace(s, expr=expr, clone=s.expr == "self"))
    saved_outputs = [s for s in saved if s.is_output]
    for s in saved_outputs:
        if s.kind != "tensor" or s.name != "result":
            raise unsupported(info, f"an in-place foreach op saving the output '{s.name}'")
    lists = _tensor_lists(f)
    list_arg = ref_to_mine.get("self", lists[0])
    return ForeachInplaceKernel(
        signature=kernel_signature(f, op, "autograd"),
        list_arg=list_arg,
        size_checks=tuple(n for n in lists if n != list_arg),
        node=info.node if info.has_derivatives else "",
        differentiable_inputs=tuple(ref_to_mine[n] for n in diff),
        element_inputs=tuple(names[n] for n in diff),
        saved_inputs=tuple(saved_inputs),
        saved_outputs=tuple(saved_outputs),
        forward=_inplace_forward(fd, info, names, list_arg),
    )


def _inplace_forward(
    fd: FunctionDerivatives, info: DifferentiabilityInfo, names: dict[str, str], list_arg: str
) -> ElementForward | None:
    forward = (fd.forward_derivatives or {}).get(DEFAULT_KEY, ())
    if not forward:
        return None
    (x,) = forward  # matching gives an in-place op exactly one
    diff = {a.name for a in info.args_with_derivatives}
    tangents = _unique(n for n in x.required_inputs_fw_grad or () if n in diff)
    primals = _unique(x.required_inputs_primal or ())
    formula = x.formula
    # The formula's tensors are read through `<name>_t` and `<name>_p`, bound per element; its
    # other arguments (scalars, lists of scalars) by their element expressions.
    tensors = {a.name for a in info.args_with_derivatives} | {"self"}
    formula = _bind(formula, {n: e for n, e in names.items() if n not in tensors}, info)
    for n in tangents + primals:
        if n not in names:
            raise unsupported(info, f"a foreach op without the per-tensor op's input '{n}'")
    return ElementForward(
        list_arg=list_arg,
        size_checks=(),  # the kernel checks every list first
        tangents=tuple(ElementInput(n, names[n]) for n in tangents),
        primals=tuple(ElementInput(n, names[n]) for n in primals),
        output="self",
        formula=formula,
        original_self=x.required_original_self_value,
        in_place=True,
    )
