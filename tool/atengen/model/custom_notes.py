"""What a custom namespace's operators are told instead of refused: warnings for conventions of
aten that the generator would enforce on aten's own operators, one line each."""

from __future__ import annotations

from atengen.model.functionalization import left_to_torch, modifies_arguments
from atengen.model.native_function import DEFAULT_NAMESPACE, NativeFunction, not_tagged_random
from atengen.model.operator_model import OperatorModel

_SHOWN_NAMES = 4


def random_looking_warnings(functions: list[NativeFunction]) -> list[str]:
    """One warning per custom op that looks random but is not tagged so: torch.compile may then
    deduplicate or reorder its calls."""
    return [
        f"{f.loc}: warning: '{f.namespace}::{f.name}' looks random (rand/dropout/Generator); "
        "if it is, tag it `tags: nondeterministic_seeded` so that torch.compile never "
        "deduplicates its calls"
        for f in functions
        if f.namespace != DEFAULT_NAMESPACE and not_tagged_random(f)
    ]


def functionalization_note(model: OperatorModel, functions: list[NativeFunction]) -> list[str]:
    """One line, at most, naming the custom ops whose functionalization is torch's: mutations
    without a functional variant (ops that return nothing, say) and views without a copy."""
    left = [
        f
        for f in functions
        if left_to_torch(f)
        and not f.has_composite_implicit_autograd_kernel
        and (
            (modifies_arguments(f) and id(f) not in model.group_of and not f.is_view_op)
            or (f.is_view_op and _view_without_copy(model, f))
        )
    ]
    if not left:
        return []
    names = ", ".join(str(f.name) for f in left[:_SHOWN_NAMES])
    more = f" and {len(left) - _SHOWN_NAMES} more" if len(left) > _SHOWN_NAMES else ""
    return [
        f"{left[0].loc}: note: no Functionalize kernel is generated for {names}{more}: "
        "they have no functional variant (or view copy) to call, so torch functionalizes "
        "them itself (auto_functionalize under torch.compile), as it does a TORCH_LIBRARY op"
    ]


def _view_without_copy(model: OperatorModel, f: NativeFunction) -> bool:
    group = model.view_group_of.get(id(f))
    return group is not None and group.view_copy is None
