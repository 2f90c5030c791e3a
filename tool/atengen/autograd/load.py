"""Load a derivatives YAML against an operator model.

Each entry is ``name: <schema>`` (optionally ``<namespace>::<schema>``), then
either formulas keyed by input names (backward) and output names (forward), or
``dispatch:`` with such a mapping per autograd key, plus optionally
``output_differentiability:``. Every error names the line of the key at fault.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from atengen.autograd import forward
from atengen.autograd.cpp_names import api_arguments, formula_outputs, value_type
from atengen.autograd.formulas import (
    FormulaError,
    check_forbidden_calls,
    check_grad_usage,
    dedup_saved,
    op_class_prefix,
    save_variables,
    used_gradient_indices,
    uses,
)
from atengen.autograd.matching import add_view_copy_infos, match_functions
from atengen.autograd.model import (
    DEFAULT_KEY,
    Derivative,
    DerivativesModel,
    DiffArgument,
    DifferentiabilityInfo,
    ForwardDerivative,
)
from atengen.autograd.names import (
    OperatorNames,
    backward_scope,
    forward_scope,
    undeclared_message,
    undeclared_name,
)
from atengen.errors import AtengenError, Location
from atengen.facts.wheel_facts import AutogradHelpers
from atengen.model.native_function import DEFAULT_NAMESPACE, NativeFunction, describe_value
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import SchemaKind
from atengen.yaml.loader import YamlList, YamlMap, load_yaml

_BACKEND_COMPONENTS = (
    "CPU",
    "CUDA",
    "HIP",
    "XLA",
    "MTIA",
    "MAIA",
    "MPS",
    "IPU",
    "XPU",
    "HPU",
    "VE",
    "Lazy",
    "Meta",
    "PrivateUse1",
    "PrivateUse2",
    "PrivateUse3",
)
# Keys an entry's `dispatch:` may name: per-backend autograd keys (what c10 has).
AUTOGRAD_KEYS = frozenset(
    {DEFAULT_KEY, "AutogradNestedTensor"} | {f"Autograd{c}" for c in _BACKEND_COMPONENTS}
)
_ENTRY_KEYS = frozenset({"name", "dispatch", "output_differentiability"})
# Names the generated code declares itself, so arguments must not take them.
_RESERVED_ARGUMENT_NAMES = ("grad_input_mask", "result")


def load_derivatives(path: str, model: OperatorModel, helpers: AutogradHelpers) -> DerivativesModel:
    """The derivatives YAML at ``path`` against ``model``; its formulas may name the ``helpers``
    of torch's FunctionsManual.h (the ones the wheel does not export too: the functions using
    those are refused or left out when their kernels are written)."""
    # Like load_model: tens of thousands of acyclic objects, so the cyclic GC
    # would only rescan them; it runs once at the end instead.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return build_derivatives(load_yaml(path), path, model, helpers)
    finally:
        if was_enabled:
            gc.enable()
            gc.collect(0)


def build_derivatives(
    doc: object, path: str, model: OperatorModel, helpers: AutogradHelpers
) -> DerivativesModel:
    if not isinstance(doc, YamlList):
        line = doc.line if isinstance(doc, YamlMap) else 1
        raise AtengenError(Location(path, line), "derivatives YAML must be a list of '- name: ...'")
    index = _FunctionIndex(model, helpers)
    infos: dict[tuple[str, str], dict[str, DifferentiabilityInfo]] = {}
    first_line: dict[tuple[str, str], int] = {}
    op_counter: Counter[str] = Counter()
    used_keys: set[str] = set()
    errors: list[AtengenError] = []
    for i, entry in enumerate(doc):
        try:
            key, per_key = _entry_infos(entry, doc.item_location(i), index, op_counter)
        except AtengenError as e:
            errors.append(e)
            continue
        assert isinstance(entry, YamlMap)  # _entry_infos refuses anything else
        if key in first_line:
            errors.append(
                AtengenError(
                    entry.key_location("name"),
                    f"duplicate entry for '{entry['name']}' (first on line {first_line[key]})",
                )
            )
            continue
        first_line[key] = entry.key_location("name").line
        infos[key] = per_key
        used_keys.update(per_key)
    if errors:
        raise AtengenError.combine([x for e in errors for x in e.errors])
    add_view_copy_infos(infos, model)
    functions = match_functions(model, infos)
    return DerivativesModel(infos, functions, frozenset(used_keys), helpers)


class _FunctionIndex:
    """The model's functions by schema text and by signature, per namespace."""

    def __init__(self, model: OperatorModel, helpers: AutogradHelpers):
        self.by_schema: dict[tuple[str, str], NativeFunction] = {}
        self.by_signature: dict[tuple[str, str], list[NativeFunction]] = {}
        for f in model.functions:
            self.by_schema[(f.namespace, str(f.func))] = f
        self._model = model
        self.operators = OperatorNames(model, helpers.declared, helpers.aten_operators)
        self._signatures_ready = False
        self._by_base: dict[tuple[str, str], list[str]] | None = None

    def family(self, f: NativeFunction) -> list[NativeFunction]:
        """The functions sharing f's signature (its inplace/out/functional variants)."""
        if not self._signatures_ready:
            for g in self._model.functions:
                key = (g.namespace, str(g.func.signature()))
                self.by_signature.setdefault(key, []).append(g)
            self._signatures_ready = True
        return self.by_signature[(f.namespace, str(f.func.signature()))]

    def namespaces(self) -> set[str]:
        return {ns for ns, _ in self.by_schema}

    def overloads(self, namespace: str, base: str) -> list[str]:
        """The schemas of the functions named `base` (for an unknown op's message): indexed
        on first use, so that a file of thousands of unknown ops costs one pass, not one per
        op."""
        if self._by_base is None:
            self._by_base = {}
            for (ns, s), f in self.by_schema.items():
                self._by_base.setdefault((ns, f.name.name.base), []).append(s)
        return self._by_base.get((namespace, base), [])


