"""``check`` and ``dump``: the operator model of an op YAML, as counts or as JSON lines."""

from __future__ import annotations

import json

from atengen.model.operator_model import OperatorModel
from atengen.pipelines.inputs import YamlInputs
from atengen.render.output import Outputs


def check(inputs: YamlInputs) -> Outputs:
    counts = inputs.load().counts()
    lines = [f"{key}: {counts[key]}" for key in ("entries", "native_functions", "generated")]
    lines += [f"{key}: {counts[key]}" for key in ("groups", "view_groups")]
    lines.append(f"operator_base_names: {counts['operator_base_names']}")
    lines.append("kinds:")
    lines += [f"  {k}: {n}" for k, n in counts["kinds"].items()]
    lines.append("dispatch_keys:")
    lines += [f"  {k}: {n}" for k, n in counts["dispatch_keys"].items()]
    return Outputs(report="".join(line + "\n" for line in lines))


def dump(inputs: YamlInputs) -> Outputs:
    records = dump_records(inputs.load())
    return Outputs(report="".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def dump_records(model: OperatorModel) -> list[dict[str, object]]:
    """The `dump` format; other tools diff against it, so keep the fields exact."""
    records: list[dict[str, object]] = []
    for f in model.functions:
        group = model.group_of.get(id(f))
        view_group = model.view_group_of.get(id(f))
        records.append(
            {
                "name": str(f.name),
                "namespace": f.namespace,
                "schema": str(f.func),
                "kind": f.kind.value,
                "generated": f.generated,
                "group": str(group.functional.name) if group else None,
                "view_group": str(view_group.view.name) if view_group else None,
                "structured": f.structured,
                "tags": sorted(f.tags),
                "dispatch": {k: m.kernel for k, m in sorted(f.dispatch.items())},
            }
        )
    records.sort(key=lambda r: (str(r["name"]), str(r["namespace"])))
    return records
