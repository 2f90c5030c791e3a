"""`atengen autograd`: autograd kernels for one operator namespace, from a derivatives YAML.

    atengen autograd --derivatives_yaml=F [--op_yaml=F --tags_yaml=F]
        [--namespace=NS [--cpp_namespace=NS] [--ops=a,b] [--shards=N] --output_dir=D]

Without --output_dir it checks the derivatives YAML against the op model and prints its counts as
one JSON line. With it, it writes the backward nodes, Autograd and ADInplaceOrView kernels of the
namespace's operators (the namespaces of the entries when --namespace is not given), sharded like
registrations. For aten, only Autograd kernels are written (torch registers ADInplaceOrView).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from atengen.cli.common import YamlInputs, add_shards_flag, add_yaml_flags, yaml_inputs
from atengen.errors import AtengenError


@dataclass(frozen=True)
class AutogradOptions:
    inputs: YamlInputs
    derivatives_yaml: str
    namespace: str | None
    cpp_namespace: str | None  # default: the operator namespace
    output_dir: str | None  # None: check only
    ops: frozenset[str] | None  # op roots or overload names; None: every entry's
    shards: int | str  # a bucket count, or "auto" (atengen.render.shards.Sharding.of)


def add_autograd_command(commands) -> None:
    p = commands.add_parser("autograd", help="autograd kernels from a derivatives YAML")
    add_yaml_flags(p)
    p.add_argument("--derivatives_yaml", required=True, help="The derivatives YAML.")
    p.add_argument(
        "--namespace",
        help="The operator namespace to generate for (default: every namespace with an entry).",
    )
    p.add_argument("--ops", help="Comma-separated op roots or overload names (default: all).")
    add_shards_flag(p, allow_auto=True)
    p.add_argument(
        "--cpp_namespace", help="C++ namespace of the generated code (default: --namespace)."
    )
    p.add_argument("--output_dir", help="Directory for the sources; without it, check only.")
    p.set_defaults(run=lambda args: run_autograd(autograd_options(args)))


def autograd_options(args: argparse.Namespace) -> AutogradOptions:
    if args.cpp_namespace and not args.namespace:
        raise AtengenError(None, "autograd --cpp_namespace needs --namespace")
    return AutogradOptions(
        inputs=yaml_inputs(args),
        derivatives_yaml=args.derivatives_yaml,
        namespace=args.namespace,
        cpp_namespace=args.cpp_namespace,
        output_dir=args.output_dir,
        ops=frozenset(x.strip() for x in args.ops.split(",") if x.strip()) if args.ops else None,
        shards=args.shards,
    )


def run_autograd(opts: AutogradOptions) -> None:
    # Imported here, not at the top: see atengen.cli.main.
    from atengen.autograd.emit import AutogradTarget, autograd_files
    from atengen.autograd.load import load_derivatives
    from atengen.model.operator_model import load_model
    from atengen.render.output import write_trees
    from atengen.render.shards import Sharding

    model = load_model(opts.inputs.op_yaml, opts.inputs.tags_yaml)
    derivatives = load_derivatives(opts.derivatives_yaml, model)
    if opts.output_dir is None:
        print(json.dumps(derivatives.counts(), sort_keys=True))
        return
    namespaces = [opts.namespace] if opts.namespace else sorted({ns for ns, _ in derivatives.infos})
    files = []
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
            model, derivatives, target, Sharding.of(opts.shards), opts.derivatives_yaml
        )
    write_trees([(opts.output_dir, files)])
