"""./dev test runs pytest on two pytest-xdist workers with --dist loadgroup (the dev script's
WORKERS), scheduled by tests/xdist_bazel_group.py: every test that runs Bazel must run on one
worker, and the lines tests append to the `summary` fixture on a worker must still reach the
terminal summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bazel_helpers import module_may_run_bazel
from tests.conftest import BAZEL_FIXTURES
from tests.model_helpers import REPO

# pytest run again in subprocesses; the scheduling test runs three cheap Bazel queries.
pytestmark = [pytest.mark.slow, pytest.mark.bazel]


def _pytest(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_every_test_marked_bazel_is_in_a_module_the_scheduler_puts_on_one_worker() -> None:
    proc = _pytest("--collect-only", "-q", "-m", "bazel")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    modules = {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert len(modules) > 10, modules
    missed = [
        m for m in modules if not module_may_run_bazel((Path(REPO) / m).read_text(), BAZEL_FIXTURES)
    ]
    assert missed == []


def test_the_bazel_tests_run_on_one_worker_and_the_rest_beside_them() -> None:
    proc = _pytest(
        "-v",
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "tests/test_bazel_workspace.py::test_bzl_library_holds_every_loaded_file",
        "tests/test_pipelines.py",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d)\].* PASSED (\S+)", proc.stdout, re.M)
    bazel_workers = {w for w, test in ran if "test_bazel_workspace.py" in test}
    assert len([t for _, t in ran if "test_bazel_workspace.py" in t]) == 3, proc.stdout
    assert len(bazel_workers) == 1, proc.stdout
    assert any(w not in bazel_workers for w, _ in ran), proc.stdout  # the other worker ran some


def test_summary_lines_of_a_worker_reach_the_terminal_summary() -> None:
    plain = "tests/test_differential_model.py::test_counts"
    proc = _pytest("-q", "-n", "2", "--dist", "loadgroup", plain)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # The pytest-xdist controller printed it, and a worker ran the test that appended it.
    assert "bringing up nodes" in proc.stdout, proc.stdout
    summary = proc.stdout.split("= summary =", 1)[1]
    assert "native_functions: ours " in summary, proc.stdout
