"""Which operators get a Functionalize-key kernel, and of what kind (spec section 4).

Functionalization replaces mutations and aliasing with functional ops:

- a mutation op (inplace, out= or mutable kind) calls the functional variant of
  its group and writes the results back into its functional-tensor arguments;
- a view op records how to replay itself (and how to undo itself) on the
  functional tensor it views; an ``inplace_view`` op edits that record in place;
- a CompositeImplicitAutograd view is registered with its own composite kernel,
  so that it decomposes into the views above before functionalization sees it;
- every other op is left to torch's boxed Functionalize fallback.

This module is the model side of that: emitters ask `functionalize_plan` what a
function needs; the differential test compares the plans with torchgen's.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.errors import AtengenError
from atengen.model.groups import NativeFunctionsViewGroup
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel

# Mutating aten ops that torch's functionalization leaves alone: torch
# functionalizes them with hand-written kernels (lift, resize_, set_), or
# they are helpers that never reach a functionalized program and have no
# functional variant to call.
NOT_FUNCTIONALIZED = frozenset(
    {
        "aten::_cummax_helper",
        "aten::_cummin_helper",
        "aten::_fill_mem_eff_dropout_mask_",
        "aten::_flash_attention_forward_no_dropout_inplace",
        "aten::_slow_conv2d_backward.grad_input",
        "aten::adaptive_avg_pool3d_backward.grad_input",
        "aten::polygamma_",  # its argument order differs from polygamma's
        "aten::record_stream",
    }
)
# Groups (by any member's name) whose Functionalize kernels torch writes by hand.
HANDWRITTEN_GROUPS = frozenset({"aten::lift", "aten::resize_", "aten::set_.source_Tensor"})
# View ops torch's functionalization must not see (torch.Tensor constructor).
HANDWRITTEN_VIEWS = frozenset({"aten::lift_fresh"})
# Cumulative out= ops compute in the out tensor's dtype when no dtype is given;
# their functional call must be told that dtype explicitly.
OUT_DTYPE_OPS = frozenset({"aten::cumsum.out", "aten::cumprod.out"})


@dataclass(frozen=True)
class MutationPlan:
    """Mutation op -> the functional op it is rewritten to."""

    f: NativeFunction
    functional: NativeFunction
    out_dtype_from_out: bool = False


@dataclass(frozen=True)
class ViewPlan:
    """A view op (or an inplace_view op when ``inplace``) of a view group."""

    f: NativeFunction
    group: NativeFunctionsViewGroup
    inplace: bool


@dataclass(frozen=True)
class DecomposePlan:
    """A CompositeImplicitAutograd view: registered with its composite kernel."""

    f: NativeFunction


Plan = MutationPlan | ViewPlan | DecomposePlan


def qualified(f: NativeFunction) -> str:
    return f"{f.namespace}::{f.name}"


def modifies_arguments(f: NativeFunction) -> bool:
    return any(a.is_write for a in f.func.arguments.flat_all)


def functionalize_plan(model: OperatorModel, f: NativeFunction) -> Plan | None:
    """What the Functionalize kernel of ``f`` does; None: torch's fallback handles f.

    Raises AtengenError for a mutation op that has no functional variant.
    """
    view_group = model.view_group_of.get(id(f))
    if view_group is not None and f is not view_group.view_copy:
        if qualified(view_group.view) in HANDWRITTEN_VIEWS:
            return None
        if f.has_composite_implicit_autograd_kernel:
            return DecomposePlan(f)
        _check_view_geometry_kernel(view_group.view)
        if view_group.view_copy is None:
            view = view_group.view
            raise AtengenError(
                view.loc,
                f"view op '{view.name}' has no copy variant to functionalize with: views named "
                f"'*_inverse' get no generated '_copy' op; define "
                f"'{view.name.name.base.removesuffix('_inverse')}_scatter' (tagged view_copy) "
                "with the same arguments, or give the view a CompositeImplicitAutograd kernel",
            )
        return ViewPlan(f, view_group, inplace=f is view_group.view_inplace)
    if not modifies_arguments(f) or f.has_composite_implicit_autograd_kernel:
        return None
    group = model.group_of.get(id(f))
    if group is None:
        if qualified(f) in NOT_FUNCTIONALIZED:
            return None
        raise AtengenError(
            f.loc,
            f"'{f.name}' mutates its arguments but has no functional variant for "
            f"functionalization to call; add `autogen: {_suggested_autogen(f)}` to its entry "
            "(or define the functional op)",
        )
    if any(qualified(g) in HANDWRITTEN_GROUPS for g in group.functions()):
        return None
    return MutationPlan(f, group.functional, qualified(f) in OUT_DTYPE_OPS)


# Kernels that also run on meta tensors: a functionalized view replays itself on a
# meta copy of its base to find where it lies (see functionalize.h, reverse()).
META_CAPABLE_KEYS = frozenset(
    {"Meta", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"}
)


def _check_view_geometry_kernel(view: NativeFunction) -> None:
    # torch's own sparse and nested views are exempt: they are left to fail at run
    # time, as the scatter-back of a view is only defined for strided tensors anyway.
    if view.namespace != "aten" and not META_CAPABLE_KEYS & set(view.dispatch):
        raise AtengenError(
            view.loc,
            f"view op '{view.name}' needs a kernel that runs on meta tensors "
            "(CompositeExplicitAutograd or Meta) to be functionalized; "
            "or generate without functionalization",
        )


def _suggested_autogen(f: NativeFunction) -> str:
    base = f.name.name.base
    overload = f".{f.name.overload_name}" if f.name.overload_name else ""
    out = f"{base}.{f.name.overload_name}_out" if f.name.overload_name else f"{base}.out"
    return f"{base}{overload}, {out}"


def functionalized_functions(
    model: OperatorModel, functions: list[NativeFunction]
) -> list[tuple[NativeFunction, Plan]]:
    """The functions among ``functions`` that get a Functionalize kernel, with their plans."""
    result = []
    for f in functions:
        plan = functionalize_plan(model, f)
        if plan is not None:
            result.append((f, plan))
    return result
