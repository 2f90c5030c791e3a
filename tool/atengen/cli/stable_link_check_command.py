"""`atengen stable-link-check`: the link check of aten_codegen(abi = "stable")
(rules/private/rules/stable.bzl).

    atengen stable-link-check --label=LABEL --linked=LIBRARY --output=FILE [--kernel_headers=DIR]...

Reads the undefined dynamic symbols of LIBRARY and, when none is outside torch's C shim and the
C/C++/CUDA runtimes and no kernel the generated headers under a DIR declare is missing
(atengen/linkcheck/stable.py), copies it to FILE; else prints one line per problem and exits 1,
so that lib<name>.so is never built.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import TYPE_CHECKING

from atengen.cli.parser import add_link_step_parser

if TYPE_CHECKING:
    from atengen.cli.parser import Commands


def add_stable_link_check_command(commands: Commands) -> None:
    p = add_link_step_parser(
        commands,
        "stable-link-check",
        help="the link check of a stable-ABI library, then its copy",
        output_help="Where the checked library is copied.",
    )
    p.set_defaults(run=_stable_link_check)


def _stable_link_check(args: argparse.Namespace) -> int:
    # Here, not at start-up: every other command's action would pay for the ELF reader.
    from atengen.linkcheck.stable import stable_link_problems

    try:
        lines = stable_link_problems(args.label, args.linked, args.kernel_headers)
    except ValueError as e:
        print(f"rules_aten: {args.label}: {e}", file=sys.stderr)
        return 1
    if lines:
        print("\n".join(lines), file=sys.stderr)
        return 1
    shutil.copyfile(args.linked, args.output)
    return 0
