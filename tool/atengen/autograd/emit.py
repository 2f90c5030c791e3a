"""C++ autograd for one operator namespace and one autograd key, sharded like registrations.

Each file holds the backward Node subclasses of its operators' derivative entries, their
Autograd-key kernels (see kernels.py) and, for custom namespaces, the ADInplaceOrView kernels
of their mutating ops. Everything is inside ``<cpp_namespace>::autograd_generated``, so node
names never clash with libtorch's own ``torch::autograd::generated`` classes, and only calls
what the torch wheel exports.

The same code serves three uses (an AutogradTarget says which):
- a custom namespace: ``Autograd`` and ``ADInplaceOrView`` kernels for its operators;
- an external backend: ``Autograd<Backend>`` kernels for the aten operators its backend YAML
  lists under ``autograd:``, above the backend's own forward kernels;
- aten itself: ``Autograd`` kernels for selected aten operators, registered over torch's own.

View ops of custom namespaces get an ADInplaceOrView kernel that makes their output a view of
the aliased input (recording a ViewFunc to replay it where torch's kernels do); aten's view ops keep torch's ADInplaceOrView kernels (which do that, and
record how to replay the view) and get a generated Autograd kernel above them, like any
functional op's.

An entry with formulas per autograd key (`dispatch:`) gets the kernel of the target's key: its
own formulas, else Default's. For aten the other keys keep torch's kernels (registered for those
keys, they take precedence over the `Autograd` alias) unless a target of such a key
(`AutogradNestedTensor`) generates them too; a custom namespace's entry may have Default only.

`_foreach_` ops (foreach.py) differentiate element by element with the per-tensor op's formulas.

A tensor-list output makes each element an output of the node (a foreach op's results; the
several views of an aten view op such as `chunk`, which torch's ADInplaceOrView kernel makes).

Not generated yet (an error names the entry): in-place view ops outside aten, and view ops
outside aten returning several tensors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from atengen.api.calls import OpRef, op_ref
from atengen.autograd.foreach import (
    ForeachInplaceKernel,
    foreach_inplace_kernel,
    functional_forward,
)
from atengen.autograd.kernels import (
    AutogradKernel,
    BumpVersionKernel,
    OutKernel,
    ViewKernel,
    autograd_kernel,
    inplace_or_view_kernel,
    out_kernel,
    view_kernel,
)
from atengen.autograd.model import (
    DEFAULT_KEY,
    DerivativesModel,
    DifferentiabilityInfo,
    FunctionDerivatives,
)
from atengen.autograd.nodes import (
    BackwardNode,
    backward_node,
    is_foreach,
    manual_helpers,
    unexported_helpers,
    unsupported,
)
from atengen.autograd.own_ops import OwnCall, callable_ops, check_overloads, own_calls
from atengen.autograd.signature import handle_var
from atengen.facts.wheel_facts import AutogradHelpers
from atengen.model.native_function import NativeFunction
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import SchemaKind
from atengen.render.output import GeneratedFile
from atengen.render.shards import ShardSetting
from atengen.render.templates import Templates


@dataclass(frozen=True)
class AutogradTarget:
    """Which kernels to generate, and where they go."""

    namespace: str  # the operators' namespace
    cpp_namespace: str  # C++ namespace of the generated code
    key: str = "Autograd"  # or Autograd<Backend>
    inplace_or_view: bool = True  # also ADInplaceOrView kernels (torch has aten's own)
    only: frozenset[str] | None = None  # overload names (`add.Tensor`) to generate; None: all

    def wants(self, f: NativeFunction) -> bool:
        return f.namespace == self.namespace and (self.only is None or str(f.name) in self.only)


@dataclass(frozen=True)
class OpHandle:
    """A function returning the typed dispatcher handle of a custom op, looked up once."""

    function: str
    name: str  # `<namespace>::<op>`
    overload: str
    cpp_type: str  # the op's C++ function type


def _op_handle(op: OpRef) -> OpHandle:
    return OpHandle(handle_var(op), op.name, op.overload, op.cpp_type)


@dataclass
class _Shard:
    """What one file gets, gathered function by function."""

    ops: dict[str, OpRef] = field(default_factory=dict)
    nodes: dict[str, BackwardNode] = field(default_factory=dict)
    kernels: list[AutogradKernel | ForeachInplaceKernel | OutKernel] = field(default_factory=list)
    inplace: list[BumpVersionKernel | ViewKernel] = field(default_factory=list)
    # The functions calling the namespace's own operators that formulas call (own_ops.py), by
    # (name, handle); and the names of those called by bare name.
    own: dict[tuple[str, str], OwnCall] = field(default_factory=dict)
    bare: dict[str, None] = field(default_factory=dict)
    helpers: set[str] = field(default_factory=set)
    views: bool = False


def _functional_infos(
    derivatives: DerivativesModel, model: OperatorModel
) -> dict[int, dict[str, DifferentiabilityInfo]]:
    """id(out= function) -> the infos of its group's functional op: what torch checks an out=
    op's arguments against (generated out= ops are matched to nothing themselves)."""
    by_id = {id(fd.func): fd for fd in derivatives.functions}
    result: dict[int, dict[str, DifferentiabilityInfo]] = {}
    for fd in derivatives.functions:
        f = fd.func
        group = model.group_of.get(id(f))
        if f.kind is not SchemaKind.out or group is None:
            continue
        functional = by_id.get(id(group.functional))
        infos = fd.infos or (functional.infos if functional else None)
        if infos:
            result[id(f)] = infos
    return result