@dataclass
class _Entry:
    """One entry being read: where it is and what it is about."""

    raw: YamlMap
    spec: str  # the `name:` text
    name: str  # base name of the schema, e.g. `add_`
    func: NativeFunction  # the canonical function the formulas are written against
    output_differentiability: tuple[bool, ...] | None
    conditions: tuple[str, ...] | None

    def err(self, key: str | None, message: str) -> AtengenError:
        loc = self.raw.key_location(key) if key else self.raw.location
        return AtengenError(loc, message)


def _entry_infos(
    raw: object, loc: Location, index: _FunctionIndex, op_counter: Counter[str]
) -> tuple[tuple[str, str], dict[str, DifferentiabilityInfo]]:
    if not isinstance(raw, YamlMap):
        raise AtengenError(loc, f"each entry must be a mapping, got {describe_value(raw)}")
    spec = raw.get("name")
    if not isinstance(spec, str):
        where = raw.key_location("name") if "name" in raw else raw.location
        raise AtengenError(where, "each entry needs a 'name:' with the operator's schema string")
    namespace, _, schema_text = (
        spec.rpartition("::") if "::" in spec.split("(")[0] else ("", "", spec)
    )
    named = index.by_schema.get((namespace or DEFAULT_NAMESPACE, schema_text))
    if named is None:
        raise AtengenError(
            raw.key_location("name"),
            f"unknown op '{spec}': no such schema in the op YAML"
            + _unknown_op_hint(namespace, schema_text, index),
        )
    namespace = namespace or DEFAULT_NAMESPACE
    name = str(named.name.name)
    entry = _Entry(raw, spec, name, _canonical(named, name, index), None, None)
    _read_output_differentiability(entry)
    for reserved in _RESERVED_ARGUMENT_NAMES:
        if any(a.name == reserved for a in api_arguments(entry.func)):
            raise entry.err(
                "name",
                f"'{spec}' has an argument named '{reserved}', a name the generated code uses",
            )
    if "dispatch" in raw:
        extra = sorted(set(raw) - _ENTRY_KEYS)
        if extra:
            raise entry.err(extra[0], f"'{extra[0]}': with 'dispatch:', formulas go inside it")
        per_key = raw["dispatch"]
        tables = (
            [(k, v) for k, v in per_key.items() if isinstance(v, YamlMap)]
            if isinstance(per_key, YamlMap)
            else []
        )
        if not isinstance(per_key, YamlMap) or len(tables) != len(per_key):
            raise entry.err("dispatch", "'dispatch' must map autograd keys to formula mappings")
        key_table = per_key
    else:
        tables = [(DEFAULT_KEY, raw)]
        key_table = raw  # (DEFAULT_KEY is an autograd key)
    result = {}
    for key, table in tables:
        if key not in AUTOGRAD_KEYS:
            raise AtengenError(
                key_table.key_location(key),
                f"invalid dispatch key '{key}'; use one of {', '.join(sorted(AUTOGRAD_KEYS))}",
            )
        result[key] = _info(entry, key, table, op_counter, index.operators)
    # Keyed by the function the formulas are written against, so that an entry
    # naming an out= schema is found for its functional op.
    return (namespace, str(entry.func.func)), result


