"""How the call API reaches an aten overload with a ``Scalar`` argument.

``torch_call_dispatcher`` carries no Scalar in torch 2.11 to 2.15: libtorch converts a stack
value to an IValue by the schema's type, and has no conversion for ``Scalar`` ("Not yet
supported conversion from StableIValue to IValue"). Two routes that every wheel from 2.11 on
offers carry one instead, each with its own C++ type:

- ``fill``: ops torch itself defines as an empty tensor filled with the Scalar (``full``,
  ``full_like``, ``scalar_tensor``, ``new_full``, ``fill``, ``fill_``). The call makes the
  tensor through the dispatcher (``empty``, ``empty_like``, ``new_empty``) and fills it with
  ``fill_.Tensor`` from a 0-dim tensor of the value (``aoti_torch_scalar_to_tensor_<type>``),
  which fills with the value in its own type. The parameter is ``atengen::stable::Scalar``
  (generated ``atengen/stable/scalar.h``): a bool, an integer or a double, kept exactly, so
  that ``full(size, 2)`` is int64 and ``full(size, 2.0)`` the default dtype, as in torch.
- ``shim``: the typed C shims of AOTInductor's fallback ops (``c_shim_aten.h``: any device,
  through the dispatcher; ``c_shim_cpu.h``, ``c_shim_cuda.h``: one device each, the kernel
  directly), which take ``double`` where the schema says Scalar. The parameter is ``double``:
  the value reaches torch as a Python float would (an integral tensor times ``2.0`` is a float
  tensor; an integral ``alpha`` cannot be given). A per-device shim is chosen by the device of
  the first tensor argument at run time; the CUDA ones are weak references, null unless
  torch's CUDA library is loaded.

Which shims a release has is a fact of its wheel (``stable_scalar_shims`` in
atengen/facts/torch_facts.py, checked against each installed wheel's headers by
tests/unit/stable/test_stable_scalar_routes.py, which also checks every prototype spelled here against the
header's declaration). A route is used for a target only when every known release from the
target on has it.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.facts import torch_facts
from atengen.model.native_function import NativeFunction
from atengen.model.schema import FunctionSchema, SchemaKind
from atengen.model.schema_arguments import Argument
from atengen.model.schema_types import BaseType, ListType, OptionalType, Type
from atengen.stable.releases import StableTarget
from atengen.stable.signatures import cpp_name
from atengen.stable.types import NotCarried

SCALAR_CLASS = "atengen::stable::Scalar"
SCALAR_HEADER = "atengen/stable/scalar.h"

# aten overload -> the recipe of stable_call.h.j2 that makes it from an empty tensor and
# fill_ (what torch's own definition of the op does).
FILL_RECIPES = {
    "full": "full",
    "full_like": "full_like",
    "scalar_tensor": "scalar_tensor",
    "new_full": "new_full",
    "fill.Scalar": "fill",
    "fill_.Scalar": "fill_",
}
# Overloads that op YAML defines as another overload under a second name: the shim of either
# serves both.
ALIASES = {"sub.Tensor": "subtract.Tensor", "subtract.Tensor": "sub.Tensor"}
# Shim header prefixes, in the order a call tries them.
SHIM_DEVICES = ("aten", "cpu", "cuda")


def has_scalar(func: FunctionSchema) -> bool:
    return any(_is_scalar(a.type) for a in func.arguments.flat_all)


def _is_scalar(t: Type) -> bool:
    if isinstance(t, OptionalType):
        return _is_scalar(t.elem)
    return isinstance(t, BaseType) and t.name == "Scalar"


def shims_for(target: StableTarget) -> frozenset[str]:
    """The typed C shims every known release from ``target`` on declares."""
    later = [
        shims
        for release, shims in torch_facts.STABLE_SCALAR_SHIMS_BY_RELEASE.items()
        if torch_facts.valid_release_number(release)
        >= torch_facts.valid_release_number(target.known)
    ]
    return frozenset.intersection(*later) if later else frozenset()


# --- the C prototypes of the typed shims ----------------------------------------------------

# Schema type -> the shim's C parameter type (a list adds a length parameter).
_SHIM_TYPES = {
    "Tensor": "AtenTensorHandle",
    "Tensor?": "AtenTensorHandle*",
    "int": "int64_t",
    "SymInt": "int64_t",
    "int?": "int64_t*",
    "SymInt?": "int64_t*",
    "float": "double",
    "float?": "double*",
    "Scalar": "double",
    "Scalar?": "double*",
    "bool": "int32_t",
    "bool?": "int32_t*",
    "str": "const char*",
    "str?": "const char**",
}
_SHIM_LISTS = {"int", "SymInt"}


@dataclass(frozen=True)
class ShimArg:
    """One schema argument as a shim takes it (view-model of stable_call.h.j2)."""

    name: str  # the C++ parameter's name
    kind: str  # "value", "tensor", "optional" (a pointer to a local or null), "list", "string"
    local_type: str  # C type of the local an optional needs: `int32_t`, `AtenTensorHandle`
    params: tuple[str, ...]  # the prototype's parameters for it


@dataclass(frozen=True)
class ShimCall:
    device: str  # "aten" (any device), "cpu", "cuda"
    function: str  # aoti_torch_cpu_add_Tensor


@dataclass(frozen=True)
class ShimRoute:
    calls: tuple[ShimCall, ...]
    args: tuple[ShimArg, ...]  # in the shims' order (out arguments first)
    returns: int  # AtenTensorHandle results
    aliased: tuple[str, ...]  # what a shim without results returns: its out arguments, or self
    device_of: str  # the parameter whose device picks a per-device shim

    def prototype(self, function: str) -> str:
        params = [p for a in self.args for p in a.params]
        params += [f"AtenTensorHandle* ret{i}" for i in range(self.returns)]
        return f"AOTITorchError {function}({', '.join(params)})"


def shim_route(func: FunctionSchema, shims: frozenset[str]) -> ShimRoute | None:
    """The shim route of ``func`` when ``shims`` has a shim of it (or of its alias) and the
    shim's arguments are ones this module spells; None otherwise."""
    names = [str(func.name)] + ([ALIASES[str(func.name)]] if str(func.name) in ALIASES else [])
    calls: list[ShimCall] = []
    for name in names:
        for device in SHIM_DEVICES:
            function = shim_name(name, device)
            if function in shims and all(c.device != device for c in calls):
                calls.append(ShimCall(device, function))
    if not calls:
        return None
    args = _shim_order(func)
    if any(not _shim_type(a.type) for a in args):
        return None
    if not all(r.type == BaseType("Tensor") for r in func.returns):
        return None
    shim_args = tuple(_shim_arg(a, cpp_name(a.name)) for a in args)
    writes = func.kind in (SchemaKind.out, SchemaKind.inplace)
    returns = 0 if writes else len(func.returns)
    aliased = tuple(cpp_name(a.name) for a in args if a.is_write) if writes else ()
    if writes and len(aliased) != len(func.returns):
        return None
    tensors = [a for a in args if a.type == BaseType("Tensor")]
    if not tensors and any(c.device != "aten" for c in calls):
        return None  # a per-device shim needs a tensor to pick the device by
    device_of = cpp_name(tensors[0].name) if tensors else ""
    # A device-generic shim serves every device: the per-device ones are not needed.
    if any(c.device == "aten" for c in calls):
        calls = [c for c in calls if c.device == "aten"]
    return ShimRoute(tuple(calls), shim_args, returns, aliased, device_of)