@dataclass
class LeftOut:
    """The functions left out because their formulas use helpers of torch's FunctionsManual.h
    that the wheel does not export: per (helper, whether a formula calls it), the functions and
    the entries of their formulas."""

    functions: dict[tuple[str, bool], set[str]] = field(default_factory=dict)
    entries: dict[tuple[str, bool], set[str]] = field(default_factory=dict)

    def add(
        self, f: NativeFunction, info: DifferentiabilityInfo, helpers: Iterable[tuple[str, bool]]
    ) -> None:
        for helper in helpers:
            self.functions.setdefault(helper, set()).add(f"{f.namespace}::{f.name}")
            self.entries.setdefault(helper, set()).add(str(info.loc))

    def lines(self) -> list[str]:
        """One line per helper."""
        lines = []
        for (helper, called), functions in sorted(self.functions.items()):
            n, entries = len(functions), len(self.entries[(helper, called)])
            lines.append(
                f"left out: {n} function{'s' if n > 1 else ''} of {entries} "
                f"entr{'ies' if entries > 1 else 'y'} whose formulas "
                + (f"call {helper}()" if called else f"use {helper}")
                + ", which torch/csrc/autograd/FunctionsManual.h declares but the torch wheel "
                "does not export"
            )
        return lines


def autograd_files(
    model: OperatorModel,
    derivatives: DerivativesModel,
    target: AutogradTarget,
    sharding: ShardSetting,
    templates: Templates,
    derivatives_yaml: str = "the derivatives YAML",
    left_out: LeftOut | None = None,
) -> list[GeneratedFile]:
    """The files of target's kernels. A function whose formulas use a FunctionsManual.h helper
    the wheel does not export is an error; with ``left_out``, it is left out and added there."""
    out_infos = _functional_infos(derivatives, model)
    helpers = derivatives.helpers
    callable_ = _Callable(
        {} if target.namespace == "aten" else callable_ops(model).get(target.namespace, {}),
        helpers.aten_operators,
        model,
    )
    chosen: dict[int, FunctionDerivatives] = {
        id(fd.func): fd for fd in derivatives.functions if target.wants(fd.func)
    }
    files = []
    for (_, shard_name), functions in sharding.group(fd.func for fd in chosen.values()):
        shard = _Shard()
        # The operators this file has kernels for: the header names only them, so that an
        # operator without formulas (nothing of it here) leaves the file's bytes alone.
        served = set()
        for f in functions:
            before = len(shard.kernels) + len(shard.inplace)
            _add_function(
                shard, chosen[id(f)], out_infos.get(id(f)), target, callable_, left_out, helpers
            )
            if len(shard.kernels) + len(shard.inplace) > before:
                served.add(str(f.name.name))
        if not served:
            continue
        text = templates.render(
            "autograd_shard.cpp.j2",
            derivatives_yaml=derivatives_yaml,
            operators=sorted(served),
            namespace=target.namespace,
            cpp_namespace=target.cpp_namespace,
            key=target.key,
            handles=tuple(_op_handle(op) for op in shard.ops.values() if not op.aten_call),
            own_calls=tuple(shard.own.values()),
            bare_calls=tuple(shard.bare),
            manual_helpers=tuple(sorted(shard.helpers)),
            views=shard.views,
            nodes=tuple(shard.nodes.values()),
            kernels=tuple(shard.kernels),
            inplace_kernels=tuple(shard.inplace),
            sizes_and_options=any(n.uses_sizes_and_options for n in shard.nodes.values()),
            optional_lists=any(n.saves_optional_lists for n in shard.nodes.values()),
            list_refs=any(
                "ITensorListRef" in p for k in shard.kernels for p in k.signature.parameters
            ),
        )
        files.append(GeneratedFile(f"{target.key}_{shard_name}.cpp", text))
    return files


