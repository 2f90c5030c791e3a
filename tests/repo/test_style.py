"""Style gates: buildifier over the Starlark, ruff over the Python."""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILDIFIER = REPO / "node_modules" / ".bin" / "buildifier"
RUFF = REPO / ".venv" / "bin" / "ruff"
PYTHON_DIRS = ("tool", "devtools", "tests", "benchmarks", "conformance", "rules")
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


# A line that starts a BUILD file's or a .bzl file's call or definition (`load(`, `cc_library(`,
# `def `), a Python import, a shebang or a C preprocessor line: what a string holds when it is a
# file of its own.
FILE_TEXT_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\(|def |import |from \S+ import |#!|#(?:pragma|define|include) )"
)


def _documentation(tree: ast.AST) -> set[int]:
    """The ids of docstrings and `doc =` texts, which may quote such lines as examples."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
        elif isinstance(node, ast.keyword) and node.arg == "doc":
            docs.add(id(node.value))
    return docs


def _strings_holding_files(path: str) -> list[str]:
    """`path:line` of each multi-line string literal of a .bzl file that holds a file's text."""
    tree = ast.parse((REPO / path).read_text(), path)
    docs = _documentation(tree)
    found = []
    for node in ast.walk(tree):
        if (
            not isinstance(node, ast.Constant)
            or not isinstance(node.value, str)
            or id(node) in docs
        ):
            continue
        lines = node.value.strip("\n").split("\n")
        if len(lines) > 1 and any(FILE_TEXT_LINE.match(line) for line in lines):
            found.append(f"{path}:{node.lineno}")
    return found


def test_no_file_in_a_starlark_string() -> None:
    """The rules write BUILD files and run programs that are files of their own.

    A repository rule reads them through a Label of rules/private/templates/ or
    rules/private/programs/, where they read as what they are, ruff and mypy check the programs,
    and buildifier's formatting of Starlark leaves them alone.
    """
    bzl = [p for p in _repo_files() if p.startswith("rules/") and p.endswith(".bzl")]
    assert "rules/private/repositories/torch.bzl" in bzl, bzl
    found = [hit for p in bzl for hit in _strings_holding_files(p)]
    assert found == [], (
        "a .bzl string holds a BUILD file or a program; make it a file under "
        "rules/private/templates/ or rules/private/programs/: " + ", ".join(found)
    )


def test_programs_under_rules_are_type_checked() -> None:
    """The Python programs the repository rules run are in mypy.ini's `files` (test_typecheck)."""
    parser = configparser.ConfigParser()
    parser.read(REPO / "mypy.ini")
    roots = [f.strip() for f in parser["mypy"]["files"].split(",")]
    programs = [p for p in _repo_files() if p.startswith("rules/") and p.endswith(".py")]
    assert "rules/private/programs/copy_python_runtime.py" in programs, programs
    unchecked = [p for p in programs if not any(p.startswith(r + "/") for r in roots)]
    assert unchecked == [], f"add them to mypy.ini's files: {unchecked}"
