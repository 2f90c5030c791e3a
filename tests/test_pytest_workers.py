"""./dev test runs pytest on two pytest-xdist workers with --dist loadgroup (the dev script's
WORKERS): every test marked `bazel` must be in the one group that a single worker runs, and the
lines tests append to the `summary` fixture on a worker must still reach the terminal summary."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import BAZEL_XDIST_GROUP
from tests.model_helpers import REPO

pytestmark = pytest.mark.slow  # pytest run again in subprocesses, torch imported by each worker

# A module whose tests all run Bazel, and one whose tests never do.
BAZEL_MODULE = "tests/test_bazel_workspace.py"
PLAIN_MODULE = "tests/test_differential_model.py"


def _pytest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _collected(marker_expression: str) -> list[str]:
    proc = _pytest("--collect-only", "-q", "-m", marker_expression, BAZEL_MODULE, PLAIN_MODULE)
    assert proc.returncode in (0, 5), proc.stdout[-3000:] + proc.stderr[-3000:]  # 5: none
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_exactly_the_bazel_tests_are_in_the_bazel_group() -> None:
    assert BAZEL_XDIST_GROUP == "bazel"
    grouped = _collected("xdist_group")
    assert grouped and all(t.startswith(BAZEL_MODULE) for t in grouped), grouped
    assert _collected("bazel") == grouped
    assert _collected("xdist_group and not bazel") == []
    assert _collected("bazel and not xdist_group") == []


def test_summary_lines_of_a_worker_reach_the_terminal_summary() -> None:
    proc = _pytest("-q", "-n", "2", "--dist", "loadgroup", f"{PLAIN_MODULE}::test_counts")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # The pytest-xdist controller printed it, and a worker ran the test that appended it.
    assert "bringing up nodes" in proc.stdout, proc.stdout
    summary = proc.stdout.split("= summary =", 1)[1]
    assert "native_functions: ours " in summary, proc.stdout
