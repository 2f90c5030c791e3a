"""What the conformance scripts share: running under another venv's interpreter (`--python`),
loading a generated library quietly, and appending a dated entry to conformance/RESULTS.md."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "conformance" / "RESULTS.md"
sys.path.insert(0, str(REPO / "benchmarks"))
# The benchmarks' helpers, so that both results files agree (interpreter: for the scripts).
from common import cpu_model, interpreter, wheel_facts_file  # noqa: E402, F401


def add_python_option(parser) -> None:
    """`--python PATH`: run the script under that interpreter, so against its torch (the CUDA
    venv's: `~/.cache/rules_aten/venv-torch-cu130/bin/python`)."""
    parser.add_argument(
        "--python",
        help="the interpreter to run under, and so the torch to check (default: this one)",
    )


def run_under(python: str | None) -> None:
    """Re-executes the running script with ``python`` and the same arguments, less --python.
    Returns when there is no other interpreter to run under."""
    if not python:
        return
    if not os.access(python, os.X_OK):
        sys.exit(f"--python: {python} is not an executable interpreter")
    argv, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            argv.append(arg)
    sys.stdout.flush()
    os.execv(python, [python, sys.argv[0], *argv])


def load_library_quietly(path: str) -> None:
    """torch.ops.load_library, with file descriptor 2 sent to /dev/null meanwhile: loading over
    torch's own kernels makes the C++ side print "Overriding a previously registered kernel",
    which bypasses sys.stderr."""
    import torch

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            torch.ops.load_library(path)
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def append_result(title: str, command: str, body: list[str], torch_version: str = "") -> None:
    """Appends `## <title>, <UTC time>` with the command, commit, machine and torch (the running
    one, or `torch_version`), then body."""
    if not torch_version:
        import torch

        torch_version = torch.__version__

    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    with RESULTS.open("a") as f:
        f.write(
            f"\n## {title}, {stamp}\n\n- Command: `{command}`\n"
            f"- Commit: {commit}; machine: {cpu_model()}, {os.cpu_count()} cores; "
            f"torch {torch_version}\n\n" + "\n".join(body) + "\n"
        )
