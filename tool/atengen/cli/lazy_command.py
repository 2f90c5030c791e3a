"""`atengen lazy`: a lazy-tensor (LTC) backend's IR node classes, kernels and registrations.

    atengen lazy --backend_yaml=F --output_dir=D [--op_yaml=F --tags_yaml=F]
        [--shape_inference_file=F] [--shards=N|auto] [--include_prefix=P]
        [--node_base=C --node_base_hdr=H] [--tensor_class=C --tensor_class_hdr=H]
        [--backend_namespace=NS] [--get_device_fn=F] [--lazy_value_class=C]
        [--shape_inference_hdr=H] [--no_ts_lowerings]

See atengen.pipelines.lazy.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.cli.common import add_shards_flag, add_yaml_flags, template_options, yaml_inputs
from atengen.cli.lazy_flags import add_lazy_codegen_flags, lazy_codegen_options, lazy_field_type
from atengen.lazy.options import LazyOptions

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs


def add_lazy_command(commands: Commands) -> None:
    p = commands.add_parser(
        "lazy", help="a lazy-tensor backend's IR nodes, kernels and registrations"
    )
    add_yaml_flags(p)
    p.add_argument("--backend_yaml", required=True, help="The backend YAML (gen_lazy_tensor).")
    p.add_argument("--output_dir", required=True, help="Directory for every generated file.")
    add_shards_flag(p, default="0")
    add_lazy_codegen_flags(p)
    p.add_argument(
        "--include_prefix",
        default=LazyOptions().include_prefix,
        type=lazy_field_type("include_prefix"),
        help="The generated headers are <include_prefix>/<name>.h, included by that path.",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> Outputs:
    from atengen.pipelines.lazy import LazyPipelineOptions, lazy_outputs

    return lazy_outputs(
        LazyPipelineOptions(
            inputs=yaml_inputs(args),
            backend_yaml=args.backend_yaml,
            output_dir=args.output_dir,
            shape_inference_file=args.shape_inference_file,
            shards=args.shards,
            codegen=lazy_codegen_options(args),
            templates=template_options(),
        )
    )
