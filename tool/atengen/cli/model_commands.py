"""`check` (counts) and `dump` (one JSON line per function): the operator model of an op YAML."""

from __future__ import annotations

from atengen.cli.common import add_yaml_flags, yaml_inputs


def add_check_command(commands) -> None:
    p = commands.add_parser("check", help="validate an op YAML and print counts")
    add_yaml_flags(p)
    p.set_defaults(run=_check)


def add_dump_command(commands) -> None:
    p = commands.add_parser("dump", help="one JSON line per NativeFunction after autogen")
    add_yaml_flags(p)
    p.set_defaults(run=_dump)


def _check(args):
    from atengen.pipelines.model_report import check

    return check(yaml_inputs(args))


def _dump(args):
    from atengen.pipelines.model_report import dump

    return dump(yaml_inputs(args))
