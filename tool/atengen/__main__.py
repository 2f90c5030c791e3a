"""Entry point: ``python -m atengen <command> [--flags]`` and ``bazel run //tool:atengen``."""

from atengen.cli.main import run

if __name__ == "__main__":
    run()
