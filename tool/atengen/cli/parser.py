"""The parser of the command line and of each command's flags, apart from the flags the
commands share (common.py), so that a command importing no pipeline (the link steps) does not
import what those flags need (the sharding, and through it the model)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn

from absl.flags import argparse_flags

if TYPE_CHECKING:
    from typing import TypeAlias


class UsageError(Exception):
    """A bad command line; argparse would otherwise print a multi-line usage and exit."""


class Parser(argparse_flags.ArgumentParser):
    """The parser of the command line and of each command's flags: argparse_flags would
    otherwise copy absl's process-wide flags (logging, pdb, profiling) into every one."""

    def __init__(self, **kwargs: object) -> None:
        # absl leaves its ArgumentParser.__init__ unannotated.
        super().__init__(inherited_absl_flags=None, **kwargs)  # type: ignore[no-untyped-call]

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message} (see `{self.prog} --help`)")


def add_link_step_parser(commands: Commands, name: str, help: str, output_help: str) -> Parser:
    """The parser of a step after the linker (`stable-link-check`, `bound-link`) with the flags
    both take. No abbreviated flags: a mistyped one is refused, as the rules never abbreviate."""
    p = commands.add_parser(name, help=help, allow_abbrev=False)
    p.add_argument("--label", required=True, help="The library's label, for messages.")
    p.add_argument("--linked", required=True, help="The library the linker wrote.")
    p.add_argument("--output", required=True, help=output_help)
    p.add_argument(
        "--kernel_headers", action="append", default=[], help="A generated header directory."
    )
    return p


if TYPE_CHECKING:
    # What each command module adds its command to (argparse names no public type for it).
    Commands: TypeAlias = argparse._SubParsersAction[Parser]