def _unknown_op_hint(namespace: str, schema_text: str, index: _FunctionIndex) -> str:
    """The overloads of the name that exist; for a name without a namespace (an aten op) that
    only another namespace has, that namespace: a custom library's entry that forgot it."""
    base = schema_text.split("(")[0].split(".")[0]
    ns = namespace or DEFAULT_NAMESPACE
    known = index.overloads(ns, base.rstrip("_")) + index.overloads(ns, base)
    if known:
        return f"; {ns}::{base} has: {' | '.join(sorted(set(known)))}"
    if namespace:
        return ""
    exact = sorted(n for n in index.namespaces() if (n, schema_text) in index.by_schema)
    if exact:
        return f"; did you mean '{exact[0]}::{schema_text}'? (a name without a namespace is aten's)"
    named = sorted(n for n in index.namespaces() if index.overloads(n, base))
    if named:
        return f"; did you mean '{named[0]}::{base}(...)'? (a name without a namespace is aten's)"
    return ""


def _canonical(f: NativeFunction, name: str, index: _FunctionIndex) -> NativeFunction:
    """The variant formulas are written against: the one with the entry's name
    that is neither out= nor `functional`; else (ops with only an in-place form) that."""
    if f.kind is not SchemaKind.out and "functional" not in f.name.overload_name:
        return f
    family = index.family(f)
    for g in family:
        if g.kind is not SchemaKind.out and "functional" not in g.name.overload_name:
            if str(g.name.name) == name:
                return g
    for g in family:
        if g.kind is SchemaKind.inplace and str(g.name.name) == name + "_":
            return g
    return f


def _read_output_differentiability(entry: _Entry) -> None:
    raw = entry.raw.get("output_differentiability")
    if raw is None:
        return
    n = len(entry.func.func.returns)
    if not isinstance(raw, list) or not raw:
        raise entry.err("output_differentiability", "output_differentiability must be a list")
    if all(isinstance(x, bool) for x in raw):
        values = tuple(raw)
    elif all(isinstance(x, str) for x in raw):
        if len(raw) != 1:
            raise entry.err(
                "output_differentiability",
                "a condition in output_differentiability is supported for one output only",
            )
        entry.conditions = tuple(raw)
        values = (True,)
    else:
        raise entry.err(
            "output_differentiability",
            "output_differentiability must list True/False per output, or one condition string",
        )
    if len(values) != n:
        raise entry.err(
            "output_differentiability",
            f"output_differentiability has {len(values)} value(s) but '{entry.spec}' returns {n}",
        )
    if False in values and entry.func.kind is SchemaKind.inplace:
        raise entry.err(
            "output_differentiability",
            "output_differentiability cannot be False for an in-place op: its output is its "
            "input, whose version counter and history must be updated",
        )
    entry.output_differentiability = values


