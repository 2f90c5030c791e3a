"""Functionalize-key kernels and view_copy kernels, as data for the C++ templates.

`functionalization.functionalize_plan` decides what a function needs; this module
spells it out: which ops the kernel calls, with which (unwrapped) arguments, and
how results map back onto the mutated arguments and the returns. The shared
mechanics live in ``rules/runtime/atengen/functionalize.h``.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.api.calls import OpRef, functional_call_args, op_ref
from atengen.api.declarations import wrapper_returns
from atengen.errors import CannotGenerate
from atengen.facts import torch_facts
from atengen.model.functionalization import MutationPlan, ViewPlan
from atengen.model.groups import NativeFunctionsViewGroup
from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument, SchemaKind


def _dtype_view_reverse(view: NativeFunction) -> tuple[OpRef, str] | None:
    entry = (
        torch_facts.DTYPE_VIEW_REVERSES.get(str(view.name)) if view.namespace == "aten" else None
    )
    if entry is None:
        return None
    base, overload, extra, args = entry
    unambiguous = f"{base}_{overload}" if overload else base
    extra_type = f", {extra}" if extra else ""
    op = OpRef(
        f"aten::{base}",
        overload,
        f"at::Tensor (const at::Tensor &{extra_type})",
        aten_call=f"at::_ops::{unambiguous}::call",
        header=f"<ATen/ops/{base}_ops.h>",
    )
    return op, args


@dataclass(frozen=True)
class MutationCall:
    op: OpRef  # the mutation op itself (redispatched when nothing is functional)
    functional: OpRef
    meta_check_args: tuple[str, ...]  # empty: no meta-tensor shape check
    meta_converted: tuple[str, ...]  # tensor-like arguments, as meta copies atg_m_<name>
    unwrapped: tuple[str, ...]  # tensor-like arguments, unwrapped as atg_u_<name>
    mutated: tuple[str, ...]
    others: tuple[str, ...]  # tensor-like arguments that are not mutated
    xla_checked: tuple[str, ...]  # plain Tensor arguments that may live on XLA
    redispatch_args: tuple[str, ...]
    redispatch_return: str  # may use atg_result
    binds_redispatch_result: bool
    functional_args: tuple[str, ...]
    write_backs: tuple[tuple[str, str], ...]  # (argument, expression over atg_result)
    return_expr: str

    def ops(self) -> tuple[OpRef, ...]:
        return (self.op, self.functional)


@dataclass(frozen=True)
class ViewCall:
    inplace: OpRef | None  # inplace_view ops: the op redispatched for plain tensors
    arg_names: tuple[str, ...]
    view: OpRef
    view_copy: OpRef
    result_type: str  # at::Tensor or ::std::vector<at::Tensor>
    self_name: str
    unwrapped: tuple[str, ...]  # tensor-like arguments besides self
    captures: tuple[tuple[str, str], ...]  # (capture name, expression)
    view_args: tuple[str, ...]  # after atg_base, in terms of the captures
    symbolic_args: tuple[str, ...]
    is_as_strided: bool
    reverse: tuple[OpRef, str] | None  # dtype views: (op, arguments) of their reverse

    def ops(self) -> tuple[OpRef, ...]:
        extra = (self.reverse[0],) if self.reverse else ()
        return (self.view, self.view_copy, *((self.inplace,) if self.inplace else ()), *extra)


@dataclass(frozen=True)
class ViewCopyCall:
    view: OpRef
    args: tuple[str, ...]

    def ops(self) -> tuple[OpRef, ...]:
        return (self.view,)


def _tensor_like(a: Argument) -> bool:
    return a.type.is_tensor_like()


def _part(i: int, n: int, var: str = "atg_result") -> str:
    return var if n == 1 else f"::std::get<{i}>({var})"


def _tuple(f: NativeFunction, parts: list[str]) -> str:
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0]
    return f"{wrapper_returns(f)}({', '.join(parts)})"


def mutation_call(plan: MutationPlan) -> MutationCall:
    f, functional = plan.f, plan.functional
    args = f.func.arguments.flat_all
    unwrapped = {a.name: f"atg_u_{a.name}" for a in args if _tensor_like(a)}
    mutated = [a for a in args if a.is_write]
    by_alias = {a.annotation.alias_set: a.name for a in mutated if a.annotation is not None}

    # Returns of the mutation op: aliases of mutated arguments, or fresh values.
    aliased: dict[int, str] = {}
    for i, r in enumerate(f.func.returns):
        if r.is_write:
            if r.annotation is None or r.annotation.alias_set not in by_alias:
                raise CannotGenerate(f"return {i} aliases no mutated argument")
            aliased[i] = by_alias[r.annotation.alias_set]
    fresh = [i for i in range(len(f.func.returns)) if i not in aliased]

    n_own = len(f.func.returns)
    redispatch_parts = [
        aliased[i] if i in aliased else _part(i, n_own) for i in range(len(f.func.returns))
    ]

    # The functional op returns the fresh values first, then the new values of
    # the mutated arguments, in argument order.
    n_fn = len(functional.func.returns)
    if len(fresh) + len(mutated) != n_fn:
        raise CannotGenerate(
            f"functional variant '{functional.name}' returns {n_fn} values, but "
            f"'{f.name}' has {len(fresh)} fresh returns and {len(mutated)} mutated arguments"
        )
    fresh_index = {i: k for k, i in enumerate(fresh)}
    return_parts = [
        aliased[i] if i in aliased else f"atengen::fz::wrap({_part(fresh_index[i], n_fn)})"
        for i in range(len(f.func.returns))
    ]
    write_backs = tuple((a.name, _part(len(fresh) + k, n_fn)) for k, a in enumerate(mutated))

    own = {a.name: unwrapped.get(a.name, a.name) for a in args}
    functional_args = functional_call_args(f, functional, unwrapped)
    if plan.out_dtype_from_out:
        out = unwrapped[f.func.arguments.out[0].name]
        functional_args = [
            f"({e}.has_value() ? {e} : ::std::make_optional({out}.scalar_type()))"
            if a.name == "dtype"
            else e
            for a, e in zip(functional.func.arguments.flat_all, functional_args, strict=True)
        ]

    # The inplace op itself runs on meta tensors first, so that shape errors
    # the functional op would not raise (broadcasting into self) still do.
    # Custom ops without a kernel that runs on meta tensors skip the check.
    has_storage = any(str(a.type) in ("Storage", "Storage?") for a in args)
    runs_on_meta = f.namespace == "aten" or bool(torch_facts.META_CAPABLE_KEYS & set(f.dispatch))
    meta_check: tuple[str, ...] = ()
    if f.kind is SchemaKind.inplace and not has_storage and runs_on_meta:
        meta_check = tuple(f"atg_m_{a.name}" if _tensor_like(a) else a.name for a in args)
    return MutationCall(
        op=op_ref(f),
        functional=op_ref(functional),
        meta_check_args=meta_check,
        meta_converted=tuple(unwrapped) if meta_check else (),
        unwrapped=tuple(unwrapped),
        mutated=tuple(a.name for a in mutated),
        others=tuple(a.name for a in args if _tensor_like(a) and not a.is_write),
        xla_checked=tuple(a.name for a in args if str(a.type) == "Tensor" and not a.is_write),
        redispatch_args=tuple(own[a.name] for a in args),
        redispatch_return=_tuple(f, redispatch_parts),
        binds_redispatch_result=bool(fresh),
        functional_args=tuple(functional_args),
        write_backs=write_backs,
        return_expr=_tuple(f, return_parts),
    )


def view_call(plan: ViewPlan) -> ViewCall:
    f, g = plan.f, plan.group
    view = g.view
    if g.view_copy is None:
        raise CannotGenerate(f"view '{view.name}' has no view_copy op to functionalize with")
    args = f.func.arguments.flat_all
    if not args or not _tensor_like(args[0]) or args[0].annotation is None:
        raise CannotGenerate("the first argument of a view op must be the aliased tensor")
    self_name = args[0].name
    rest = args[1:]
    unwrapped = tuple(a.name for a in rest if _tensor_like(a))
    captures = tuple(
        (f"atg_c_{a.name}", f"atg_u_{a.name}" if _tensor_like(a) else a.name) for a in rest
    )
    view_args = tuple(f"atengen::fz::borrow(atg_c_{a.name})" for a in rest)
    result = wrapper_returns(view)
    if result not in ("at::Tensor", "::std::vector<at::Tensor>"):
        raise CannotGenerate(f"view op returns {result}; expected one tensor or a tensor list")
    return ViewCall(
        inplace=op_ref(f) if plan.inplace else None,
        arg_names=tuple(a.name for a in args),
        view=op_ref(view),
        view_copy=op_ref(g.view_copy),
        result_type=result,
        self_name=self_name,
        unwrapped=unwrapped,
        captures=captures,
        view_args=view_args,
        symbolic_args=tuple(a.name for a in rest if a.type.is_symint_like()),
        is_as_strided=view.name.name.base == "as_strided",
        reverse=_dtype_view_reverse(view),
    )


def view_copy_call(f: NativeFunction, g: NativeFunctionsViewGroup) -> ViewCopyCall:
    return ViewCopyCall(op_ref(g.view), tuple(a.name for a in f.func.arguments.flat_all))
