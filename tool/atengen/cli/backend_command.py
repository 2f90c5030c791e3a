"""`atengen backend`: an external backend's kernel class header and registration sources.

    atengen backend --backend_yaml=F --output_dir=D [--header_output_dir=H]
        [--include_prefix=P] [--shards=N] [--functional_backend]
        [--impl_path=a.cpp,b.cpp] [--check_stamp=S] [--op_yaml=F --tags_yaml=F]

Everything is checked and rendered before anything is written, so an error leaves no output
(and no stale files from an earlier run).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from atengen.backend.emit import header_file, registration_files
from atengen.backend.kernel_check import check_kernels
from atengen.backend.model import resolve_backend
from atengen.backend.spec import check_include_prefix, load_backend_yaml
from atengen.cli.common import YamlInputs, add_shards_flag, add_yaml_flags, read_text, yaml_inputs
from atengen.emit.output import write_outputs
from atengen.emit.shards import Sharding
from atengen.errors import AtengenError
from atengen.model.operator_model import load_model

_STAMP_TEXT = "// atengen: every kernel of the backend YAML is defined.\n"


@dataclass(frozen=True)
class BackendOptions:
    inputs: YamlInputs
    backend_yaml: str
    output_dir: str | None
    header_output_dir: str | None  # None: the header goes to output_dir
    include_prefix: str
    shards: int
    functional_backend: bool
    impl_paths: tuple[str, ...]
    check_stamp: str | None


def add_backend_command(commands) -> None:
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
    add_shards_flag(p)
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
    p.set_defaults(run=lambda args: run_backend(backend_options(args)))


def backend_options(args: argparse.Namespace) -> BackendOptions:
    if args.output_dir is None and not args.impl_path:
        raise AtengenError(None, "backend needs --output_dir, --impl_path or both")
    return BackendOptions(
        inputs=yaml_inputs(args),
        backend_yaml=args.backend_yaml,
        output_dir=args.output_dir,
        header_output_dir=args.header_output_dir,
        include_prefix=args.include_prefix,
        shards=args.shards,
        functional_backend=args.functional_backend,
        impl_paths=tuple(p for p in args.impl_path.split(",") if p),
        check_stamp=args.check_stamp,
    )


def run_backend(opts: BackendOptions) -> None:
    spec = load_backend_yaml(opts.backend_yaml)
    for warning in spec.warnings:
        print(warning, file=sys.stderr)
    if opts.output_dir is not None:
        check_include_prefix(opts.include_prefix)
    model = load_model(opts.inputs.op_yaml, opts.inputs.tags_yaml)
    backend = resolve_backend(spec, model, functional=opts.functional_backend)
    if opts.impl_paths:
        kernel_sources = {p: read_text(p, "kernel source", lenient=True) for p in opts.impl_paths}
        check_kernels(backend, kernel_sources)
    trees = []
    if opts.output_dir is not None:
        header = header_file(backend, opts.include_prefix)
        sources = registration_files(backend, Sharding(opts.shards), opts.include_prefix)
        header_dir = opts.header_output_dir or opts.output_dir  # merged when they are one
        trees = [(opts.output_dir, sources), (header_dir, [header])]
    stamps = [] if opts.check_stamp is None else [(opts.check_stamp, _STAMP_TEXT)]
    # One all-or-nothing write: a stamp that cannot be written leaves no sources either.
    write_outputs(trees, stamps)
