"""Op selection: `all`, or a comma-separated list of operator roots or exact names."""

from __future__ import annotations

from atengen.errors import AtengenError, did_you_mean
from atengen.model.native_function import NativeFunction, root_name
from atengen.model.operator_model import OperatorModel


def select_functions(model: OperatorModel, spec: str) -> list[NativeFunction]:
    """`add` selects every variant and overload of add (add.Tensor, add_.Scalar,
    add.out, ...); `add.Tensor` or `add_.Tensor` selects one function; a
    namespace prefix (`myops::scale`) picks a custom namespace's op."""
    spec = spec.strip()
    if spec == "all":
        return list(model.functions)
    by_root: dict[tuple[str, str], list[NativeFunction]] = {}
    by_name: dict[tuple[str, str], NativeFunction] = {}
    for f in model.functions:
        by_root.setdefault((f.namespace, root_name(f)), []).append(f)
        by_name[(f.namespace, str(f.name))] = f
    chosen: dict[int, NativeFunction] = {}
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        ns, _, name = item.rpartition("::")
        key = (ns or "aten", name)
        if key in by_root:
            chosen.update((id(f), f) for f in by_root[key])
        elif key in by_name:
            chosen[id(by_name[key])] = by_name[key]
        else:
            # Suggest names as the selection spells them: custom namespaces qualified.
            names = [n if s == "aten" else f"{s}::{n}" for (s, n) in [*by_root, *by_name]]
            elsewhere = sorted(f"{s}::{n}" for (s, n) in by_root if n == name and s != key[0])
            hint = f" (did you mean '{elsewhere[0]}'?)" if elsewhere else did_you_mean(item, names)
            raise AtengenError(None, f"unknown operator '{item}' in the op selection{hint}")
    if not chosen:
        raise AtengenError(None, "the op selection is empty")
    return [f for f in model.functions if id(f) in chosen]
