"""Formulas calling the operators of their own namespace, as aten's formulas call aten's.

torch's formulas call aten operators by bare name (`mul(grad, other)`), which the C++ API declares
(at::mul, found through the Tensor arguments). A custom namespace has no such API in the generated
sources: its operators are reached through the dispatcher only. So for every operator of the
entry's namespace that a formula calls, by bare name or as `<namespace>::<name>`, the file gets a
C++ function of that name calling the operator's typed handle: a full dispatcher call, so that the
op's own Autograd kernel records it and a double backward differentiates it too.

The C++ name of an operator is its name without the overload (`_roi_align_backward`, `scale_` for
an in-place one); its overloads become C++ overloads, told apart by their argument types. The
arguments are the dispatcher's: a SymInt is a c10::SymInt (what `input.sym_size(0)` gives, and an
int64_t converts to one), `SymInt[]` a c10::SymIntArrayRef, `float` a double, `Tensor?` a
std::optional<at::Tensor>. `<name>_symint` is the same function, as aten's C++ API names the SymInt
form (auto_linear writes it). out= overloads are not callable this way (aten's C++ API names those
`<name>_out`).

A bare name that aten also has stays aten's (at::<name>, found through the arguments, as in
torch's own formulas); `<namespace>::<name>` calls the namespace's one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from atengen.api.calls import OpRef, op_ref
from atengen.api.cpp_types import cpp_arguments, dispatcher_options, returns_type
from atengen.autograd.formulas import free_names
from atengen.autograd.signature import handle_var
from atengen.errors import AtengenError, Location
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import SchemaKind

_SYMINT = "_symint"


def callable_ops(model: OperatorModel) -> dict[str, dict[str, list[NativeFunction]]]:
    """namespace -> C++ name -> the overloads formulas of that namespace may call by that name,
    for every namespace but aten (aten's are declared by ATen itself)."""
    result: dict[str, dict[str, list[NativeFunction]]] = {}
    for f in model.functions:
        if f.namespace == "aten" or f.kind is SchemaKind.out:
            continue
        result.setdefault(f.namespace, {}).setdefault(str(f.name.name), []).append(f)
    return result


def op_names(ops: dict[str, list[NativeFunction]]) -> frozenset[str]:
    """The names formulas may call: each C++ name, and its `_symint` form."""
    return frozenset(n for name in ops for n in (name, name + _SYMINT))


def _qualified_re(namespace: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w:]){re.escape(namespace)}\s*::\s*([A-Za-z_]\w*)\s*\(")


def qualified_calls(formula: str, namespace: str) -> list[str]:
    """The names a formula calls as `<namespace>::<name>(...)`, in order."""
    return _qualified_re(namespace).findall(_strip_strings(formula))


def _strip_strings(formula: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', formula)


def _base(name: str) -> str:
    return name.removesuffix(_SYMINT)


@dataclass(frozen=True)
class OwnCall:
    """One C++ function of a file's: `<name>(<parameters>)` calling the op's typed handle."""

    returns: str
    name: str
    parameters: tuple[str, ...]
    handle: str
    arguments: tuple[str, ...]
    op: OpRef
    schema: str  # for the message when two overloads take the same C++ arguments


def _own_call(name: str, f: NativeFunction) -> OwnCall:
    opts = dispatcher_options(f)
    args = cpp_arguments(f.func, opts)
    op = op_ref(f)
    return OwnCall(
        returns=returns_type(f.func.returns, opts),
        name=name,
        parameters=tuple(a.decl() for a in args),
        handle=handle_var(op),
        arguments=tuple(a.name for a in args),
        op=op,
        schema=f"{f.namespace}::{f.func}",
    )


def own_calls(
    formulas: Iterable[str],
    namespace: str,
    ops: dict[str, list[NativeFunction]],
    aten_names: frozenset[str],
) -> tuple[list[OwnCall], list[OwnCall]]:
    """The functions the formulas need: (those called by bare name, those called as
    `<namespace>::<name>`), every overload of each name. A bare name in ``aten_names`` is aten's
    and left out."""
    bare: dict[str, None] = {}
    qualified: dict[str, None] = {}
    for formula in formulas:
        for name, called in free_names(formula).items():
            if called and _base(name) in ops and name not in aten_names:
                bare[name] = None
        for name in qualified_calls(formula, namespace):
            if _base(name) in ops:
                qualified[name] = None
    return (
        [_own_call(n, f) for n in bare for f in ops[_base(n)]],
        [_own_call(n, f) for n in qualified for f in ops[_base(n)]],
    )


def check_overloads(calls: Iterable[OwnCall], where: Location) -> None:
    """Two overloads of one name taking the same C++ arguments cannot both be functions of that
    name: an error naming both, at ``where`` (the entry whose formulas call them)."""
    seen: dict[tuple[str, tuple[str, ...]], OwnCall] = {}
    for call in calls:
        types = tuple(p.rsplit(" ", 1)[0] for p in call.parameters)
        first = seen.setdefault((call.name, types), call)
        if first is not call and first.schema != call.schema:
            raise AtengenError(
                where,
                f"a formula calls '{call.name}', whose overloads '{first.schema}' and "
                f"'{call.schema}' take the same C++ arguments; rename one of them",
            )
