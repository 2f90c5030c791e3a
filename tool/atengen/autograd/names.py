"""The names a formula may use, so that a misspelled one is an error at its line instead of C++
that does not compile.

A formula is a C++ expression pasted into the generated code. Its free names (not members,
not qualified: see formulas.free_names) must be one of:

- what the generated code declares for it: the function's arguments and outputs, the
  gradients (`grad`, `grads`, `grad_<output>`, `grad_input_mask`, `retain_variables`) for a
  backward formula, tangents and primals (`<argument>_t`, `<argument>_p`, `original_self_t`,
  `original_self_p`) for a forward one;
- what C++ has without a declaration: keywords, fixed-width integer types, <cmath>'s M_*
  constants; the names the generated file brings in with `using` (Tensor, GradMode, ...);
- functions found through their arguments: aten operators (`where(c, a, b)` finds at::where),
  and c10::fmap: those of the op YAML and of the wheel (its native_functions.yaml, read into
  the torch facts); where neither tells which those are, any called name passes;
- the operators of the entry's own namespace, which the generated file declares (own_ops.py),
  by bare name or as `<namespace>::<name>`;
- torch's FunctionsManual.h helpers (whether the wheel exports them is checked elsewhere) and
  the properties a node saves instead of a tensor (`TensorGeometry(self)`, `to_args_sizes(xs)`);
- a namespace before `::` (at, c10, std, torch, an operator namespace of the op YAML);
- a name the formula declares itself (a lambda's parameters and variables).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from atengen.autograd.formulas import free_names
from atengen.autograd.own_ops import callable_ops, op_names, qualified_calls
from atengen.errors import did_you_mean
from atengen.model.operator_model import OperatorModel

_CPP = frozenset(
    """
    alignof and auto bool break case char class const const_cast constexpr continue decltype
    default delete do double dynamic_cast else enum false float for if int long mutable new
    noexcept not nullptr operator or reinterpret_cast return short signed sizeof static
    static_cast struct switch template this throw true typename unsigned void volatile while
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t
    M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2
    M_SQRT1_2 INFINITY NAN
    GradMode IntArrayRef Scalar ScalarType Tensor TensorList
    fmap
    TensorGeometry to_args_sizes to_args_sizes_symint to_args_scalartypes zeros_like
    """.split()
)
_NAMESPACES = frozenset({"at", "c10", "std", "torch"})
_COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
# In a formula with statements (a lambda): a name after a type (`auto p =`, `size_t i`,
# `std::vector<at::Tensor> g;`, `(c10::SymInt i)`, `const Tensor& t)`) declares it.
_DECLARED_RE = re.compile(
    r"(?:(\w+)|[>&*])\s+([A-Za-z_]\w*)\s*(?=[=;,)\[{:]|$)|[&*]([A-Za-z_]\w*)\s*[,)]"
)
# Words that a name follows without being declared by them.
_NOT_TYPES = frozenset({"return", "else", "case", "throw", "new", "delete", "goto", "sizeof"})


class OperatorNames:
    """The aten operators' names (and their `_symint` forms), which formulas call unqualified:
    the op model's and ``aten`` (the wheel's, where known); each custom namespace's operators,
    which its formulas call by name too; and the operator namespaces, gathered from the op model
    on first use; and the helpers of torch's FunctionsManual.h (those the wheel declares,
    exported or not)."""

    def __init__(
        self, model: OperatorModel, helpers: frozenset[str], aten: frozenset[str] = frozenset()
    ):
        self.helpers = helpers
        self._model = model
        self._wheel_aten = aten
        self._gathered: _Gathered | None = None

    def _gather(self) -> _Gathered:
        """The aten operators' names, each custom namespace's and the namespaces, gathered on
        first use."""
        if self._gathered is not None:
            return self._gathered
        names: set[str] = set(self._wheel_aten)
        namespaces: set[str] = set()
        for f in self._model.functions:
            namespaces.add(f.namespace)
            if f.namespace == "aten":
                name = str(f.name.name)
                names.update((name, name + "_symint"))
        own = {ns: op_names(ops) for ns, ops in callable_ops(self._model).items()}
        self._gathered = _Gathered(frozenset(names), frozenset(namespaces), own)
        return self._gathered

    def may_call(self, name: str, namespace: str) -> bool:
        """An aten operator, one of ``namespace`` (the entry's), or anything where neither the
        op YAML nor the wheel tells aten's (then which names argument-dependent lookup finds is
        unknown)."""
        known = self._gather()
        return name in known.aten or name in known.own.get(namespace, ()) or not known.aten

    def own(self, namespace: str) -> frozenset[str]:
        """What formulas of ``namespace`` may call of its operators."""
        return self._gather().own.get(namespace, frozenset())

    def is_namespace(self, name: str) -> bool:
        return name in _NAMESPACES or name in self._gather().namespaces

    def unknown_call(self, formula: str, namespace: str) -> str | None:
        """Why a `<ns>::<name>(...)` call of the formula, ``ns`` a custom namespace of the op
        model, names no operator the formula may call; None when all do."""
        known = self._gather()
        for ns, ops in sorted(known.own.items()):
            for name in qualified_calls(formula, ns):
                if ns != namespace:
                    return (
                        f"calls '{ns}::{name}', an operator of another namespace; a formula of "
                        f"{namespace} may call {namespace}'s operators and aten's"
                    )
                if name not in ops:
                    bases = sorted({n for n in ops if not n.endswith("_symint")})
                    return (
                        f"calls '{ns}::{name}', which is no operator of {ns}"
                        f"{did_you_mean(name, ops)}; {ns} has {', '.join(bases)}"
                    )
        return None


@dataclass(frozen=True)
class _Gathered:
    aten: frozenset[str]
    namespaces: frozenset[str]
    own: dict[str, frozenset[str]]  # namespace -> what its formulas may call of it


def backward_scope(
    arguments: list[str], outputs: list[str], named_outputs: list[str], foreach: bool
) -> frozenset[str]:
    """What the generated code declares for a backward formula (a foreach op's formulas are
    for element `i`)."""
    return frozenset(
        [*arguments, *outputs, *(f"grad_{o}" for o in named_outputs)]
        + ["grad", "grads", "grad_input_mask", "retain_variables"]
        + (["i"] if foreach else [])
    )


def forward_scope(arguments: list[str], outputs: list[str], foreach: bool) -> frozenset[str]:
    """What the generated code declares for a forward formula."""
    return frozenset(
        [*arguments, *outputs, *(f"{a}_t" for a in arguments), *(f"{a}_p" for a in arguments)]
        + ["original_self_t", "original_self_p"]
        + (["i"] if foreach else [])
    )


def undeclared_name(
    formula: str, scope: frozenset[str], operators: OperatorNames, namespace: str
) -> str | None:
    """The first free name of formula (of an entry of ``namespace``) that names nothing it may
    use, or None."""
    text = _COMMENT_RE.sub(" ", formula) if "/" in formula else formula
    declared = None
    free = free_names(text)
    for name in free:
        if name in scope or name in _CPP or name in operators.helpers:
            continue
        if free[name] and operators.may_call(name, namespace):
            continue
        if operators.is_namespace(name) and re.search(rf"(?<![\w.:>]){name}\s*::", text):
            continue
        if declared is None:
            declared = _declared(text)
        if name not in declared:
            return name
    return None


def _declared(text: str) -> frozenset[str]:
    if "{" not in text and ";" not in text:
        return frozenset()
    return frozenset(
        name or ref
        for word, name, ref in _DECLARED_RE.findall(text)
        if ref or word not in _NOT_TYPES
    )


def undeclared_message(
    name: str, what: str, scope: frozenset[str], operators: Iterable[str] = ()
) -> str:
    """The error for `name` in `what` (the backward formula for 'self'), listing what the
    formula may use; the closest of scope and ``operators`` (its namespace's) suggested."""
    own = ", ".join(sorted(scope))
    return (
        f"the {what} uses '{name}', which is not declared there"
        f"{did_you_mean(name, scope | frozenset(operators))}; "
        f"it may use {own}, and C++ keywords, at::, c10::, std:: and torch:: names, aten "
        "operators, its namespace's operators, torch's FunctionsManual.h helpers and names it "
        "declares itself"
    )
