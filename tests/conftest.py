"""Shared pytest fixtures for the repository's tests (kept deliberately small)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tool"

# Make ``tests.oracle`` importable however pytest is started.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

_SUMMARY_KEY = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def summary(pytestconfig: pytest.Config) -> list[str]:
    """Lines appended here are printed in pytest's terminal summary (even without -s)."""
    return pytestconfig.stash.setdefault(_SUMMARY_KEY, [])


@pytest.fixture(scope="session")
def aten_generated(summary: list[str]):
    """//:aten_generated and //:libaten_generated.so, built once per session."""
    from tests.bazel_helpers import build_aten_generated

    return build_aten_generated(summary)


@pytest.fixture(scope="session")
def custom_op_libraries(summary: list[str]) -> dict[str, Path]:
    """The custom-namespace libraries of tests/data (fzops, structured_ops), built in one Bazel
    invocation so that their compiles share the two cores; name -> the .so to load."""
    import time

    from tests.bazel_helpers import bazel

    names = ("fzops", "structured_ops")
    start = time.monotonic()
    bazel("build", *(f"//tests/data/{n}:lib{n}.so" for n in names))
    summary.append(f"custom-namespace libraries {names}: {time.monotonic() - start:.0f} s")
    bin_dir = Path(bazel("info", "bazel-bin").stdout.strip())
    return {n: bin_dir / "tests" / "data" / n / f"lib{n}.so" for n in names}


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    lines = config.stash.get(_SUMMARY_KEY, [])
    if lines:
        terminalreporter.section("summary")
        for line in lines:
            terminalreporter.write_line(line)
