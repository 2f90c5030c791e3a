"""Entry point: ``python -m atengen <command> [--flags]`` and ``bazel run //tool:atengen``."""

import gc

# Importing the CLI, its generators and their dependencies creates tens of thousands of objects
# that live until exit; the cyclic collector would walk them again and again (~6% of a small
# backend run). So it is off while they are imported, and they are then moved out of its reach.
gc.disable()
import sys  # noqa: E402

from atengen.cli.main import command_of, import_commands, run  # noqa: E402

# The command's module too (what its flags need: for the generator's commands, the model).
import_commands(command_of(sys.argv))
gc.freeze()
gc.enable()

if __name__ == "__main__":
    run()
