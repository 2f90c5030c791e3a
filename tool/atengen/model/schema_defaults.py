"""Default values in schemas: the spellings torch's runtime schema parser accepts.

A schema is registered with torch as a string when the generated library loads;
a default torch cannot parse fails only then, far from the YAML line that holds
it. So the model accepts a default only if torch's parser (c10's
function_schema_parser) does, and holds it to the argument's type where torch
is laxer (torch takes ``bool flag=1`` and ``int n=1.5``, and the C++ and Python
bindings then disagree about the value).

Accepted, by type (``T?`` also takes ``None``):
  bool: True, False;  int, SymInt: -?digits within 64 bits, and ``Mean`` (torch's Reduction);
  float, Scalar: a decimal number (``-1``, ``0.5``, ``1e-05``) that std::stod reads (no
  overflow, no underflow), or for Scalar an integer within 64 bits;
  str: a quoted ASCII string literal; Device: a quoted device string (``"cpu"``, ``"cuda:1"``);
  ScalarType: long, float, complex; Layout: strided; MemoryFormat: contiguous_format;
  int[N], SymInt[N], float[N], bool[N] lists: ``[a,b]`` of element defaults, or
  (with a size N) one element default that torch repeats N times (a number: not ``Mean``).
Other types (Tensor, Generator, optional lists, ...) take only ``None`` where optional.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from atengen.errors import SchemaError
from atengen.facts import torch_facts
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type

_INT = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# Printable ASCII, with backslash escapes of printable characters.
_STRING = re.compile(
    r'"(?:[ !#-\[\]-~]|\\[\\\'"abfnrtv])*"|' r"'(?:[ -&(-\[\]-~]|\\[\\'\"abfnrtv])*'"
)
_DEVICE = re.compile(r"""(["'])([a-z]+)(?::(0|[1-9][0-9]*))?\1""")


def _is_device(default: str) -> bool:
    m = _DEVICE.fullmatch(default)
    return (
        m is not None
        and m.group(2) in torch_facts.DEVICE_TYPE_NAMES
        and (m.group(3) is None or int(m.group(3)) <= torch_facts.MAX_DEVICE_INDEX)
    )


def _is_int64(default: str) -> bool:
    # torch reads integers with std::stoll, which fails past 64 bits.
    return _INT.fullmatch(default) is not None and -(2**63) <= int(default) < 2**63


def _is_double(default: str) -> bool:
    """A number std::stod reads: it fails when the value overflows a double or underflows
    (to a subnormal, or to zero from nonzero digits: `1e-400`). Python's float() rounds as
    strtod does."""
    if _NUMBER.fullmatch(default) is None:
        return False
    value = abs(float(default))
    if value == 0:
        return not any(c in "123456789" for c in re.split("[eE]", default)[0])
    return sys.float_info.min <= value <= sys.float_info.max


def _is_scalar(default: str) -> bool:
    # A number without '.', 'e' or 'E' is an integer to torch's parser, else a double.
    return _is_int64(default) if _INT.fullmatch(default) else _is_double(default)


_BY_TYPE: dict[str, Callable[[str], object]] = {
    "bool": re.compile(r"True|False").fullmatch,
    "int": lambda default: default == "Mean" or _is_int64(default),
    "SymInt": _is_int64,
    "float": _is_double,
    "Scalar": _is_scalar,
    "str": _STRING.fullmatch,
    "Device": _is_device,
    "ScalarType": re.compile(r"long|float|complex").fullmatch,
    "Layout": re.compile(r"strided").fullmatch,
    "MemoryFormat": re.compile(r"contiguous_format").fullmatch,
}
_LIST_ELEMENTS = ("int", "SymInt", "float", "bool")


def check_default(t: Type, default: str) -> None:
    """Raises SchemaError unless ``default`` is a value of type ``t`` torch can parse."""
    if _accepts(t, default):
        return
    why = ""
    expected = _describe(t)
    if re.fullmatch(r"-?0[xX][0-9a-fA-F]+", default) and (
        "integer" in expected or "number" in expected
    ):
        # torch's lexer reads the leading 0 alone: `0x2FF` is registered as 0.
        why = f" (torch registers it as 0; write {int(default, 16)})"
    raise SchemaError(f"default value '{default}' is not {expected}{why}")


def _accepts(t: Type, default: str) -> bool:
    if isinstance(t, OptionalType):
        # torch parses an optional's default as one constant: no lists.
        return default == "None" or (isinstance(t.elem, BaseType) and _accepts(t.elem, default))
    if isinstance(t, BaseType):
        accepts = _BY_TYPE.get(t.name)
        return accepts is not None and bool(accepts(default))
    if isinstance(t, ListType) and isinstance(t.elem, BaseType) and t.elem.name in _LIST_ELEMENTS:
        if default.startswith("[") and default.endswith("]"):
            inner = default[1:-1]
            return not inner or all(_accepts(t.elem, x.strip(" ")) for x in inner.split(","))
        # torch repeats a lone number N times; `Mean` is a number only where it stands alone.
        return t.size is not None and default != "Mean" and _accepts(t.elem, default)
    return False


def _describe(t: Type) -> str:
    if isinstance(t, OptionalType):
        if isinstance(t.elem, BaseType) and t.elem.name in _BY_TYPE:
            return f"None or {_describe(t.elem)}"
        return "None"
    if isinstance(t, BaseType) and t.name in _BY_TYPE:
        return {
            "bool": "True or False",
            "int": "a 64-bit integer (or Mean)",
            "SymInt": "a 64-bit integer",
            "float": "a number a double holds",
            "Scalar": "a number (a 64-bit integer, or one a double holds)",
            "str": "a quoted ASCII string",
            "Device": 'a quoted device string like "cpu" or "cuda:1"',
            "ScalarType": "long, float or complex",
            "Layout": "strided",
            "MemoryFormat": "contiguous_format",
        }[t.name]
    if isinstance(t, ListType) and isinstance(t.elem, BaseType) and t.elem.name in _LIST_ELEMENTS:
        return f"a list like [{'1,2' if t.elem.name != 'bool' else 'True,False'}]"
    return f"a default torch can parse for type {t} (it takes none)"
