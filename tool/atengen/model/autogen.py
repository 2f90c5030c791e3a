"""Generated out= and functional variants.

Mutation-only ops (inplace or mutable kind) get a functional variant so that
functionalization has something to call, and an out= variant so that every
variant pairs up in a NativeFunctionsGroup. Generation happens only where the
entry asks for it with ``autogen:``; the grouping check then insists that the
``autogen:`` line names exactly what was generated.
"""

from __future__ import annotations

from types import MappingProxyType

from atengen.errors import AtengenError, SchemaError
from atengen.facts import torch_facts
from atengen.model.groups import add_to_buckets
from atengen.model.native_function import BackendMetadata, NativeFunction, new_native_function
from atengen.model.schema import (
    TENSOR,
    Annotation,
    Argument,
    BaseOperatorName,
    FunctionSchema,
    OperatorName,
    Return,
    SchemaKind,
    check_schema,
)

# Tags a generated variant inherits from the op it is generated from.
_INHERITED_TAGS = frozenset({"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"})
# Alias-set names for new out= arguments (spelled out: `string` costs ~1 ms to import).
_ALIAS_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Generated kernels are plain composites: they call the original op.
GENERATED_KERNEL_KEY = "CompositeExplicitAutograd"


def add_generated_functions(
    functions: list[NativeFunction], out_tag: bool = True
) -> tuple[list[NativeFunction], list[dict[SchemaKind, NativeFunction]], list[AtengenError]]:
    """Returns ``functions`` plus the generated variants, the buckets of them all
    (add_to_buckets: what grouping starts from), and any errors. ``out_tag``: generated out=
    variants are tagged `out` (torch 2.13 and newer; the tags YAML of those defines the tag)."""
    buckets: dict[str, dict[SchemaKind, NativeFunction]] = {}
    add_to_buckets(buckets, functions)
    generated: list[NativeFunction] = []
    errors: list[AtengenError] = []
    for d in list(buckets.values()):
        try:
            generated.extend(_generate_for_bucket(d, out_tag))
        except AtengenError as e:
            errors.append(e)
    if not errors:  # (the caller reports these first; the buckets are then unused)
        add_to_buckets(buckets, generated)
    return [*functions, *generated], list(buckets.values()), errors


def _generate_for_bucket(
    d: dict[SchemaKind, NativeFunction], out_tag: bool
) -> list[NativeFunction]:
    # One pass over the bucket's functions (a few) for what decides that it gets nothing:
    # - every variant is bound by hand (manual_cpp_binding);
    # - a view: views alias their inputs; out= and functional copies of them make no sense
    #   (set_ is tagged inplace_view but is an ordinary mutation here);
    # - every variant is CompositeImplicitAutograd and none is in the core op set:
    #   transforms let such ops decompose, so they need no variants.
    all_manual = all_implicit = True
    is_core = False
    for f in d.values():
        if f.is_view_op and str(f.name.name) != "set_":
            return []
        all_manual = all_manual and f.manual_cpp_binding
        all_implicit = all_implicit and f.has_composite_implicit_autograd_kernel
        is_core = is_core or "core" in f.tags
    if all_manual or (all_implicit and not is_core):
        return []
    has_out = SchemaKind.out in d
    # Outside aten the groups serve only what the conventions allow: an op of another shape
    # is registered as its author wrote it, and torch functionalizes it (auto_functionalize).
    custom = next(iter(d.values())).namespace != "aten"
    if custom and not any(f.autogen for f in d.values()):
        return []  # (aten's own ops get variants the grouping check then asks for by name)
    if has_out and len(d) == 1:
        out = d[SchemaKind.out]
        if not custom and str(out.name) not in torch_facts.LONE_OUT_OPS_ALLOWED:
            raise AtengenError(
                out.loc,
                f"out= op '{out.name}' has no functional or inplace variant to group with; "
                "add the functional op to the YAML",
            )
        return []

    base = (
        d.get(SchemaKind.mutable)
        or d.get(SchemaKind.inplace)
        or d.get(SchemaKind.out)
        or d[SchemaKind.functional]
    )
    if (
        not has_out
        and not (custom and not base.autogen)
        and base.kind is SchemaKind.mutable
        and not any(r.type.is_tensor_like() for r in base.func.returns)
        and str(base.name) not in torch_facts.MUTABLE_OPS_WITHOUT_OUT_VARIANT
    ):
        # No out= variant means no group, so no functional variant either, and
        # functionalization cannot remove the mutation.
        raise AtengenError(
            base.loc,
            f"mutable op '{base.name}' returns no tensors, so no out= or functional variant "
            "can be generated for it; return the result as a new tensor (e.g. '-> Tensor'), "
            "make it an inplace op on self (trailing '_', '-> Tensor(a!)'), or give it "
            "`manual_cpp_binding: True` to generate no variants",
        )
    wants_out = any("out" in str(name) for name in base.autogen)
    # An out= variant turns tensor returns into out args (or self, if inplace),
    # so ops returning no tensors cannot have one.
    can_have_out = base.kind is SchemaKind.inplace or base.func.is_tensor_returning()
    if wants_out and not has_out and not can_have_out:
        raise AtengenError(
            base.loc,
            f"cannot generate an out= variant of '{base.name}': it returns no tensors; "
            "remove the out name from 'autogen:'",
        )
    generated = []
    gets_out = wants_out and not has_out and can_have_out
    if gets_out:
        generated.append(_generated_function(base, _out_schema(base), out_tag))
    # A functional variant is only useful if the variants can be grouped,
    # and groups need an out= variant.
    if SchemaKind.functional not in d and (has_out or gets_out):
        generated.append(_generated_function(base, _functional_schema(base.func), out_tag))
    return generated


