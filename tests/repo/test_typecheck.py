"""Type gate: mypy --strict over the generator (tool/; what and how in mypy.ini)."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MYPY = REPO / ".venv" / "bin" / "mypy"
# mypy's incremental cache, outside the checkout (nothing to ignore or to clean): one per
# checkout, so that worktrees of other branches do not take turns rewriting it. From it a run
# takes about a second; from nothing, about 6 s on 2 busy cores.
CACHE_DIR = (
    Path(tempfile.gettempdir())
    / f"rules_aten_mypy_cache_{hashlib.sha256(str(REPO).encode()).hexdigest()[:12]}"
)


def test_mypy_strict_passes_on_tool() -> None:
    if not MYPY.exists():
        pytest.fail(f"{MYPY.relative_to(REPO)} missing; run ./dev setup")
    result = subprocess.run(
        [str(MYPY), "--cache-dir", str(CACHE_DIR)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, (
        "mypy --strict failed (settings in mypy.ini):\n" + result.stdout + result.stderr
    )
