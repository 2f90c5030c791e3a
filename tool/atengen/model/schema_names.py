"""Operator names in schemas: ``add``, ``add_``, ``__iadd__``, ``add.Tensor``; and the identifier
rules that the names of operators, overloads, arguments and returns share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atengen.cached import interned
from atengen.errors import SchemaError

IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words C++ reserves. A schema may use them as names (torch does not care); where one would
# reach C++ as written, the generator renames it (stable mode's parameters get a trailing `_`)
# or refuses it at its YAML line.
CPP_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t "
    "char16_t char32_t class compl concept const consteval constexpr constinit const_cast "
    "continue co_await co_return co_yield decltype default delete do double dynamic_cast else "
    "enum explicit export extern false float for friend goto if inline int long mutable "
    "namespace new noexcept not not_eq nullptr operator or or_eq private protected public "
    "register reinterpret_cast requires return short signed sizeof static static_assert "
    "static_cast struct switch template this thread_local throw true try typedef typeid "
    "typename union unsigned using virtual void volatile wchar_t while xor xor_eq".split()
)
# Words torch's schema lexer reads as constants, never as names: it rejects them as operator,
# overload, argument and return names ("expected ident but found 'True'").
# The words torch's schema lexer reads as keywords (torch/csrc/jit/frontend/lexer.h's tokens
# spelled as words, the same in 2.11 to 2.15): it refuses each as an operator, overload, argument
# or return name, so a library defining one would fail as it loads. Checked against every
# installed wheel's header and parser by tests/unit/model/test_schema_rules.py.
SCHEMA_KEYWORDS = frozenset(
    {
        *("True", "False", "None", "NoneType", "Ellipsis"),
        *("and", "as", "assert", "break", "class", "continue", "def", "del", "elif", "else"),
        *("for", "global", "if", "import", "in", "is", "not", "or", "pass", "raise", "return"),
        *("while", "with"),
    }
)
_CONSTANT_WORDS = frozenset({"True", "False", "None"})


def check_not_keyword(name: str, what: str, s: str) -> None:
    if name in SCHEMA_KEYWORDS:
        reads = "a constant" if name in _CONSTANT_WORDS else "a keyword"
        raise SchemaError(
            f"'{name}' cannot be {what} name (in '{s}'): torch's schema parser reads it as {reads}"
        )


# ---------------------------------------------------------------------------
# Operator names

# Python's augmented assignments; `__iadd__` is the inplace form of `__add__`.
_AUGMENTED_ASSIGNMENT_NAMES = frozenset(
    {"add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or"}
)
_DUNDER_RE = re.compile(r"__([^_]+)__")
_OVERLOAD_RE = re.compile(r"[A-Za-z0-9_]+")
_FUNCTIONAL_SUFFIX = "_functional"


@dataclass(frozen=True, slots=True)
class BaseOperatorName:
    """An operator's name without its overload: ``add``, ``add_``, ``__iadd__``."""

    base: str
    inplace: bool = False
    dunder_method: bool = False
    # `foo_functional`: the functional variant generated from a mutable `foo`,
    # renamed so that it cannot clash with foo's existing overloads.
    functional_overload: bool = False

    def __str__(self) -> str:
        if self.dunder_method:
            return f"__{'i' if self.inplace else ''}{self.base}__"
        suffix = "_" if self.inplace else _FUNCTIONAL_SUFFIX if self.functional_overload else ""
        return self.base + suffix


@interned  # the overloads of one op share it
def parse_base_name(s: str) -> BaseOperatorName:
    if not s:
        raise SchemaError("empty operator name")
    if s.endswith("_out"):
        raise SchemaError(
            f"operator name '{s}' ends in '_out', which is reserved; "
            "use an 'out' overload name instead"
        )
    m = _DUNDER_RE.fullmatch(s)
    if m:
        base = m.group(1)
        inplace = base[0] == "i" and base[1:] in _AUGMENTED_ASSIGNMENT_NAMES
        if inplace:
            base = base[1:]
        elif base[0] == "i":
            raise SchemaError(f"dunder name '{s}' is not a known inplace augmented assignment")
        r = BaseOperatorName(base, inplace, True)
    else:
        inplace = s.endswith("_")
        base = s[:-1] if inplace else s
        functional = base.endswith(_FUNCTIONAL_SUFFIX)
        if functional:
            if inplace:
                raise SchemaError(f"'{s}': a _functional operator cannot be inplace")
            base = base[: -len(_FUNCTIONAL_SUFFIX)]
        r = BaseOperatorName(base, inplace, False, functional)
    if not IDENT_RE.fullmatch(r.base) or str(r) != s:
        raise SchemaError(f"illegal operator name '{s}'")
    return r


@dataclass(frozen=True, slots=True)
class OperatorName:
    """An operator's name with its overload: ``add.Tensor``; the overload may be empty."""

    name: BaseOperatorName
    overload_name: str

    def __str__(self) -> str:
        return f"{self.name}.{self.overload_name}" if self.overload_name else str(self.name)

    def unambiguous_name(self) -> str:
        """``name_overload``: unique across overloads, usable as a C++ identifier."""
        return f"{self.name}_{self.overload_name}" if self.overload_name else str(self.name)


def parse_operator_name(s: str) -> OperatorName:
    """The name ``s`` spells; it prints back as ``s`` (parse_base_name checks the base, and an
    overload is one word after the only dot)."""
    base, dot, overload = s.partition(".")
    if dot and not _OVERLOAD_RE.fullmatch(overload):
        raise SchemaError(f"illegal overload name in '{s}'")
    if overload == "default":  # torch names an op's unnamed overload `default`
        raise SchemaError(f"'default' is not a legal overload name (in '{s}')")
    if base in SCHEMA_KEYWORDS or overload in SCHEMA_KEYWORDS:
        check_not_keyword(base, "an operator", s)
        check_not_keyword(overload, "an overload", s)
    return OperatorName(parse_base_name(base), overload)


def parse_custom_operator_name(s: str, *, inplace: bool) -> OperatorName:
    """A custom namespace's operator name, as torch takes it: any identifier, an overload
    after one dot. ``inplace``: the schema has aten's in-place shape, so a trailing ``_``
    marks the in-place form of the op without it; elsewhere the ``_`` is part of the name.
    Names ending in ``_out`` and ``_functional``, and dunder names, are plain names here."""
    base, dot, overload = s.partition(".")
    if not IDENT_RE.fullmatch(base):
        raise SchemaError(f"illegal operator name '{base}'")
    if dot and not _OVERLOAD_RE.fullmatch(overload):
        raise SchemaError(f"illegal overload name in '{s}'")
    if overload == "default":
        raise SchemaError(f"'default' is not a legal overload name (in '{s}')")
    check_not_keyword(base, "an operator", s)
    check_not_keyword(overload, "an overload", s)
    if inplace and base.endswith("_") and len(base) > 1 and not _DUNDER_RE.fullmatch(base):
        return OperatorName(BaseOperatorName(base[:-1], True), overload)
    return OperatorName(BaseOperatorName(base), overload)
