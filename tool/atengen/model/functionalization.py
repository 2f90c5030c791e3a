"""Which operators get a Functionalize-key kernel, and of what kind.

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
from atengen.facts import torch_facts as tf
from atengen.model.groups import NativeFunctionsViewGroup
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel


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


def left_to_torch(f: NativeFunction) -> bool:
    """A custom namespace's op that functionalization cannot rewrite (a mutation without a
    functional variant, a view without a copy): torch's own handling serves it
    (auto_functionalize under torch.compile), as it serves a TORCH_LIBRARY op. aten's own
    ops must be functionalized here, so for them this is an error."""
    return f.namespace != "aten" and not f.autogen


def functionalize_plan(model: OperatorModel, f: NativeFunction) -> Plan | None:
    """What the Functionalize kernel of ``f`` does; None: torch's fallback handles f.

    Raises AtengenError for a mutation op that has no functional variant.
    """
    view_group = model.view_group_of.get(id(f))
    if view_group is not None and f is not view_group.view_copy:
        if qualified(view_group.view) in tf.HANDWRITTEN_FUNCTIONALIZE_VIEWS:
            return None
        if f.has_composite_implicit_autograd_kernel:
            return DecomposePlan(f)
        if view_group.view_copy is None and left_to_torch(view_group.view):
            return None
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
        if qualified(f) in tf.NOT_FUNCTIONALIZED or left_to_torch(f):
            return None
        raise AtengenError(
            f.loc,
            f"'{f.name}' mutates its arguments but has no functional variant for "
            f"functionalization to call; add `autogen: {_suggested_autogen(f)}` to its entry "
            "(or define the functional op), or generate no Functionalize kernels "
            "(aten_codegen(functionalize = False), --nofunctionalize)",
        )
    if any(qualified(g) in tf.HANDWRITTEN_FUNCTIONALIZE_GROUPS for g in group.functions()):
        return None
    return MutationPlan(f, group.functional, qualified(f) in tf.OUT_DTYPE_OPS)


def _check_view_geometry_kernel(view: NativeFunction) -> None:
    # torch's own sparse and nested views are exempt: they are left to fail at run
    # time, as the scatter-back of a view is only defined for strided tensors anyway.
    if view.namespace != "aten" and not tf.META_CAPABLE_KEYS & set(view.dispatch):
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


def is_generated_view_copy(f: NativeFunction, g: NativeFunctionsViewGroup | None) -> bool:
    """Whether f is a view_copy op that gets the generator's view-then-clone kernel under
    CompositeExplicitAutogradNonFunctional (its YAML names the key but no one writes it).

    Only a copy named `<view>_copy` is one: a differently named one (slice_scatter, the copy of
    slice_inverse) has a kernel of its own, with its own semantics, which it keeps."""
    return (
        g is not None
        and f is g.view_copy
        and "view_copy" in f.tags
        and "CompositeExplicitAutogradNonFunctional" in f.dispatch
        and f.name.name.base == f"{g.view.name.name.base}_copy"
    )
