"""`atengen backend`: an external backend's kernel class header and registration sources.

    atengen backend --backend_yaml=F --output_dir=D [--header_output_dir=H]
        [--include_prefix=P] [--shards=N] [--functional_backend] [--derivatives_yaml=F]
        [--impl_path=a.cpp,b.cpp] [--check_stamp=S] [--op_yaml=F --tags_yaml=F]
        [--allow_lazy [the lazy-backend flags of `atengen lazy`]]

With --allow_lazy, a backend YAML that lists full_codegen, ir_gen or non_native ops is a lazy-tensor
backend: it is generated as by `atengen lazy` (the headers, LazyIr*.h among them, go to
--header_output_dir, the sources to --output_dir), and the missing-kernel check counts the
generated kernels as defined. Other YAMLs are generated as without the flag; the Bazel rule
passes it always, so one rule serves both kinds.

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
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from atengen.cli.common import YamlInputs, add_shards_flag, add_yaml_flags, read_text, yaml_inputs
from atengen.cli.lazy_command import (
    add_lazy_codegen_flags,
    is_lazy_yaml,
    lazy_backend_files,
    lazy_codegen_options,
    with_backend_model,
)
from atengen.errors import AtengenError, Location
from atengen.lazy.options import LazyOptions

# The generator itself is imported by the functions that run it (see atengen.cli.main).
if TYPE_CHECKING:
    from atengen.autograd.model import DerivativesModel
    from atengen.backend.spec import BackendYaml
    from atengen.model.operator_model import OperatorModel
    from atengen.render.output import GeneratedFile

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
    lazy: LazyOptions | None = None  # None: a YAML with lazy-tensor ops is an error
    shape_inference_file: str | None = None  # lazy only
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
    p.add_argument(
        "--allow_lazy",
        action="store_true",
        help="Generate a YAML with full_codegen/ir_gen/non_native as a lazy-tensor backend "
        "(`atengen lazy`), with the flags below.",
    )
    add_lazy_codegen_flags(p)
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
        lazy=lazy_codegen_options(args) if args.allow_lazy else None,
        shape_inference_file=args.shape_inference_file,
        derivatives_yaml=args.derivatives_yaml,
    )


def run_backend(opts: BackendOptions) -> None:
    from atengen.backend.spec import check_include_prefix, load_backend_yaml
    from atengen.model.operator_model import load_model
    from atengen.render.output import write_outputs

    spec = load_backend_yaml(opts.backend_yaml, lazy=opts.lazy is not None)
    for warning in spec.warnings:
        print(warning, file=sys.stderr)
    if opts.output_dir is not None:
        check_include_prefix(opts.include_prefix)
    if opts.derivatives_yaml is None:
        trees = with_backend_model(opts.inputs, spec, lambda m: _backend_trees(opts, spec, m))
    else:  # the derivatives YAML is matched against the whole op YAML
        trees = _backend_trees(opts, spec, load_model(opts.inputs.op_yaml, opts.inputs.tags_yaml))
    stamps = [] if opts.check_stamp is None else [(opts.check_stamp, _STAMP_TEXT)]
    # One all-or-nothing write: a stamp that cannot be written leaves no sources either.
    write_outputs(trees, stamps)


def _backend_trees(
    opts: BackendOptions, spec: BackendYaml, model: OperatorModel
) -> list[tuple[str, list[GeneratedFile]]]:
    """Every checked output file by directory, nothing written yet."""
    from atengen.autograd.load import load_derivatives
    from atengen.backend.emit import header_file, registration_files
    from atengen.backend.kernel_check import check_kernels
    from atengen.backend.model import resolve_backend
    from atengen.render.shards import Sharding

    autograd_sources: list[GeneratedFile] = []
    if opts.derivatives_yaml is not None:
        derivatives = load_derivatives(opts.derivatives_yaml, model)
        spec, generated_autograd = _with_generated_autograd(spec, derivatives)
        if opts.output_dir is not None:
            autograd_sources = _backend_autograd_files(
                spec, model, derivatives, generated_autograd, opts.shards, opts.derivatives_yaml
            )
    if opts.lazy is not None and is_lazy_yaml(spec):
        if opts.functional_backend:
            raise AtengenError(
                Location(opts.backend_yaml, 1),
                "a lazy-tensor backend (full_codegen, ir_gen, non_native) cannot be a functional "
                "backend: LTC backends run below functionalization already",
            )
        lazy, files = lazy_backend_files(
            spec, model, opts.lazy, Sharding(opts.shards), opts.shape_inference_file
        )
        backend = lazy.backend
        sources = [f for f in files if not f.path.endswith(".h")]
        headers = [f for f in files if f.path.endswith(".h")]
        # The generated kernels count as defined; the hand-written ones must be in impl_paths.
        registered = {f.path for f in registration_files(backend, Sharding(opts.shards), "")}
        generated = {f"<generated {f.path}>": f.text for f in sources if f.path not in registered}
    else:
        backend = resolve_backend(spec, model, functional=opts.functional_backend)
        sources = headers = None
        generated = {}
    if opts.impl_paths:
        kernel_sources = {p: read_text(p, "kernel source", lenient=True) for p in opts.impl_paths}
        check_kernels(backend, {**kernel_sources, **generated})
    if opts.output_dir is None:
        return []
    if sources is None:
        headers = [header_file(backend, opts.include_prefix)]
        sources = registration_files(backend, Sharding(opts.shards), opts.include_prefix)
    header_dir = opts.header_output_dir or opts.output_dir  # merged when they are one
    return [(opts.output_dir, sources + autograd_sources), (header_dir, headers)]


def _with_generated_autograd(
    spec: BackendYaml, derivatives: DerivativesModel
) -> tuple[BackendYaml, frozenset[str]]:
    """The spec with the `autograd:` operators that the derivatives YAML covers moved to
    `supported:` (their kernels compute the forward pass only), and those operators' names."""
    from atengen.autograd.model import DEFAULT_KEY

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
    from atengen.autograd.emit import AutogradTarget, autograd_files
    from atengen.render.shards import Sharding

    target = AutogradTarget(
        namespace="aten",
        cpp_namespace=spec.cpp_namespace,
        key=spec.autograd_key,
        inplace_or_view=False,  # torch registers aten's own ADInplaceOrView kernels
        only=generated,
    )
    return autograd_files(model, derivatives, target, Sharding(shards), derivatives_yaml)
