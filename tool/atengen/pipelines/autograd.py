"""``autograd``: autograd kernels for operator namespaces, from a derivatives YAML.

Without an output directory it checks the derivatives YAML against the op model and reports its
counts as one JSON line. With one, it writes the backward nodes, Autograd and ADInplaceOrView
kernels of the namespace's operators (the namespaces of the entries when none is given), sharded
like registrations. For aten, only Autograd kernels are written (torch registers ADInplaceOrView).
A function whose formulas use a FunctionsManual.h helper the wheel does not export is left out,
with one `left out:` line per helper in the report, as generate leaves out kernels the wheel does
not export.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from atengen.autograd.emit import AutogradTarget, LeftOut, autograd_files
from atengen.autograd.load import load_derivatives
from atengen.errors import AtengenError, did_you_mean
from atengen.facts.wheel_facts import AutogradHelpers
from atengen.model.native_function import root_name
from atengen.model.operator_model import OperatorModel
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
    # Op roots or overload names, `<namespace>::` before one limiting it to that namespace;
    # None: every entry's.
    ops: frozenset[str] | None
    shards: ShardSetting
    # The FunctionsManual.h helpers the wheel lets formulas call, and those it does not export.
    helpers: AutogradHelpers
    templates: TemplateOptions = TemplateOptions()


def autograd_outputs(opts: AutogradOptions) -> Outputs:
    model = opts.inputs.load()
    derivatives = load_derivatives(opts.derivatives_yaml, model, opts.helpers)
    namespaces = [opts.namespace] if opts.namespace else sorted({ns for ns, _ in derivatives.infos})
    selected = _selection(model, namespaces, opts.ops)
    if opts.output_dir is None:
        return Outputs(report=json.dumps(derivatives.counts(), sort_keys=True) + "\n")
    templates = Templates(opts.templates)
    # Like generate's registrations of kernels the wheel does not export: the rest is written,
    # and one line per helper says what was left out for it.
    left_out = LeftOut()
    files: list[GeneratedFile] = []
    for ns in namespaces:
        target = AutogradTarget(
            namespace=ns,
            cpp_namespace=opts.cpp_namespace or ns,
            inplace_or_view=ns != "aten",
            only=None if selected is None else selected[ns],
        )
        files += autograd_files(
            model, derivatives, target, opts.shards, templates, opts.derivatives_yaml, left_out
        )
    report = "".join(line + "\n" for line in left_out.lines())
    return Outputs.of_trees([(opts.output_dir, files)], report=report)


def _selection(
    model: OperatorModel, namespaces: list[str], ops: frozenset[str] | None
) -> dict[str, frozenset[str]] | None:
    """Per namespace, the overload names `ops` selects there, as generate's --ops selects: a
    root (`add`) every variant and overload of it, a name (`add_.Tensor`) one; `ns::` before
    either, only in ns. None: every function. An operator the op YAML does not have in those
    namespaces is an error naming the closest one it has."""
    if ops is None:
        return None
    if not ops:
        raise AtengenError(None, "the op selection is empty")
    known: dict[str, dict[str, set[str]]] = {ns: {} for ns in namespaces}
    for f in model.functions:
        if f.namespace in known:
            for key in (str(f.name), root_name(f)):
                known[f.namespace].setdefault(key, set()).add(str(f.name))
    chosen: dict[str, set[str]] = {ns: set() for ns in namespaces}
    for item in sorted(ops):
        ns, _, name = item.rpartition("::")
        if ns and ns not in known:
            raise AtengenError(
                None,
                f"operator '{item}' in the op selection is not in the namespaces autograd "
                f"generates for ({', '.join(namespaces)})",
            )
        where = [ns] if ns else namespaces
        hits = [(n, known[n][name]) for n in where if name in known[n]]
        if not hits:
            names = [f"{n}::{k}" if ns else k for n in where for k in known[n]]
            raise AtengenError(
                None, f"unknown operator '{item}' in the op selection{did_you_mean(item, names)}"
            )
        for n, overloads in hits:
            chosen[n] |= overloads
    return {ns: frozenset(overloads) for ns, overloads in chosen.items()}