def _info(
    entry: _Entry, key: str, table: YamlMap, op_counter: Counter[str], operators: OperatorNames
) -> DifferentiabilityInfo:
    f = entry.func
    args = api_arguments(f)
    arg_by_name = {a.name: a for a in args}
    scopes = _scopes(f, args)
    schema_returns = {r.name for r in f.func.returns if r.name}
    differentiability = entry.output_differentiability or (True,) * len(f.func.returns)
    available = tuple(
        f"grad_{r.name}"
        for r, d in zip(f.func.returns, differentiability, strict=False)
        if d and r.name is not None and r.type.is_tensor_like()
    )
    derivatives: list[Derivative] = []
    raw_forward: list[tuple[str, str, tuple[str, ...]]] = []
    non_differentiable: list[str] = []
    with_derivatives: set[str] = set()
    formula_keys = [k for k in table if table is not entry.raw or k not in _ENTRY_KEYS]
    for raw_names in sorted(formula_keys):
        formula = table[raw_names]
        loc_err = _key_error(table, raw_names)
        if not isinstance(formula, str):
            raise loc_err(
                f"the formula for '{raw_names}' must be a string, got {describe_value(formula)}"
            )
        names = tuple(x.strip() for x in raw_names.split(","))
        for n in names:
            if n in arg_by_name and n in schema_returns:
                raise loc_err(f"'{n}' is both an argument and an output of '{entry.spec}'")
        if names[0] not in arg_by_name:
            raw_forward.append((raw_names, formula, names))
            continue
        for n in names:
            if n not in arg_by_name:
                raise loc_err(f"'{n}' is not an argument of '{entry.spec}'")
        if formula.strip().lower() == "non_differentiable":
            non_differentiable.extend(names)
            continue
        for n in names:
            a = arg_by_name[n].argument
            if a is None or not a.type.is_tensor_like():
                what = "TensorOptions" if a is None else str(a.type)
                raise loc_err(
                    f"gradient formula for '{n}', which is not differentiable ({what}); "
                    "only Tensor arguments have gradients"
                )
        _check_names(
            formula,
            scopes[0],
            operators,
            f.namespace,
            f"backward formula for '{raw_names}'",
            loc_err,
        )
        try:
            derivatives.append(_derivative(f, formula, names, args, available))
        except FormulaError as e:
            raise loc_err(str(e)) from None
        with_derivatives.update(names)
    overlap = with_derivatives.intersection(non_differentiable)
    if overlap:
        raise entry.err(
            None, f"'{', '.join(sorted(overlap))}' is both non_differentiable and given a formula"
        )
    args_with_derivatives = tuple(a for a in args if a.name in with_derivatives)
    forward_derivatives = []
    for raw_names, formula, names in raw_forward:
        try:
            fd = _forward_derivative(f, formula, names)
            forward_derivatives.append((raw_names, fd))
        except FormulaError as e:
            raise _key_error(table, raw_names)(str(e)) from None
        if formula not in ("auto_element_wise", "auto_linear"):
            what = f"forward formula for '{raw_names}'"
            _check_names(
                formula, scopes[1], operators, f.namespace, what, _key_error(table, raw_names)
            )
    try:
        processed = forward.postprocess(
            f, entry.name, args, derivatives, forward_derivatives, args_with_derivatives
        )
    except forward.ForwardFormulaError as e:
        raise _key_error(table, e.key)(str(e)) from None
    try:
        check_grad_usage(
            entry.name,
            [d.formula for d in derivatives],
            any(d.named_gradients for d in derivatives),
        )
    except FormulaError as e:
        raise entry.err(None, str(e)) from None

    op = None
    if args_with_derivatives:
        prefix = op_class_prefix(entry.name) + ("" if key == DEFAULT_KEY else key)
        op = f"{prefix}{op_counter[prefix]}"
        op_counter[prefix] += 1
    return DifferentiabilityInfo(
        name=entry.name,
        func=f,
        op=op,
        derivatives=tuple(derivatives),
        forward_derivatives=processed,
        all_saved_inputs=dedup_saved(s for d in derivatives for s in d.saved_inputs),
        all_saved_outputs=dedup_saved(s for d in derivatives for s in d.saved_outputs),
        available_named_gradients=available,
        used_named_gradients=frozenset(g for d in derivatives for g in d.named_gradients),
        args_with_derivatives=args_with_derivatives,
        non_differentiable_arg_names=tuple(non_differentiable),
        output_differentiability=entry.output_differentiability,
        output_differentiability_conditions=entry.conditions,
        loc=entry.raw.key_location("name"),
    )


