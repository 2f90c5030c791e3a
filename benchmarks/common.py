"""Shared bits of the benchmark scripts (run as `python benchmarks/<script>.py`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def package_dir(name: str) -> Path:
    """Directory of an installed package (torch, torchgen), found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{name} is not installed in this Python ({name} is needed here)")
    return Path(spec.origin).parent
