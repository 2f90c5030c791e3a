"""The operator model: every NativeFunction (after autogen), its groups and view groups.

``load_model(op_yaml, tags_yaml)`` is the one entry point the emitters and the
CLI use. It reports every error it can find in one pass.
"""

from __future__ import annotations

import contextlib
import gc
from collections import Counter
from dataclasses import dataclass, field

from atengen.cached import TYPE_CHECKING, cached_property
from atengen.errors import AtengenError, Location, shown
from atengen.model.autogen import add_generated_functions
from atengen.model.groups import (
    NativeFunctionsGroup,
    NativeFunctionsViewGroup,
    make_groups,
    make_view_groups,
)
from atengen.model.native_function import (
    NativeFunction,
    native_function_from_entry,
    parse_tags_yaml,
)
from atengen.yaml.loader import YamlList, YamlMap, load_yaml

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TypedDict

    class ModelCounts(TypedDict):
        """OperatorModel.counts()."""

        entries: int
        native_functions: int
        generated: int
        groups: int
        view_groups: int
        operator_base_names: int
        kinds: dict[str, int]
        dispatch_keys: dict[str, int]


@dataclass(frozen=True, eq=False)
class OperatorModel:
    """Everything the emitters read: the functions, their groups and their view groups."""

    entries: int  # entries in the op YAML
    functions: tuple[NativeFunction, ...]  # YAML order, then generated variants
    groups: tuple[NativeFunctionsGroup, ...]
    view_groups: tuple[NativeFunctionsViewGroup, ...]
    valid_tags: frozenset[str] = field(default=frozenset())

    @cached_property
    def by_name(self) -> dict[str, NativeFunction]:
        return {f"{f.namespace}::{f.name}": f for f in self.functions}

    @cached_property
    def group_of(self) -> dict[int, NativeFunctionsGroup]:
        """id(NativeFunction) -> its group."""
        return {id(f): g for g in self.groups for f in g.functions()}

    @cached_property
    def view_group_of(self) -> dict[int, NativeFunctionsViewGroup]:
        return {id(f): g for g in self.view_groups for f in g.functions()}

    def counts(self) -> ModelCounts:
        """Summary numbers for `atengen check`."""
        kinds = Counter(f.kind.value for f in self.functions)
        keys = Counter(k for f in self.functions for k in f.dispatch)
        return {
            "entries": self.entries,
            "native_functions": len(self.functions),
            "generated": sum(f.generated for f in self.functions),
            "groups": len(self.groups),
            "view_groups": len(self.view_groups),
            "operator_base_names": len({(f.namespace, f.name.name.base) for f in self.functions}),
            "kinds": dict(sorted(kinds.items())),
            "dispatch_keys": dict(sorted(keys.items())),
        }


def load_model(op_yaml: str, tags_yaml: str, *, freeze_heap: bool = False) -> OperatorModel:
    """The model of an op YAML. ``freeze_heap``: see gc_paused; for a process that loads one
    model and exits (the command line), not for a library caller."""
    with gc_paused(freeze_heap):
        valid_tags = parse_tags_yaml(load_yaml(tags_yaml), tags_yaml)
        doc = load_yaml(op_yaml)
        return build_model(doc, op_yaml, valid_tags)


