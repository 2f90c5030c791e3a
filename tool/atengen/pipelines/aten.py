"""``generate``: the per-dispatch-key registration sources of an op YAML's selected operators,
sharded by operator, with custom namespaces' schemas and kernel headers."""

from __future__ import annotations

from dataclasses import dataclass, replace

from atengen.aten.custom_ops import (
    check_supported,
    defines_with_tags,
    native_headers,
    schema_files,
)
from atengen.aten.kernel_signatures import is_signature_file
from atengen.aten.registration import registration_files
from atengen.errors import AtengenError
from atengen.facts import torch_facts, wheel_facts
from atengen.model import custom_notes
from atengen.model.selection import select_functions
from atengen.pipelines.inputs import YamlInputs
from atengen.render.output import GeneratedFile, Outputs
from atengen.render.parallel import auto_jobs
from atengen.render.shards import ShardSetting
from atengen.render.templates import TemplateOptions, Templates

# Below this many selected functions, forking a worker costs about what it saves.
PARALLEL_MIN_FUNCTIONS = 500


@dataclass(frozen=True)
class AtenOptions:
    inputs: YamlInputs
    ops: str  # `all`, or comma-separated op roots or names
    keys: tuple[str, ...] | None  # None: every servable key some selected op has a kernel for
    shards: ShardSetting
    functionalize: bool
    output_dir: str
    cuda_output_dir: str | None  # None: no CUDA keys
    header_output_dir: str | None
    # The kernel-signature sources apart from the other CPU-side ones (None: with them), so that
    # the rules compile them first: the costliest sources of a small library.
    signatures_output_dir: str | None = None
    jobs: int | None = None  # processes; None: automatic (render/parallel.py)
    templates: TemplateOptions = TemplateOptions()
    # What @torch read from the installed wheel (--torch_facts); None: torch_facts' fallback.
    wheel: wheel_facts.WheelFacts | None = None


def aten_outputs(opts: AtenOptions) -> Outputs:
    model = opts.inputs.load()
    functions = select_functions(model, opts.ops)
    if opts.keys is None:
        # Every servable key: registration_files writes files only for the keys the selection
        # has kernels for.
        keys = [
            k
            for k in torch_facts.SERVABLE_KEYS
            if opts.functionalize or k != torch_facts.FUNCTIONALIZE_KEY
        ]
    else:
        keys = list(opts.keys)
    if opts.cuda_output_dir is None:
        keys = [k for k in keys if k not in torch_facts.CUDA_KEYS]
    check_supported(functions, opts.wheel)
    jobs = opts.jobs
    if jobs is None:
        jobs = auto_jobs() if len(functions) >= PARALLEL_MIN_FUNCTIONS else 1
    templates = Templates(opts.templates)
    left_out: list[str] = []
    c10_tags = wheel_facts.c10_tags(opts.wheel)
    schemas = schema_files(functions, opts.shards, templates, c10_tags)
    files = registration_files(
        model,
        functions,
        keys,
        opts.shards,
        templates,
        jobs,
        opts.wheel,
        left_out,
        bool(schemas),
        defines_with_tags(functions, c10_tags),
    )
    files += schemas
    headers = native_headers(model, functions, templates)
    if headers and opts.header_output_dir is None:
        raise AtengenError(None, "custom-namespace ops need --header_output_dir for their headers")
    cpu = [f for f in files if not f.cuda]
    if opts.signatures_output_dir is None:
        trees: list[tuple[str, list[GeneratedFile]]] = [(opts.output_dir, cpu)]
    else:
        trees = [
            (opts.output_dir, [f for f in cpu if not is_signature_file(f)]),
            (opts.signatures_output_dir, [f for f in cpu if is_signature_file(f)]),
        ]
    if opts.cuda_output_dir is not None:
        trees.append((opts.cuda_output_dir, [f for f in files if f.cuda]))
    if opts.header_output_dir is not None:
        trees.append((opts.header_output_dir, headers))
    warnings = custom_notes.random_looking_warnings(functions)
    if torch_facts.FUNCTIONALIZE_KEY in keys:
        warnings += custom_notes.functionalization_note(model, functions)
    outputs = Outputs.of_trees(trees, warnings=tuple(warnings))
    if left_out:
        # The registrations whose kernels the wheel does not export (torch's own stay).
        outputs = replace(outputs, report="".join(line + "\n" for line in left_out))
    return outputs
