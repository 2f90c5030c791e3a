"""An operator's C++ signature in stable types: its kernel's (registrations) and its call
function's (call_api), and the reason when the target release cannot carry it."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from atengen.model.schema import FunctionSchema
from atengen.model.schema_arguments import Argument
from atengen.model.schema_names import CPP_KEYWORDS
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type
from atengen.stable.releases import StableTarget
from atengen.stable.types import NotCarried, Spelled, spell_for


def cpp_name(name: str) -> str:
    return f"{name}_" if name in CPP_KEYWORDS else name


@dataclass(frozen=True)
class StableParam:
    name: str
    type: str  # as declared: `const torch::stable::Tensor&`, `int64_t`
    argument: Argument

    def decl(self, default: str | None = None) -> str:
        return f"{self.type} {self.name}" + ("" if default is None else f" = {default}")


@dataclass(frozen=True)
class StableSignature:
    params: tuple[StableParam, ...]
    results: tuple[str, ...]  # one C++ type per schema return

    @property
    def return_type(self) -> str:
        if not self.results:
            return "void"
        if len(self.results) == 1:
            return self.results[0]
        return f"std::tuple<{', '.join(self.results)}>"

    @property
    def param_types(self) -> tuple[str, ...]:
        return tuple(p.type for p in self.params)


def stable_signature(
    func: FunctionSchema, target: StableTarget, *, mutable_refs: bool, scalar: str | None = None
) -> StableSignature:
    """``func`` in stable types. ``mutable_refs``: a written Tensor (``Tensor(a!)``) is taken as
    ``torch::stable::Tensor&`` (kernels, as ATen's native kernels take them) rather than a const
    reference (calls, so that temporaries bind). ``scalar``: the C++ type of a Scalar argument
    (spell's). Raises NotCarried, its reason naming where."""
    params = []
    for a in func.arguments.flat_all:
        s = _spelled(a.type, target, f"argument '{a.name}'", scalar)
        if mutable_refs and a.is_write and s.param == "torch::stable::Tensor":
            decl = "torch::stable::Tensor&"
        elif s.by_const_ref:
            decl = f"const {s.param}&"
        else:
            decl = s.param
        params.append(StableParam(cpp_name(a.name), decl, a))
    results = tuple(
        _spelled(r.type, target, f"result {i}").result for i, r in enumerate(func.returns)
    )
    return StableSignature(tuple(params), results)


def _spelled(t: Type, target: StableTarget, where: str, scalar: str | None = None) -> Spelled:
    try:
        return spell_for(t, target, scalar)
    except NotCarried as e:
        raise NotCarried(e.type_text, f"type '{e.type_text}' ({where}): {e.reason}") from None


def trailing_defaults(params: tuple[StableParam, ...]) -> tuple[str | None, ...]:
    """The C++ default of each parameter: the schema's where C++ can spell it, from the last
    parameter back to the first one that has none (C++ defaults must be trailing)."""
    defaults: list[str | None] = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        value = cpp_default(params[i].argument)
        if value is None:
            break
        defaults[i] = value
    return tuple(defaults)


_SCALAR_TYPES = {"long": "Long", "float": "Float", "complex": "ComplexFloat"}
_ENUM_DEFAULTS = {
    ("Layout", "strided"): "torch::headeronly::Layout::Strided",
    ("MemoryFormat", "contiguous_format"): "torch::headeronly::MemoryFormat::Contiguous",
}


def cpp_default(a: Argument) -> str | None:
    """A C++ spelling of ``a``'s schema default, or None (none, or none C++ can spell here:
    devices, `Mean`, a default list of an optional list)."""
    d = a.default
    if d is None:
        return None
    t = a.type
    if isinstance(t, OptionalType):
        if d == "None":
            return "std::nullopt"
        t = t.elem
        if isinstance(t, ListType):
            return None  # std::optional<ArrayRef> of a braced list would dangle
    if isinstance(t, ListType):
        return _list_default(t, d)
    if not isinstance(t, BaseType):
        return None
    name = t.name
    if name == "bool" and d in ("True", "False"):
        return "true" if d == "True" else "false"
    if name in ("int", "SymInt") and _is_int(d):
        return d
    if name == "Scalar" and (_is_int(d) or _is_number(d)):
        return d
    if name == "float" and _is_number(d):
        return d
    if name == "str":
        try:
            value = ast.literal_eval(d)
        except (ValueError, SyntaxError):
            return None
        # json.dumps of ASCII text is a valid C++ string literal.
        return json.dumps(value) if isinstance(value, str) and value.isascii() else None
    if name == "ScalarType" and d in _SCALAR_TYPES:
        return f"torch::headeronly::ScalarType::{_SCALAR_TYPES[d]}"
    return _ENUM_DEFAULTS.get((name, d))


def _list_default(t: ListType, d: str) -> str | None:
    if not (isinstance(t.elem, BaseType) and t.elem.name in ("int", "SymInt", "float")):
        return None
    if d.startswith("[") and d.endswith("]"):
        items = [x.strip() for x in d[1:-1].split(",") if x.strip()]
    elif t.size is not None:
        items = [d] * t.size  # `int[2] stride=1`: torch repeats the one value
    else:
        return None
    if not all(_is_number(x) for x in items):
        return None
    return "{" + ", ".join(items) + "}"


def _is_int(s: str) -> bool:
    digits = s[1:] if s.startswith("-") else s
    return digits.isdigit() and -(2**63) < int(s) < 2**63


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return s.lower().lstrip("-") not in ("inf", "nan", "infinity")
