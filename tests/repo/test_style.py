"""Style gates: buildifier over the Starlark, ruff over the Python."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILDIFIER = REPO / "node_modules" / ".bin" / "buildifier"
RUFF = REPO / ".venv" / "bin" / "ruff"
PYTHON_DIRS = ("tool", "tests", "benchmarks", "conformance")
STARLARK = re.compile(
    r"(^|/)(BUILD|BUILD\.bazel|WORKSPACE|WORKSPACE\.bazel|MODULE\.bazel)$|\.(bzl|bazel)$"
)


def _repo_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files: never .venv, node_modules or bazel-*."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sorted(p for p in out.split("\0") if p and (REPO / p).is_file())


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def test_starlark_is_buildifier_clean() -> None:
    if not BUILDIFIER.exists():
        pytest.fail(f"{BUILDIFIER.relative_to(REPO)} missing; run ./dev setup")
    files = [p for p in _repo_files() if STARLARK.search(p)]
    assert "WORKSPACE" in files and "BUILD.bazel" in files, files
    result = _run([str(BUILDIFIER), "--mode=check", "--lint=warn", *files])
    assert result.returncode == 0, (
        "buildifier found problems (fix with ./dev fmt):\n" + result.stdout + result.stderr
    )


def _python_dirs() -> list[str]:
    return [d for d in PYTHON_DIRS if (REPO / d).is_dir()]


def test_ruff_check() -> None:
    result = _run([str(RUFF), "check", "--no-cache", *_python_dirs()])
    assert result.returncode == 0, "ruff check failed:\n" + result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run([str(RUFF), "format", "--check", "--no-cache", *_python_dirs()])
    assert result.returncode == 0, (
        "ruff format --check failed (fix with ./dev fmt):\n" + result.stdout + result.stderr
    )


MAX_MODULE_LINES = 800
SOURCE = re.compile(r"\.(py|bzl|j2|sh)$|(^|/)dev$")


def test_no_module_is_over_800_lines() -> None:
    """Python, Starlark, templates and scripts: a longer module is split along a seam."""
    sources = [p for p in _repo_files() if SOURCE.search(p) or STARLARK.search(p)]
    assert "tool/atengen/model/schema.py" in sources
    long = {
        p: n
        for p in sources
        if (n := len((REPO / p).read_text(errors="replace").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, long
