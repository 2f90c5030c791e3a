"""What each registered kernel wrapper does, as plain data for the C++ templates.

Locals of the generated wrappers are prefixed `atg_` so that they cannot shadow an
operator argument (ops have arguments named `target`, `result`, `out`, ...).

A wrapper has exactly the dispatcher signature of its op (so that the dispatcher
can check it against the registered schema) and adapts to the kernel's own API:
``at::native::<kernel>`` for ordinary kernels, the ``structured_<kernel>``
meta/impl classes for structured ones, and our own bodies for the variants
the generator invented.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from atengen.api.calls import (
    OpRef,
    functional_call_args,
    int_expr,
    native_args,
    op_ref,
)
from atengen.api.declarations import (
    dispatch_kernel_declaration,
    wrapper_declaration,
    wrapper_name,
)
from atengen.api.device import device_handling
from atengen.api.functionalization import MutationCall, ViewCall, ViewCopyCall
from atengen.api.structured import impl_class, meta_class
from atengen.cached import cached_on_first_argument
from atengen.errors import CannotGenerate
from atengen.facts import torch_facts
from atengen.model.groups import NativeFunctionsGroup
from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument, SchemaKind


@dataclass(frozen=True)
class Wrapper:
    """One C++ function registered for one (op, dispatch key)."""

    # direct | structured | generated_out | generated_functional | view_copy | inplace_meta |
    # backend_select | fz_mutation | fz_view (Functionalize kernels, see api/functionalization.py)
    kind: str
    op_name: str  # `add.Tensor`: the name m.impl() registers
    cpp_name: str  # wrapper_CPU_add_Tensor
    returns: str
    params: tuple[str, ...]  # "const at::Tensor & self", ...
    signature: str  # the C++ function type: "at::Tensor (const at::Tensor &)"
    # kind-specific fields, read by the template
    call: str = ""  # direct: the kernel call expression; inplace_meta: the mutated argument
    # direct kernels of custom namespaces: (C++ namespace, declaration), written
    # into the shard itself so its bytes depend only on its own operators
    kernel_decl: tuple[str, str] | None = None
    device_check: tuple[str, ...] = ()  # tensor args to check for a common device
    device_guard: str = ""  # C++ statement, or ""
    # direct kernels of custom namespaces that the wrapper would only call, with its very
    # parameters: the kernel (`at::native::scale_cpu`), registered in the wrapper's place
    registers: str = ""
    # registered boxed, through torch's C shim (aten/kernel_signatures.py's registers_boxed)
    boxed: bool = False
    structured: StructuredCall | None = None
    generated: GeneratedCall | None = None
    fz: MutationCall | ViewCall | ViewCopyCall | None = None
    backend_select: BackendSelectCall | None = None

    def op_refs(self) -> tuple[OpRef, ...]:
        """The ops this wrapper calls through the dispatcher."""
        if self.fz is not None:
            return self.fz.ops()
        if self.backend_select is not None:
            return (self.backend_select.op,)
        if self.generated is not None:
            return (self.generated.target,)
        if self.structured is not None and self.structured.out_op is not None:
            return (self.structured.out_op,)
        return ()


@dataclass(frozen=True)
class StructuredCall:
    variant: str  # functional | inplace | out
    base_class: str  # at::native::structured_add_out or at::meta::structured_add_Tensor
    class_name: str  # the subclass this wrapper defines
    num_outputs: int
    meta_args: tuple[str, ...]
    # How the result is computed after meta(): "impl" (the kernel's own impl),
    # "meta" (nothing: Meta only computes shapes) or "out_op" (call the out=
    # op through the dispatcher: the default-backend composite kernels).
    mode: str
    impl_args: tuple[str, ...]  # impl(...) or out-op arguments
    precomputed: bool
    out_op: OpRef | None  # the out= op, in out_op mode
    calls_super_set_output: bool  # TensorIterator-based kernels track outputs themselves
    out_names: tuple[str, ...]  # inplace: (self,), out: the out args
    return_expr: str
    # custom namespaces: the group whose meta class (and, with a key, impl class) the wrapper
    # derives from; the emitter writes their declarations into the shard (as kernel_decl is)
    custom_classes: tuple[NativeFunctionsGroup, str | None] | None = None
    # The set_output methods take and propagate `DimnameList names` (torch 2.11 and 2.12:
    # torch_facts.SET_OUTPUT_NAMES_RELEASES).
    output_names: bool = False


@dataclass(frozen=True)
class BackendSelectCall:
    op: OpRef  # the op itself, redispatched past BackendSelect
    redispatch: str  # aten: at::_ops::<op>::redispatch; "" for a custom op's typed handle
    args: tuple[str, ...]  # every argument, in schema order
    tensors: tuple[str, ...]  # the tensor-like ones, whose keys join the options' key
    dtype: str
    layout: str
    device: str


@dataclass(frozen=True)
class GeneratedCall:
    target: OpRef  # the op the generated kernel is built from
    call_args: tuple[str, ...]
    return_expr: str  # may use `atg_result`, the target's return value
    bind_result: bool  # whether the body names the call's result
    clones: tuple[str, ...] = ()  # args cloned before the call (functional variants)
    copies: tuple[tuple[str, str], ...] = ()  # (out arg, result expr) for out variants


def make_wrapper(
    f: NativeFunction,
    key: str,
    kind: str,
    *,
    call: str = "",
    kernel_decl: tuple[str, str] | None = None,
    device_check: tuple[str, ...] = (),
    device_guard: str = "",
    structured: StructuredCall | None = None,
    generated: GeneratedCall | None = None,
    fz: MutationCall | ViewCall | ViewCopyCall | None = None,
    backend_select: BackendSelectCall | None = None,
) -> Wrapper:
    """The Wrapper of ``f`` for ``key``; the keyword arguments are its kind-specific fields."""
    returns, params, signature = wrapper_declaration(f)
    return Wrapper(
        kind=kind,
        op_name=str(f.name),
        cpp_name=wrapper_name(key, f),
        returns=returns,
        params=params,
        signature=signature,
        call=call,
        kernel_decl=kernel_decl,
        device_check=device_check,
        device_guard=device_guard,
        structured=structured,
        generated=generated,
        fz=fz,
        backend_select=backend_select,
    )


# --- argument adaptations -------------------------------------------------------------


def _structured_expr(a: Argument) -> str:
    """Dispatcher values -> the structured kernel API (Optional*Ref, I*ListRef, ints)."""
    s, n = str(a.type), a.name
    if s == "Tensor?" and not a.is_write:
        return f"(({n}.has_value() && (*{n}).defined()) ? at::OptionalTensorRef(*{n}) : at::OptionalTensorRef())"
    if s == "Scalar?":
        return (
            f"({n}.has_value() ? at::OptionalScalarRef(&({n}.value())) : at::OptionalScalarRef())"
        )
    if s == "Tensor?[]":
        return f"at::IOptTensorListRef({n})"
    return int_expr(a)


# --- wrapper builders ------------------------------------------------------------------


def direct_wrapper(f: NativeFunction, key: str) -> Wrapper:
    meta = f.dispatch[key]
    call = f"{meta.cpp_namespace}::{meta.kernel}({', '.join(native_args(f, meta.kernel))})"
    check, guard = _device_handling(f, key)
    # aten kernels are declared by the wheel's ATen/ops/<root>_native.h.
    decl = (
        None if f.namespace == "aten" else (meta.cpp_namespace, dispatch_kernel_declaration(f, key))
    )
    w = make_wrapper(
        f, key, "direct", call=call, device_check=check, device_guard=guard, kernel_decl=decl
    )
    names = tuple(p.rsplit(" ", 1)[-1] for p in w.params)
    if (
        decl is not None
        and not check
        and not guard
        and decl[1] == f"{w.returns} {meta.kernel}({', '.join(w.params)})"
        and native_args(f, meta.kernel) == names
    ):
        return replace(w, registers=f"{meta.cpp_namespace}::{meta.kernel}")
    return w


def inplace_meta_wrapper(f: NativeFunction) -> Wrapper:
    """The Meta kernel of an in-place op that has none of its own nor a composite one: an
    in-place op changes no metadata, so on a meta tensor it has nothing to do; the kernel
    checks that the mutated tensor is a meta tensor and returns it (torch's generated Meta
    kernels for these ops do the same)."""
    mutated = next(a for a in f.func.arguments.flat_all if a.is_write)
    return make_wrapper(f, "Meta", "inplace_meta", call=mutated.name)


def needs_backend_select(f: NativeFunction) -> bool:
    """Factory ops (TensorOptions arguments) but the `*_like` and `new_*` ones, whose tensor
    argument already names the backend."""
    name = str(f.name.name)
    return (
        f.func.arguments.tensor_options is not None
        and not name.endswith("_like")
        and not name.startswith("new_")
    )


def backend_select_wrapper(f: NativeFunction) -> Wrapper:
    """The BackendSelect kernel of a factory op: the dispatch key its dtype, layout and device
    name (joined with its tensor arguments' keys, past BackendSelect), then a redispatch."""
    op = op_ref(f)
    options = f.func.arguments.tensor_options
    assert options is not None, "only for factory ops (needs_backend_select)"
    call = BackendSelectCall(
        op=op,
        redispatch=op.aten_call.removesuffix("::call") + "::redispatch" if op.aten_call else "",
        args=tuple(a.name for a in f.func.arguments.flat_all),
        tensors=tuple(a.name for a in f.func.arguments.flat_all if a.type.is_tensor_like()),
        dtype=options.dtype.name,
        layout=options.layout.name,
        device=options.device.name,
    )
    return make_wrapper(f, torch_facts.BACKEND_SELECT_KEY, "backend_select", backend_select=call)


def _device_handling(f: NativeFunction, key: str) -> tuple[tuple[str, ...], str]:
    if key not in torch_facts.DEVICE_GUARD_KEYS:
        return (), ""
    return device_handling(f, lazy_init_key=key)


def structured_wrapper(
    f: NativeFunction,
    g: NativeFunctionsGroup,
    key: str,
    mode: str,
    impl_class_name: str | None = None,
    output_names: bool = False,
) -> Wrapper:
    """Wrappers over structured kernels. ``mode`` is impl, meta or out_op (see StructuredCall).

    The impl class is the one the op YAML's dispatch table names for key, or
    ``impl_class_name`` (an external backend's). ``output_names``: the base classes' set_output
    methods take `DimnameList names` (wheel_facts.set_output_takes_names)."""
    out = g.out
    variant = {
        SchemaKind.functional: "functional",
        SchemaKind.inplace: "inplace",
        SchemaKind.out: "out",
    }[f.kind]
    if mode == "impl":
        base_class = impl_class_name or impl_class(g, key)
        class_name = f"{base_class.rpartition('::')[2]}_{variant}"
    else:
        base_class = meta_class(g)
        class_name = f"structured_{g.functional.name.unambiguous_name()}_{mode}_{variant}"
    non_out = out.func.arguments.flat_non_out
    outs = out.func.arguments.out
    if variant == "functional":
        out_exprs = tuple(f"*atg_op.outputs_[{i}]" for i in range(len(outs)))
        out_names: tuple[str, ...] = ()
    elif variant == "inplace":
        out_exprs = ("atg_op.outputs_[0]",)
        out_names = ("self",)
    else:
        out_names = tuple(a.name for a in f.func.arguments.out)
        out_exprs = tuple(f"atg_op.maybe_get_output({i})" for i in range(len(outs)))
    impl_args: tuple[str, ...] = ()
    out_op = None
    if mode == "impl":
        impl_args = _impl_args(out) + out_exprs
    elif mode == "out_op":
        # The out= op takes mutable Tensor&; a proxy, if any, is written instead.
        mutable_outs = tuple(
            f"const_cast<at::Tensor&>(atg_op.maybe_get_output({i}))" for i in range(len(outs))
        )
        impl_args = tuple(a.name for a in non_out) + mutable_outs
        out_op = op_ref(out)
    check, guard = _device_handling(f, key)
    return make_wrapper(
        f,
        key,
        "structured",
        device_check=check,
        device_guard=guard,
        structured=StructuredCall(
            variant=variant,
            base_class=base_class,
            class_name=class_name,
            num_outputs=len(outs),
            meta_args=_meta_args(out),
            mode=mode,
            impl_args=impl_args,
            precomputed=out.precomputed is not None,
            out_op=out_op,
            # TensorIterator-based kernels track outputs in their base class;
            # plain MetaBase asserts if asked to.
            calls_super_set_output=out.structured_inherits is not None,
            out_names=out_names,
            return_expr=_structured_return(f, variant, len(outs)),
            custom_classes=(
                None if f.namespace == "aten" else (g, key if mode == "impl" else None)
            ),
            output_names=output_names,
        ),
    )


# Cached per out= function (as op_ref is): each of the group's variants, for each key, passes
# the same arguments to the meta and impl functions.
@cached_on_first_argument
def _meta_args(out: NativeFunction) -> tuple[str, ...]:
    return tuple(_structured_expr(a) for a in out.func.arguments.flat_non_out)


@cached_on_first_argument
def _impl_args(out: NativeFunction) -> tuple[str, ...]:
    pre = out.precomputed
    if pre is None:
        return _meta_args(out)
    replaced = dict(pre.replace)
    args: list[str] = []
    for a in out.func.arguments.flat_non_out:
        if a.name in replaced:
            args.extend(f"atg_precompute.{new.name}" for new in replaced[a.name])
        else:
            args.append(_structured_expr(a))
    args.extend(f"atg_precompute.{new.name}" for new in pre.add)
    return tuple(args)


def _structured_return(f: NativeFunction, variant: str, n: int) -> str:
    if variant == "inplace":
        return "self"
    if variant == "functional":
        taken = [f"std::move(atg_op.outputs_[{i}]).take()" for i in range(n)]
        return taken[0] if n == 1 else f"std::make_tuple({', '.join(taken)})"
    names = [a.name for a in f.func.arguments.out]
    return names[0] if n == 1 else f"std::forward_as_tuple({', '.join(names)})"


def generated_wrapper(f: NativeFunction, g: NativeFunctionsGroup, key: str) -> Wrapper:
    """Kernels for generated variants: out= via the functional op, functional via
    the (non-generated) inplace or mutable op applied to clones."""
    if f.kind is SchemaKind.out:
        functional = g.functional
        # The functional op returns the out= results first, then the new values
        # of the inputs the op mutates in place (a mutable op's positionals).
        targets = [a.name for a in f.func.arguments.out] + [
            a.name for a in f.func.arguments.flat_positional if a.is_write
        ]
        tensor_results = [
            i for i, r in enumerate(functional.func.returns) if r.type.is_tensor_like()
        ]
        if len(targets) != len(tensor_results):
            raise CannotGenerate(f"{functional.name} returns do not match the outputs of {f.name}")
        copies = tuple(
            (name, _result_part(i, len(functional.func.returns)))
            for name, i in zip(targets, tensor_results, strict=True)
        )
        gen = GeneratedCall(
            target=op_ref(functional),
            call_args=tuple(functional_call_args(f, functional, {})),
            return_expr=_out_return(f),
            bind_result=True,
            copies=copies,
        )
        return make_wrapper(f, key, "generated_out", generated=gen)
    target = g.mutable if g.mutable is not None and not g.mutable.generated else g.inplace
    if target is None or target.generated:
        raise CannotGenerate(f"no non-generated mutating variant to build {f.name} from")
    mutated = tuple(a.name for a in target.func.arguments.flat_all if a.is_write)
    call_args = tuple(
        f"atg_clone_{a.name}" if a.is_write else a.name for a in target.func.arguments.flat_all
    )
    # The target's returns that alias a mutated input are dropped; the clones
    # are returned after the rest.
    n = len(target.func.returns)
    kept = [_result_part(i, n) for i, r in enumerate(target.func.returns) if r.annotation is None]
    parts = kept + [f"atg_clone_{name}" for name in mutated]
    gen = GeneratedCall(
        target=op_ref(target),
        call_args=call_args,
        return_expr=parts[0] if len(parts) == 1 else f"::std::make_tuple({', '.join(parts)})",
        bind_result=bool(kept),
        clones=mutated,
    )
    return make_wrapper(f, key, "generated_functional", generated=gen)


def _result_part(i: int, n: int) -> str:
    return "atg_result" if n == 1 else f"::std::get<{i}>(atg_result)"


def _out_return(f: NativeFunction) -> str:
    returns = f.func.returns
    if not returns:
        return ""
    names = [a.name for a in f.func.arguments.out]
    return names[0] if len(returns) == 1 else f"std::forward_as_tuple({', '.join(names)})"
