"""An external backend resolved against the operator model: which kernel serves which op.

Second layer for external backends (after ``backend_yaml``): every listed name
must be an aten operator of the op YAML, variants of one operator group may
not be split between the backend key and its autograd key (the same rule as
gen_backend_stubs), and in functional-backend mode only functional and
view_copy operators may be listed.

Kernel names follow gen_backend_stubs, so that hand-written kernels port
unchanged: the operator's C++ name (``add``, ``add_``, ``add_out``), plus
``_symint`` for ops listed under ``symint``. Overloads share a name and are
told apart by C++ overloading in the generated class.

An op listed under ``structured`` (an out= op of a structured group, say ``add.out``) is
implemented by an impl class, ``<cpp_namespace>::structured_add_out``, derived from torch's
own meta class (``at::meta::structured_add_Tensor``, exported by libtorch); the functional,
in-place and out= kernels of its group are generated around it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from atengen.backend.spec import BackendYaml, OpEntry
from atengen.errors import AtengenError, did_you_mean, shown
from atengen.facts import torch_facts, wheel_facts
from atengen.model.groups import NativeFunctionsGroup
from atengen.model.native_function import NativeFunction, default_kernel_name
from atengen.model.operator_model import OperatorModel
from atengen.model.schema import SchemaKind


@dataclass(frozen=True)
class BackendKernel:
    """One operator served by one of the backend's dispatch keys."""

    f: NativeFunction
    key: str  # `PrivateUse1` or `AutogradPrivateUse1`
    kernel: str  # static method of the backend's class
    symint: bool
    entry: OpEntry  # where the YAML lists it

    @property
    def op_name(self) -> str:
        return str(self.f.name)


@dataclass(frozen=True)
class StructuredClaim:
    """A structured group whose impl() the backend writes (backend YAML `structured:`)."""

    group: NativeFunctionsGroup
    kernel: str  # `add_out`: the impl class is <cpp_namespace>::structured_<kernel>
    entry: OpEntry

    @property
    def impl_class(self) -> str:
        return f"structured_{self.kernel}"


@dataclass(frozen=True, eq=False)
class ExternalBackend:
    spec: BackendYaml
    model: OperatorModel
    kernels: tuple[BackendKernel, ...]  # backend key first, then autograd; YAML order
    functional: bool  # functional-backend mode (see torch_facts.FUNCTIONAL_BACKEND_EXTRA_OPS)
    structured: tuple[StructuredClaim, ...] = ()
    # The wheel's structured set_output methods take `DimnameList names`
    # (wheel_facts.set_output_takes_names): the impl wrappers' overrides must too.
    output_names: bool = False

    @cached_property
    def structured_group_of(self) -> dict[int, StructuredClaim]:
        """id(NativeFunction) -> the claim of its group, for every variant of a claimed group."""
        return {id(f): c for c in self.structured for f in c.group.functions()}

    @cached_property
    def by_key(self) -> dict[str, dict[str, BackendKernel]]:
        """key -> op name -> kernel."""
        out: dict[str, dict[str, BackendKernel]] = {k: {} for k in self.spec.keys}
        for k in self.kernels:
            out[k.key][k.op_name] = k
        return out

    def kernel_for(self, f: NativeFunction, key: str) -> BackendKernel | None:
        if f.namespace != "aten":
            return None
        return self.by_key[key].get(str(f.name))

    def wrapped_from(self, f: NativeFunction, key: str) -> BackendKernel | None:
        """The functional kernel that f's generated out=/inplace wrapper calls, if any.

        As in gen_backend_stubs: only when the backend's functional kernels are the
        primary ones (not use_out_as_primary) and f itself has no kernel. A
        functional backend gets none: functionalization above it turns mutations
        into functional calls, so the mutable variants must stay unregistered.
        """
        if self.spec.use_out_as_primary or self.functional or f.kind is SchemaKind.functional:
            return None
        if self.kernel_for(f, key) is not None:
            return None
        group = self.model.group_of.get(id(f))
        if group is None:
            return None
        return self.kernel_for(group.functional, key)


def resolve_backend(
    spec: BackendYaml,
    model: OperatorModel,
    *,
    functional: bool = False,
    wheel: wheel_facts.WheelFacts | None = None,
) -> ExternalBackend:
    """The backend YAML resolved against the model; `wheel` (the facts @torch read of the
    installed wheel) says which structured meta classes it exports."""
    _check_new_keys(spec, model)
    by_name = {str(f.name): f for f in model.functions if f.namespace == "aten"}
    symint = {e.name for e in spec.symint}
    kernels = []
    errors: list[AtengenError] = []
    for key, entries in ((spec.backend, spec.supported), (spec.autograd_key, spec.autograd)):
        for e in entries:
            f = by_name.get(e.name)
            if f is None:
                message = unknown_op_message(e.name, by_name, suggest=shown(errors))
                errors.append(AtengenError(e.loc, message))
                continue
            name = default_kernel_name(f.func) + ("_symint" if e.name in symint else "")
            kernels.append(BackendKernel(f, key, name, e.name in symint, e))
    claims = []
    for e in spec.structured:
        try:
            claims.append(_structured_claim(e, by_name, model, functional, shown(errors), wheel))
        except AtengenError as err:
            errors.append(err)
    if errors:
        raise AtengenError.combine(errors)
    backend = ExternalBackend(
        spec,
        model,
        tuple(kernels),
        functional,
        tuple(claims),
        output_names=wheel_facts.set_output_takes_names(wheel),
    )
    _check_structured_not_listed(backend)
    _check_not_mixed(backend)
    if functional:
        _check_functional(backend)
    return backend


