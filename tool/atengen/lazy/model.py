"""A lazy-tensor backend: which IR nodes and which generated kernels it gets.

Built on the external-backend layers: ``backend.spec`` reads the YAML (with
``lazy=True`` it keeps ``full_codegen``, ``ir_gen`` and ``non_native``),
``backend.model`` resolves the kernels. Here:

- ``full_codegen`` ops get an IR node class, a generated kernel (registered
  like a ``supported`` op, so they also get the out=/inplace copy-back
  wrappers) and, unless a meta kernel can infer shapes, a ``compute_shape_*``
  function the backend must declare;
- ``ir_gen`` ops get an IR node class only (the kernel is hand-written, and the
  op may also be listed under ``supported``);
- ``non_native`` entries describe nodes for operations that are not aten
  operators: ``func`` (a schema), ``opkind`` (a C++ OpKind expression;
  ``at::aten::<name>`` by default) and ``properties``.

Views never reach a lazy backend (functionalization runs above it and turns
them into ``*_copy`` ops), so listing a view is an error: list its view_copy
variant instead.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from atengen.backend.model import ExternalBackend, resolve_backend, unknown_op_message
from atengen.backend.spec import BackendYaml, OpEntry
from atengen.errors import AtengenError, Location, SchemaError, did_you_mean, shown
from atengen.lazy.ir_types import LazyArg, UnsupportedType, lazy_args
from atengen.model.native_function import NativeFunction, describe_value
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import FunctionSchema, SchemaKind, parse_schema
from atengen.model.schema_types import BaseType, OptionalType
from atengen.yaml.loader import YamlList, YamlMap

# Node properties, in groups of which at most one holds (LTC's LazyIrProperties).
PROPERTY_GROUPS: tuple[tuple[str, ...], ...] = (
    # shapes: passed to the constructor / computed in it / computed on first use
    ("ShapePrecompute", "ShapeCompute", "ShapeCache"),
    ("Lower", "LowerDeclOnly"),  # TorchScript lowering: defined / declared only
    ("CanBeReused", "CanBeReusedDeclOnly"),
    ("CreateFn", "CreateFnDeclOnly"),
    ("TreatScalarsAsConstants",),  # Scalars are attributes, not values
)
ALL_PROPERTIES = tuple(p for group in PROPERTY_GROUPS for p in group)
NATIVE_DEFAULTS = ("ShapePrecompute", "Lower", "CanBeReused")
NON_NATIVE_DEFAULTS = ("ShapeCache", "CanBeReused", "LowerDeclOnly")
NON_NATIVE_KEYS = ("func", "opkind", "properties")
_OPKIND_RE = re.compile(r"(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Properties:
    chosen: frozenset[str]

    def __getattr__(self, name: str) -> bool:
        if name in ALL_PROPERTIES:
            return name in self.chosen
        raise AttributeError(name)

    @staticmethod
    def with_overrides(defaults: tuple[str, ...], overrides: tuple[str, ...]) -> Properties:
        chosen = set(defaults)
        for p in overrides:
            group = next(g for g in PROPERTY_GROUPS if p in g)
            chosen -= set(group)
            chosen.add(p)
        return Properties(frozenset(chosen))


@dataclass(frozen=True)
class IrNode:
    """One IR node class."""

    class_name: str  # `AddTensor` for add.Tensor
    op_name: str  # `add.Tensor`; the schema name for non-native nodes
    aten_name: str  # `add`: the name of the TorchScript builtin a lowering calls
    opkind: str  # C++ expression of its OpKind
    func: FunctionSchema
    args: tuple[LazyArg, ...]
    properties: Properties
    symint: bool
    entry: Location

    @property
    def values(self) -> tuple[LazyArg, ...]:
        return tuple(a for a in self.args if a.is_value)

    @property
    def attributes(self) -> tuple[LazyArg, ...]:
        return tuple(a for a in self.args if not a.is_value)

    @property
    def num_outputs(self) -> int:
        return len(self.func.returns)


@dataclass(frozen=True)
class LazyKernel:
    """A generated kernel of a full_codegen op."""

    f: NativeFunction
    node: IrNode
    kernel: str  # static method name: `add`, `view_copy_symint`
    symint: bool
    # How the kernel infers output shapes: "meta" (at::meta::), "composite" (the
    # CompositeExplicitAutogradNonFunctional kernel, for view_copy ops) or
    # "compute_shape" (a hand-written torch::lazy::compute_shape_<kernel>).
    shape_source: str


@dataclass(frozen=True, eq=False)
class LazyBackend:
    spec: BackendYaml
    backend: ExternalBackend  # full_codegen counted as supported
    nodes: tuple[IrNode, ...]  # full_codegen and ir_gen, sorted by op name
    non_native_nodes: tuple[IrNode, ...]  # YAML order
    kernels: tuple[LazyKernel, ...]  # full_codegen, sorted by op name


def node_class_name(op_name: str) -> str:
    """`bitwise_and.Tensor` -> `BitwiseAndTensor`, `_log_softmax` -> `LogSoftmax`."""
    return "".join(w.capitalize() for w in op_name.replace(".", "_").lower().split("_"))


def resolve_lazy_backend(
    spec: BackendYaml, model: OperatorModel, *, value_class: str = "torch::lazy::Value"
) -> LazyBackend:
    """value_class: the C++ class of IR values (operands), `torch::lazy::Value` in LTC."""
    # full_codegen ops are registered and declared exactly like supported ones.
    as_supported = dataclasses.replace(spec, supported=spec.supported + spec.full_codegen)
    backend = resolve_backend(as_supported, model)
    by_name = {str(f.name): f for f in model.functions if f.namespace == "aten"}
    symint = {e.name for e in spec.symint}
    errors: list[AtengenError] = []
    nodes: list[IrNode] = []
    kernels: list[LazyKernel] = []
    for e, generate_kernel in [(e, True) for e in spec.full_codegen] + [
        (e, False) for e in spec.ir_gen
    ]:
        f = by_name.get(e.name)
        if f is None:
            message = unknown_op_message(e.name, by_name, suggest=shown(errors))
            errors.append(AtengenError(e.loc, message))
            continue
        # ir_gen ops are SymInt-aware only when also listed (supported + symint).
        is_symint = e.name in symint
        try:
            node = _native_node(f, e, is_symint, generate_kernel, value_class)
        except AtengenError as err:
            errors.append(err)
            continue
        nodes.append(node)
        if generate_kernel:
            kernel = backend.kernel_for(f, spec.backend)
            assert kernel is not None  # resolve_backend registered every full_codegen op
            kernels.append(LazyKernel(f, node, kernel.kernel, is_symint, _shape_source(f)))
    non_native = _non_native_nodes(spec.non_native, errors, value_class)
    if errors:
        raise AtengenError.combine(errors)
    _check_unique_class_names(nodes + non_native)
    nodes.sort(key=lambda n: n.op_name)
    kernels.sort(key=lambda k: k.node.op_name)
    return LazyBackend(spec, backend, tuple(nodes), tuple(non_native), tuple(kernels))


def _shape_source(f: NativeFunction) -> str:
    if f.part_of_structured_group:
        return "meta"
    if "view_copy" in f.tags:
        return "composite"
    return "compute_shape"


def _native_node(
    f: NativeFunction, e: OpEntry, symint: bool, generate_kernel: bool, value_class: str
) -> IrNode:
    key = "full_codegen" if generate_kernel else "ir_gen"
    where = f"'{e.name}' cannot be listed under \"{key}\""
    if f.is_view_op:
        raise AtengenError(
            e.loc,
            f"{where}: it is a view, and a lazy backend sees only view_copy ops "
            f"(functionalization runs above it); list '{_copy_name(f)}' instead",
        )
    properties = Properties.with_overrides(NATIVE_DEFAULTS, ())
    args = _args_or_error(f.func, e.loc, where, symint, properties, value_class)
    if generate_kernel:
        _check_kernel_can_be_generated(f, args, e.loc, where)
    return IrNode(
        class_name=node_class_name(e.name),
        op_name=e.name,
        aten_name=str(f.name.name),
        opkind=_aten_symbol(str(f.name.name)),
        func=f.func,
        args=args,
        properties=properties,
        symint=symint,
        entry=e.loc,
    )


def _copy_name(f: NativeFunction) -> str:
    overload = f".{f.name.overload_name}" if f.name.overload_name else ""
    return f"{f.name.name.base}_copy{overload}"


def _aten_symbol(name: str) -> str:
    # sigmoid_backward has no interned at::aten:: symbol in c10.
    if name == "sigmoid_backward":
        return f'c10::Symbol::fromQualString("aten::{name}")'
    return f"at::aten::{name}"


def _args_or_error(
    func: FunctionSchema,
    loc: Location,
    where: str,
    symint: bool,
    properties: Properties,
    value_class: str,
) -> tuple[LazyArg, ...]:
    try:
        args = lazy_args(
            func,
            value_class,
            symint=symint,
            scalars_as_constants=properties.TreatScalarsAsConstants,
        )
    except UnsupportedType as err:
        raise AtengenError(loc, f"{where}: {err}, which a lazy IR node cannot hold") from None
    for a in args:
        # An operand is one value or an optional one; lists of values (Tensor?[], Scalar[])
        # have no place in a node's operand list.
        operand_types = (value_class, f"::std::optional<{value_class}>")
        if a.is_value and not (a.is_tensor_list or a.cpp_type in operand_types):
            raise AtengenError(
                loc, f"{where}: argument '{a.name}' has type {a.schema_type}, a list of IR values, "
                "which a lazy IR node cannot take as an operand",
            )  # fmt: skip
    return args


def _check_kernel_can_be_generated(
    f: NativeFunction, args: tuple[LazyArg, ...], loc: Location, where: str
) -> None:
    returns = f.func.returns
    if not returns or any(str(r.type) != "Tensor" for r in returns):
        got = ", ".join(str(r.type) for r in returns) or "nothing"
        raise AtengenError(
            loc,
            f"{where}: a generated lazy kernel returns one or more Tensors, but it returns "
            f'{got}; list it under "supported" with a hand-written kernel',
        )
    if f.kind is not SchemaKind.functional and len(returns) != 1:
        raise AtengenError(
            loc,
            f"{where}: an {f.kind.value} op with {len(returns)} outputs has no generated kernel",
        )
    devices = [a for a in args if a.schema_type == OptionalType(BaseType("Device"))]
    if not [a for a in args if a.is_value and not a.is_wrapped_scalar] and not devices:
        raise AtengenError(
            loc,
            f"{where}: a generated kernel takes its device from a tensor or a 'Device?' "
            "argument, and it has neither",
        )


def _non_native_nodes(
    raw: YamlList | None, errors: list[AtengenError], value_class: str
) -> list[IrNode]:
    nodes: list[IrNode] = []
    if raw is None:
        return nodes
    for i, item in enumerate(raw):
        loc = raw.item_location(i)
        try:
            nodes.append(_non_native_node(item, loc, i, value_class))
        except AtengenError as err:
            errors.append(err)
    return nodes


def _non_native_node(item: object, loc: Location, i: int, value_class: str) -> IrNode:
    if not isinstance(item, YamlMap):
        raise AtengenError(
            loc,
            f'item {i + 1} of "non_native" must be a mapping with a "func" schema, got '
            f"{describe_value(item)}",
        )
    unknown = [k for k in item if k not in NON_NATIVE_KEYS]
    if unknown:
        raise AtengenError(
            item.key_location(unknown[0]),
            f"unknown key '{unknown[0]}' in a non_native entry; the keys are "
            f"{', '.join(NON_NATIVE_KEYS)}",
        )
    raw_func = item.get("func")
    if not isinstance(raw_func, str):
        raise AtengenError(
            item.key_location("func"),
            f'a non_native entry needs "func", a schema string, got {describe_value(raw_func)}',
        )
    try:
        func = parse_schema(raw_func)
    except SchemaError as err:
        raise AtengenError(item.key_location("func"), f"invalid non_native schema: {err}") from None
    opkind = item.get("opkind")
    # It is pasted into the generated C++ as the node's OpKind: a (qualified) name, no more.
    if opkind is not None and not (isinstance(opkind, str) and _OPKIND_RE.fullmatch(opkind)):
        raise AtengenError(
            item.key_location("opkind"),
            "opkind must be a C++ OpKind name like 'ltc_cast' or 'at::prim::Constant', got "
            + (repr(opkind) if isinstance(opkind, str) else describe_value(opkind)),
        )
    properties = Properties.with_overrides(NON_NATIVE_DEFAULTS, _property_list(item))
    name = str(func.name)
    where = f"non_native '{name}'"
    return IrNode(
        class_name=node_class_name(name),
        op_name=name,
        aten_name=str(func.name.name),
        opkind=opkind or _aten_symbol(str(func.name.name)),
        func=func,
        # Non-native nodes are SymInt-aware: they are written for symbolic shapes.
        args=_args_or_error(func, item.key_location("func"), where, True, properties, value_class),
        properties=properties,
        symint=True,
        entry=loc,
    )


def _property_list(item: YamlMap) -> tuple[str, ...]:
    raw = item.get("properties")
    if raw is None:
        return ()
    loc = item.key_location("properties")
    names = [p for p in raw if isinstance(p, str)] if isinstance(raw, YamlList) else []
    if not isinstance(raw, YamlList) or len(names) != len(raw):
        raise AtengenError(
            loc, f"properties must be a list of property names, got {describe_value(raw)}"
        )
    seen: dict[tuple[str, ...], str] = {}
    for j, p in enumerate(names):
        if p not in ALL_PROPERTIES:
            hint = did_you_mean(p, ALL_PROPERTIES)
            raise AtengenError(
                raw.item_location(j),
                f"unknown property '{p}'{hint}; the properties are {', '.join(ALL_PROPERTIES)}",
            )
        group = next(g for g in PROPERTY_GROUPS if p in g)
        if group in seen and seen[group] != p:
            raise AtengenError(
                raw.item_location(j),
                f"properties '{seen[group]}' and '{p}' exclude each other "
                f"(choose one of {', '.join(group)})",
            )
        seen[group] = p
    return tuple(names)


def _check_unique_class_names(nodes: list[IrNode]) -> None:
    first: dict[str, IrNode] = {}
    for n in nodes:
        other = first.setdefault(n.class_name, n)
        if other is not n:
            raise AtengenError(
                n.entry,
                f"'{n.op_name}' and '{other.op_name}' (line {other.entry.line}) would both "
                f"generate the IR node class {n.class_name}",
            )
