"""Command line: ``atengen <command> --flags``. Thin: parse flags, call the model, print.

Commands:
  check   validate an op YAML and print counts (entries, functions, groups, ...)
  dump    one JSON line per NativeFunction after autogen, sorted by name
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

from absl import app, flags

from atengen.errors import AtengenError
from atengen.model import OperatorModel, load_model

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "op_yaml", None, "Op YAML (native_functions.yaml format). Default: the installed torch's."
)
flags.DEFINE_string("tags_yaml", None, "Tags YAML. Default: tags.yaml beside --op_yaml.")

COMMANDS = ("check", "dump")
USAGE = f"usage: atengen {{{','.join(COMMANDS)}}} [--op_yaml=F] [--tags_yaml=F]"


def installed_torch_yaml_dir() -> str | None:
    """Where the installed torch keeps its packaged native_functions.yaml.

    Located through the import system without importing torchgen: the
    generator is our own, torch's YAML is only its input.
    """
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(spec.submodule_search_locations[0], "packaged", "ATen", "native")


def _yaml_paths() -> tuple[str, str]:
    op_yaml = FLAGS.op_yaml
    if op_yaml is None:
        d = installed_torch_yaml_dir()
        if d is None:
            raise AtengenError(None, "no --op_yaml given and no installed torch to take it from")
        op_yaml = os.path.join(d, "native_functions.yaml")
    tags_yaml = FLAGS.tags_yaml or os.path.join(os.path.dirname(op_yaml), "tags.yaml")
    return op_yaml, tags_yaml


def dump_records(model: OperatorModel) -> list[dict]:
    """The `dump` format; other tools diff against it, so keep the fields exact."""
    records = []
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
    records.sort(key=lambda r: (r["name"], r["namespace"]))
    return records


def _check(model: OperatorModel) -> None:
    counts = model.counts()
    for key in ("entries", "native_functions", "generated", "groups", "view_groups"):
        print(f"{key}: {counts[key]}")
    print(f"operator_base_names: {counts['operator_base_names']}")
    print("kinds:")
    for k, n in counts["kinds"].items():
        print(f"  {k}: {n}")
    print("dispatch_keys:")
    for k, n in counts["dispatch_keys"].items():
        print(f"  {k}: {n}")


def _dump(model: OperatorModel) -> None:
    out = sys.stdout
    for r in dump_records(model):
        out.write(json.dumps(r, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    args = argv[1:]
    if len(args) != 1 or args[0] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        op_yaml, tags_yaml = _yaml_paths()
        model = load_model(op_yaml, tags_yaml)
    except AtengenError as e:
        print(e.format_all(), file=sys.stderr)
        return 1
    {"check": _check, "dump": _dump}[args[0]](model)
    return 0


def run() -> None:
    app.run(lambda argv: sys.exit(main(argv)))
