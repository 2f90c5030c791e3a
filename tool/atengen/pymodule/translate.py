"""Derivative formulas (C++ expressions, cpp_expr.py) as Python expressions over torch.

A formula's names are what the backward of torch.library.register_autograd has: the gradients
(`grad`, `grads[i]`, `grad_<output>`), the inputs and outputs setup_context saved. Calls reach
the library's own operators (`op(...)`, `<ns>::op(...)`: `torch.ops.<ns>.op(...)`), aten's
(`op(...)`, `at::op(...)`: `torch.op(...)`, or `torch.ops.aten.op(...)` for the ones torch keeps
out of its namespace) and Tensor methods (`x.op(...)`); the C++-only accessors become their
Python forms (`x.sym_sizes()`: `x.size()`, `x.sym_size(d)`: `x.size(d)`, `x.scalar_type()`:
`x.dtype`). A property read of an input or output (its sizes, dtype, ...) is saved by
setup_context instead of the tensor. Binary and conditional expressions are parenthesized, so
C++ precedence carries over whatever Python's is. Anything else is a TranslationError naming the
construct and what to write instead.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from atengen.pymodule.cpp_expr import (
    Binary,
    Braced,
    Call,
    Conditional,
    Expr,
    ExprError,
    Index,
    Member,
    Name,
    Number,
    String,
    Unary,
    parse,
)

_RELEASE = 'or build the library with abi = "release"'
# Python names the generated functions use besides the formulas' own.
RESERVED = frozenset({"ctx", "torch", "math", "grads", "inputs", "output", "keyword_only_inputs"})
_CONSTANTS = {
    "true": "True",
    "false": "False",
    "M_PI": "math.pi",
    "M_E": "math.e",
    "M_SQRT2": "math.sqrt(2.0)",
    "M_LN2": "math.log(2.0)",
    "M_LN10": "math.log(10.0)",
    "INFINITY": "math.inf",
    "NAN": "math.nan",
}
_NULLOPT = frozenset({("std", "nullopt"), ("c10", "nullopt"), ("", "std", "nullopt")})
# C++-only Tensor accessors: (method, arity) -> (property key, Python form over `{}`).
_PROPERTIES: Mapping[tuple[str, int], tuple[str, str]] = {
    ("sym_sizes", 0): ("size", "{}.size()"),
    ("sym_numel", 0): ("numel", "{}.numel()"),
    ("numel", 0): ("numel", "{}.numel()"),
    ("dim", 0): ("dim", "{}.dim()"),
    ("scalar_type", 0): ("dtype", "{}.dtype"),
    ("layout", 0): ("layout", "{}.layout"),
    ("sym_strides", 0): ("stride", "{}.stride()"),
    ("is_conj", 0): ("is_conj", "{}.is_conj()"),
}
_SCALAR_METHODS = {"toDouble": "float({})", "toFloat": "float({})", "toLong": "int({})"}
# Tensor methods Python has that native_functions.yaml does not list as method variants.
_PYTHON_METHODS = frozenset({"size", "stride", "dim", "numel", "element_size", "is_complex"})
_SUFFIXES = frozenset({"", "f", "l", "ll", "u", "ul", "ull", "lu", "llu"})
_PRINTABLE = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII without `"` and `\`


class TranslationError(ValueError):
    """A formula outside the subset: the message names the construct and the fix."""


@dataclass(frozen=True)
class AtenNames:
    """What torch has of aten's operators in Python, from its native_functions.yaml."""

    torch_functions: frozenset[str]  # `torch.<name>`
    other_functions: frozenset[str]  # only as `torch.ops.aten.<name>`
    methods: frozenset[str]  # Tensor methods


@dataclass(frozen=True)
class Variable:
    """A name a formula reads: an input (`index` into the schema's arguments), an output
    (`index` into its returns) or a gradient (`index` into the backward's `grads`)."""

    kind: str  # input, output, grad
    index: int
    local: str  # its Python name in the generated functions
    tensor: bool = False  # a Tensor (saved with save_for_backward; properties apply)


@dataclass(frozen=True)
class Scope:
    namespace: str
    own_ops: frozenset[str]  # the C++ names of the namespace's operators (and `_symint` forms)
    variables: Mapping[str, Variable]  # formula name -> variable
    aten: AtenNames


