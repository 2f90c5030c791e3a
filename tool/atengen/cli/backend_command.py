"""`atengen backend`: an external backend's kernel class header and registration sources.

    atengen backend --backend_yaml=F --output_dir=D [--header_output_dir=H]
        [--include_prefix=P] [--shards=N] [--functional_backend] [--derivatives_yaml=F]
        [--impl_path=a.cpp,b.cpp] [--check_stamp=S] [--op_yaml=F --tags_yaml=F]

With --derivatives_yaml, the operators of the backend YAML's `autograd:` list that have an entry
there get generated Autograd<Backend> kernels (backward nodes from the formulas, see
atengen.autograd), and their hand-written kernel becomes a forward kernel, registered for the
backend key like a `supported:` one. `autograd:` operators without an entry stay hand-written;
an entry for an operator that `autograd:` does not list is an error.

Everything is checked and rendered before anything is written, so an error leaves no output
(and no stale files from an earlier run).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from atengen.autograd.emit import AutogradTarget, autograd_files
from atengen.autograd.load import load_derivatives
from atengen.autograd.model import DEFAULT_KEY, DerivativesModel
from atengen.backend.emit import header_file, registration_files
from atengen.backend.kernel_check import check_kernels
from atengen.backend.model import resolve_backend
from atengen.backend.spec import BackendYaml, load_backend_yaml
from atengen.cli.common import YamlInputs, add_shards_flag, add_yaml_flags, read_text, yaml_inputs
from atengen.emit.output import GeneratedFile, write_trees
from atengen.emit.shards import Sharding
from atengen.errors import AtengenError
from atengen.model.operator_model import OperatorModel, load_model

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
    derivatives_yaml: str | None = None


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
    p.add_argument(
        "--derivatives_yaml",
        help="Formulas for `autograd:` operators: their Autograd<Backend> kernels are generated.",
    )
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
        derivatives_yaml=args.derivatives_yaml,
    )


def run_backend(opts: BackendOptions) -> None:
    spec = load_backend_yaml(opts.backend_yaml)
    model = load_model(opts.inputs.op_yaml, opts.inputs.tags_yaml)
    autograd_sources: list[GeneratedFile] = []
    if opts.derivatives_yaml is not None:
        derivatives = load_derivatives(opts.derivatives_yaml, model)
        spec, generated = _with_generated_autograd(spec, derivatives)
        if opts.output_dir is not None:
            autograd_sources = _backend_autograd_files(
                spec, model, derivatives, generated, opts.shards, opts.derivatives_yaml
            )
    backend = resolve_backend(spec, model, functional=opts.functional_backend)
    if opts.impl_paths:
        kernel_sources = {p: read_text(p, "kernel source", lenient=True) for p in opts.impl_paths}
        check_kernels(backend, kernel_sources)
    if opts.output_dir is not None:
        header = header_file(backend, opts.include_prefix)
        sources = registration_files(backend, Sharding(opts.shards), opts.include_prefix)
        header_dir = opts.header_output_dir or opts.output_dir  # merged when they are one
        write_trees([(opts.output_dir, sources + autograd_sources), (header_dir, [header])])
    if opts.check_stamp is not None:
        _write_stamp(opts.check_stamp)


def _with_generated_autograd(
    spec: BackendYaml, derivatives: DerivativesModel
) -> tuple[BackendYaml, frozenset[str]]:
    """The spec with the `autograd:` operators that the derivatives YAML covers moved to
    `supported:` (their kernels compute the forward pass only), and those operators' names."""
    listed = {e.name for e in spec.autograd}
    covered = set()
    errors = []
    for per_key in derivatives.infos.values():
        info = per_key.get(DEFAULT_KEY) or next(iter(per_key.values()))
        name = str(info.func.name)
        if info.func.namespace != "aten" or name not in listed:
            errors.append(
                AtengenError(
                    info.loc,
                    f"derivatives for '{name}', which {spec.path} does not list under "
                    "'autograd:' (only those operators get generated Autograd"
                    f"{spec.backend} kernels)",
                )
            )
        covered.add(name)
    if errors:
        raise AtengenError.combine(errors)
    moved = tuple(e for e in spec.autograd if e.name in covered)
    spec = replace(
        spec,
        supported=spec.supported + moved,
        autograd=tuple(e for e in spec.autograd if e.name not in covered),
    )
    return spec, frozenset(covered)


def _backend_autograd_files(
    spec: BackendYaml,
    model: OperatorModel,
    derivatives: DerivativesModel,
    generated: frozenset[str],
    shards: int,
    derivatives_yaml: str,
) -> list[GeneratedFile]:
    target = AutogradTarget(
        namespace="aten",
        cpp_namespace=spec.cpp_namespace,
        key=spec.autograd_key,
        inplace_or_view=False,  # torch registers aten's own ADInplaceOrView kernels
        only=generated,
    )
    return autograd_files(model, derivatives, target, Sharding(shards), derivatives_yaml)


def _write_stamp(path: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(_STAMP_TEXT)
    except OSError as e:
        raise AtengenError(None, f"cannot write --check_stamp {path}: {e.strerror}") from None
