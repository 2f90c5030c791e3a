"""Entry point: ``python -m atengen <command> [--flags]`` and ``bazel run //tool:atengen``."""

import gc

# Importing the CLI, its generators and their dependencies creates tens of thousands of objects
# that live until exit; the cyclic collector would walk them again and again (~6% of a small
# backend run). So it is off while they are imported, and they are then moved out of its reach.
gc.disable()
from atengen.cli.main import run  # noqa: E402

gc.freeze()
gc.enable()

if __name__ == "__main__":
    run()