@dataclass(frozen=True)
class SavedProperty:
    variable: str  # the formula's name of the input or output
    local: str  # the Python name of the saved value
    expr: str  # its Python form over the variable's local, e.g. `self.size()`


@dataclass
class Translation:
    """One formula as Python, and what of the inputs and outputs it reads."""

    text: str = ""
    whole: set[str] = field(default_factory=set)  # variables read whole
    properties: dict[str, SavedProperty] = field(default_factory=dict)  # by local


def python_name(name: str, taken: frozenset[str] = frozenset()) -> str:
    """A formula's name as a Python local: keywords and RESERVED names get `_` appended."""
    local = name
    while keyword.iskeyword(local) or local in RESERVED or local in taken:
        local += "_"
    return local


def translate(formula: str, scope: Scope) -> Translation:
    try:
        expr = parse(formula)
    except ExprError as e:
        raise TranslationError(f"{e}; {_REWRITE}") from None
    out = Translation()
    text = _Translator(scope, out).expr(expr)
    out.text = text[1:-1] if _wrapped(text) else text
    return out


_REWRITE = f"write the formula as one expression of torch operations, {_RELEASE}"


def _wrapped(text: str) -> bool:
    """Whether text is one parenthesized group, `(...)` (not `(a) + (b)`)."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    in_string = False
    for i, c in enumerate(text):
        if c == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return True


class _Translator:
    def __init__(self, scope: Scope, out: Translation):
        self.scope = scope
        self.out = out

    def expr(self, e: Expr) -> str:
        if isinstance(e, Number):
            return _number(e.text)
        if isinstance(e, String):
            if not _PRINTABLE.fullmatch(e.value):
                raise TranslationError(
                    "a string literal with escapes or non-ASCII characters; use plain text"
                )
            return repr(e.value)
        if isinstance(e, Name):
            return self.name(e)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Member):
            raise TranslationError(
                f"the data member '.{e.name}' (not a call); stable mode translates method calls "
                f"such as '.{e.name}()'"
            )
        if isinstance(e, Index):
            return f"{self.expr(e.obj)}[{self.expr(e.index)}]"
        if isinstance(e, Unary):
            operand = self.expr(e.operand)
            return f"(not {operand})" if e.op == "!" else f"({e.op}{operand})"
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, Conditional):
            return f"({self.expr(e.then)} if {self.expr(e.cond)} else {self.expr(e.other)})"
        assert isinstance(e, Braced)
        return "[" + ", ".join(self.expr(i) for i in e.items) + "]"

    def binary(self, e: Binary) -> str:
        if e.op in ("<<", ">>"):
            raise TranslationError(f"the shift '{e.op}'; {_REWRITE}")
        op = {"&&": "and", "||": "or"}.get(e.op, e.op)
        return f"({self.expr(e.left)} {op} {self.expr(e.right)})"

    def name(self, e: Name) -> str:
        parts = e.parts
        if parts in _NULLOPT:
            return "None"
        if len(parts) == 1:
            name = parts[0]
            variable = self.scope.variables.get(name)
            if variable is not None:
                self.out.whole.add(name)
                return variable.local
            if name in _CONSTANTS:
                return _CONSTANTS[name]
            if name in ("grad_input_mask", "retain_variables"):
                raise TranslationError(
                    f"'{name}' has no Python form in stable mode (the backward computes what "
                    f"ctx.needs_input_grad asks for); remove it from the formula, {_RELEASE}"
                )
            if name == "options":
                raise TranslationError(
                    f"'options' (TensorOptions) has no Python form; pass dtype and device "
                    f"explicitly, {_RELEASE}"
                )
            if name in self.scope.own_ops or name in self.scope.aten.torch_functions:
                raise TranslationError(f"the function '{name}' is named but not called")
        raise TranslationError(
            f"the name '{'::'.join(parts)}' has no Python translation (stable mode translates "
            f"the formula's inputs, outputs, gradients, true, false, nullopt and M_PI-style "
            f"constants); {_REWRITE}"
        )

    def args(self, args: tuple[Expr, ...]) -> str:
        return ", ".join(self.expr(a) for a in args)

    def call(self, e: Call) -> str:
        if isinstance(e.func, Member):
            return self.method(e.func, e.args)
        if not isinstance(e.func, Name):
            raise TranslationError(f"a call of an expression's value; {_REWRITE}")
        parts = e.func.parts[1:] if e.func.parts[0] == "" else e.func.parts
        qualifier, base = parts[:-1], parts[-1]
        name = base.removesuffix("_symint")
        ns = self.scope.namespace
        aten = self.scope.aten
        # A bare name aten has too stays aten's, as in the C++ of abi = "release".
        is_aten = name in aten.torch_functions or name in aten.other_functions
        if qualifier == (ns,) or (not qualifier and base in self.scope.own_ops and not is_aten):
            return f"torch.ops.{ns}.{name}({self.args(e.args)})"
        if qualifier in ((), ("at",)):
            if name in aten.torch_functions:
                return f"torch.{name}({self.args(e.args)})"
            if name in aten.other_functions:
                return f"torch.ops.aten.{name}({self.args(e.args)})"
            raise TranslationError(
                f"the call '{'::'.join(parts)}(...)' is neither an operator of {ns} nor an aten "
                f"operator (FunctionsManual.h and other C++ helpers have no Python form); "
                f"{_REWRITE}"
            )
        raise TranslationError(
            f"the call '{'::'.join(parts)}(...)' (C++ library code) has no Python translation; "
            f"{_REWRITE}"
        )

    def method(self, member: Member, args: tuple[Expr, ...]) -> str:
        method = member.name
        prop = _PROPERTIES.get((method, len(args)))
        if method == "sym_size" and len(args) == 1:
            index = _int_literal(args[0])
            if index is not None:
                key = f"size_{index}".replace("-", "minus")
                prop = (key, "{}.size(" + str(index) + ")")
        variable = self.saved_tensor(member.obj)
        if prop is not None and variable is not None:
            return self.property(variable, prop[0], prop[1])
        obj = self.expr(member.obj)
        if prop is not None:
            return prop[1].format(obj)
        if method == "sym_size" and len(args) == 1:
            return f"{obj}.size({self.expr(args[0])})"
        if method in _SCALAR_METHODS and not args:
            return _SCALAR_METHODS[method].format(obj)
        if method == "defined" and not args:
            return f"({obj} is not None)"
        name = method.removesuffix("_symint")
        if name in self.scope.aten.methods or name in _PYTHON_METHODS:
            return f"{obj}.{name}({self.args(args)})"
        raise TranslationError(
            f"the method '.{method}()' is no Tensor method torch has in Python; {_REWRITE}"
        )

    def saved_tensor(self, e: Expr) -> str | None:
        if isinstance(e, Name) and len(e.parts) == 1:
            variable = self.scope.variables.get(e.parts[0])
            if variable is not None and variable.tensor and variable.kind != "grad":
                return e.parts[0]
        return None

    def property(self, name: str, key: str, form: str) -> str:
        variable = self.scope.variables[name]
        taken = frozenset(v.local for v in self.scope.variables.values())
        local = python_name(f"{variable.local}_{key}", taken)
        self.out.properties[local] = SavedProperty(name, local, form.format(variable.local))
        return local


def _int_literal(e: Expr) -> int | None:
    if isinstance(e, Number) and e.text.isdigit():
        return int(e.text)
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, Number):
        value = _int_literal(e.operand)
        return None if value is None else -value
    return None


_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?([A-Za-z]*)")


def _number(text: str) -> str:
    m = _NUMBER.fullmatch(text)
    if m is None or m.group(3).lower() not in _SUFFIXES:
        raise TranslationError(f"the number literal '{text}'; write it in decimal")
    mantissa, exponent = m.group(1), m.group(2) or ""
    if "." not in mantissa and not exponent:
        if len(mantissa) > 1 and mantissa.startswith("0"):
            raise TranslationError(f"the octal literal '{text}'; write it in decimal")
        return mantissa
    if mantissa.startswith("."):
        mantissa = "0" + mantissa
    if mantissa.endswith("."):
        mantissa += "0"
    return mantissa + exponent