def _check_new_keys(spec: BackendYaml, model: OperatorModel) -> None:
    """An external backend may not take over a key the op YAML already has kernels for."""
    in_tree = {k for f in model.functions for k in f.dispatch}
    for key in spec.keys:
        if key in in_tree:
            raise AtengenError(
                spec.backend_loc or spec.loc,
                f"Duplicate backend key: {key}: the op YAML already registers kernels for it; "
                "an external backend needs its own key (e.g. PrivateUse1)",
            )


def unknown_op_message(
    name: str, by_name: dict[str, NativeFunction], *, suggest: bool = True
) -> str:
    """torchgen's words for an op a backend YAML names that the op YAML lacks; with
    ``suggest``, the closest name (a search over every op name: only for errors shown)."""
    hint = did_you_mean(name, by_name) if suggest else ""
    return f"Found an invalid operator name: {name}: no such aten operator in the op YAML{hint}"


def _structured_claim(
    e: OpEntry,
    by_name: dict[str, NativeFunction],
    model: OperatorModel,
    functional: bool,
    suggest: bool,
    wheel: wheel_facts.WheelFacts | None,
) -> StructuredClaim:
    f = by_name.get(e.name)
    if f is None:
        raise AtengenError(e.loc, unknown_op_message(e.name, by_name, suggest=suggest))
    if functional:
        raise AtengenError(
            e.loc,
            f"'{e.name}' is listed under \"structured\", which registers in-place and out= "
            "kernels: a functional backend (functional = True) cannot",
        )
    group = model.group_of.get(id(f))
    if group is None or not group.structured or f is not group.out:
        out = group.out.name if group is not None and group.structured else None
        hint = f"; did you mean '{out}'?" if out is not None else ""
        raise AtengenError(
            e.loc,
            f"'{e.name}' is not the out= variant of a structured op (one with 'structured: "
            f'True\'); only those can be listed under "structured"{hint}',
        )
    meta = group.functional.name.unambiguous_name()
    exported = wheel.reusable_meta_classes() if wheel else torch_facts.WHEEL_STRUCTURED_META_CLASSES
    if meta not in exported:
        raise AtengenError(
            e.loc,
            f"'{e.name}' is structured in the op YAML, but the installed torch has no meta class "
            f'at::meta::structured_{meta} to reuse; list its variants under "supported" instead',
        )
    return StructuredClaim(group, default_kernel_name(f.func), e)


def _check_structured_not_listed(backend: ExternalBackend) -> None:
    """A claimed group's variants get generated kernels: none may be listed as well."""
    for k in backend.kernels:
        claim = backend.structured_group_of.get(id(k.f))
        if claim is not None:
            raise AtengenError(
                k.entry.loc,
                f"'{k.op_name}' gets a generated kernel from '{claim.entry.name}' (line "
                f'{claim.entry.loc.line}, "structured"); list one or the other',
            )


def _check_not_mixed(backend: ExternalBackend) -> None:
    """All variants of an operator group go to the backend key or to its autograd key."""
    if not backend.spec.autograd:
        return
    seen: set[int] = set()
    for k in backend.kernels:
        group: NativeFunctionsGroup | None = backend.model.group_of.get(id(k.f))
        if group is None or id(group) in seen:
            continue
        seen.add(id(group))
        fwd = [
            x
            for f in group.functions()
            if (x := backend.kernel_for(f, backend.spec.backend)) is not None
        ]
        bwd = [
            x
            for f in group.functions()
            if (x := backend.kernel_for(f, backend.spec.autograd_key)) is not None
        ]
        if fwd and bwd:
            raise AtengenError(
                bwd[0].entry.loc,
                "Currently, all variants of an op must either be registered to a backend key, "
                "or to a backend's autograd key. They cannot be mix and matched. "
                f"{fwd[0].op_name} (kernel {fwd[0].kernel}, line {fwd[0].entry.loc.line}) is "
                f'listed under "supported", but {bwd[0].op_name} (kernel {bwd[0].kernel}) is '
                'listed under "autograd".',
            )


def _check_functional(backend: ExternalBackend) -> None:
    errors = []
    for k in backend.kernels:
        f = k.f
        if str(f.name.name) in torch_facts.FUNCTIONAL_BACKEND_EXTRA_OPS:
            continue
        if f.kind is not SchemaKind.functional:
            why = (
                f"an {f.kind.value} operator"
                if f.kind is SchemaKind.inplace
                else (f"a {f.kind.value} operator")
            )
        elif f.is_view_op:
            why = "a view; list its view_copy variant instead"
        else:
            continue
        errors.append(
            AtengenError(
                k.entry.loc,
                f"'{k.op_name}' is {why}: a functional backend (functional = True) implements "
                "only functional and view_copy operators; functionalization handles the rest",
            )
        )
    if errors:
        raise AtengenError.combine(errors)
