"""Command line: ``atengen <command> --flags``. Thin: parse flags, call the model, print.

Commands:
  check     validate an op YAML and print counts (entries, functions, groups, ...)
  dump      one JSON line per NativeFunction after autogen, sorted by name
  generate  write per-dispatch-key registration sources, sharded by operator
  backend   an external backend's kernel class header and registrations (backend_cli.py)
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

from absl import app, flags

from atengen.cli.backend import run_backend
from atengen.emit.custom_ops import check_supported, native_headers, schema_files
from atengen.emit.functionalize import FUNCTIONALIZE_KEY
from atengen.emit.output import write_outputs
from atengen.emit.registration import (
    CUDA_KEYS,
    SERVABLE_KEYS,
    keys_in_use,
    registration_files,
)
from atengen.emit.shards import Sharding
from atengen.errors import AtengenError, Location
from atengen.model.operator_model import OperatorModel, load_model
from atengen.model.selection import select_functions

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "op_yaml", None, "Op YAML (native_functions.yaml format). Default: the installed torch's."
)
flags.DEFINE_string(
    "tags_yaml",
    None,
    "Tags YAML. Default: tags.yaml beside --op_yaml, else the installed torch's tags.yaml.",
)
flags.DEFINE_string(
    "ops", "all", "generate: `all`, or comma-separated op roots (add) or names (add.Tensor)."
)
flags.DEFINE_string(
    "ops_file", None, "generate: a file with the op selection, one or more per line; # comments."
)
flags.DEFINE_string(
    "keys", "auto", "generate: comma-separated dispatch keys, or `auto` for every servable key."
)
flags.DEFINE_integer(
    "shards",
    0,
    "generate: 0 = one file per operator; N > 0 = N hash buckets per key.",
    lower_bound=0,
)
flags.DEFINE_bool(
    "functionalize",
    True,
    "generate: with --keys=auto, also generate Functionalize-key kernels (--nofunctionalize: not).",
)
flags.DEFINE_string("out_dir", None, "generate: directory for the CPU-side sources.")
flags.DEFINE_string(
    "cuda_out_dir", None, "generate: directory for CUDA-key sources (none: skip CUDA keys)."
)
flags.DEFINE_string(
    "header_out_dir", None, "generate: directory for custom namespaces' <ns>/ops/<root>_native.h."
)

COMMANDS = ("check", "dump", "generate", "backend")
USAGE = f"usage: atengen {{{','.join(COMMANDS)}}} [--op_yaml=F] [--tags_yaml=F] [flags]"


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
    if FLAGS.tags_yaml is None and not os.path.exists(tags_yaml):
        # Custom op libraries usually reuse torch's tags.
        d = installed_torch_yaml_dir()
        if d is not None:
            tags_yaml = os.path.join(d, "tags.yaml")
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


def _op_selection() -> str:
    if FLAGS.ops_file is None:
        return FLAGS.ops
    try:
        with open(FLAGS.ops_file, encoding="utf-8") as f:
            lines = [line.split("#", 1)[0].strip() for line in f]
    except OSError as e:
        raise AtengenError(None, f"cannot read --ops_file {FLAGS.ops_file}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise AtengenError(
            Location(FLAGS.ops_file, 1), "not UTF-8 text; is this a binary file?"
        ) from None
    return ",".join(x for line in lines for x in line.split(",") if x.strip())


def _generate(model: OperatorModel) -> None:
    if not FLAGS.out_dir:
        raise AtengenError(None, "generate needs --out_dir")
    functions = select_functions(model, _op_selection())
    if FLAGS.keys == "auto":
        candidates = [k for k in SERVABLE_KEYS if FLAGS.functionalize or k != FUNCTIONALIZE_KEY]
        keys = keys_in_use(model, functions, candidates)
    else:
        keys = FLAGS.keys.split(",")
    if FLAGS.cuda_out_dir is None:
        keys = [k for k in keys if k not in CUDA_KEYS]
    sharding = Sharding(FLAGS.shards)
    check_supported(functions)
    files = registration_files(model, functions, keys, sharding)
    files += schema_files(functions, sharding)
    headers = native_headers(model, functions)
    if headers and FLAGS.header_out_dir is None:
        raise AtengenError(None, "custom-namespace ops need --header_out_dir for their headers")
    # Everything is rendered before anything is written: an error leaves no output.
    trees = [(FLAGS.out_dir, [f for f in files if not f.cuda])]
    if FLAGS.cuda_out_dir is not None:
        trees.append((FLAGS.cuda_out_dir, [f for f in files if f.cuda]))
    if FLAGS.header_out_dir is not None:
        trees.append((FLAGS.header_out_dir, headers))
    write_outputs(trees)


def main(argv: list[str]) -> int:
    args = argv[1:]
    if len(args) != 1 or args[0] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        op_yaml, tags_yaml = _yaml_paths()
        if args[0] == "backend":
            run_backend(op_yaml, tags_yaml)
            return 0
        model = load_model(op_yaml, tags_yaml)
        {"check": _check, "dump": _dump, "generate": _generate}[args[0]](model)
    except AtengenError as e:
        print(e.format_all(), file=sys.stderr)
        return 1
    return 0


def run() -> None:
    app.run(lambda argv: sys.exit(main(argv)))
