"""The Python module of a stable-ABI library: what its C++ cannot register under the stable ABI,
derived from its YAML files.

- Autograd: each derivatives YAML entry of the library's operators becomes a
  ``torch.library.register_autograd`` call, with a ``setup_context`` that saves what the formulas
  read (tensors through ``save_for_backward``, sizes and other properties as values) and a
  backward that evaluates the formulas translated to Python (translate.py). The backward is plain
  torch code, so a double backward differentiates it.
- Fake kernels: an operator returning ``()`` gets one that returns None; an operator with a
  composite (or Meta) kernel needs none (torch runs that kernel on fake tensors). The others are
  listed in ``NEEDS_FAKE_KERNEL``, and in one line of the report.

The derivatives YAML is read by the autograd loader (autograd/load.py), as the C++ mode reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from atengen.autograd.cpp_names import formula_outputs
from atengen.autograd.load import load_derivatives
from atengen.autograd.model import DEFAULT_KEY, DifferentiabilityInfo
from atengen.autograd.own_ops import callable_ops, op_names
from atengen.errors import AtengenError, Location
from atengen.facts.wheel_facts import AutogradHelpers
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel
from atengen.model.schema_types import Type
from atengen.pymodule.translate import (
    AtenNames,
    Scope,
    Translation,
    TranslationError,
    Variable,
    python_name,
    translate,
)
from atengen.render.templates import Templates
from atengen.yaml.loader import YamlList, YamlMap, load_yaml

# Keys whose kernel torch runs on fake tensors itself.
_FAKE_BY_TORCH = ("CompositeExplicitAutograd", "CompositeImplicitAutograd", "Meta")
_PRIVATE_SUFFIXES = ("_backward", "_forward")
_SIMPLE = re.compile(r"[\w.]+(\[\d+\])?")


@dataclass(frozen=True)
class Saved:
    local: str
    expr: str  # over setup_context's parameters


@dataclass(frozen=True)
class Gradient:
    """One formula's value in the backward: the gradient of one positional input, or a tuple
    of several (``indices``)."""

    local: str
    expr: str
    indices: tuple[int, ...]


@dataclass(frozen=True)
class AutogradEntry:
    qualname: str  # `ns::op` or `ns::op.overload`
    function: str  # the Python functions' stem
    keyword_only: bool  # setup_context takes keyword_only_inputs
    inputs: tuple[Saved, ...]  # locals setup_context reads
    tensors: tuple[str, ...]  # saved with save_for_backward
    values: tuple[Saved, ...]  # saved as ctx.saved_values
    non_differentiable: tuple[str, ...]  # outputs marked non-differentiable
    several_outputs: bool
    grad_locals: tuple[Saved, ...]  # `grad_out = grads[1]`
    gradients: tuple[Gradient, ...]  # one per formula
    not_implemented: tuple[tuple[int, str], ...]  # Tensor inputs without a formula
    returned: tuple[str, ...]  # the backward's return values, one per positional input


@dataclass(frozen=True)
class PythonModule:
    text: str
    needs_fake: tuple[str, ...]
    warnings: tuple[str, ...]


def aten_names(model: OperatorModel) -> AtenNames:
    """The aten operators of torch's native_functions.yaml as Python reaches them."""
    torch_functions: set[str] = set()
    names: set[str] = set()
    methods: set[str] = set()
    for f in model.functions:
        if f.namespace != "aten":
            continue
        name = str(f.name.name)
        names.add(name)
        if "method" in f.variants:
            methods.add(name)
        public = not name.startswith("_") and not name.endswith(_PRIVATE_SUFFIXES)
        if "function" in f.variants and f.python_module is None and public:
            torch_functions.add(name)
    return AtenNames(
        frozenset(torch_functions), frozenset(names - torch_functions), frozenset(methods)
    )


def python_module(
    model: OperatorModel,
    functions: list[NativeFunction],
    derivatives_yaml: str | None,
    aten: Callable[[], AtenNames],
    templates: Templates,
) -> PythonModule:
    """The module's text for the selected custom ``functions`` of ``model``."""
    custom = [f for f in functions if f.namespace != "aten"]
    selected = {(f.namespace, str(f.func)) for f in custom}
    entries: list[AutogradEntry] = []
    warnings: list[str] = []
    if derivatives_yaml is not None:
        derivatives = load_derivatives(
            derivatives_yaml, model, AutogradHelpers(frozenset(), frozenset())
        )
        names = aten()
        own = {ns: op_names(ops) for ns, ops in callable_ops(model).items()}
        forward_only: list[DifferentiabilityInfo] = []
        for key, per_key in derivatives.infos.items():
            if key not in selected and key[0] != "aten":
                continue
            info = _default_info(per_key)
            if info.forward_derivatives:
                forward_only.append(info)
            if info.has_derivatives:
                entries.append(_entry(info, own.get(info.func.namespace, frozenset()), names))
        if forward_only:
            warnings.append(_forward_warning(forward_only))
    fakes, by_torch, needs = _fakes(custom)
    if needs:
        # Once per regeneration (the action's stderr), at the first such operator's line.
        first = next(f for f in custom if f"{f.namespace}::{f.func.name}" == needs[0])
        warnings.append(f"{first.loc}: note: {needs_fake_line(tuple(needs))}")
    text = templates.render(
        "stable_registrations.py.j2",
        namespaces=sorted({f.namespace for f in custom}),
        first_op=_first_op(custom),
        entries=entries,
        fakes=fakes,
        by_torch=by_torch,
        needs_fake=needs,
        uses_math=any("math." in g.expr for e in entries for g in e.gradients),
    )
    return PythonModule(text, tuple(needs), tuple(warnings))


