"""model/frozen.py's frozen_instance, the one-step construction the model uses for speed: its
result is what the dataclass's own constructor makes (type, field values, ==, hash), still
frozen, and the model's users of it (FunctionSchema.with_text, new_native_function) agree with
their classes' constructors."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from atengen.errors import Location
from atengen.model.frozen import frozen_instance
from atengen.model.native_function import BackendMetadata, NativeFunction, new_native_function
from atengen.model.schema import FunctionSchema, parse_schema


@dataclasses.dataclass(frozen=True)
class _Point:
    x: int
    y: tuple[str, ...] = ()
    label: str | None = None


def _field_values(obj: object) -> dict[str, object]:
    assert dataclasses.is_dataclass(obj)
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _assert_same(built: object, constructed: object) -> None:
    assert type(built) is type(constructed)
    assert _field_values(built) == _field_values(constructed)


@pytest.mark.parametrize(
    "values",
    [{"x": 1, "y": ("a", "b"), "label": "p"}, {"x": 0, "y": (), "label": None}],
)
def test_equals_the_constructor_of_a_frozen_dataclass(values: dict[str, object]) -> None:
    built = frozen_instance(_Point, dict(values))
    constructed = _Point(**values)
    _assert_same(built, constructed)
    assert built == constructed and hash(built) == hash(constructed)
    assert repr(built) == repr(constructed)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.x = 2


def test_the_dict_becomes_the_instance_dict() -> None:
    """Nothing is copied: the speed the helper is for."""
    attributes: dict[str, object] = {"x": 3, "y": (), "label": None}
    assert vars(frozen_instance(_Point, attributes)) is attributes


@pytest.mark.parametrize(
    "text",
    [
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    ],
)
def test_function_schema_with_text_equals_its_constructor(text: str) -> None:
    parsed = parse_schema(text)  # built by FunctionSchema.with_text
    constructed = FunctionSchema(parsed.name, parsed.arguments, parsed.returns)
    _assert_same(parsed, constructed)
    assert parsed == constructed and hash(parsed) == hash(constructed)
    assert str(parsed) == str(constructed) == text


def test_new_native_function_equals_its_constructor() -> None:
    """NativeFunction compares by identity (eq=False): its fields and the cached properties
    new_native_function fills in ahead are compared instead."""
    func = parse_schema("my_op.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    values: dict[str, object] = {
        "namespace": "myops",
        "func": func,
        "loc": Location("ops.yaml", 3),
        "variants": frozenset({"function"}),
        "tags": frozenset({"generated", "core"}),
        "dispatch": MappingProxyType(
            {"CompositeImplicitAutograd": BackendMetadata("my_op_out", "at::native", False)}
        ),
        "structured": False,
        "device_check": "NoCheck",
    }
    built = new_native_function(**values)
    constructed = NativeFunction(**values)
    _assert_same(built, constructed)
    for name in ("name", "kind", "generated", "has_composite_implicit_autograd_kernel"):
        assert getattr(built, name) == getattr(constructed, name), name
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.namespace = "other"
