"""`atengen generate`: per-dispatch-key registration sources, sharded by operator (the aten
pipeline)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.cli.common import (
    add_jobs_flag,
    add_selection_flags,
    add_shards_flag,
    add_torch_facts_flag,
    add_yaml_flags,
    selected_ops,
    template_options,
    wheel_facts,
    yaml_inputs,
)

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs


def add_generate_command(commands: Commands) -> None:
    p = commands.add_parser(
        "generate", help="per-dispatch-key registration sources, sharded by operator"
    )
    add_yaml_flags(p)
    add_selection_flags(p)
    p.add_argument(
        "--keys",
        default="auto",
        help="Comma-separated dispatch keys, or `auto` (every servable key).",
    )
    add_shards_flag(p, default="auto")  # aten_codegen's default
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
    p.add_argument(
        "--signatures_output_dir",
        help="Directory for the CPU-side KernelSignatures_*.cpp (none: in --output_dir).",
    )
    add_torch_facts_flag(
        p,
        "registrations of kernels it does not export are left out. Default: the list of the "
        "default release.",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> Outputs:
    from atengen.pipelines.aten import AtenOptions, aten_outputs

    return aten_outputs(
        AtenOptions(
            inputs=yaml_inputs(args),
            ops=selected_ops(args),
            keys=None if args.keys == "auto" else tuple(args.keys.split(",")),
            shards=args.shards,
            functionalize=args.functionalize,
            output_dir=args.output_dir,
            cuda_output_dir=args.cuda_output_dir,
            header_output_dir=args.header_output_dir,
            signatures_output_dir=args.signatures_output_dir,
            jobs=args.jobs,
            templates=template_options(),
            wheel=wheel_facts(args.torch_facts, args.torch_version_py),
        )
    )
