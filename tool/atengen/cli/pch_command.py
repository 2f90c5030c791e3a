"""`atengen kernel-pch-header`: the header precompiled for a library's kernel sources.

    atengen kernel-pch-header --output=FILE SOURCE...

It holds the torch and standard headers that every SOURCE starts with
(atengen/render/leading_includes.py); rules/private/rules/pch.bzl precompiles it (kind `kernels`). Its
bytes change only when those includes do, so an edit of a kernel's body does not rebuild it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.errors import AtengenError

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs


def add_kernel_pch_header_command(commands: Commands) -> None:
    p = commands.add_parser(
        "kernel-pch-header", help="the header precompiled for a library's kernel sources"
    )
    p.add_argument("--output", required=True, help="The header to write.")
    p.add_argument("sources", nargs="*", metavar="SOURCE", help="The kernel sources.")
    p.set_defaults(run=_kernel_pch_header)


def _kernel_pch_header(args: argparse.Namespace) -> Outputs:
    from atengen.render.leading_includes import precompiled_header_text
    from atengen.render.output import Outputs

    texts = []
    for path in args.sources:
        try:
            with open(path, "rb") as f:
                # A source in another encoding still has ASCII includes.
                texts.append(f.read().decode("utf-8", errors="replace"))
        except OSError as e:
            raise AtengenError(None, f"{path}: cannot read: {e.strerror}") from None
    return Outputs(stamps=((args.output, precompiled_header_text(texts)),))
