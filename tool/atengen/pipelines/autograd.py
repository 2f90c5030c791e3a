"""``autograd``: autograd kernels for operator namespaces, from a derivatives YAML.

Without an output directory it checks the derivatives YAML against the op model and reports its
counts as one JSON line. With one, it writes the backward nodes, Autograd and ADInplaceOrView
kernels of the namespace's operators (the namespaces of the entries when none is given), sharded
like registrations. For aten, only Autograd kernels are written (torch registers ADInplaceOrView).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from atengen.autograd.emit import AutogradTarget, autograd_files
from atengen.autograd.load import load_derivatives
from atengen.pipelines.inputs import YamlInputs
from atengen.render.output import GeneratedFile, Outputs
from atengen.render.shards import ShardSetting
from atengen.render.templates import TemplateOptions, Templates


@dataclass(frozen=True)
class AutogradOptions:
    inputs: YamlInputs
    derivatives_yaml: str
    namespace: str | None
    cpp_namespace: str | None  # default: the operator namespace
    output_dir: str | None  # None: check only
    ops: frozenset[str] | None  # op roots or overload names; None: every entry's
    shards: ShardSetting
    templates: TemplateOptions = TemplateOptions()


def autograd_outputs(opts: AutogradOptions) -> Outputs:
    model = opts.inputs.load()
    derivatives = load_derivatives(opts.derivatives_yaml, model)
    if opts.output_dir is None:
        return Outputs(report=json.dumps(derivatives.counts(), sort_keys=True) + "\n")
    namespaces = [opts.namespace] if opts.namespace else sorted({ns for ns, _ in derivatives.infos})
    templates = Templates(opts.templates)
    files: list[GeneratedFile] = []
    for ns in namespaces:
        only = None
        if opts.ops is not None:
            only = frozenset(
                str(fd.func.name)
                for fd in derivatives.functions
                if str(fd.func.name) in opts.ops or fd.func.name.name.base in opts.ops
            )
        target = AutogradTarget(
            namespace=ns,
            cpp_namespace=opts.cpp_namespace or ns,
            inplace_or_view=ns != "aten",
            only=only,
        )
        files += autograd_files(
            model, derivatives, target, opts.shards, templates, opts.derivatives_yaml
        )
    return Outputs.of_trees([(opts.output_dir, files)])
