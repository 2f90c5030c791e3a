"""`atengen backend`: an external backend's kernel class header and registration sources.

    atengen backend --backend_yaml=F --output_dir=D [--header_output_dir=H]
        [--include_prefix=P] [--shards=N|auto] [--functional_backend] [--derivatives_yaml=F]
        [--impl_path=a.cpp,b.cpp] [--check_stamp=S] [--op_yaml=F --tags_yaml=F] [--torch_facts=F]
        [--allow_lazy [the lazy-backend flags of `atengen lazy`]]

See atengen.pipelines.backend. Everything is checked and rendered before anything is written, so
an error leaves no output (and no stale files from an earlier run).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.cli.common import (
    add_shards_flag,
    add_torch_facts_flag,
    add_yaml_flags,
    template_options,
    yaml_inputs,
)
from atengen.cli.lazy_flags import add_lazy_codegen_flags, lazy_codegen_options

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs


def add_backend_command(commands: Commands) -> None:
    p = commands.add_parser(
        "backend", help="an external backend's kernel class header and registrations"
    )
    add_yaml_flags(p)
    p.add_argument(
        "--backend_yaml", required=True, help="The backend YAML (gen_backend_stubs format)."
    )
    p.add_argument("--output_dir", help="Directory for Register<Key>_<shard>.cpp.")
    p.add_argument(
        "--header_output_dir", help="Directory for the kernel class header (default: --output_dir)."
    )
    p.add_argument(
        "--include_prefix",
        default="",
        help="The kernel class header is <include_prefix>/<Backend>NativeFunctions.h, and the "
        "generated sources include it by that path.",
    )
    add_shards_flag(p, default="0")
    p.add_argument(
        "--functional_backend",
        action="store_true",
        help="The backend implements only functional and view_copy ops (functionalization runs "
        "above it); no out=/inplace wrappers are generated.",
    )
    p.add_argument(
        "--impl_path",
        default="",
        help="Comma-separated C++ sources to scan for a definition of every expected kernel.",
    )
    p.add_argument("--check_stamp", help="A file to write once the kernel check passed.")
    p.add_argument(
        "--derivatives_yaml",
        help="Formulas for `autograd:` operators: their Autograd<Backend> kernels are generated.",
    )
    p.add_argument(
        "--allow_lazy",
        action="store_true",
        help="Generate a YAML with full_codegen/ir_gen/non_native as a lazy-tensor backend "
        "(`atengen lazy`), with the flags below.",
    )
    add_torch_facts_flag(
        p,
        "an op listed under `structured:` must have a meta class the wheel exports, and a "
        "formula of --derivatives_yaml may call only the FunctionsManual.h helpers it exports. "
        "Default: the list kept for the supported releases, and the helpers read from the "
        "installed torch.",
    )
    add_lazy_codegen_flags(p)
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> Outputs:
    from atengen.cli.common import autograd_helpers, wheel_facts
    from atengen.pipelines.backend import BackendOptions, backend_outputs

    wheel = wheel_facts(args.torch_facts, args.torch_version_py)
    return backend_outputs(
        BackendOptions(
            inputs=yaml_inputs(args),
            backend_yaml=args.backend_yaml,
            output_dir=args.output_dir,
            header_output_dir=args.header_output_dir,
            include_prefix=args.include_prefix,
            shards=args.shards,
            functional_backend=args.functional_backend,
            impl_paths=tuple(p for p in args.impl_path.split(",") if p),
            check_stamp=args.check_stamp,
            lazy=lazy_codegen_options(args) if args.allow_lazy else None,
            shape_inference_file=args.shape_inference_file,
            derivatives_yaml=args.derivatives_yaml,
            autograd_helpers=None
            if args.derivatives_yaml is None
            else autograd_helpers(wheel, args.torch_facts),
            templates=template_options(),
            wheel=wheel,
        )
    )
