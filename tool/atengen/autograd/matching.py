"""Give every NativeFunction the differentiability info it uses.

In order: the entry written for exactly this function; the entry of its
functional variant (so `mul_` and `mul.out` use `mul`'s formulas); for
generated functional variants, the entry of the mutable op they come from; for
`_foreach_` ops, an info derived from the formulas of the per-tensor op.
Generated out= variants get none (they call the functional op, which records).
"""

from __future__ import annotations

from dataclasses import replace

from atengen.autograd import forward
from atengen.autograd.cpp_names import api_arguments, value_type
from atengen.autograd.formulas import free_names, replace_ident
from atengen.autograd.model import (
    DEFAULT_KEY,
    Derivative,
    DifferentiabilityInfo,
    ForwardDerivative,
    FunctionDerivatives,
    SavedAttribute,
)
from atengen.errors import AtengenError
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import FunctionSchema, SchemaKind
from atengen.model.schema_types import ListType

InfoDict = dict[str, DifferentiabilityInfo]
_FOREACH = "_foreach_"


def add_view_copy_infos(infos: dict[tuple[str, str], InfoDict], model: OperatorModel) -> None:
    """`{view}_copy` ops differentiate exactly like their views; an entry written
    for the copy op itself wins."""
    copies = {}
    for per_key in infos.values():
        first = next(iter(per_key.values()))
        group = model.view_group_of.get(id(first.func))
        if group is None or group.view is not first.func or group.view_copy is None:
            continue
        copy = group.view_copy
        key = (copy.namespace, str(copy.func))
        if key in infos:
            continue
        copies[key] = {
            k: replace(
                info,
                name=f"{info.name}_copy",
                func=copy,
                op=None if info.op is None else f"{info.op}_copy",
            )
            for k, info in per_key.items()
        }
    infos.update(copies)


def match_functions(
    model: OperatorModel, infos: dict[tuple[str, str], InfoDict]
) -> tuple[FunctionDerivatives, ...]:
    functional: dict[tuple[str, str], InfoDict] = {}
    non_functional: dict[tuple[str, str], InfoDict] = {}
    # Candidate per-tensor ops of foreach ops, by base name: (signature, infos).
    functional_schemas: dict[str, list[tuple[FunctionSchema, InfoDict]]] = {}
    non_functional_schemas: dict[str, list[tuple[FunctionSchema, InfoDict]]] = {}
    for per_key in infos.values():
        f = next(iter(per_key.values())).func
        sig = (f.namespace, f.func.grouping_key)
        is_functional = f.kind is SchemaKind.functional
        (functional if is_functional else non_functional)[sig] = per_key
        by_base = functional_schemas if is_functional else non_functional_schemas
        by_base.setdefault(f.name.name.base, []).append(
            (f.func.signature(strip_default=True), per_key)
        )

    def find(f: NativeFunction) -> tuple[InfoDict | None, bool]:
        if f.generated and f.kind is SchemaKind.out:
            return None, False
        exact = infos.get((f.namespace, str(f.func)))
        if exact is not None:
            return exact, True
        sig = (f.namespace, f.func.grouping_key)
        is_foreach = f.name.name.base.startswith(_FOREACH)
        if sig in functional and not is_foreach:
            return functional[sig], False
        if f.generated and sig in non_functional:
            per_key = non_functional[sig]
            for info in per_key.values():
                if any("self" in s.name for s in info.all_saved_inputs):
                    raise AtengenError(
                        info.loc,
                        f"the formulas of '{info.name}' save self, so they cannot be reused for "
                        f"its generated functional variant '{f.func.name}'; give that variant "
                        "its own entry",
                    )
            return per_key, False
        if is_foreach:
            derived = _foreach_info(f, functional_schemas, non_functional_schemas)
            if derived is None:
                return None, False
            info, generated = derived
            return {DEFAULT_KEY: info}, generated
        return None, False

    result = []
    errors: list[AtengenError] = []
    for f in model.functions:
        try:
            result.append(_function_derivatives(f, *find(f)))
        except AtengenError as e:
            errors.append(e)
    if errors:
        raise AtengenError.combine([x for e in errors for x in e.errors])
    return tuple(result)


