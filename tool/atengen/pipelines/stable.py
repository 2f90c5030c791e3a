"""``stable``: sources that use only the LibTorch stable ABI, for one target release on.

From the selected operators of an op YAML: a custom namespace's schema and per-key registration
sources and kernel headers (``output_dir``, ``header_output_dir``: stable/registrations.py), and
the ``atengen::stable`` call API of its aten operators (``call_api_dir``: stable/call_api.py),
with its coverage on stdout and, with ``report_path``, in full in that file; and the library's
Python module (``python_module``: pymodule/emit.py), its autograd formulas from the derivatives
YAML and its fake kernels, with one line on stdout naming the operators left without one."""

from __future__ import annotations

from dataclasses import dataclass

from atengen.errors import AtengenError
from atengen.model import custom_notes
from atengen.model.selection import select_functions
from atengen.pipelines.inputs import YamlInputs
from atengen.pymodule.emit import aten_names, python_module
from atengen.render.output import GeneratedFile, Outputs
from atengen.render.shards import ShardSetting
from atengen.render.templates import TemplateOptions, Templates
from atengen.stable import registrations
from atengen.stable.call_api import call_api
from atengen.stable.releases import StableTarget


@dataclass(frozen=True)
class StableOptions:
    inputs: YamlInputs
    ops: str  # `all`, or comma-separated op roots or names
    target: StableTarget
    shards: ShardSetting
    output_dir: str | None  # registration sources of custom namespaces
    header_output_dir: str | None  # their <ns>/ops/<root>_native.h
    call_api_dir: str | None  # atengen/stable/ops/<root>.h of the aten operators
    report_path: str | None = None  # the call API's coverage, in full
    # The CUDA keys' registration sources, apart; None: they go to output_dir with the others.
    cuda_output_dir: str | None = None
    templates: TemplateOptions = TemplateOptions()
    # The Python module (autograd, fake kernels), and the YAML it derives the formulas from:
    # the derivatives YAML, and torch's op YAML, which tells how Python reaches aten's operators.
    python_module: str | None = None
    derivatives_yaml: str | None = None
    aten_inputs: YamlInputs | None = None


def stable_outputs(opts: StableOptions) -> Outputs:
    if opts.output_dir is None and opts.call_api_dir is None and opts.python_module is None:
        raise AtengenError(None, "stable needs --output_dir, --call_api_dir or --python_module")
    if opts.derivatives_yaml is not None and opts.python_module is None:
        raise AtengenError(
            None, "--derivatives_yaml is turned into Python: it needs --python_module"
        )
    if opts.derivatives_yaml is not None and opts.aten_inputs is None:
        raise AtengenError(
            None, "--derivatives_yaml needs --aten_op_yaml (torch's native_functions.yaml)"
        )
    if opts.report_path is not None and opts.call_api_dir is None:
        raise AtengenError(None, "--report is the call API's coverage: it needs --call_api_dir")
    if opts.cuda_output_dir is not None and opts.output_dir is None:
        raise AtengenError(None, "--cuda_output_dir holds registrations: it needs --output_dir")
    model = opts.inputs.load()
    functions = select_functions(model, opts.ops)
    templates = Templates(opts.templates)
    warnings = [opts.target.warning] if opts.target.warning else []
    trees: list[tuple[str, list[GeneratedFile]]] = []
    if opts.output_dir is not None:
        custom = registrations.custom_functions(functions)
        warnings += registrations.check_stable(custom, opts.target)
        warnings += custom_notes.random_looking_warnings(custom)
        headers = registrations.native_headers(custom, opts.target, templates)
        if headers and opts.header_output_dir is None:
            raise AtengenError(
                None, "custom-namespace ops need --header_output_dir for their headers"
            )
        files = registrations.schema_files(custom, opts.shards, templates)
        files += registrations.registration_files(custom, opts.target, opts.shards, templates)
        if opts.cuda_output_dir is None:
            trees.append((opts.output_dir, files))
        else:
            trees.append((opts.output_dir, [f for f in files if not f.cuda]))
            trees.append((opts.cuda_output_dir, [f for f in files if f.cuda]))
        if opts.header_output_dir is not None:
            trees.append((opts.header_output_dir, headers))
    report = ""
    stamps: tuple[tuple[str, str], ...] = ()
    if opts.call_api_dir is not None:
        api = call_api(functions, opts.target, templates)
        trees.append((opts.call_api_dir, list(api.files)))
        report = api.summary()
        if opts.report_path is not None:
            stamps = ((opts.report_path, api.report(opts.target)),)
    if opts.python_module is not None:
        aten = opts.aten_inputs
        module = python_module(
            model,
            registrations.custom_functions(functions),
            opts.derivatives_yaml,
            lambda: aten_names(aten.load()) if aten is not None else aten_names(model),
            templates,
        )
        stamps += ((opts.python_module, module.text),)
        warnings += module.warnings
    return Outputs.of_trees(trees, stamps=stamps, warnings=tuple(warnings), report=report)
