"""`check` (counts) and `dump` (one JSON line per function): the operator model of an op YAML."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atengen.cli.common import add_yaml_flags, yaml_inputs

if TYPE_CHECKING:
    from atengen.cli.parser import Commands
    from atengen.render.output import Outputs


def add_check_command(commands: Commands) -> None:
    p = commands.add_parser("check", help="validate an op YAML and print counts")
    add_yaml_flags(p)
    p.set_defaults(run=_check)


def add_dump_command(commands: Commands) -> None:
    p = commands.add_parser("dump", help="one JSON line per NativeFunction after autogen")
    add_yaml_flags(p)
    p.set_defaults(run=_dump)


def _check(args: argparse.Namespace) -> Outputs:
    from atengen.pipelines.model_report import check

    return check(yaml_inputs(args))


def _dump(args: argparse.Namespace) -> Outputs:
    from atengen.pipelines.model_report import dump

    return dump(yaml_inputs(args))
