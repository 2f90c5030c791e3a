"""What the conformance scripts share: loading a generated library quietly, and appending a
dated entry to conformance/RESULTS.md."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "conformance" / "RESULTS.md"


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


def append_result(title: str, command: str, body: list[str]) -> None:
    """Appends `## <title>, <UTC time>` with the command, commit and machine, then body."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from common import cpu_model  # the benchmarks' helper, so both results files agree

    with RESULTS.open("a") as f:
        f.write(
            f"\n## {title}, {stamp}\n\n- Command: `{command}`\n"
            f"- Commit: {commit}; machine: {cpu_model()}, {os.cpu_count()} cores\n\n"
            + "\n".join(body)
            + "\n"
        )