@dataclass
class _Callable:
    """What formulas may call of the target namespace's operators, and which bare names are
    aten's (which stay aten's)."""

    ops: dict[str, list[NativeFunction]]
    wheel_aten: frozenset[str]
    model: OperatorModel
    _aten: frozenset[str] | None = None

    def aten(self) -> frozenset[str]:
        if self._aten is None:
            names = {str(f.name.name) for f in self.model.functions if f.namespace == "aten"}
            self._aten = self.wheel_aten | {n for x in names for n in (x, x + "_symint")}
        return self._aten


def _info_for_key(fd: FunctionDerivatives, target: AutogradTarget) -> DifferentiabilityInfo | None:
    """The formulas of fd for target's key: its own entry under `dispatch:` (`AutogradCUDA:` for
    an AutogradCUDA backend), else Default's. The other keys' kernels are left to torch, as
    its own registrations are what serves them, for aten only: a custom namespace's entry must
    not name keys nobody would register kernels for."""
    infos = fd.infos or {}
    key = target.key if target.key in infos else DEFAULT_KEY
    info = infos.get(key)
    others = sorted(set(infos) - {key})
    if info is not None and others and target.namespace != "aten":
        raise unsupported(
            info, f"formulas for other autograd keys ({', '.join(others)}) outside aten"
        )
    return info


def _add_function(
    shard: _Shard,
    fd: FunctionDerivatives,
    out_infos: dict[str, DifferentiabilityInfo] | None,
    target: AutogradTarget,
    callable_: _Callable,
    left_out: LeftOut | None,
    helpers: AutogradHelpers,
) -> None:
    f = fd.func
    op = op_ref(f)
    if f.kind in (SchemaKind.inplace, SchemaKind.out) and target.inplace_or_view:
        kernel = inplace_or_view_kernel(f, op)
        if kernel is not None:
            shard.ops[op.name + "." + op.overload] = op
            shard.inplace.append(kernel)
    if f.kind is SchemaKind.out:
        info = (out_infos or {}).get(DEFAULT_KEY)
        if info is not None:
            shard.ops[op.name + "." + op.overload] = op
            shard.kernels.append(out_kernel(f, info, op))
        return
    info = _info_for_key(fd, target)
    if info is None or f.kind not in (
        SchemaKind.functional,
        SchemaKind.inplace,
        SchemaKind.mutable,
    ):
        return
    if f.kind is SchemaKind.mutable and target.inplace_or_view:
        # A mutable op (`rrelu_with_noise` writes its `noise`) needs the version bump of what it
        # writes: aten's is torch's own ADInplaceOrView kernel; none is generated for others.
        return
    forward = (fd.forward_derivatives or {}).get(DEFAULT_KEY, ())
    if left_out is not None:
        missing = unexported_helpers(info, forward, helpers)
        if missing:
            left_out.add(f, info, missing)
            return
    if f.is_view_op and target.inplace_or_view:
        # The output must become a view of its input: generated for custom namespaces; aten
        # keeps torch's own ADInplaceOrView kernels below ours (an in-place view op's Autograd
        # kernel is an in-place op's).
        if f.kind is not SchemaKind.functional:
            raise unsupported(info, "in-place view ops outside aten")
        shard.inplace.append(view_kernel(f, info, op))
        shard.views = True
    shard.helpers |= manual_helpers(info, forward, helpers)
    shard.ops[op.name + "." + op.overload] = op
    if info.has_derivatives and info.node not in shard.nodes:
        shard.nodes[info.node] = backward_node(info, target.namespace)
    # Calls of the namespace's own operators (auto_linear formulas call the op itself, a
    # view_copy op's the view), each through a function of the op's name.
    if callable_.ops:
        formulas = [d.formula for d in info.derivatives] + [x.formula for x in forward]
        bare, qualified = own_calls(formulas, target.namespace, callable_.ops, callable_.aten())
        for call in bare + qualified:
            shard.ops[call.op.name + "." + call.op.overload] = call.op
            shard.own[(call.name, call.handle)] = call
        shard.bare.update((c.name, None) for c in bare)
        check_overloads(shard.own.values(), info.loc)
    if is_foreach(f) and f.kind is SchemaKind.inplace:
        shard.kernels.append(foreach_inplace_kernel(fd, info, op))
    elif is_foreach(f):
        shard.kernels.append(autograd_kernel(fd, info, op, functional_forward(fd, info)))
    else:
        shard.kernels.append(autograd_kernel(fd, info, op))