def needs_fake_line(needs: tuple[str, ...]) -> str:
    """The one line naming the operators whose fake kernel stable mode cannot derive."""
    return (
        f"no fake kernel derived for {', '.join(needs)} (kernels for devices only): register "
        "one with torch.library.register_fake for torch.compile and torch.library.opcheck"
    )


def _first_op(custom: list[NativeFunction]) -> tuple[str, str] | None:
    for f in custom:
        return (f.namespace, str(f.name.name))
    return None


def _default_info(per_key: dict[str, DifferentiabilityInfo]) -> DifferentiabilityInfo:
    for key, info in per_key.items():
        if key != DEFAULT_KEY:
            raise AtengenError(
                info.loc,
                f"'dispatch: {key}' in stable mode: torch.library.register_autograd registers one "
                "formula for every device; give the formulas without 'dispatch:', or build the "
                'library with abi = "release"',
            )
    return per_key[DEFAULT_KEY]


def _forward_warning(infos: list[DifferentiabilityInfo]) -> str:
    first = infos[0]
    names = ", ".join(f"{i.func.namespace}::{i.func.name}" for i in infos)
    return (
        f"{first.loc}: warning: stable mode ignores the forward-mode formulas of {names} "
        "(torch.library.register_autograd takes backward formulas only)"
    )


def _refuse(info: DifferentiabilityInfo, what: str) -> AtengenError:
    return AtengenError(
        info.loc, f"'{info.func.namespace}::{info.func.name}' in stable mode: {what}"
    )


def _entry(info: DifferentiabilityInfo, own_ops: frozenset[str], aten: AtenNames) -> AutogradEntry:
    f = info.func
    if f.namespace == "aten":
        raise _refuse(info, "torch differentiates aten's operators itself; list only the library's")
    args = f.func.arguments
    if any(a.is_write for a in args.flat_all) or any(r.annotation for r in f.func.returns):
        raise _refuse(
            info,
            "torch.library.register_autograd takes functional operators only (this one writes "
            "into or returns a view of an input); give the formulas for a functional variant",
        )
    if "CompositeImplicitAutograd" in f.dispatch:
        raise _refuse(
            info,
            "a CompositeImplicitAutograd operator is differentiated through the operators its "
            "kernel calls; remove its entry or make its kernel CompositeExplicitAutograd",
        )
    if any(a.type.is_tensor_like() for a in args.flat_kwarg_only):
        raise _refuse(info, "torch.library.register_autograd refuses keyword-only Tensor arguments")
    if info.output_differentiability_conditions:
        raise _refuse(
            info, "a condition in output_differentiability has no Python form; use True/False"
        )
    scope = _scope(info, own_ops, aten)
    translations: list[tuple[tuple[str, ...], Translation]] = []
    for d in info.derivatives:
        try:
            translations.append((d.var_names, translate(d.original_formula, scope)))
        except TranslationError as e:
            names = ", ".join(d.var_names)
            raise AtengenError(
                _formula_location(info, d.var_names),
                f"backward formula for '{names}' of {f.namespace}::{f.name} in stable mode: {e}",
            ) from None
    return _assemble(info, scope, translations)


def _formula_location(info: DifferentiabilityInfo, var_names: tuple[str, ...]) -> Location:
    """The line of the formula's key: the loader keeps the entry's line only."""
    doc = load_yaml(info.loc.path)
    if isinstance(doc, YamlList):
        for entry in doc:
            if isinstance(entry, YamlMap) and entry.key_location("name") == info.loc:
                for key in entry:
                    if (
                        isinstance(key, str)
                        and tuple(x.strip() for x in key.split(",")) == var_names
                    ):
                        return entry.key_location(key)
    return info.loc