@contextlib.contextmanager
def gc_paused(freeze_heap: bool = False) -> Iterator[None]:
    """Loading creates ~70,000 lasting objects and no reference cycles. Left running, the
    cyclic GC walks the growing heap ~150 times for nothing, a tenth of the
    time; so it is paused, and set back as it was at the end.

    At the end, what is alive goes straight to the oldest generation (gc.freeze then
    gc.unfreeze, both constant-time list moves), where two more collections would have put
    it: otherwise the first collection after the load, set off by the next few allocations,
    walks every object of the model (~8 ms for torch's YAML) to free none. The caller's own
    objects alive then are promoted alike; cycles among them are freed at the next full
    collection instead of a young one.

    ``freeze_heap``: what is alive stays frozen: out of the collector's reach for good, so
    that the full collections the emitters' allocations trigger do not walk the model again
    (~4% of a whole-YAML `generate`). Refcounting still frees it, but the few hundred
    objects that lazily made classes and functions leave in cycles stay until exit. That
    suits a process that loads one model and exits (the command line); a long-lived caller
    (tests, a library user) leaves it off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            if not freeze_heap:
                gc.unfreeze()
            gc.enable()


def build_model(doc: object, path: str, valid_tags: frozenset[str]) -> OperatorModel:
    if not isinstance(doc, YamlList):
        line = doc.line if isinstance(doc, YamlMap) else 1
        raise AtengenError(Location(path, line), "op YAML must be a list of '- func: ...' entries")
    errors: list[AtengenError] = []
    functions: list[NativeFunction] = []
    for i, entry in enumerate(doc):
        try:
            functions.append(
                native_function_from_entry(entry, doc.item_location(i), valid_tags, shown(errors))
            )
        except AtengenError as e:
            errors.append(e)
    _raise_if(errors)
    errors.extend(_check_names_and_delegates(functions))
    _raise_if(errors)

    # Generated out= ops are tagged `out` since torch 2.13, whose tags YAML added the tag. A
    # tags YAML of 2.11 or 2.12 (with `out_variant`, without `out`) says the release is older; a
    # custom one with neither is read as of a newer release.
    out_tag = "out" in valid_tags or "out_variant" not in valid_tags
    functions, buckets, errors = add_generated_functions(functions, out_tag)
    _raise_if(errors)
    groups, group_errors = make_groups(buckets)
    view_groups, view_errors = make_view_groups(functions)
    # `autogen:` on ops that get no variants (CompositeImplicitAutograd-only,
    # views, manual bindings) is ignored, as torch's own YAML relies on.
    errors = group_errors + view_errors
    _raise_if(sorted(errors, key=lambda e: e.location.line if e.location else 0))
    return OperatorModel(len(doc), tuple(functions), tuple(groups), tuple(view_groups), valid_tags)


def _raise_if(errors: list[AtengenError]) -> None:
    if errors:
        raise AtengenError.combine([x for e in errors for x in e.errors])


def _check_inplace_views(functions: list[NativeFunction]) -> list[AtengenError]:
    """An inplace_view op (`t_`) is functionalized through its out-of-place view (`t`)."""
    # (a missing trailing '_' is reported with the entry; torch functionalizes resize_,
    # resize_as_ and set_ by hand)
    inplace_views = [
        f
        for f in functions
        if "inplace_view" in f.tags
        and f.name.name.inplace
        and str(f.name) not in ("resize_", "resize_as_")
        and str(f.name.name) != "set_"
    ]
    if not inplace_views:
        return []
    bases = {f.name.name.base for f in inplace_views}
    out_of_place = {
        (f.namespace, f.name.name.base, f.name.name.dunder_method)
        for f in functions
        if f.name.name.base in bases and not f.name.name.inplace
    }
    errors = []
    for f in inplace_views:
        name = f.name.name
        if (f.namespace, name.base, name.dunder_method) not in out_of_place:
            errors.append(
                AtengenError(
                    f.loc,
                    f"'{f.name}' is tagged inplace_view, so the YAML needs its out-of-place view "
                    f"op '{name.base}' (same arguments, returning a view: Tensor(a))",
                )
            )
    return errors


def _check_names_and_delegates(functions: list[NativeFunction]) -> list[AtengenError]:
    errors = []
    by_name: dict[tuple[str, str], NativeFunction] = {}
    for f in functions:
        key = (f.namespace, str(f.name))
        if key in by_name:
            first = by_name[key]
            errors.append(
                AtengenError(
                    f.loc, f"op '{f.name}' is defined twice (first on line {first.loc.line})"
                )
            )
        by_name[key] = f
    errors.extend(_check_inplace_views(functions))
    for f in functions:
        if f.structured_delegate is None:
            continue
        target = by_name.get((f.namespace, str(f.structured_delegate)))
        if target is None:
            errors.append(
                AtengenError(
                    f.loc,
                    f"'{f.name}' is a structured_delegate of '{f.structured_delegate}', "
                    "which does not exist",
                )
            )
        elif not target.structured:
            errors.append(
                AtengenError(
                    f.loc,
                    f"'{f.name}' is a structured_delegate of '{f.structured_delegate}', which is "
                    "not marked 'structured: True'",
                )
            )
    return errors
