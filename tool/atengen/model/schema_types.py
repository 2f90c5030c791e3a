"""Schema types and alias annotations: `int[2]`, `Tensor?[]`, `Tensor(a! -> a|b)`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from atengen.cached import interned
from atengen.errors import SchemaError

# ---------------------------------------------------------------------------
# Types

# The types torch's runtime schema parser knows, DimVector, which only precomputed
# declarations use (see PRECOMPUTED_ONLY_TYPES), and Dimname, which torch 2.11 and 2.12's own
# named-tensor ops use and later releases' parser rejects (a custom op may use it only when
# built for those: torch_facts.SCHEMA_TYPES_OF_RELEASES). torchgen also lists GraphModule, which
# no release's parser takes, so a library using it could not load.
BASE_TYPE_NAMES = frozenset(
    {
        "DimVector",
        "Dimname",
        "Generator",
        "ScalarType",
        "Tensor",
        "int",
        "float",
        "str",
        "bool",
        "Layout",
        "Device",
        "DeviceIndex",
        "Scalar",
        "MemoryFormat",
        "QScheme",
        "Storage",
        "Stream",
        "SymInt",
        "SymBool",
    }
)
PRECOMPUTED_ONLY_TYPES = frozenset({"DimVector"})
_CUSTOM_CLASS_PREFIX = "__torch__.torch.classes."
_CUSTOM_CLASS_RE = re.compile(r"[A-Za-z0-9_.]+")


@dataclass(frozen=True, slots=True)
class BaseType:
    """A type by name: ``Tensor``, ``int``, ``ScalarType``, ..."""

    name: str

    def __str__(self) -> str:
        return self.name

    def is_tensor_like(self) -> bool:
        return self.name == "Tensor"

    def is_symint_like(self) -> bool:
        return self.name == "SymInt"


@dataclass(frozen=True, slots=True)
class CustomClassType:
    """A TorchScript custom class: ``__torch__.torch.classes.<class_name>``."""

    class_name: str

    def __str__(self) -> str:
        return _CUSTOM_CLASS_PREFIX + self.class_name

    def is_tensor_like(self) -> bool:
        return False

    def is_symint_like(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class OptionalType:
    """``T?``."""

    elem: Type

    def __str__(self) -> str:
        return f"{self.elem}?"

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()

    def is_symint_like(self) -> bool:
        return self.elem.is_symint_like()


@dataclass(frozen=True, slots=True)
class ListType:
    """``T[]``, or ``T[N]`` with a fixed size."""

    elem: Type
    size: int | None  # int[2] has size 2; int[] has None

    def __str__(self) -> str:
        return f"{self.elem}[{'' if self.size is None else self.size}]"

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()

    def is_symint_like(self) -> bool:
        return self.elem.is_symint_like()


Type = BaseType | CustomClassType | OptionalType | ListType

TENSOR = BaseType("Tensor")
MAX_LIST_SIZE = 2**31 - 1  # the largest `int[N]` torch keeps as written
# How many `?` and `[]` suffixes one type may stack. Torch's own YAML stacks two (`Tensor?[]`,
# `int[]?`); without a bound, a type stacking hundreds would overflow Python's stack in the
# parser, in printing, hashing and comparing (each of which recurses once per suffix).
MAX_TYPE_NESTING = 32
_LIST_SUFFIX_RE = re.compile(r"^(.+)\[([0-9]*)\]$")


@interned
def parse_type(s: str) -> Type:
    # Suffixes bind from the right: `Tensor?[]` is a list of optionals and
    # `int[]?` an optional list.
    if s.count("?") + s.count("[") > MAX_TYPE_NESTING:  # (no type name holds either)
        raise SchemaError(
            f"type '{_abbreviated(s)}' nests more than {MAX_TYPE_NESTING} '?' and '[]' suffixes"
        )
    if s.endswith("?"):
        if s.endswith("??"):
            # torch's parser folds it to one `?`: the C++ type would differ from the schema's.
            raise SchemaError(f"type '{s}' is an optional of an optional; write one '?'")
        return OptionalType(parse_type(s[:-1]))
    m = _LIST_SUFFIX_RE.match(s)
    if m:
        size = m.group(2)
        if size.startswith("0") and size != "0":
            raise SchemaError(f"unrecognized type '{s}'")
        if size and int(size) > MAX_LIST_SIZE:
            # torch reads the size as a 64-bit number (failing past it) and keeps it in 32
            # bits: int[2147483648] would be registered as int[-2147483648].
            raise SchemaError(f"list size in '{s}' is larger than {MAX_LIST_SIZE}")
        return ListType(parse_type(m.group(1)), int(size) if size else None)
    if s in BASE_TYPE_NAMES:
        return BaseType(s)
    if s.startswith(_CUSTOM_CLASS_PREFIX):
        name = s[len(_CUSTOM_CLASS_PREFIX) :]
        if _CUSTOM_CLASS_RE.fullmatch(name):
            return CustomClassType(name)
    if s == "None":
        # torch reads `-> None` as one NoneType result, which no C++ kernel returns.
        raise SchemaError("unrecognized type 'None': a kernel returning nothing is `-> ()`")
    raise SchemaError(f"unrecognized type '{s}'")


def _abbreviated(s: str) -> str:
    return s if len(s) <= 60 else f"{s[:28]}...{s[-28:]}"


# ---------------------------------------------------------------------------
# Alias annotations: `a`, `a!`, `a|b`, `a -> *`, `a! -> a|b`

_ALIAS_SET_RE = r"[a-z](?:\|[a-z])*"
_ANNOTATION_RE = re.compile(rf"({_ALIAS_SET_RE})(!?)(?: -> (\*|{_ALIAS_SET_RE}))?")


@dataclass(frozen=True, slots=True)
class Annotation:
    """An alias annotation: ``a``, ``a!``, ``a|b``, ``a -> *``."""

    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...] = ()

    def __str__(self) -> str:
        s = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_set_after:
            s += " -> " + "|".join(self.alias_set_after)
        return s


@interned
def parse_annotation(s: str) -> Annotation:
    m = _ANNOTATION_RE.fullmatch(s)
    if m is None:
        raise SchemaError(f"unrecognized alias annotation '{s}'")
    before = tuple(m.group(1).split("|"))
    is_write = m.group(2) == "!"
    after = tuple(m.group(3).split("|")) if m.group(3) else ()
    if is_write and len(before) > 1:
        raise SchemaError(f"alias set larger than 1 cannot be mutable: '{s}'")
    if len(before) > 1 and len(after) > 1:
        raise SchemaError(f"before and after alias sets cannot both be larger than 1: '{s}'")
    return Annotation(before, is_write, after)
