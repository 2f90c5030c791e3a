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
  and c10::fmap; an op YAML without aten's operators cannot tell which those are, so then any
  called name passes;
- torch's FunctionsManual.h helpers (whether the wheel exports them is checked elsewhere) and
  the properties a node saves instead of a tensor (`TensorGeometry(self)`, `to_args_sizes(xs)`);
- a namespace before `::` (at, c10, std, torch, an operator namespace of the op YAML);
- a name the formula declares itself (a lambda's parameters and variables).
"""

from __future__ import annotations

import re

from atengen.autograd.formulas import free_names
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
    """The aten operators' names (and their `_symint` forms), which formulas call unqualified,
    and the operator namespaces, gathered from the op model on first use; and the helpers of
    torch's FunctionsManual.h (those the wheel declares, exported or not)."""

    def __init__(self, model: OperatorModel, helpers: frozenset[str]):
        self.helpers = helpers
        self._model = model
        self._names: frozenset[str] | None = None
        self._namespaces: frozenset[str] | None = None

    def _gather(self) -> tuple[frozenset[str], frozenset[str]]:
        """The aten operators' names and the namespaces, gathered on first use."""
        names: set[str] = set()
        namespaces: set[str] = set()
        for f in self._model.functions:
            namespaces.add(f.namespace)
            if f.namespace == "aten":
                name = str(f.name.name)
                names.update((name, name + "_symint"))
        self._names, self._namespaces = frozenset(names), frozenset(namespaces)
        return self._names, self._namespaces

    def may_call(self, name: str) -> bool:
        """An aten operator, or anything where the op YAML has none (then which names argument-
        dependent lookup finds is unknown)."""
        names = self._names if self._names is not None else self._gather()[0]
        return name in names or not names

    def is_namespace(self, name: str) -> bool:
        namespaces = self._namespaces if self._namespaces is not None else self._gather()[1]
        return name in _NAMESPACES or name in namespaces


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


def undeclared_name(formula: str, scope: frozenset[str], operators: OperatorNames) -> str | None:
    """The first free name of formula that names nothing it may use, or None."""
    text = _COMMENT_RE.sub(" ", formula) if "/" in formula else formula
    declared = None
    free = free_names(text)
    for name in free:
        if name in scope or name in _CPP or name in operators.helpers:
            continue
        if free[name] and operators.may_call(name):
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


def undeclared_message(name: str, what: str, scope: frozenset[str]) -> str:
    """The error for `name` in `what` (the backward formula for 'self'), listing what the
    formula may use."""
    own = ", ".join(sorted(scope))
    return (
        f"the {what} uses '{name}', which is not declared there{did_you_mean(name, scope)}; "
        f"it may use {own}, and C++ keywords, at::, c10::, std:: and torch:: names, aten "
        "operators, torch's FunctionsManual.h helpers and names it declares itself"
    )
