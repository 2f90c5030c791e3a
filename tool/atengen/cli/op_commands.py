"""The op-YAML commands: `check` (counts), `dump` (one JSON line per function), `generate`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from atengen import torch_facts
from atengen.cli.common import (
    YamlInputs,
    add_jobs_flag,
    add_shards_flag,
    add_yaml_flags,
    read_text,
    yaml_inputs,
)
from atengen.errors import AtengenError
from atengen.model.operator_model import OperatorModel, load_model
from atengen.model.selection import select_functions


def add_check_command(commands) -> None:
    p = commands.add_parser("check", help="validate an op YAML and print counts")
    add_yaml_flags(p)
    p.set_defaults(run=lambda args: check(yaml_inputs(args)))


def add_dump_command(commands) -> None:
    p = commands.add_parser("dump", help="one JSON line per NativeFunction after autogen")
    add_yaml_flags(p)
    p.set_defaults(run=lambda args: dump(yaml_inputs(args)))


def check(inputs: YamlInputs) -> None:
    counts = load_model(inputs.op_yaml, inputs.tags_yaml).counts()
    for key in ("entries", "native_functions", "generated", "groups", "view_groups"):
        print(f"{key}: {counts[key]}")
    print(f"operator_base_names: {counts['operator_base_names']}")
    print("kinds:")
    for k, n in counts["kinds"].items():
        print(f"  {k}: {n}")
    print("dispatch_keys:")
    for k, n in counts["dispatch_keys"].items():
        print(f"  {k}: {n}")


def dump(inputs: YamlInputs) -> None:
    out = sys.stdout
    for r in dump_records(load_model(inputs.op_yaml, inputs.tags_yaml)):
        out.write(json.dumps(r, sort_keys=True) + "\n")


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


@dataclass(frozen=True)
class GenerateOptions:
    inputs: YamlInputs
    ops: str  # `all`, or comma-separated op roots or names
    keys: tuple[str, ...] | None  # None: every servable key some selected op has a kernel for
    shards: int | str  # a bucket count, or "auto" (atengen.render.shards.Sharding.of)
    functionalize: bool
    output_dir: str
    cuda_output_dir: str | None  # None: no CUDA keys
    header_output_dir: str | None
    jobs: int | None = None  # processes; None: automatic (atengen.render.parallel)


# Below this many selected functions, forking a worker costs about what it saves.
PARALLEL_MIN_FUNCTIONS = 500


def add_generate_command(commands) -> None:
    p = commands.add_parser(
        "generate", help="per-dispatch-key registration sources, sharded by operator"
    )
    add_yaml_flags(p)
    selection = p.add_mutually_exclusive_group()
    selection.add_argument(
        "--ops",
        default="all",
        help="`all`, or comma-separated op roots (add) or names (add.Tensor).",
    )
    selection.add_argument(
        "--ops_file", help="A file with the op selection, one or more per line; # comments."
    )
    p.add_argument(
        "--keys",
        default="auto",
        help="Comma-separated dispatch keys, or `auto` (every servable key).",
    )
    add_shards_flag(p, allow_auto=True)
    add_jobs_flag(p)
    p.add_argument(
        "--functionalize",
        action="store_true",
        default=True,
        help="With --keys=auto, also generate Functionalize-key kernels (the default).",
    )
    p.add_argument("--nofunctionalize", dest="functionalize", action="store_false", help="Do not.")
    p.add_argument("--output_dir", required=True, help="Directory for the CPU-side sources.")
    p.add_argument(
        "--cuda_output_dir", help="Directory for CUDA-key sources (none: skip CUDA keys)."
    )
    p.add_argument(
        "--header_output_dir", help="Directory for custom namespaces' <ns>/ops/<root>_native.h."
    )
    p.set_defaults(run=lambda args: generate(generate_options(args)))


def generate_options(args: argparse.Namespace) -> GenerateOptions:
    ops = args.ops
    if args.ops_file is not None:
        lines = [
            line.split("#", 1)[0] for line in read_text(args.ops_file, "--ops_file").splitlines()
        ]
        ops = ",".join(x for line in lines for x in line.split(",") if x.strip())
    return GenerateOptions(
        inputs=yaml_inputs(args),
        ops=ops,
        keys=None if args.keys == "auto" else tuple(args.keys.split(",")),
        shards=args.shards,
        functionalize=args.functionalize,
        output_dir=args.output_dir,
        cuda_output_dir=args.cuda_output_dir,
        header_output_dir=args.header_output_dir,
        jobs=args.jobs,
    )


def generate(opts: GenerateOptions) -> None:
    # The emitters are imported here, not at the top: see atengen.cli.main.
    from atengen.aten.custom_ops import check_supported, native_headers, schema_files
    from atengen.aten.registration import registration_files
    from atengen.render.output import write_trees
    from atengen.render.parallel import auto_jobs
    from atengen.render.shards import Sharding

    model = load_model(opts.inputs.op_yaml, opts.inputs.tags_yaml)
    functions = select_functions(model, opts.ops)
    if opts.keys is None:
        # Every servable key: registration_files writes files only for the keys the selection
        # has kernels for.
        keys = [
            k
            for k in torch_facts.SERVABLE_KEYS
            if opts.functionalize or k != torch_facts.FUNCTIONALIZE_KEY
        ]
    else:
        keys = list(opts.keys)
    if opts.cuda_output_dir is None:
        keys = [k for k in keys if k not in torch_facts.CUDA_KEYS]
    sharding = Sharding.of(opts.shards)
    check_supported(functions)
    jobs = opts.jobs
    if jobs is None:
        jobs = auto_jobs() if len(functions) >= PARALLEL_MIN_FUNCTIONS else 1
    files = registration_files(model, functions, keys, sharding, jobs)
    files += schema_files(functions, sharding)
    headers = native_headers(model, functions)
    if headers and opts.header_output_dir is None:
        raise AtengenError(None, "custom-namespace ops need --header_output_dir for their headers")
    # Everything is rendered before anything is written: an error leaves no output.
    trees = [(opts.output_dir, [f for f in files if not f.cuda])]
    if opts.cuda_output_dir is not None:
        trees.append((opts.cuda_output_dir, [f for f in files if f.cuda]))
    if opts.header_output_dir is not None:
        trees.append((opts.header_output_dir, headers))
    write_trees(trees)
