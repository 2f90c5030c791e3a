"""What torchgen registers under the Functionalize key, computed with the installed torchgen.

`torchgen_functionalize_kernels` mirrors how torchgen.gen builds
RegisterFunctionalization_*.cpp: structured/grouped functions, view groups, then the
ungrouped rest, each through torchgen's own `gen_functionalization_registration`.
"""

from __future__ import annotations

import re
from pathlib import Path

from torchgen.gen import get_grouped_by_view_native_functions, get_grouped_native_functions
from torchgen.gen_functionalization_type import gen_functionalization_registration
from torchgen.model import DispatchKey, NativeFunctionsGroup, NativeFunctionsViewGroup
from torchgen.selective_build.selector import SelectiveBuilder

from tests.support.oracle.torchgen_model import _parse

_IMPL = re.compile(r'm\.impl\("([^"]+)",\s*(.*)\);$')


def torchgen_functionalize_kernels(
    op_yaml: str | Path, tags_yaml: str | Path
) -> dict[str, dict[str, str | None]]:
    """op name -> {"kind": "mutation" | "view" | "decompose", "functional": name or None}."""
    parsed = _parse(op_yaml, tags_yaml)
    fns = list(parsed.native_functions)
    cia_index = parsed.backend_indices[DispatchKey.CompositeImplicitAutograd]
    selector = SelectiveBuilder.get_nop_selector()
    grouped = get_grouped_native_functions(fns)
    groups = [g for g in grouped if isinstance(g, NativeFunctionsGroup)]
    view_groups = [
        g
        for g in get_grouped_by_view_native_functions(fns)
        if isinstance(g, NativeFunctionsViewGroup)
    ]
    in_group = {f.func.name for g in groups for f in g.functions()}
    in_view = {f.func.name for g in view_groups for f in g.functions()}
    everything = (
        list(groups)
        + list(view_groups)
        + [f for f in fns if f.func.name not in in_group and f.func.name not in in_view]
    )
    functional_of = {
        str(f.func.name): str(g.functional.func.name) for g in groups for f in g.functions()
    }
    view_names = {str(f.func.name) for g in view_groups for f in g.functions()}
    result: dict[str, dict[str, str | None]] = {}
    for g in everything:
        for line in gen_functionalization_registration(selector, g, cia_index):
            m = _IMPL.match(line.strip())
            assert m, line
            name, how = m.groups()
            if how.startswith("static_cast"):
                kind = "decompose"
            elif name in view_names:
                kind = "view"
            else:
                kind = "mutation"
            result[name] = {
                "kind": kind,
                "functional": functional_of.get(name) if kind == "mutation" else None,
            }
    return result
