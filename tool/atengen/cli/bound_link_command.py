"""`atengen bound-link`: the last step of an ABI-bound lib<name>.so (rules/private/macros/cc_targets.bzl,
aten_release_bound_library).

    atengen bound-link --label=LABEL --linked=LIBRARY --output=FILE --torch_library=PATH...
        [--kernel_headers=DIR]... [--shared_library=PATH]...

FILE is LIBRARY with its references to the torch libraries' symbols made weak, so that in
another torch release the release guard, not the dynamic loader, refuses it
(atengen/linkcheck/bound_link.py). A kernel the generated headers under a DIR declare that
neither torch nor a `--shared_library` (the user's deps) defines is one `header:line: error:`
line, exit 1, and nothing written.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from atengen.cli.parser import add_link_step_parser

if TYPE_CHECKING:
    from atengen.cli.parser import Commands


def add_bound_link_command(commands: Commands) -> None:
    p = add_link_step_parser(
        commands,
        "bound-link",
        help="the last step of an ABI-bound library: its references to torch weak",
        output_help="The library to write.",
    )
    p.add_argument(
        "--torch_library", action="append", required=True, help="A library of torch's (repeated)."
    )
    p.add_argument(
        "--shared_library", action="append", default=[], help="A shared library of the deps."
    )
    p.set_defaults(run=_bound_link)


def _bound_link(args: argparse.Namespace) -> int:
    # Here, not at start-up: every other command's action would pay for the ELF reader.
    from atengen.linkcheck.bound_link import bound_link

    try:
        result = bound_link(
            args.label, args.linked, args.torch_library, args.kernel_headers, args.shared_library
        )
    except ValueError as e:
        print(f"rules_aten: {args.label}: {e}", file=sys.stderr)
        return 1
    if result.problems:
        print("\n".join(result.problems), file=sys.stderr)
        return 1
    with open(args.output, "wb") as f:
        f.write(result.library)
    return 0
