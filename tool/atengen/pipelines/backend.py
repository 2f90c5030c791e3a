"""``backend``: an external backend's kernel class header and registration sources.

A backend YAML that lists full_codegen, ir_gen or non_native ops is a lazy-tensor backend: with
``lazy`` options it is generated as by the lazy pipeline (the headers, LazyIr*.h among them, go
to ``header_output_dir``, the sources to ``output_dir``), and the missing-kernel check counts the
generated kernels as defined. Other YAMLs are generated alike with or without ``lazy`` options,
so the Bazel rule passes them always and one rule serves both kinds.

With a derivatives YAML, the operators of the backend YAML's `autograd:` list that have an entry
there get generated Autograd<Backend> kernels (backward nodes from the formulas, see
atengen.autograd), and their hand-written kernel becomes a forward kernel, registered for the
backend key like a `supported:` one. `autograd:` operators without an entry stay hand-written;
an entry for an operator that `autograd:` does not list is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from atengen.autograd.emit import AutogradTarget, autograd_files
from atengen.autograd.load import load_derivatives
from atengen.autograd.model import DEFAULT_KEY, DerivativesModel
from atengen.backend.emit import (
    copy_back_warnings,
    header_file,
    registration_files,
    registration_paths,
)
from atengen.backend.kernel_check import check_kernels
from atengen.backend.model import resolve_backend
from atengen.backend.spec import BackendYaml, check_include_prefix, load_backend_yaml
from atengen.errors import AtengenError, Location
from atengen.lazy.options import LazyOptions
from atengen.model.operator_model import OperatorModel
from atengen.pipelines.inputs import YamlInputs, read_text, with_model_of_ops
from atengen.pipelines.lazy import backend_op_names, is_lazy_yaml, lazy_backend_files
from atengen.render.output import GeneratedFile, Outputs
from atengen.render.shards import ShardSetting
from atengen.render.templates import TemplateOptions, Templates
from atengen.torch_facts import WheelFacts

STAMP_TEXT = "// atengen: every kernel of the backend YAML is defined.\n"


@dataclass(frozen=True)
class BackendOptions:
    inputs: YamlInputs
    backend_yaml: str
    output_dir: str | None  # None: check only (with impl_paths)
    header_output_dir: str | None  # None: the header goes to output_dir
    include_prefix: str
    shards: ShardSetting
    functional_backend: bool
    impl_paths: tuple[str, ...]
    check_stamp: str | None
    lazy: LazyOptions | None = None  # None: a YAML with lazy-tensor ops is an error
    shape_inference_file: str | None = None  # lazy only
    derivatives_yaml: str | None = None
    templates: TemplateOptions = TemplateOptions()
    # What @torch read of the installed wheel (--torch_facts); None: the kept lists
    wheel: WheelFacts | None = None


def backend_outputs(opts: BackendOptions) -> Outputs:
    if opts.output_dir is None and not opts.impl_paths:
        raise AtengenError(None, "backend needs --output_dir, --impl_path or both")
    spec = load_backend_yaml(opts.backend_yaml, lazy=opts.lazy is not None)
    if opts.output_dir is not None:
        check_include_prefix(opts.include_prefix)
    templates = Templates(opts.templates)

    def generate(model: OperatorModel) -> tuple[list[tuple[str, list[GeneratedFile]]], tuple]:
        return _backend_trees(opts, spec, model, templates)

    if opts.derivatives_yaml is None:
        trees, warnings = with_model_of_ops(
            opts.inputs, backend_op_names(spec), spec.keys, generate
        )
    else:  # the derivatives YAML is matched against the whole op YAML
        trees, warnings = generate(opts.inputs.load())
    stamps = () if opts.check_stamp is None else ((opts.check_stamp, STAMP_TEXT),)
    return Outputs.of_trees(trees, stamps=stamps, warnings=spec.warnings + warnings)


def _backend_trees(
    opts: BackendOptions, spec: BackendYaml, model: OperatorModel, templates: Templates
) -> tuple[list[tuple[str, list[GeneratedFile]]], tuple[str, ...]]:
    """Every checked output file by directory, nothing written yet; and the warnings about
    the backend (the copy ops its generated wrappers need)."""
    autograd_sources: list[GeneratedFile] = []
    if opts.derivatives_yaml is not None:
        derivatives = load_derivatives(opts.derivatives_yaml, model)
        spec, generated_autograd = _with_generated_autograd(spec, derivatives)
        if opts.output_dir is not None:
            target = AutogradTarget(
                namespace="aten",
                cpp_namespace=spec.cpp_namespace,
                key=spec.autograd_key,
                inplace_or_view=False,  # torch registers aten's own ADInplaceOrView kernels
                only=generated_autograd,
            )
            autograd_sources = autograd_files(
                model, derivatives, target, opts.shards, templates, opts.derivatives_yaml
            )
    if opts.lazy is not None and is_lazy_yaml(spec):
        if opts.functional_backend:
            raise AtengenError(
                Location(opts.backend_yaml, 1),
                "a lazy-tensor backend (full_codegen, ir_gen, non_native) cannot be a functional "
                "backend: LTC backends run below functionalization already",
            )
        lazy, files = lazy_backend_files(
            spec, model, opts.lazy, opts.shards, opts.shape_inference_file, templates
        )
        backend = lazy.backend
        sources = [f for f in files if not f.path.endswith(".h")]
        headers = [f for f in files if f.path.endswith(".h")]
        # The generated kernels count as defined; the hand-written ones must be in impl_paths.
        registered = registration_paths(backend, opts.shards)
        generated = {f"<generated {f.path}>": f.text for f in sources if f.path not in registered}
    else:
        backend = resolve_backend(spec, model, functional=opts.functional_backend, wheel=opts.wheel)
        sources = headers = None
        generated = {}
    warnings = copy_back_warnings(backend)
    if opts.impl_paths:
        kernel_sources = {p: read_text(p, "kernel source", lenient=True) for p in opts.impl_paths}
        check_kernels(backend, {**kernel_sources, **generated})
    if opts.output_dir is None:
        return [], warnings
    if sources is None:
        headers = [header_file(backend, opts.include_prefix, templates)]
        sources = registration_files(backend, opts.shards, opts.include_prefix, templates)
    header_dir = opts.header_output_dir or opts.output_dir  # merged when they are one
    return [(opts.output_dir, sources + autograd_sources), (header_dir, headers)], warnings


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
