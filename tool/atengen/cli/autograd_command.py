"""`atengen autograd`: autograd kernels for one operator namespace, from a derivatives YAML.

    atengen autograd --derivatives_yaml=F [--op_yaml=F --tags_yaml=F] [--torch_facts=F]
        [--namespace=NS [--cpp_namespace=NS] [--ops=a,b] [--shards=N] --output_dir=D]

Without --output_dir it checks the derivatives YAML against the op model and prints its counts as
one JSON line. With it, it writes the backward nodes, Autograd and ADInplaceOrView kernels of the
namespace's operators (the namespaces of the entries when --namespace is not given), sharded like
registrations. For aten, only Autograd kernels are written (torch registers ADInplaceOrView).
--ops selects as generate's does (`all`, the default, is every operator; an unknown name is an
error). Functions whose formulas call FunctionsManual.h helpers the wheel does not export are
left out, one `left out:` line per helper on stdout. Which helpers the wheel exports comes from
--torch_facts (@torch//:torch_facts.json); without it, from the installed torch's libtorch_cpu.so
and FunctionsManual.h, read directly.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.cli.common import (
    add_shards_flag,
    add_torch_facts_flag,
    add_yaml_flags,
    autograd_helpers,
    template_options,
    wheel_facts,
    yaml_inputs,
)
from atengen.errors import AtengenError

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs


def add_autograd_command(commands: Commands) -> None:
    p = commands.add_parser("autograd", help="autograd kernels from a derivatives YAML")
    add_yaml_flags(p)
    p.add_argument("--derivatives_yaml", required=True, help="The derivatives YAML.")
    p.add_argument(
        "--namespace",
        help="The operator namespace to generate for (default: every namespace with an entry).",
    )
    p.add_argument(
        "--ops",
        default="all",
        help="`all` (the default), or comma-separated op roots (add) or names (add.Tensor), "
        "each optionally `<namespace>::` qualified.",
    )
    add_shards_flag(p, default="auto")  # aten_codegen's default
    p.add_argument(
        "--cpp_namespace", help="C++ namespace of the generated code (default: --namespace)."
    )
    p.add_argument("--output_dir", help="Directory for the sources; without it, check only.")
    add_torch_facts_flag(
        p,
        "which FunctionsManual.h helpers the wheel exports (default: read from the installed "
        "torch's libtorch_cpu.so and FunctionsManual.h).",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> Outputs:
    from atengen.pipelines.autograd import AutogradOptions, autograd_outputs

    if args.cpp_namespace and not args.namespace:
        raise AtengenError(None, "autograd --cpp_namespace needs --namespace")
    helpers = autograd_helpers(
        wheel_facts(args.torch_facts, args.torch_version_py), args.torch_facts
    )
    return autograd_outputs(
        AutogradOptions(
            inputs=yaml_inputs(args),
            derivatives_yaml=args.derivatives_yaml,
            namespace=args.namespace,
            cpp_namespace=args.cpp_namespace,
            output_dir=args.output_dir,
            ops=(
                None
                if args.ops.strip() == "all"
                else frozenset(x.strip() for x in args.ops.split(",") if x.strip())
            ),
            shards=args.shards,
            helpers=helpers,
            templates=template_options(),
        )
    )