def _scopes(
    f: NativeFunction, args: tuple[DiffArgument, ...]
) -> tuple[frozenset[str], frozenset[str]]:
    """The names the generated code declares for f's backward and forward formulas."""
    # The schema's arguments too: forward formulas run in the kernel, which has each one (the
    # C++ API packs a factory's dtype, layout, device and pin_memory into `options`).
    arguments = [a.name for a in args] + [a.name for a in f.func.arguments.flat_all]
    returns = f.func.returns
    named = [r.name for r in returns if r.name]
    outputs = [o for o, _ in formula_outputs(f)] + ["result"]
    outputs += [f"result{i}" for i in range(len(returns))]
    foreach = f.name.name.base.startswith("_foreach_")
    return (
        backward_scope(arguments, outputs, named, foreach),
        forward_scope(arguments, outputs, foreach),
    )


def _check_names(
    formula: str,
    scope: frozenset[str],
    operators: OperatorNames,
    namespace: str,
    what: str,
    err: Callable[[str], AtengenError],
) -> None:
    name = undeclared_name(formula, scope, operators, namespace)
    if name is not None:
        raise err(undeclared_message(name, what, scope, operators.own(namespace)))
    call = operators.unknown_call(formula, namespace)
    if call is not None:
        raise err(f"the {what} {call}")


def _key_error(table: YamlMap, key: str) -> Callable[[str], AtengenError]:
    def make(message: str) -> AtengenError:
        return AtengenError(table.key_location(key), message)

    return make


def _derivative(
    f: NativeFunction,
    formula: str,
    var_names: tuple[str, ...],
    args: tuple[DiffArgument, ...],
    available_named_gradients: tuple[str, ...],
) -> Derivative:
    check_forbidden_calls(formula)
    original = formula
    formula, saved_inputs = save_variables(
        formula, ((a.name, value_type(a.cpp_type)) for a in args), var_names
    )
    formula, saved_outputs = save_variables(formula, formula_outputs(f), var_names)
    n_returns = len(f.func.returns)
    for i in used_gradient_indices(formula):
        if i >= n_returns:
            raise FormulaError(
                f"the formula reads grads[{i}], but the op returns {n_returns} output(s)"
            )
    return Derivative(
        formula=formula,
        original_formula=original,
        var_names=var_names,
        saved_inputs=saved_inputs,
        saved_outputs=saved_outputs,
        named_gradients=frozenset(g for g in available_named_gradients if uses(formula, g)),
    )


def _forward_derivative(
    f: NativeFunction, formula: str, names: tuple[str, ...]
) -> ForwardDerivative:
    returns = f.func.returns
    types = []
    for n in names:
        named = [r for r in returns if r.name == n]
        index = forward.result_index(n, len(returns))
        if named:
            types.append(named[0].type)
        elif index is not None:
            types.append(returns[index].type)
        else:
            outputs = [r.name for r in returns if r.name] or (
                ["result"] if len(returns) == 1 else [f"result{i}" for i in range(len(returns))]
            )
            raise FormulaError(
                f"'{n}' is neither an argument nor an output of '{f.namespace}::{f.func.name}' "
                f"(outputs: {', '.join(outputs)})"
            )
    return ForwardDerivative(formula, names, tuple(types), None, None)