def shim_name(op: str, device: str) -> str:
    """AOTInductor's name of the shim of ``op`` (`add.Tensor`): ``aoti_torch_cpu_add_Tensor``."""
    name, _, overload = op.partition(".")
    return f"aoti_torch_{device}_{name}" + (f"_{overload}" if overload else "")


def _shim_order(func: FunctionSchema) -> tuple[Argument, ...]:
    # Out arguments come first in a shim of an out= overload.
    a = func.arguments
    return a.out + a.flat_non_out


def _shim_type(t: Type) -> bool:
    if isinstance(t, ListType):
        return isinstance(t.elem, BaseType) and t.elem.name in _SHIM_LISTS
    return str(t) in _SHIM_TYPES


def _shim_arg(a: Argument, name: str) -> ShimArg:
    t = a.type
    if isinstance(t, ListType):
        return ShimArg(name, "list", "", (f"const int64_t* {name}", f"int64_t {name}_len_"))
    c_type = _SHIM_TYPES[str(t)]
    param = (f"{c_type} {name}",)
    if isinstance(t, OptionalType):
        return ShimArg(name, "optional", c_type.removesuffix("*"), param)
    if t == BaseType("Tensor"):
        return ShimArg(name, "tensor", "", param)
    if t == BaseType("str"):
        return ShimArg(name, "string", "", param)
    return ShimArg(name, "value", c_type, param)


# --- choosing a route --------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalarRoute:
    kind: str  # "fill" or "shim"
    scalar_type: str  # the C++ type of a Scalar parameter
    recipe: str = ""  # fill: the template's recipe
    shim: ShimRoute | None = None


def scalar_route(f: NativeFunction, target: StableTarget) -> ScalarRoute:
    """The route of an overload with a Scalar argument; NotCarried naming the first Scalar
    argument and why none reaches it."""
    recipe = FILL_RECIPES.get(str(f.func.name))
    if recipe is not None:
        return ScalarRoute("fill", SCALAR_CLASS, recipe=recipe)
    route = shim_route(f.func, shims_for(target))
    if route is not None:
        return ScalarRoute("shim", "double", shim=route)
    first = next(a for a in f.func.arguments.flat_all if _is_scalar(a.type))
    raise NotCarried(
        str(first.type),
        f"type '{first.type}' (argument '{first.name}'): torch_call_dispatcher of torch "
        f"{target.release} carries no Scalar, and no typed C shim of every release from "
        f"{target.release} on (c_shim_aten.h, c_shim_cpu.h, c_shim_cuda.h) calls it",
    )
