"""Grouping variants of one operator: NativeFunctionsGroup and view groups."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from atengen.cached import cached_property
from atengen.errors import AtengenError, SchemaError
from atengen.model.native_function import NativeFunction
from atengen.model.schema import SchemaKind, check_schema, view_base_name


@dataclass(frozen=True, eq=False)
class NativeFunctionsGroup:
    """functional + out (both required) + optional inplace and mutable variants."""

    functional: NativeFunction
    out: NativeFunction
    inplace: NativeFunction | None = None
    mutable: NativeFunction | None = None

    @cached_property
    def structured(self) -> bool:
        return self.out.structured

    def functions(self) -> tuple[NativeFunction, ...]:
        return tuple(f for f in (self.functional, self.inplace, self.mutable, self.out) if f)


@dataclass(frozen=True, eq=False)
class NativeFunctionsViewGroup:
    """A view op, its non-aliasing view_copy, and its inplace_view variant."""

    view: NativeFunction
    view_copy: NativeFunction | None = None
    view_inplace: NativeFunction | None = None

    def functions(self) -> tuple[NativeFunction, ...]:
        return tuple(f for f in (self.view, self.view_copy, self.view_inplace) if f)


def add_to_buckets(
    buckets: dict[str, dict[SchemaKind, NativeFunction]], functions: Iterable[NativeFunction]
) -> None:
    """Adds ``functions`` to ``buckets``: by grouping key, then by kind; a kind may appear once
    in a bucket."""
    for f in functions:
        d = buckets.setdefault(f.func.grouping_key, {})
        other = d.get(f.kind)
        if other is not None:
            raise AtengenError(
                f.loc,
                f"'{f.name}' and '{other.name}' (line {other.loc.line}) are both {f.kind.value} "
                "variants of the same signature; overloads must differ in more than "
                "annotations, defaults or TensorOptions",
            )
        d[f.kind] = f


def make_groups(
    buckets: list[dict[SchemaKind, NativeFunction]],
) -> tuple[list[NativeFunctionsGroup], list[AtengenError]]:
    groups: list[NativeFunctionsGroup] = []
    errors: list[AtengenError] = []
    for d in buckets:
        try:
            g = _group_from_bucket(d)
        except AtengenError as e:
            errors.append(e)
            continue
        if g is not None:
            groups.append(g)
        else:
            for f in d.values():
                if f.generated:
                    errors.append(
                        AtengenError(f.loc, f"generated op '{f.name}' could not be grouped")
                    )
    return groups, errors


def _group_from_bucket(d: dict[SchemaKind, NativeFunction]) -> NativeFunctionsGroup | None:
    if len(d) == 1:
        return None
    functional = d.get(SchemaKind.functional)
    # A custom namespace's variants group only where aten's conventions hold; the others stay
    # ops of their own (functionalization.left_to_torch).
    custom = next(iter(d.values())).namespace != "aten"
    if custom and not all(_has_aten_shape(f) for f in d.values()):
        return None
    if functional is None:
        if custom:
            return None
        first = next(iter(d.values()))
        names = ", ".join(sorted(str(f.name) for f in d.values()))
        raise AtengenError(
            first.loc,
            f"variants {names} have no functional variant; add one, or list it in 'autogen:'",
        )
    out = d.get(SchemaKind.out)
    if out is None:  # functional + inplace only: a valid op, just not a group
        return None
    g = NativeFunctionsGroup(functional, out, d.get(SchemaKind.inplace), d.get(SchemaKind.mutable))
    if custom and g.mutable is not None and not functional.name.name.functional_overload:
        return None
    _check_group(g)
    return g


def _has_aten_shape(f: NativeFunction) -> bool:
    """Whether a custom op's schema keeps aten's rules (out= arguments returned, mutable returns
    aliasing them or self, ...), which the generated Functionalize kernels of a group rely on."""
    try:
        check_schema(f.func)
    except SchemaError:
        return False
    return True


def _check_group(g: NativeFunctionsGroup) -> None:
    functions = g.functions()
    generates = False  # whether any variant is generated or asks for generated ones
    for f in functions:
        generates = generates or f.generated or bool(f.autogen)
        if f.part_of_structured_group != g.structured:
            raise AtengenError(
                f.loc,
                f"'{f.name}' and its out= variant '{g.out.name}' disagree on being structured; "
                "the out= op needs 'structured: True' and the others 'structured_delegate'",
            )
        if f.namespace != g.functional.namespace:
            raise AtengenError(
                f.loc, f"variants of '{g.functional.name}' are in different namespaces"
            )
    if g.mutable is not None and not g.functional.name.name.functional_overload:
        raise AtengenError(
            g.mutable.loc,
            f"mutable op '{g.mutable.name}' groups with functional op '{g.functional.name}', "
            f"which must be named '{g.functional.name.name.base}_functional' to avoid overload "
            "ambiguity",
        )
    if g.structured:
        if g.out.has_composite_implicit_autograd_kernel:
            raise AtengenError(g.out.loc, "structured out= ops cannot be CompositeImplicitAutograd")
        for v in (g.functional, g.inplace):
            if v is not None and v.structured_delegate != g.out.name:
                raise AtengenError(
                    v.loc,
                    f"'{v.name}' delegates to '{v.structured_delegate}' but its out= variant is "
                    f"'{g.out.name}'",
                )
    if not generates:
        return
    generated = sorted(str(f.name) for f in functions if f.generated)
    expected = sorted({str(op) for f in functions for op in f.autogen})
    if generated != expected:
        owner = next((f for f in functions if not f.generated), g.functional)
        want = ", ".join(generated)
        if not expected:
            raise AtengenError(
                owner.loc,
                f"'{owner.name}' needs generated variants '{want}'; "
                f"please add an 'autogen: {want}' line to its entry",
            )
        raise AtengenError(
            owner.loc,
            f"the generated variants of '{owner.name}' are '{want}', so the entry needs "
            f"'autogen: {want}', but it has 'autogen: {', '.join(expected)}'",
        )


# --- view groups -------------------------------------------------------------

_ALIASING = "aliasing"
_ALIASING_INPLACE = "aliasing_inplace"


def _view_kind(f: NativeFunction) -> str | SchemaKind:
    if f.is_view_op:
        return _ALIASING_INPLACE if f.name.name.inplace else _ALIASING
    return f.kind


def gets_generated_view_copy(f: NativeFunction) -> bool:
    """Whether a view op needs a `<name>_copy` counterpart in the YAML."""
    return (
        f.is_view_op
        and not f.has_composite_implicit_autograd_kernel
        and "inplace_view" not in f.tags
        # `x_inverse` views pair with hand-written `x_scatter` copies.
        and not f.name.name.base.endswith("_inverse")
    )


# The names view_base_name changes; any other is its own view base name.
_COPY_SUFFIXES = ("_copy", "_scatter")


def make_view_groups(
    functions: Iterable[NativeFunction],
) -> tuple[list[NativeFunctionsViewGroup], list[AtengenError]]:
    buckets: dict[str, dict[object, NativeFunction]] = {}
    errors: list[AtengenError] = []
    functions = list(functions)
    # Only functions named like a view (or its copy) can join a view group;
    # skipping the rest saves computing ~3,000 signatures on the torch YAML.
    view_bases = {view_base_name(f.name.name.base) for f in functions if f.is_view_op}
    for f in functions:
        base = f.name.name.base
        if base.endswith(_COPY_SUFFIXES):
            base = view_base_name(base)
        if base not in view_bases:
            continue
        kind = _view_kind(f)
        if kind == _ALIASING_INPLACE and "inplace_view" not in f.tags:
            errors.append(
                AtengenError(f.loc, f"inplace view op '{f.name}' needs the inplace_view tag")
            )
            continue
        d = buckets.setdefault(f.func.view_grouping_key, {})
        if kind in d:
            other = d[kind]
            errors.append(
                AtengenError(f.loc, f"'{f.name}' and '{other.name}' have the same view signature")
            )
            continue
        d[kind] = f
    groups = []
    for d in buckets.values():
        view = d.get(_ALIASING)
        if view is None:
            continue
        g = NativeFunctionsViewGroup(view, d.get(SchemaKind.functional), d.get(_ALIASING_INPLACE))
        try:
            _check_view_group(g)
        except AtengenError as e:
            errors.append(e)
            continue
        groups.append(g)
    return groups, errors


def _check_view_group(g: NativeFunctionsViewGroup) -> None:
    view = g.view
    if g.view_copy is None:
        # A custom namespace's view registers as its author wrote it; torch functionalizes it
        # (functionalization.left_to_torch).
        if gets_generated_view_copy(view) and view.namespace == "aten":
            base = view.name.name
            name = f"{base.base}_copy" + (
                f".{view.name.overload_name}" if view.name.overload_name else ""
            )
            raise AtengenError(
                view.loc,
                f"'{view.name}' aliases its inputs, so the YAML needs its non-aliasing "
                f"counterpart '{name}' (tagged view_copy)",
            )
    else:
        copy = g.view_copy
        if not copy.name.name.base.endswith(("_copy", "_scatter")):
            raise AtengenError(copy.loc, f"view_copy op '{copy.name}' must be named '*_copy'")
        if "view_copy" not in copy.tags:
            raise AtengenError(
                copy.loc, f"'{copy.name}' is a view_copy op and needs the view_copy tag"
            )
    if g.view_inplace is not None and view.has_composite_implicit_autograd_kernel:
        if not g.view_inplace.has_composite_implicit_autograd_kernel:
            raise AtengenError(
                g.view_inplace.loc,
                f"'{view.name}' and '{g.view_inplace.name}' must both or neither have "
                "CompositeImplicitAutograd kernels",
            )
