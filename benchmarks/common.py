"""Shared bits of the benchmark scripts (run as `python benchmarks/<script>.py`)."""

from __future__ import annotations

import datetime
import importlib.util
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def package_dir(name: str) -> Path:
    """Directory of an installed package (torch, torchgen), found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{name} is not installed in this Python ({name} is needed here)")
    return Path(spec.origin).parent


# The g++ line both sides of the compile benchmarks use.
COMPILE_NOTE = "g++ -std=c++20 -fPIC (no -O), both sides against torchgen's regenerated headers"


def append_results(title: str, script: str, table: list[str], note: str = COMPILE_NOTE) -> None:
    """Appends a dated section with the command line and a Markdown table to RESULTS.md."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = " ".join(sys.argv[1:])
    with open(RESULTS, "a") as f:
        f.write(
            f"\n### {title}, {stamp}\n\n- Command: `.venv/bin/python benchmarks/{script} {cmd}`\n"
            f"- Machine: nproc={os.cpu_count()}; {note}\n\n" + "\n".join(table) + "\n"
        )


def report_table(
    rows: list[str], failed: tuple[list[str], list[str]], title: str, script: str, write: bool
) -> None:
    """Prints the torchgen-vs-atengen table (plus failed compiles), and appends it when `write`."""
    if failed[0] or failed[1]:
        rows = [*rows, f"| failed compiles | {failed[0]} | {failed[1]} | |"]
    table = ["| measurement | torchgen | atengen | ratio |", "|---|---|---|---|", *rows]
    print("\n".join(table))
    if write:
        append_results(title, script, table)
