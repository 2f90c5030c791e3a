"""``atengen <command> [--flags]``: parse the command's flags into its options, run it, and
print every error as one ``file:line: error: ...`` line.

Commands:
  check     validate an op YAML and print counts (entries, functions, groups, ...)
  dump      one JSON line per NativeFunction after autogen, sorted by name
  generate  per-dispatch-key registration sources, sharded by operator
  backend   an external backend's kernel class header and registrations
  lazy      a lazy-tensor backend's IR node classes, kernels and registrations
  autograd  autograd kernels for one operator namespace, from a derivatives YAML
  stable    stable-ABI registrations of custom namespaces, and a stable call API for aten
  compile-kernel
            compile a library's kernel source (Bazel's persistent worker)
  stable-link-check
            the link check of a stable-ABI library, then its copy
  bound-link
            the last step of an ABI-bound library: its references to torch made weak
  wheel     a library and its stubs as a wheel (aten_wheel), or a kernel hub (aten_kernel_hub)

`main(argv)` is callable in-process: it keeps no state between calls, reads no global flags,
and returns the exit code (0 success, 1 bad input, 2 bad command line).

Each command module turns its flags into its pipeline's options and calls the pipeline
(atengen.pipelines), which returns the files to write; `main` prints the pipeline's warnings and
report and writes its files, all or nothing. The link steps and `wheel` write their one output
themselves and return the exit code, having printed their `rules_aten: <label>: ...` lines.
Only the module of the command that runs is imported (`_COMMANDS`), and it imports its pipeline
inside its run function: a Bazel action that runs `atengen lazy` does not pay for importing the
autograd or aten emitters, nor a link step for the model.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from atengen.cli.parser import Parser, UsageError
from atengen.errors import AtengenError, format_warnings

if TYPE_CHECKING:
    from atengen.render.output import Outputs

# Each command: the module under atengen.cli that declares it, and the function adding it. Only
# the module of the command that runs is imported (all of them for --help or an unknown
# command): a link step's action does not pay for the flags the generator's commands share
# (common.py imports the sharding, and through it the model).
_COMMANDS = {
    "check": ("model_commands", "add_check_command"),
    "dump": ("model_commands", "add_dump_command"),
    "generate": ("generate_command", "add_generate_command"),
    "backend": ("backend_command", "add_backend_command"),
    "lazy": ("lazy_command", "add_lazy_command"),
    "autograd": ("autograd_command", "add_autograd_command"),
    "stable": ("stable_command", "add_stable_command"),
    "compile-kernel": ("kernel_compile_command", "add_kernel_compile_command"),
    "stable-link-check": ("stable_link_check_command", "add_stable_link_check_command"),
    "bound-link": ("bound_link_command", "add_bound_link_command"),
    "wheel": ("wheel_command", "add_wheel_command"),
}
COMMANDS = tuple(_COMMANDS)


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, or None (no command, an unknown one, or --help)."""
    return argv[1] if len(argv) > 1 and argv[1] in _COMMANDS else None


def import_commands(command: str | None) -> None:
    """Imports the module of ``command`` (of every command for None)."""
    for name, (module, _) in _COMMANDS.items():
        if command in (None, name):
            importlib.import_module(f"atengen.cli.{module}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone."""
    parser = Parser(prog="atengen", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(COMMANDS) + "}", parser_class=Parser
    )
    commands.required = True
    for name, (module, add) in _COMMANDS.items():
        if command in (None, name):
            getattr(importlib.import_module(f"atengen.cli.{module}"), add)(commands)
    return parser


def main(argv: Sequence[str]) -> int:
    """Runs ``atengen`` with ``argv`` (argv[0] is the program name); returns the exit code."""
    try:
        args = build_parser(command_of(argv)).parse_args(list(argv[1:]))
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    try:
        # The command's pipeline: everything checked and rendered.
        outputs: Outputs | int = args.run(args)
        if isinstance(outputs, int):
            return outputs  # a command that wrote its output and printed its errors itself
        for line in format_warnings(outputs.warnings):
            print(line, file=sys.stderr)
        sys.stdout.write(outputs.report)
        if outputs.trees or outputs.stamps:
            from atengen.cli.common import input_files

            _write(outputs, input_files(args))
    except AtengenError as e:
        print(e.format_all(), file=sys.stderr)
        return 1
    return 0


def _write(outputs: Outputs, inputs: list[tuple[str, str]]) -> None:
    from atengen.render.output import Protected, write_outputs

    # One all-or-nothing write: a stamp that cannot be written leaves no sources either. No
    # output may replace an input (a mistyped --output_dir would delete the YAML).
    write_outputs(
        [(d, list(files)) for d, files in outputs.trees],
        outputs.stamps,
        protected=[Protected(flag, path) for flag, path in inputs],
        stamp_flag="--check_stamp",
    )


def run() -> None:
    """The console entry point (``python -m atengen``, ``bazel run //tool:atengen``).

    Not wrapped in absl's ``app.run``: the commands define no process-wide absl flags and log
    nothing, and importing ``absl.app`` (pdb, absl.logging) was a tenth of a small run's time.
    """
    sys.exit(main(sys.argv))