def _generated_function(
    base: NativeFunction, func: FunctionSchema, out_tag: bool
) -> NativeFunction:
    try:
        check_schema(func)
    except SchemaError as e:
        raise AtengenError(base.loc, f"generated variant '{func}' is invalid: {e}") from None
    # out= kernels are named `<name>_<overload>` so overloads of one op
    # (`randn.names_out`, `randn.generator_with_names_out`) do not collide.
    kernel = func.name.unambiguous_name() if func.is_out_fn() else str(func.name.name)
    if "SymInt" in base.func.text and base.func.has_symint():  # (the text: a cheap first test)
        kernel += "_symint"
    tags = {"generated"} | (base.tags & _INHERITED_TAGS)
    if out_tag and func.is_out_fn():
        tags.add("out")
    return new_native_function(
        namespace=base.namespace,
        func=func,
        loc=base.loc,
        # Generated ops are for transforms, not users: no methods, not structured.
        variants=_FUNCTION_ONLY,
        tags=frozenset(tags),
        dispatch=MappingProxyType(
            {GENERATED_KERNEL_KEY: BackendMetadata(kernel, "at::native", False)}
        ),
        device_guard=False,
        device_check="NoCheck",
        use_const_ref_for_mutable_tensors=base.use_const_ref_for_mutable_tensors,
    )


_FUNCTION_ONLY = frozenset({"function"})


def _functional_schema(func: FunctionSchema) -> FunctionSchema:
    """Mutated inputs become `<arg>_out` returns; a mutable base renames to `<name>_functional`."""
    sig = func.signature(keep_return_names=True)
    name = BaseOperatorName(
        func.name.name.base,
        inplace=False,
        dunder_method=func.name.name.dunder_method,
        # `foo.overload` may already exist for the mutable op's other overloads.
        functional_overload=func.kind is SchemaKind.mutable,
    )
    return FunctionSchema(OperatorName(name, func.name.overload_name), sig.arguments, sig.returns)


def _out_overload(func: FunctionSchema) -> OperatorName:
    overload = func.name.overload_name
    base = func.name.name
    name = BaseOperatorName(base.base, False, base.dunder_method, base.functional_overload)
    return OperatorName(name, f"{overload}_out" if overload else "out")


def _out_schema(base: NativeFunction) -> FunctionSchema:
    func = base.func
    if func.kind is SchemaKind.inplace:
        # zero_(Tensor(a!) self) -> Tensor(a!)  =>  zero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
        self_arg = func.arguments.self_arg
        assert self_arg is not None  # an in-place op's schema has one (check_schema)
        out = Argument("out", self_arg.type, None, self_arg.annotation)
        arguments = func.arguments.without_self_annotation().with_out_args([out])
        return FunctionSchema(_out_overload(func), arguments, func.returns)
    returns, outs = _outs_from_returns(func)
    if func.kind is SchemaKind.mutable:
        # Mutable positionals stay mutable; only the returns become outs.
        return FunctionSchema(_out_overload(func), func.arguments.with_out_args(outs), returns)
    return FunctionSchema(
        _out_overload(func), func.arguments.stripped().with_out_args(outs), returns
    )


def _outs_from_returns(func: FunctionSchema) -> tuple[tuple[Return, ...], list[Argument]]:
    """Each tensor-like return becomes an out kwarg with a fresh alias letter.

    Plain-Tensor returns stay as returns aliasing their outs; otherwise the
    outs are not returned (you cannot method-chain on a tensor list).
    """
    used = {x for a in func.arguments.flat_all if a.annotation for x in a.annotation.alias_set}
    fresh = [c for c in _ALIAS_LETTERS if c not in used]
    all_plain_tensors = all(r.type == TENSOR for r in func.returns)
    returns: list[Return] = []
    outs: list[Argument] = []
    for i, r in enumerate(func.returns):
        if not r.type.is_tensor_like():
            returns.append(r)
            continue
        annotation = Annotation((fresh[i],), True)
        name = "out" if len(func.returns) == 1 else f"out{i}"
        outs.append(Argument(name, r.type, None, annotation))
        if all_plain_tensors:
            returns.append(Return(None, r.type, annotation))
    return tuple(returns), outs
