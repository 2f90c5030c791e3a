"""./dev test runs pytest on two pytest-xdist workers with --dist loadgroup (the dev script's
WORKERS), scheduled by tests/support/xdist_bazel_group.py from each module's folder
(tests/support/tiers.py): every test that runs Bazel in this checkout must run on one worker,
those of the folders with output bases of their own on one worker beside them, and the lines tests
append to the `summary` fixture on a worker must still reach the terminal summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support import bazel_helpers, tiers
from tests.support.model_helpers import REPO

# pytest run again in subprocesses, one of them running three cheap Bazel queries.
pytestmark = [pytest.mark.slow, pytest.mark.bazel]


def _pytest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def _collected(*args: str) -> list[str]:
    proc = _pytest("--collect-only", "-q", *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_every_module_sits_in_a_folder_whose_tier_matches_its_marks() -> None:
    """A test marked `bazel` (by its folder, or by hand) is in a folder the scheduler keeps on one
    worker, and every test of a folder that runs Bazel is marked: a module put in the wrong folder
    shows here, before the fast tier or the scheduler trips over it."""
    marked = set(_collected("-m", "bazel"))
    modules = {test.split("::")[0] for test in marked}
    assert len(modules) > 10, modules
    assert [m for m in sorted(modules) if tiers.tier_of(m).group is None] == []
    unmarked = [t for t in _collected() if tiers.tier_of(t).bazel and t not in marked]
    assert unmarked == []
    # The rule itself: the longest folder named in tiers.FOLDERS decides, and the rest is UNIT.
    assert tiers.tier_of("tests/workspace/test_x.py::test_y").group == tiers.CHECKOUT
    assert tiers.tier_of("tests/workspaces/test_x.py").group == tiers.OWN_OUTPUT_BASES
    assert tiers.tier_of("tests/benchmarks/workspaces/test_x.py").group == tiers.OWN_OUTPUT_BASES
    assert tiers.tier_of("tests/benchmarks/test_x.py") == tiers.UNIT
    assert tiers.tier_of("tests/unit/workspace/test_x.py") == tiers.UNIT
    assert tiers.tier_of("tests/slices/cuda/test_x.py").group == tiers.CHECKOUT
    assert tiers.tier_of("tests/slices/releases/test_x.py") == tiers.UNIT
    assert tiers.tier_of("tests/test_x.py") == tiers.UNIT


# One pytest-xdist run serves the scheduling and summary tests below: a test of a module that
# builds in the checkout (three cheap Bazel queries), one of a module with output bases of its
# own, one that appends a summary line, and a module of plain tests.
CHECKOUT_BAZEL_TEST = (
    "tests/workspace/test_bazel_workspace.py::test_bzl_library_holds_every_loaded_file"
)
OWN_OUTPUT_BASE_TEST = (
    "tests/workspaces/test_bazel_repo_errors.py::test_too_old_a_python_is_one_message"
)
SUMMARY_TEST = "tests/unit/model/test_differential_model.py::test_counts"


@pytest.fixture(scope="module")
def two_workers(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess, list[tuple[str, str]]]:
    """The run, and (worker, node id) of each test that passed in it. Its temporary directory is
    its own: the repository-error test keeps its workspace and output base there, and the same
    module may be running beside this one, in the enclosing run, on the same paths."""
    tmp = tmp_path_factory.mktemp("nested_tmpdir")
    proc = _pytest(
        "-v",
        "-n",
        "2",
        "--dist",
        "loadgroup",
        CHECKOUT_BAZEL_TEST,
        OWN_OUTPUT_BASE_TEST,
        SUMMARY_TEST,
        "tests/unit/cli/test_pipelines.py",
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, re.findall(r"^\[(gw\d)\].* PASSED (\S+)", proc.stdout, re.M)


def test_the_bazel_tests_run_on_one_worker_and_the_rest_beside_them(two_workers) -> None:
    proc, ran = two_workers
    bazel_workers = {w for w, test in ran if "test_bazel_workspace.py" in test}
    assert len([t for _, t in ran if "test_bazel_workspace.py" in t]) == 3, proc.stdout
    assert len(bazel_workers) == 1, proc.stdout
    assert any(w not in bazel_workers for w, _ in ran), proc.stdout  # the other worker ran some


def test_the_checkout_s_bazel_tests_and_the_own_output_base_ones_run_beside_each_other(
    two_workers,
) -> None:
    proc, ran = two_workers
    checkout_workers = {w for w, test in ran if "test_bazel_workspace.py" in test}
    own_workers = {w for w, test in ran if "test_bazel_repo_errors.py" in test}
    assert len(checkout_workers) == 1 and len(own_workers) == 1, proc.stdout
    assert checkout_workers != own_workers, proc.stdout


def test_a_folder_with_own_output_bases_cannot_build_in_the_checkout(monkeypatch) -> None:
    """bazel() refuses, before running Bazel, a test of such a folder (conftest names it) that
    gives no --output_base."""
    monkeypatch.setenv(bazel_helpers.OWN_OUTPUT_BASES_TEST_ENV, "tests/test_x.py::test_y")
    with pytest.raises(pytest.fail.Exception) as refused:
        bazel_helpers.bazel("build", "//:aten_generated")
    message = str(refused.value)
    assert message.startswith("tests/test_x.py::test_y runs `bazel build //:aten_generated`")
    assert "tests/support/tiers.py" in message and "\n" not in message, message


def test_builds_take_the_session_s_disk_cache_unless_they_name_one(monkeypatch) -> None:
    monkeypatch.setenv(bazel_helpers.SESSION_DISK_CACHE_ENV, "/c")
    add = bazel_helpers.with_session_disk_cache
    assert add(("build", "//:x")) == ("build", "--disk_cache=/c", "//:x")
    assert add(("test", "//:t")) == ("test", "--disk_cache=/c", "//:t")
    assert add(("build", "--disk_cache=/d", "//:x")) == ("build", "--disk_cache=/d", "//:x")
    assert add(("info", "bazel-bin")) == ("info", "bazel-bin")
    assert add(("shutdown",)) == ("shutdown",)
    monkeypatch.delenv(bazel_helpers.SESSION_DISK_CACHE_ENV)
    assert add(("build", "//:x")) == ("build", "//:x")


def test_summary_lines_of_a_worker_reach_the_terminal_summary(two_workers) -> None:
    proc, ran = two_workers
    # The pytest-xdist controller started the workers (`-v` says so in these words), a worker
    # ran the test that appended the line, and the controller printed it.
    assert "created: 2/2 workers" in proc.stdout, proc.stdout
    assert any(test == SUMMARY_TEST for _, test in ran), proc.stdout
    summary = proc.stdout.split("= summary =", 1)[1]
    assert "native_functions: ours " in summary, proc.stdout