def _scope(info: DifferentiabilityInfo, own_ops: frozenset[str], aten: AtenNames) -> Scope:
    f = info.func
    variables: dict[str, Variable] = {
        "grad": Variable("grad", 0, "grad"),
        "grads": Variable("grad", -1, "grads"),
    }
    for name in info.available_named_gradients:
        output = name.removeprefix("grad_")
        index = next(i for i, r in enumerate(f.func.returns) if r.name == output)
        variables[name] = Variable("grad", index, python_name(name, _taken(variables)))
    args = f.func.arguments
    for i, a in enumerate(args.flat_positional + args.flat_kwarg_only):
        local = python_name(a.name, _taken(variables))
        kind = "input" if i < len(args.flat_positional) else "keyword"
        variables[a.name] = Variable(kind, i, local, _is_tensor(a.type))
    for i, (name, _) in enumerate(formula_outputs(f)):
        tensor = _is_tensor(f.func.returns[i].type)
        variables[name] = Variable("output", i, python_name(name, _taken(variables)), tensor)
    return Scope(f.namespace, own_ops, variables, aten)


def _taken(variables: Mapping[str, Variable]) -> frozenset[str]:
    return frozenset(v.local for v in variables.values())


def _is_tensor(t: Type) -> bool:
    return str(t) in ("Tensor", "Tensor?")


def _assemble(
    info: DifferentiabilityInfo,
    scope: Scope,
    translations: list[tuple[tuple[str, ...], Translation]],
) -> AutogradEntry:
    f = info.func
    variables = scope.variables
    read: set[str] = set()
    whole: set[str] = set()
    properties: dict[str, str] = {}
    for _, t in translations:
        whole |= t.whole
        for p in t.properties.values():
            read.add(p.variable)
            properties[p.local] = p.expr
    read |= whole
    several = len(f.func.returns) > 1
    inputs: list[Saved] = []
    tensors: list[str] = []
    values: list[Saved] = []
    grad_locals: list[Saved] = []
    for name, v in variables.items():
        if name not in read:
            continue
        if v.kind == "grad":
            if v.index >= 0 and (several or name != "grad"):
                grad_locals.append(Saved(v.local, f"grads[{v.index}]"))
            continue
        if v.kind == "input":
            source = f"inputs[{v.index}]"
        elif v.kind == "keyword":
            source = f"keyword_only_inputs[{name!r}]"
        else:
            source = f"output[{v.index}]" if several else "output"
        inputs.append(Saved(v.local, source))
        if name in whole and v.tensor:
            tensors.append(v.local)
        elif name in whole:
            values.append(Saved(v.local, v.local))
    values += [Saved(local, properties[local]) for local in sorted(properties)]
    positional = f.func.arguments.flat_positional
    index = {a.name: i for i, a in enumerate(positional)}
    returned = ["None"] * len(positional)
    gradients: list[Gradient] = []
    taken = set(_taken(variables)) | {s.local for s in values}
    for names, t in translations:
        local = python_name("grad_" + "_".join(names), frozenset(taken))
        taken.add(local)
        indices = tuple(index[n] for n in names)
        expr = t.text if _SIMPLE.fullmatch(t.text) else f"({t.text})"
        gradients.append(Gradient(local, expr, indices))
        for k, i in enumerate(indices):
            returned[i] = local if len(indices) == 1 else f"{local}[{k}]"
    gradients.sort(key=lambda g: g.indices)
    covered = {n for names, _ in translations for n in names}
    skipped = set(info.non_differentiable_arg_names)
    not_implemented = tuple(
        (i, a.name)
        for i, a in enumerate(positional)
        if a.type.is_tensor_like() and a.name not in covered and a.name not in skipped
    )
    return AutogradEntry(
        qualname=f"{f.namespace}::{f.func.name}",
        function=str(f.func.name).replace(".", "_"),
        keyword_only=bool(f.func.arguments.flat_kwarg_only),
        inputs=tuple(inputs),
        tensors=tuple(tensors),
        values=tuple(values),
        non_differentiable=tuple(
            f"output[{i}]" if several else "output"
            for i, d in enumerate(info.output_differentiability or ())
            if not d
        ),
        several_outputs=several,
        grad_locals=tuple(grad_locals),
        gradients=tuple(gradients),
        not_implemented=not_implemented,
        returned=tuple(returned),
    )


def _fakes(custom: list[NativeFunction]) -> tuple[list[str], list[str], list[str]]:
    """(operators given a fake kernel returning None, those torch fakes through their composite
    or Meta kernel, those left to the library's author)."""
    fakes: list[str] = []
    by_torch: list[str] = []
    needs: list[str] = []
    for f in custom:
        if f.generated or not f.dispatch:
            continue  # no kernel to fake (stable mode registers none for autogen'd variants)
        qualname = f"{f.namespace}::{f.func.name}"
        if any(key in f.dispatch for key in _FAKE_BY_TORCH):
            by_torch.append(qualname)
        elif not f.func.returns:
            fakes.append(qualname)
        else:
            needs.append(qualname)
    return fakes, by_torch, needs
