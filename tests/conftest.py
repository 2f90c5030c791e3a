"""Shared pytest fixtures and the test tiers of the repository's tests.

Import paths come from pyproject.toml (`pythonpath = ["tool", "."]`): `import atengen` and
`import tests.support.<module>` work in every test module without any sys.path set-up of its own.

The `bazel` marker: `./dev test --fast` deselects it, so every test that runs Bazel must carry
it. pytest_collection_modifyitems below adds it to every test of a module whose folder runs Bazel
(tests/support/tiers.py: `tests/workspace/`, `tests/workspaces/`, ...), so that a new test file
needs nothing more than its place in the tree. A test that still reaches
tests.support.bazel_helpers.bazel() without the marker fails there, in every run, instead of
slowing the fast tier down (pytest_runtest_protocol below); one outside `tests/workspace/` that
asks for a shared build of BAZEL_FIXTURES fails collection, as it would build in the checkout
beside the checkout's own Bazel tests.

The `slow` marker is set by hand on tests that take more than about 5 s without Bazel.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from atengen.model.operator_model import OperatorModel, load_model
from tests.support import bazel_helpers, slices, tiers

# Session fixtures below that build with Bazel in the checkout: only the tests of a folder whose
# tier builds there (tests/support/tiers.py's CHECKOUT group) may request them.
BAZEL_FIXTURES = frozenset({"aten_generated", "custom_op_libraries", "fzops_library"})

_SUMMARY_KEY = pytest.StashKey[list[str]]()
# The session's own disk cache (bazel_helpers.SESSION_DISK_CACHE_ENV), removed at its end.
_OWN_DISK_CACHE_KEY = pytest.StashKey[Path]()
# The key of the summary lines in a pytest-xdist worker's workeroutput.
_SUMMARY_WORKEROUTPUT = "rules_aten_summary"


def pytest_configure(config: pytest.Config) -> None:
    """The session's disk cache for Bazel, made by the controller before pytest-xdist starts its
    workers, which inherit the variable (on a worker, workerinput is set). A misspelt slice in
    $RULES_ATEN_REQUIRED_SLICES would require nothing (tests/support/slices.py): it stops the run."""
    unknown = slices.unknown_slices()
    if unknown:
        raise pytest.UsageError(
            f"${slices.REQUIRED_ENV} names {', '.join(unknown)}: the slices are "
            f"{', '.join(slices.SLICES)}"
        )
    if hasattr(config, "workerinput") or os.environ.get(bazel_helpers.SESSION_DISK_CACHE_ENV):
        return
    cache = Path(tempfile.mkdtemp(prefix="rules_aten_test_disk_cache_"))
    config.stash[_OWN_DISK_CACHE_KEY] = cache
    os.environ[bazel_helpers.SESSION_DISK_CACHE_ENV] = str(cache)


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = config.stash.get(_OWN_DISK_CACHE_KEY, None)
    if cache is not None:
        os.environ.pop(bazel_helpers.SESSION_DISK_CACHE_ENV, None)
        shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="session")
def summary(pytestconfig: pytest.Config) -> list[str]:
    """Lines appended here are printed in pytest's terminal summary (even without -s)."""
    return pytestconfig.stash.setdefault(_SUMMARY_KEY, [])


@pytest.fixture(scope="session")
def installed_yaml() -> tuple[Path, Path]:
    """native_functions.yaml and tags.yaml of the installed torch (its torchgen ships them)."""
    from tests.support.oracle.torchgen_model import packaged_yaml

    return packaged_yaml()


@pytest.fixture(scope="session")
def installed_model(installed_yaml: tuple[Path, Path]) -> OperatorModel:
    """Our model of installed_yaml, loaded once per session (about half a second a load); tests
    must not change it."""
    return load_model(*map(str, installed_yaml))


@pytest.fixture(scope="session")
def aten_generated(summary: list[str]) -> bazel_helpers.AtenGenerated:
    """//:aten_generated and //:libaten_generated.so, built once per session."""
    return bazel_helpers.build_aten_generated(summary)


@pytest.fixture(scope="session")
def fzops_library(custom_op_libraries: dict[str, Path]) -> Path:
    """//tests/data/fzops:libfzops.so, the custom-namespace library of the functionalization
    tests."""
    return custom_op_libraries["fzops"]


def _tier(config: pytest.Config, item: pytest.Item) -> tiers.Tier:
    return tiers.tier_of(item.path.relative_to(config.rootpath).as_posix())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        tier = _tier(config, item)
        if tier.bazel and item.get_closest_marker("bazel") is None:
            item.add_marker(pytest.mark.bazel)
        fixtures = BAZEL_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if fixtures and tier.group != tiers.CHECKOUT:
            misplaced.append(f"{item.nodeid} ({', '.join(sorted(fixtures))})")
    if misplaced:
        raise pytest.UsageError(
            "these tests request a shared build of the checkout, so they belong under "
            f"tests/workspace/ (tests/support/tiers.py): {'; '.join(misplaced)}"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Names the running test for bazel_helpers.bazel() (its fixtures' set-up and tear-down
    included) while it is not marked `bazel`, which then fails the test, or while its folder's
    tier builds in output bases of its own only, which then fails a build in the checkout's."""
    if item.get_closest_marker("bazel") is None:
        variable = bazel_helpers.UNMARKED_TEST_ENV
    elif _tier(item.config, item).group == tiers.OWN_OUTPUT_BASES:
        variable = bazel_helpers.OWN_OUTPUT_BASES_TEST_ENV
    else:
        return (yield)
    os.environ[variable] = item.nodeid
    try:
        return (yield)
    finally:
        os.environ.pop(variable, None)


@pytest.fixture(scope="session")
def custom_op_libraries(summary: list[str]) -> dict[str, Path]:
    """The custom-namespace libraries of tests/data (fzops, structured_ops), built in one Bazel
    invocation so that their compiles share the two cores; name -> the .so to load."""
    names = ("fzops", "structured_ops")
    start = time.monotonic()
    bazel_helpers.bazel("build", *(f"//tests/data/{n}:lib{n}.so" for n in names))
    summary.append(f"custom-namespace libraries {names}: {time.monotonic() - start:.0f} s")
    bin_dir = Path(bazel_helpers.bazel("info", "bazel-bin").stdout.strip())
    return {n: bin_dir / "tests" / "data" / n / f"lib{n}.so" for n in names}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's controller under `--dist loadgroup` (./dev test): the tests of each Bazel
    group of tests/support/tiers.py on one worker, in order; the rest on whichever worker is free."""
    if config.getoption("dist") != "loadgroup":
        return None
    from tests.support.xdist_bazel_group import BazelOnOneWorker

    return BazelOnOneWorker(config, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker, hands its summary lines to the controller, which prints them."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_SUMMARY_WORKEROUTPUT] = session.config.stash.get(_SUMMARY_KEY, [])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """pytest-xdist's controller: keeps the summary lines of a worker that finished."""
    lines = getattr(node, "workeroutput", {}).get(_SUMMARY_WORKEROUTPUT, [])
    node.config.stash.setdefault(_SUMMARY_KEY, []).extend(lines)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    lines = config.stash.get(_SUMMARY_KEY, [])
    if lines:
        terminalreporter.section("summary")
        for line in lines:
            terminalreporter.write_line(line)
