"""``python -m atengen.autograd <command>``: the derivatives YAML on the command line.

Commands:
  check     load the op YAML and the derivatives YAML, print the counts as JSON
  generate  also write the autograd sources (backward nodes, Autograd and
            ADInplaceOrView kernels) for one operator namespace into --out_dir

Every bad input is one ``file:line: error: ...`` line on stderr, exit status 1,
and nothing written.
"""

from __future__ import annotations

import argparse
import json
import sys

from atengen.errors import AtengenError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="atengen.autograd", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=("check", "generate"))
    p.add_argument("--op_yaml", required=True, help="op YAML (native_functions.yaml format)")
    p.add_argument("--tags_yaml", required=True, help="tags YAML")
    p.add_argument("--derivatives_yaml", required=True, help="derivatives YAML")
    p.add_argument("--namespace", help="generate: the operator namespace to generate for")
    p.add_argument("--cpp_namespace", help="generate: C++ namespace of the generated code")
    p.add_argument("--out_dir", help="generate: directory for the sources")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from atengen.autograd.load import load_derivatives
    from atengen.model.operator_model import load_model

    try:
        model = load_model(args.op_yaml, args.tags_yaml)
        derivatives = load_derivatives(args.derivatives_yaml, model)
        if args.command == "check":
            print(json.dumps(derivatives.counts(), sort_keys=True))
            return 0
        if not (args.namespace and args.out_dir):
            print("error: generate needs --namespace and --out_dir", file=sys.stderr)
            return 2
        from atengen.autograd.emit import autograd_files
        from atengen.emit.output import write_trees

        files = autograd_files(
            model, derivatives, args.namespace, args.cpp_namespace or args.namespace
        )
        write_trees([(args.out_dir, files)])
        return 0
    except AtengenError as e:
        print(e.format_all(), file=sys.stderr)
        return 1
