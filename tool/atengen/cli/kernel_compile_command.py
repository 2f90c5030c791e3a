"""`atengen compile-kernel`: compile one hand-written kernel source of a library
(rules/private/rules/kernel_objects.bzl), alone or as Bazel's persistent worker.

    atengen compile-kernel --source=SOURCE --output=OBJECT -- COMPILER ARG...
    atengen compile-kernel @PARAMS          (the same, one argument per line)
    atengen compile-kernel --persistent_worker

As a worker it keeps a precompiled header of each source's leading torch and standard includes,
made beside the first compile, not before it (atengen/kernel_compile/precompiled.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from atengen.cli.parser import Commands


def add_kernel_compile_command(commands: Commands) -> None:
    import argparse

    p = commands.add_parser(
        "compile-kernel", help="compile a library's kernel source (Bazel's persistent worker)"
    )
    p.add_argument("--persistent_worker", action="store_true", help="Answer Bazel's WorkRequests.")
    p.add_argument("arguments", nargs=argparse.REMAINDER, help="The compile, or @PARAMS.")
    p.set_defaults(run=_compile_kernel)


def _compile_kernel(args: argparse.Namespace) -> int:
    from atengen.kernel_compile.worker import compile_once, serve

    if args.persistent_worker:
        return serve(sys.stdin.buffer, sys.stdout.buffer, Path.cwd())
    arguments = list(args.arguments)
    if len(arguments) == 1 and arguments[0].startswith("@"):
        try:
            with open(arguments[0][1:], encoding="utf-8") as f:
                arguments = f.read().splitlines()
        except OSError as e:
            print(f"error: {arguments[0][1:]}: cannot read: {e.strerror}", file=sys.stderr)
            return 2
    return compile_once(tuple(arguments))
