"""The `.pyi` of a wheel's `<package>.ops`: one typed function per operator of the library's
custom namespace, from its schemas, so that a type checker sees `ops.scaled_add(x, y, 0.5)` as a
call returning a Tensor and refuses `ops.scaled_add(x, "y", 0.5)`."""

from __future__ import annotations

import keyword
from dataclasses import dataclass

from atengen.errors import AtengenError
from atengen.model.native_function import NativeFunction
from atengen.model.schema_arguments import Argument, Return
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type
from atengen.render.templates import Templates

# What torch.ops accepts for each schema base type (torch/_C's argument parser). A type missing
# here is typed Any: the stub must never refuse a call torch would take.
_BASE_TYPES = {
    "Tensor": "Tensor",
    "int": "int",
    "SymInt": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "Scalar": "Number",
    "ScalarType": "torch.dtype",
    "Layout": "torch.layout",
    "MemoryFormat": "torch.memory_format",
    "Device": "Device",
    "Generator": "torch.Generator",
    "Dimname": "str",
}


# The names ops.pyi defines itself (its imports and aliases): an operator of one of these names
# would replace it for every annotation of the stub.
_STUB_NAMES = frozenset(
    {"Any", "Device", "Number", "Optional", "Sequence", "Tensor", "Union", "overload", "torch"}
)


@dataclass(frozen=True)
class StubParameter:
    text: str  # `name: type` or `name: type = ...`


@dataclass(frozen=True)
class StubFunction:
    name: str
    positional: tuple[StubParameter, ...]
    # How many of `positional` are positional-only (a `/` after them): those up to the last one
    # whose schema name is a Python keyword, renamed, which no call could pass by name.
    positional_only: int
    keyword_only: tuple[StubParameter, ...]
    # The keyword-only schema arguments named after Python keywords: a call passes them as
    # `**{"from": ...}`, which a stub's parameter cannot spell; the stub takes `**kwargs: Any`.
    unspellable: tuple[str, ...]
    returns: str
    overloaded: bool
    # The schema, for the stub's reader, escaped for the docstring it is written into: a string
    # default may hold quotes (`str s='"""'`) and backslashes.
    schema: str


@dataclass(frozen=True)
class LeftOut:
    name: str
    why: str


@dataclass(frozen=True)
class OpsStub:
    namespace: str
    text: str


def _python_type(t: Type, *, argument: bool) -> str:
    if isinstance(t, BaseType):
        return _BASE_TYPES.get(t.name, "Any")
    if isinstance(t, OptionalType):
        return f"Optional[{_python_type(t.elem, argument=argument)}]"
    if isinstance(t, ListType):
        elem = _python_type(t.elem, argument=argument)
        # Arguments take any sequence (torch converts it); a returned list is a list.
        return f"Sequence[{elem}]" if argument else f"list[{elem}]"
    return "Any"  # a custom class


def _parameter(a: Argument) -> StubParameter:
    # A schema name that is a Python keyword cannot be passed by name: it is renamed (and made
    # positional-only, see StubFunction), which a positional call does not see.
    name = a.name + "_" if keyword.iskeyword(a.name) else a.name
    default = " = ..." if a.default is not None else ""
    return StubParameter(f"{name}: {_python_type(a.type, argument=True)}{default}")


def _stub_function(namespace: str, name: str, f: NativeFunction, overloaded: bool) -> StubFunction:
    arguments = f.func.arguments
    positional = arguments.flat_positional
    renamed = [i for i, a in enumerate(positional) if keyword.iskeyword(a.name)]
    keyword_only = arguments.flat_kwarg_only + arguments.out
    return StubFunction(
        name=name,
        positional=tuple(_parameter(a) for a in positional),
        positional_only=renamed[-1] + 1 if renamed else 0,
        keyword_only=tuple(_parameter(a) for a in keyword_only if not keyword.iskeyword(a.name)),
        unspellable=tuple(a.name for a in keyword_only if keyword.iskeyword(a.name)),
        returns=_returns(f.func.returns),
        overloaded=overloaded,
        schema=f"{namespace}::{f.func}".replace("\\", "\\\\").replace('"', '\\"'),
    )


def _left_out_because(name: str) -> str:
    """Why the operator ``name`` has no function in the stub, or "" when it has one."""
    if keyword.iskeyword(name):
        return "a Python keyword: call it as getattr(ops, " + repr(name) + ")"
    if name in _STUB_NAMES:
        return "a name the stub itself uses"
    return ""


def _returns(returns: tuple[Return, ...]) -> str:
    types = [_python_type(r.type, argument=False) for r in returns]
    if not types:
        return "None"
    return types[0] if len(types) == 1 else f"tuple[{', '.join(types)}]"


def custom_namespace(
    functions: list[NativeFunction], what: str
) -> tuple[str, list[NativeFunction]]:
    """The one custom namespace of ``functions`` and its functions; an error when there is none
    (a wheel of no operators) or several (one wheel exposes one `torch.ops.<ns>`)."""
    custom = [f for f in functions if f.namespace != "aten"]
    namespaces = sorted({f.namespace for f in custom})
    if not namespaces:
        raise AtengenError(
            None,
            f"{what} declares no operator of a custom namespace (`ns::op` in its op YAML): "
            "a wheel ships the operators of one namespace, and there are none",
        )
    if len(namespaces) > 1:
        raise AtengenError(
            None,
            f"{what} declares operators of {len(namespaces)} namespaces "
            f"({', '.join(namespaces)}): a wheel ships one namespace's",
        )
    return namespaces[0], custom


def ops_stub(functions: list[NativeFunction], templates: Templates, what: str) -> OpsStub:
    """The stub of the one custom namespace among ``functions`` (see custom_namespace)."""
    namespace, custom = custom_namespace(functions, what)
    by_name: dict[str, list[NativeFunction]] = {}
    for f in sorted(custom, key=lambda f: str(f.func.name)):
        by_name.setdefault(str(f.func.name.name), []).append(f)
    stubs = []
    left_out = []
    for name, overloads in sorted(by_name.items()):
        why = _left_out_because(name)
        if why:
            left_out.append(LeftOut(name, why))
            continue
        stubs += [_stub_function(namespace, name, f, len(overloads) > 1) for f in overloads]
    text = templates.render("ops.pyi.j2", namespace=namespace, functions=stubs, left_out=left_out)
    return OpsStub(namespace=namespace, text=text)
