"""Schema types in the stable ABI's C++ types, for a target release.

    Tensor -> torch::stable::Tensor        int, SymInt -> int64_t      float -> double
    bool -> bool                           str -> std::string          Device -> torch::stable::Device
    ScalarType, Layout, MemoryFormat -> torch::headeronly::<same name>
    Generator -> torch::stable::Generator (2.13 on)
    T? -> std::optional<T>
    int[], SymInt[], float[] -> torch::headeronly::HeaderOnlyArrayRef<int64_t | double>
        (std::vector<...> where it is a result: an array ref owns nothing)
    Tensor[], Tensor?[] -> std::vector<torch::stable::Tensor | std::optional<...>>
    (a, b) results -> std::tuple<a, b>;  () -> void

SymInt is passed as a plain int64_t: the stable ABI has no symbolic integers, and libtorch reads
the word by the schema's type. Scalar reaches the call API only through stable/scalar_routes.py
(``spell(t, scalar=...)``). No release carries Dimname, Storage, Stream, QScheme,
SymBool, DeviceIndex, bool[] (std::vector<bool> has no contiguous storage for the list
conversion to read) or custom classes: an operator using one has no stable spelling.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.model.schema_types import BaseType, ListType, OptionalType, Type
from atengen.stable.releases import StableTarget

_TENSOR = "torch::stable::Tensor"
_ARRAY_REF = "torch::headeronly::HeaderOnlyArrayRef"
_VECTOR = "std::vector<T>"
_OPTIONAL = "std::optional<T>"
_ARRAY_REF_CONVERSION = "torch::headeronly::HeaderOnlyArrayRef<T>"

# Base type -> (C++ type, the conversions it needs). Passed by value unless in BY_CONST_REF.
_BASE = {
    "Tensor": (_TENSOR, frozenset({"torch::stable::Tensor"})),
    "int": ("int64_t", frozenset()),
    "SymInt": ("int64_t", frozenset()),
    "float": ("double", frozenset()),
    "bool": ("bool", frozenset()),
    "str": ("std::string", frozenset({"std::string"})),
    "ScalarType": ("torch::headeronly::ScalarType", frozenset({"ScalarType"})),
    "Layout": ("torch::headeronly::Layout", frozenset({"Layout"})),
    "MemoryFormat": ("torch::headeronly::MemoryFormat", frozenset({"MemoryFormat"})),
    "Device": ("torch::stable::Device", frozenset({"torch::stable::Device"})),
    "Generator": ("torch::stable::Generator", frozenset({"torch::stable::Generator"})),
}
# List elements read as contiguous arrays (HeaderOnlyArrayRef); other carried lists are vectors.
_ARRAY_ELEMENTS = {"int": "int64_t", "SymInt": "int64_t", "float": "double"}


@dataclass(frozen=True)
class Spelled:
    """A schema type in stable C++: its type as a parameter (by value) and as a result, and the
    conversions (releases.CONVERSIONS_BY_RELEASE names) that carry it."""

    param: str
    result: str
    conversions: frozenset[str]

    @property
    def by_const_ref(self) -> bool:
        """Whether a parameter of this type is best taken as `const T&` (it owns something)."""
        return not (
            self.param in ("int64_t", "double", "bool")
            or self.param.startswith(("torch::headeronly::", "std::optional<torch::headeronly"))
        )


class NotCarried(Exception):  # noqa: N818 - a reason, raised to the caller that knows the op
    """A schema type no stable conversion carries: ``type`` is the whole type as written."""

    def __init__(self, type_text: str, reason: str):
        super().__init__(reason)
        self.type_text = type_text
        self.reason = reason


def spell(t: Type, scalar: str | None = None) -> Spelled:
    """The stable spelling of ``t``, whatever the release; NotCarried when there is none.
    ``scalar``: the C++ type of a Scalar, for a call that does not pass it on the dispatcher's
    stack (stable/scalar_routes.py); None: Scalar is not carried."""
    if isinstance(t, BaseType):
        if t.name == "Scalar" and scalar is not None:
            return Spelled(scalar, scalar, frozenset())
        if t.name not in _BASE:
            raise NotCarried(str(t), "the stable ABI has no C++ type for it")
        cpp, conversions = _BASE[t.name]
        return Spelled(cpp, cpp, conversions)
    if isinstance(t, OptionalType):
        inner = spell(t.elem, scalar)
        return Spelled(
            f"std::optional<{inner.param}>",
            f"std::optional<{inner.result}>",
            inner.conversions | {_OPTIONAL},
        )
    if isinstance(t, ListType):
        elem = t.elem
        if isinstance(elem, BaseType) and elem.name in _ARRAY_ELEMENTS:
            cpp = _ARRAY_ELEMENTS[elem.name]
            # From an array ref when passed; kernels get the list unboxed into a vector.
            return Spelled(
                f"{_ARRAY_REF}<{cpp}>",
                f"std::vector<{cpp}>",
                frozenset({_ARRAY_REF_CONVERSION, _VECTOR}),
            )
        if elem == BaseType("Tensor") or elem == OptionalType(BaseType("Tensor")):
            inner = spell(elem)
            return Spelled(
                f"std::vector<{inner.param}>",
                f"std::vector<{inner.result}>",
                inner.conversions | {_VECTOR},
            )
        raise NotCarried(str(t), "the stable ABI carries lists of int, SymInt, float and Tensor")
    raise NotCarried(str(t), "the stable ABI has no C++ type for it")


def spell_for(t: Type, target: StableTarget, scalar: str | None = None) -> Spelled:
    """``spell(t, scalar)`` when the target carries it; NotCarried naming the first known
    release that does, where one does."""
    s = spell(t, scalar)
    missing = s.conversions - target.conversions
    if missing:
        later = target.first_release_carrying(s.conversions)
        since = f"; torch {later} carries it" if later else ""
        raise NotCarried(str(t), f"the stable ABI of torch {target.release} cannot carry it{since}")
    return s