def _function_derivatives(
    f: NativeFunction, per_key: InfoDict | None, is_exact: bool
) -> FunctionDerivatives:
    if not per_key:
        return FunctionDerivatives(f, None, None, False)
    inplace = f.kind is SchemaKind.inplace
    if inplace:
        for info in per_key.values():
            for d in info.derivatives:
                if "self" in d.var_names and any(
                    "strides_or_error" in s.expr for s in d.saved_inputs
                ):
                    raise AtengenError(
                        info.loc,
                        "'.sym_strides()' in the 'self' formula cannot be used by the in-place "
                        f"op {f.func.name}",
                    )
    fw: dict[str, tuple[ForwardDerivative, ...]] = {}
    for key, info in per_key.items():
        if not info.forward_derivatives or not inplace:
            fw[key] = info.forward_derivatives
            continue
        if len(info.forward_derivatives) != 1:
            raise AtengenError(
                info.loc, f"the in-place op {f.func.name} needs exactly one forward formula"
            )
        try:
            fw[key] = (
                forward.inplace_forward(f, info.name, info.forward_derivatives[0], is_exact),
            )
        except forward.ForwardFormulaError as e:
            raise AtengenError(info.loc, str(e)) from None
    return FunctionDerivatives(f, per_key, fw, is_exact)


# ---------------------------------------------------------------------------------------------
# _foreach_ ops: one output per list element, each differentiated like the per-tensor op


def _is_reference(f: NativeFunction, ref: FunctionSchema) -> bool:
    """`ref` (a signature) is the per-tensor op of foreach op `f`: same name after
    `_foreach_`, and argument by argument the same type or the element type. A
    reference with one more, last argument `alpha` matches too (the foreach ops
    take no alpha)."""
    if f.name.name.base.split(_FOREACH)[-1] != ref.name.name.base:
        return False
    mine, theirs = f.func.arguments.flat_non_out, ref.arguments.flat_non_out
    if len(mine) != len(theirs) and not (
        len(theirs) == len(mine) + 1 and theirs[-1].name == "alpha"
    ):
        return False
    return all(
        r.type == a.type or (isinstance(a.type, ListType) and r.type == a.type.elem)
        for a, r in zip(mine, theirs, strict=False)
    )


def _saved_argument(
    f: NativeFunction, ref: DifferentiabilityInfo, s: SavedAttribute, ref_names: dict[str, str]
) -> str:
    """The argument of the per-tensor op `ref` that its saved value `s` is taken from.

    The expression is not always `<arg>.<property>`: `strides_or_error(mat2, "mat2")` and
    `TensorGeometry(self)` put the argument inside a call. So: the argument the member is named
    after (`mat2_sym_strides`) that the expression uses outside string literals; of several,
    the longest name (`self_t` over `self`). None fits when the argument is one the foreach op
    does not take (the per-tensor op's trailing `alpha`)."""
    used = free_names(s.expr)
    fits = [n for n in ref_names if (s.name == n or s.name.startswith(n + "_")) and n in used]
    if not fits:
        raise AtengenError(
            ref.loc,
            f"'{f.func.name}' takes its formulas from '{ref.name}', which saves '{s.expr}', "
            f"not an argument of '{f.func.name}'; give '{f.func.name}' its own entry",
        )
    return max(fits, key=len)


