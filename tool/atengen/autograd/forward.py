"""Forward-mode (tangent) formulas: expansion of the `auto_*` keywords, the
inputs each formula needs, and the rewrite for in-place variants."""

from __future__ import annotations

import re
from dataclasses import replace

from atengen.autograd.formulas import RESULT_INDEX_RE, replace_ident, uses
from atengen.autograd.model import Derivative, DiffArgument, ForwardDerivative
from atengen.model.native_function import DEFAULT_NAMESPACE, NativeFunction
from atengen.model.schema import SchemaKind

_TENSOR_LIST_TYPES = ("at::TensorList", "const at::ITensorListRef &")


class ForwardFormulaError(ValueError):
    """A forward formula the input gets wrong; ``key`` names the formula's entry key."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def result_index(name: str, n_returns: int) -> int | None:
    """`result` (one output) -> 0, `result<i>` -> i; None when it names no output."""
    if name == "result":
        return 0 if n_returns == 1 else None
    m = RESULT_INDEX_RE.match(name)
    if m and int(m.group(1)) < n_returns:
        return int(m.group(1))
    return None


def postprocess(
    f: NativeFunction,
    entry_name: str,
    args: tuple[DiffArgument, ...],
    derivatives: list[Derivative],
    forward_derivatives: list[tuple[str, ForwardDerivative]],
    args_with_derivatives: tuple[DiffArgument, ...],
) -> tuple[ForwardDerivative, ...]:
    is_foreach = f.name.name.base.startswith("_foreach_")

    def required(key: str, formula: str, suffix: str) -> tuple[str, ...]:
        found = []
        for a in args_with_derivatives:
            if a.cpp_type in _TENSOR_LIST_TYPES and not is_foreach:
                continue  # functions of tensor lists handle their tangents themselves
            if uses(formula, a.name):
                raise ForwardFormulaError(
                    key,
                    f"the forward formula of {entry_name} uses '{a.name}', which is ambiguous: "
                    f"write {a.name}_p for the primal value and {a.name}_t for the tangent",
                )
            if uses(formula, a.name + suffix):
                found.append(a.name)
        return tuple(found)

    result = []
    for key, fd in forward_derivatives:
        formula = fd.formula
        tangents = required(key, formula, "_t")
        if formula == "auto_element_wise":
            formula, tangents = _element_wise(
                key, f, entry_name, args, derivatives, forward_derivatives, args_with_derivatives
            )
        elif formula == "auto_linear":
            formula, tangents = _linear(
                key, f, entry_name, args, forward_derivatives, args_with_derivatives
            )
        result.append(
            replace(
                fd,
                formula=formula,
                required_inputs_fw_grad=tangents,
                required_inputs_primal=required(key, formula, "_p"),
            )
        )
    return tuple(result)


def _element_wise(
    key: str,
    f: NativeFunction,
    entry_name: str,
    args: tuple[DiffArgument, ...],
    derivatives: list[Derivative],
    forward_derivatives: list[tuple[str, ForwardDerivative]],
    args_with_derivatives: tuple[DiffArgument, ...],
) -> tuple[str, tuple[str, ...]]:
    """For an element-wise op the Jacobian is diagonal, so J v is the backward
    formula with the gradient replaced by the tangent (conjugated both ways for
    complex numbers) and inputs by their primals."""
    if f.kind is SchemaKind.inplace:
        raise ForwardFormulaError(
            key, f"auto_element_wise cannot be used for the in-place op {f.func.name}"
        )
    if (
        len(args_with_derivatives) != 1
        or len(forward_derivatives) > 1
        or len(forward_derivatives[0][1].var_names) > 1
    ):
        raise ForwardFormulaError(
            key,
            f"auto_element_wise in {entry_name} needs exactly one differentiable input and one "
            "differentiable output",
        )
    if len(derivatives) != 1:
        raise ForwardFormulaError(
            key, f"auto_element_wise in {entry_name} needs the backward formula of its input"
        )
    x = args_with_derivatives[0].name
    formula = replace_ident(derivatives[0].original_formula, "grad", f"{x}_t.conj()")
    for a in args_with_derivatives:
        formula = replace_ident(formula, a.name, f"{a.name}_p")
    # Every argument is listed as a required tangent, differentiable or not; the
    # kernels only look at the differentiable ones.
    return f"({formula}).conj()", tuple(a.name for a in args)


def _linear(
    key: str,
    f: NativeFunction,
    entry_name: str,
    args: tuple[DiffArgument, ...],
    forward_derivatives: list[tuple[str, ForwardDerivative]],
    args_with_derivatives: tuple[DiffArgument, ...],
) -> tuple[str, tuple[str, ...]]:
    """A linear op's Jacobian is the op itself: J v = op(v) with every
    differentiable input replaced by its tangent."""
    if len(forward_derivatives) > 1 or len(forward_derivatives[0][1].var_names) > 1:
        raise ForwardFormulaError(
            key, f"auto_linear in {entry_name} needs exactly one differentiable output"
        )
    differentiable = [a.name for a in args_with_derivatives]
    if not differentiable:
        raise ForwardFormulaError(key, f"auto_linear in {entry_name} needs a differentiable input")
    call_args = [a.name + "_t" if a.name in differentiable else a.name for a in args]
    name = entry_name + ("_symint" if f.func.has_symint() else "")
    namespace = "at" if f.namespace == DEFAULT_NAMESPACE else f.namespace
    if "function" in f.variants or f.namespace != DEFAULT_NAMESPACE:
        formula = f"{namespace}::{name}({', '.join(call_args)})"
    else:
        formula = f"{call_args[0]}.{name}({', '.join(call_args[1:])})"
    return formula, tuple(differentiable)


# ---------------------------------------------------------------------------------------------
# In-place variants reusing (or having) a forward formula


_SINGLE_METHOD_ON_SELF_T = re.compile(r"self_t\.(\w*)\((.*)\)")
_FUNCTION_ON_SELF_T = re.compile(r"(?:at::)?(\w+)\(self_t\b(.*)\)", re.DOTALL)


def _single_call_args(between: str) -> bool:
    """True when the `(` after `self_t.op` closes only at the very end."""
    depth = 1
    for ch in between:
        if ch == ")":
            depth -= 1
            if depth == 0:
                return False
        elif ch == "(":
            depth += 1
    return True


def _updates_self_t(formula: str) -> bool:
    """The formula is one call of an in-place op (named `..._`, `_symint` aside) on self_t:
    `self_t.mul_(x)`, `at::_index_put_impl_(self_t, ...)`, which returns self_t, updated."""
    m = _SINGLE_METHOD_ON_SELF_T.fullmatch(formula) or _FUNCTION_ON_SELF_T.fullmatch(formula)
    return (
        m is not None
        and _single_call_args(m.group(2))
        and m.group(1).removesuffix("_symint").endswith("_")
    )


def inplace_forward(
    f: NativeFunction, info_name: str, fd: ForwardDerivative, is_exact_match: bool
) -> ForwardDerivative:
    """The in-place form of a forward formula.

    The output of `x.op_()` is x itself, so `result` becomes `self_p`. A formula
    written for the in-place op must not read the overwritten input (`self_p`);
    one reused from the out-of-place op reads a copy of it (`original_self_p`),
    and updates self's tangent in place, directly (`self_t.op_(...)`) when the
    formula is one call of this very op on `self_t`. An in-place op's own formula
    that is not an in-place call on self_t (`self_t * factor`) computes the
    tangent out of place: it is copied into self's tangent, as a reused one is.
    """
    formula = fd.formula
    if uses(formula, "self_p"):
        if is_exact_match:
            raise ForwardFormulaError(
                "self",
                f"the forward formula of the in-place op {f.func.name} reads self_p, the value "
                "it overwrites; use 'result' (or original_self_p)",
            )
        formula = replace_ident(formula, "self_p", "original_self_p")
        formula = replace_ident(formula, "self_t", "original_self_t")
    formula = replace_ident(formula, "result", "self_p")
    primals = fd.required_inputs_primal
    if uses(formula, "self_p"):
        primals = (*primals, "self") if primals else ("self",)
    copies = False
    if not is_exact_match:
        m = _SINGLE_METHOD_ON_SELF_T.fullmatch(formula)
        if m and _single_call_args(m.group(2)) and m.group(1) == info_name:
            formula = f"self_t_raw.defined() ? self_t_raw.{m.group(1)}_({m.group(2)}) : {formula}"
        else:
            formula = f"self_t_raw.defined() ? self_t_raw.copy_({formula}) : {formula}"
            copies = True
    elif not _updates_self_t(formula.strip()):
        formula = f"self_t_raw.defined() ? self_t_raw.copy_({formula}) : {formula}"
        copies = True
    return ForwardDerivative(
        formula=formula,
        var_names=("self",),
        var_types=fd.var_types,
        required_inputs_fw_grad=fd.required_inputs_fw_grad,
        required_inputs_primal=primals,
        required_original_self_value=uses(formula, "original_self_p")
        or uses(formula, "original_self_t"),
        is_reusing_outplace_formula=not is_exact_match,
        copies_into_self_t=copies,
    )
