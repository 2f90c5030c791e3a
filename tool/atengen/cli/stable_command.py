"""`atengen stable`: sources that use only the LibTorch stable ABI (the stable pipeline)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.cli.common import (
    add_selection_flags,
    add_shards_flag,
    add_yaml_flags,
    selected_ops,
    template_options,
    yaml_inputs,
)

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs
    from atengen.stable.releases import StableTarget


def add_stable_command(commands: Commands) -> None:
    p = commands.add_parser(
        "stable",
        help="stable-ABI registrations of custom namespaces, and a stable call API for aten",
    )
    add_yaml_flags(p)
    add_selection_flags(p)
    p.add_argument(
        "--target",
        type=_target,
        default="2.11",
        help="The oldest torch release (major.minor, 2.11 or newer) the library must load "
        "into; build with -DTORCH_TARGET_VERSION of the same release. Default: 2.11.",
    )
    add_shards_flag(p, default="auto")  # generate's default
    p.add_argument(
        "--output_dir",
        help="Directory for the custom namespaces' schema and registration sources.",
    )
    p.add_argument(
        "--cuda_output_dir",
        help="Directory for the CUDA keys' registration sources (default: --output_dir).",
    )
    p.add_argument(
        "--header_output_dir", help="Directory for custom namespaces' <ns>/ops/<root>_native.h."
    )
    p.add_argument(
        "--call_api_dir",
        help="Directory for atengen/stable/ops/<root>.h, the call API of the aten operators.",
    )
    p.add_argument(
        "--report", help="File for the call API's coverage: counts, and each overload left out."
    )
    p.add_argument(
        "--python_module",
        help="File for the library's Python module: autograd formulas (from --derivatives_yaml) "
        "and fake kernels; a line on stdout names the operators it cannot fake.",
    )
    p.add_argument(
        "--derivatives_yaml",
        help="A derivatives YAML of the library's operators, translated into --python_module.",
    )
    p.add_argument(
        "--aten_op_yaml",
        help="torch's native_functions.yaml (with --tags_yaml): how the formulas' aten calls "
        "are spelled in Python. Needed with --derivatives_yaml.",
    )
    p.set_defaults(run=_run)


def _target(text: str) -> StableTarget:
    # Checked while parsing: a bad --target is one line and exit 2, like every bad flag.
    from atengen.stable.releases import parse_target

    try:
        return parse_target(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _run(args: argparse.Namespace) -> Outputs:
    from atengen.pipelines.inputs import YamlInputs
    from atengen.pipelines.stable import StableOptions, stable_outputs

    inputs = yaml_inputs(args)
    return stable_outputs(
        StableOptions(
            inputs=inputs,
            ops=selected_ops(args),
            target=args.target,  # argparse converts the default too
            shards=args.shards,
            output_dir=args.output_dir,
            header_output_dir=args.header_output_dir,
            call_api_dir=args.call_api_dir,
            report_path=args.report,
            cuda_output_dir=args.cuda_output_dir,
            templates=template_options(),
            python_module=args.python_module,
            derivatives_yaml=args.derivatives_yaml,
            aten_inputs=(
                None
                if args.aten_op_yaml is None
                else YamlInputs(args.aten_op_yaml, inputs.tags_yaml, freeze_heap=True)
            ),
        )
    )