def _foreach_info(
    f: NativeFunction,
    functional: dict[str, list[tuple[FunctionSchema, InfoDict]]],
    non_functional: dict[str, list[tuple[FunctionSchema, InfoDict]]],
) -> tuple[DifferentiabilityInfo, bool] | None:
    base = f.name.name.base.split(_FOREACH)[-1]
    found = next((c for c in functional.get(base, ()) if _is_reference(f, c[0])), None)
    if found is None and f.kind is SchemaKind.inplace:
        # An in-place foreach op whose per-tensor op exists only in place (zero_).
        found = next((c for c in non_functional.get(base, ()) if _is_reference(f, c[0])), None)
    if found is None or DEFAULT_KEY not in found[1]:
        return None
    ref_schema, per_key = found
    ref = per_key[DEFAULT_KEY]
    if f.kind is SchemaKind.inplace:
        return ref, False  # in-place foreach ops use the per-tensor formulas as they are
    pairs = list(
        zip(f.func.arguments.flat_non_out, ref_schema.arguments.flat_non_out, strict=False)
    )
    ref_to_mine = {r.name: a.name for a, r in pairs}
    mine_by_name = {a.name: a for a, _ in pairs}
    api_types = {a.name: a.cpp_type for a in api_arguments(f)}

    derivatives: list[Derivative] = []
    all_in: list[SavedAttribute] = []
    all_out: list[SavedAttribute] = []
    var_names_all: list[str] = []
    for d in ref.derivatives:
        formula = d.formula.replace("grad", "grads[i]").replace("result", "result[i]")
        saved_in = []
        for s in d.saved_inputs:
            ref_name = _saved_argument(f, ref, s, ref_to_mine)
            mapped = ref_to_mine[ref_name]
            expr = f"{mapped}[i]" if isinstance(mine_by_name[mapped].type, ListType) else mapped
            formula = formula.replace(s.name, replace_ident(s.expr, ref_name, expr))
            saved_in.append(SavedAttribute(mapped, value_type(api_types[mapped]), mapped))
        saved_out = []
        for s in d.saved_outputs:
            if s.name != "result":
                raise AtengenError(
                    ref.loc,
                    f"'{f.func.name}' derives its formulas from '{ref.name}', whose formula "
                    f"saves output '{s.name}'; only 'result' can be mapped to a list",
                )
            saved_out.append(SavedAttribute("result", "at::TensorList", "result"))
        names = tuple(ref_to_mine[v] for v in d.var_names)
        var_names_all.extend(names)
        all_in.extend(saved_in)
        all_out.extend(saved_out)
        derivatives.append(
            Derivative(formula, d.formula, names, tuple(saved_in), tuple(saved_out), frozenset())
        )
    args_with_derivatives = tuple(a for a in api_arguments(f) if a.name in var_names_all)

    forward_derivatives = []
    ref_args = ref.func.func.arguments.flat_non_out
    for fd in ref.forward_derivatives:
        formula = fd.formula.replace("result", "result[i]")
        var_names, var_types = list(fd.var_names), list(fd.var_types)
        tangents = list(fd.required_inputs_fw_grad or ())
        primals = list(fd.required_inputs_primal or ())
        for mine, theirs in zip(f.func.arguments.flat_non_out, ref_args, strict=False):
            if isinstance(mine.type, ListType) and not mine.type.is_tensor_like():
                formula = formula.replace(theirs.name, mine.name + "[i]")  # a list of scalars
            elif mine.type.is_tensor_like():
                for suffix in ("_p", "_t"):
                    formula = formula.replace(theirs.name + suffix, mine.name + suffix)
            elif mine.name != theirs.name:
                formula = formula.replace(theirs.name, mine.name)
            for i, n in enumerate(var_names):
                if n == theirs.name:
                    var_names[i], var_types[i] = mine.name, mine.type
            tangents = [mine.name if n == theirs.name else n for n in tangents]
            primals = [mine.name if n == theirs.name else n for n in primals]
        forward_derivatives.append(
            ForwardDerivative(
                formula,
                tuple(var_names),
                tuple(var_types),
                tuple(tangents),
                tuple(primals),
                fd.required_original_self_value,
                fd.is_reusing_outplace_formula,
                fd.copies_into_self_t,
            )
        )
    info = DifferentiabilityInfo(
        name=f.name.name.base,
        func=f,
        op=f"Foreach{ref.op}{f.name.overload_name}",
        derivatives=tuple(derivatives),
        forward_derivatives=tuple(forward_derivatives),
        all_saved_inputs=tuple(dict.fromkeys(all_in)),
        all_saved_outputs=tuple(dict.fromkeys(all_out)),
        available_named_gradients=(),
        used_named_gradients=frozenset(),
        args_with_derivatives=args_with_derivatives,
        non_differentiable_arg_names=(),
        output_differentiability=None,
        output_differentiability_conditions=None,
        loc=ref.loc,
    )
    return info, True
