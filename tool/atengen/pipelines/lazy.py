"""``lazy``: a lazy-tensor (LTC) backend's IR node classes, kernels and registrations.

The backend YAML may use `full_codegen`, `ir_gen` and `non_native`. ``shape_inference_file`` is
the shape-inference header the generated kernels' `compute_shape_*` calls are checked against
(its include path in the generated code is ``LazyOptions.shape_inference_hdr``).
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.backend.spec import BackendYaml, load_backend_yaml
from atengen.lazy.emit import lazy_files
from atengen.lazy.kernels import check_shape_inference
from atengen.lazy.model import LazyBackend, resolve_lazy_backend
from atengen.lazy.options import LazyOptions
from atengen.model.operator_model import OperatorModel
from atengen.pipelines.inputs import YamlInputs, read_text, with_model_of_ops
from atengen.render.output import GeneratedFile, Outputs
from atengen.render.shards import ShardSetting
from atengen.render.templates import TemplateOptions, Templates


@dataclass(frozen=True)
class LazyPipelineOptions:
    inputs: YamlInputs
    backend_yaml: str
    output_dir: str
    shape_inference_file: str | None
    shards: ShardSetting
    codegen: LazyOptions
    templates: TemplateOptions = TemplateOptions()


def lazy_outputs(opts: LazyPipelineOptions) -> Outputs:
    spec = load_backend_yaml(opts.backend_yaml, lazy=True)
    templates = Templates(opts.templates)
    _, files = with_model_of_ops(
        opts.inputs,
        backend_op_names(spec),
        spec.keys,
        lambda model: lazy_backend_files(
            spec, model, opts.codegen, opts.shards, opts.shape_inference_file, templates
        ),
    )
    return Outputs.of_trees([(opts.output_dir, files)], warnings=spec.warnings)


def backend_op_names(spec: BackendYaml) -> list[str]:
    """Every op a backend YAML names: the subset of the op YAML its model needs."""
    return [
        e.name
        for entries in (spec.supported, spec.autograd, spec.structured, spec.symint)
        + (spec.full_codegen, spec.ir_gen)
        for e in entries
    ]


def lazy_backend_files(
    spec: BackendYaml,
    model: OperatorModel,
    codegen: LazyOptions,
    shards: ShardSetting,
    shape_inference_file: str | None,
    templates: Templates,
) -> tuple[LazyBackend, list[GeneratedFile]]:
    """The checked lazy backend and every file of it, nothing written yet."""
    lazy = resolve_lazy_backend(spec, model, value_class=codegen.lazy_value_class)
    if shape_inference_file:
        header = read_text(shape_inference_file, "shape-inference header")
        check_shape_inference(lazy, header, shape_inference_file)
    return lazy, lazy_files(lazy, codegen, shards, templates)


def is_lazy_yaml(spec: BackendYaml) -> bool:
    """Does a backend YAML (read with lazy=True) ask for lazy-tensor IR generation?"""
    return bool(spec.full_codegen or spec.ir_gen or spec.non_native)
