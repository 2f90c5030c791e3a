"""`atengen lazy`: a lazy-tensor (LTC) backend's IR node classes, kernels and registrations.

    atengen lazy --backend_yaml=F --output_dir=D [--op_yaml=F --tags_yaml=F]
        [--shape_inference_file=F] [--shards=N] [--include_prefix=P]
        [--node_base=C --node_base_hdr=H] [--tensor_class=C --tensor_class_hdr=H]
        [--backend_namespace=NS] [--get_device_fn=F] [--lazy_value_class=C]
        [--shape_inference_hdr=H] [--no_ts_lowerings]

The backend YAML may use `full_codegen`, `ir_gen` and `non_native`. `--shape_inference_file` is
the shape-inference header to check the generated kernels' `compute_shape_*` calls against (its
include path in the generated code is `--shape_inference_hdr`). Everything is checked and
rendered before anything is written.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, TypeVar

from atengen.cli.common import YamlInputs, add_shards_flag, add_yaml_flags, read_text, yaml_inputs
from atengen.errors import AtengenError
from atengen.lazy.options import LazyOptions

# The generator itself is imported by the functions that run it (see atengen.cli.main).
if TYPE_CHECKING:
    from atengen.backend.spec import BackendYaml
    from atengen.lazy.model import LazyBackend
    from atengen.model.operator_model import OperatorModel
    from atengen.render.output import GeneratedFile
    from atengen.render.shards import Sharding

# The LazyOptions fields that are C++ names or include paths: one flag each, same name
# (include_prefix is shared with `atengen backend`, which has its own flag for it).
T = TypeVar("T")

_NAME_FIELDS = tuple(
    f.name for f in fields(LazyOptions) if f.type in ("str", str) and f.name != "include_prefix"
)


@dataclass(frozen=True)
class LazyCommandOptions:
    inputs: YamlInputs
    backend_yaml: str
    output_dir: str
    shape_inference_file: str | None
    shards: int
    codegen: LazyOptions


def add_lazy_command(commands) -> None:
    p = commands.add_parser(
        "lazy", help="a lazy-tensor backend's IR nodes, kernels and registrations"
    )
    add_yaml_flags(p)
    p.add_argument("--backend_yaml", required=True, help="The backend YAML (gen_lazy_tensor).")
    p.add_argument("--output_dir", required=True, help="Directory for every generated file.")
    add_shards_flag(p)
    add_lazy_codegen_flags(p)
    p.add_argument(
        "--include_prefix",
        default=LazyOptions().include_prefix,
        help="The generated headers are <include_prefix>/<name>.h, included by that path.",
    )
    p.set_defaults(run=lambda args: run_lazy(lazy_options(args)))


def add_lazy_codegen_flags(p: argparse.ArgumentParser) -> None:
    """What a lazy backend customizes (LazyOptions), shared with `atengen backend --allow_lazy`."""
    p.add_argument(
        "--shape_inference_file",
        help="The shape-inference header to check compute_shape_* declarations against.",
    )
    p.add_argument(
        "--no_ts_lowerings",
        action="store_true",
        help="No TorchScript Lower()/CanBeReused() in the node classes (non-TS backends).",
    )
    for name in _NAME_FIELDS:
        default = getattr(LazyOptions(), name)
        p.add_argument(f"--{name}", default=default, help=f"Default: {default!r}.")


def lazy_codegen_options(args: argparse.Namespace) -> LazyOptions:
    return LazyOptions(
        **{name: getattr(args, name) for name in _NAME_FIELDS},
        include_prefix=args.include_prefix,
        ts_lowerings=not args.no_ts_lowerings,
    )


def lazy_options(args: argparse.Namespace) -> LazyCommandOptions:
    return LazyCommandOptions(
        inputs=yaml_inputs(args),
        backend_yaml=args.backend_yaml,
        output_dir=args.output_dir,
        shape_inference_file=args.shape_inference_file,
        shards=args.shards,
        codegen=lazy_codegen_options(args),
    )


def run_lazy(opts: LazyCommandOptions) -> None:
    from atengen.backend.spec import load_backend_yaml
    from atengen.render.output import write_trees
    from atengen.render.shards import Sharding

    spec = load_backend_yaml(opts.backend_yaml, lazy=True)
    sharding = Sharding(opts.shards)
    _, files = with_backend_model(
        opts.inputs,
        spec,
        lambda model: lazy_backend_files(
            spec, model, opts.codegen, sharding, opts.shape_inference_file
        ),
    )
    write_trees([(opts.output_dir, files)])


def with_backend_model(
    inputs: YamlInputs, spec: BackendYaml, generate: Callable[[OperatorModel], T]
) -> T:
    """``generate(model)``, with the model of only the op YAML entries the backend names
    (atengen.model.subset: the same functions, groups and view groups, for a fraction of the
    time) where that is exact; else, and again after any error, with the whole op YAML, so that
    errors are those of the whole file (an unknown op's did-you-mean draws on every name)."""
    from atengen.model.operator_model import load_model
    from atengen.model.subset import load_model_subset

    named = [
        e.name
        for entries in (spec.supported, spec.autograd, spec.structured, spec.symint)
        + (spec.full_codegen, spec.ir_gen)
        for e in entries
    ]
    # The backend's keys: resolving it checks that no op of the whole file uses them.
    model = load_model_subset(inputs.op_yaml, inputs.tags_yaml, named, absent_words=spec.keys)
    if model is not None:
        try:
            return generate(model)
        except AtengenError:
            pass  # generated again below, from the whole file
    return generate(load_model(inputs.op_yaml, inputs.tags_yaml))


def lazy_backend_files(
    spec: BackendYaml,
    model: OperatorModel,
    codegen: LazyOptions,
    sharding: Sharding,
    shape_inference_file: str | None,
) -> tuple[LazyBackend, list[GeneratedFile]]:
    """The checked lazy backend and every file of it, nothing written yet."""
    from atengen.lazy.emit import lazy_files
    from atengen.lazy.kernels import check_shape_inference
    from atengen.lazy.model import resolve_lazy_backend

    lazy = resolve_lazy_backend(spec, model, value_class=codegen.lazy_value_class)
    if shape_inference_file:
        header = read_text(shape_inference_file, "shape-inference header")
        check_shape_inference(lazy, header, shape_inference_file)
    return lazy, lazy_files(lazy, codegen, sharding)


def is_lazy_yaml(spec: BackendYaml) -> bool:
    """Does a backend YAML (read with lazy=True) ask for lazy-tensor IR generation?"""
    return bool(spec.full_codegen or spec.ir_gen or spec.non_native)
