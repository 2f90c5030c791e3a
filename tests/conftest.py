"""Shared pytest fixtures and the test tiers of the repository's tests.

Import paths come from pyproject.toml (`pythonpath = ["tool", "."]`): `import atengen` and
`import tests.<module>` work in every test module without any sys.path set-up of its own.

The `bazel` marker: `./dev test --fast` deselects it, so every test that runs Bazel must carry
it. pytest_collection_modifyitems below adds it, so that a new test file needs nothing more than
one of these:

- it requests (directly or through other fixtures) a fixture of BAZEL_FIXTURES, the shared
  builds defined here; or
- its module imports anything from tests.support.bazel_helpers (the one way tests should run `bazel`),
  or starts a command list with "bazel" (`["bazel", ...]`, a direct subprocess call): every test
  of that module is marked, so keep tests that never need Bazel in another module.

Modules that run Bazel say so with an explicit `pytestmark = pytest.mark.bazel` as well. A test
that still reaches tests.support.bazel_helpers.bazel() without the marker fails there, in every run,
instead of slowing the fast tier down (pytest_runtest_protocol below).

The `slow` marker is set by hand on tests that take more than about 5 s without Bazel.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from types import ModuleType

import pytest

from atengen.model.operator_model import OperatorModel, load_model
from tests.support import bazel_helpers, slices

# Session fixtures below that build with Bazel: the tests that request them are marked `bazel`.
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


def _runs_bazel(module: ModuleType) -> bool:
    """Whether the test module imports from tests.support.bazel_helpers or runs `bazel` itself."""
    if any(
        value is bazel_helpers or getattr(value, "__module__", None) == bazel_helpers.__name__
        for value in vars(module).values()
    ):
        return True
    source = Path(module.__file__).read_text() if module.__file__ else ""
    return bazel_helpers.BAZEL_COMMAND.search(source) is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    modules_running_bazel: dict[str, bool] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        if module is not None and module.nodeid not in modules_running_bazel:
            modules_running_bazel[module.nodeid] = _runs_bazel(module.obj)
        uses_bazel = BAZEL_FIXTURES.intersection(getattr(item, "fixturenames", ())) or (
            module is not None and modules_running_bazel[module.nodeid]
        )
        if uses_bazel and item.get_closest_marker("bazel") is None:
            item.add_marker(pytest.mark.bazel)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Names the running test for bazel_helpers.bazel() (its fixtures' set-up and tear-down
    included) while it is not marked `bazel`, which then fails the test, or while its module sets
    BAZEL_OWN_OUTPUT_BASES, which then fails a build in the checkout's output base."""
    if item.get_closest_marker("bazel") is None:
        variable = bazel_helpers.UNMARKED_TEST_ENV
    else:
        module = item.getparent(pytest.Module)
        if module is None or not getattr(module.obj, bazel_helpers.OWN_OUTPUT_BASES_FLAG, False):
            return (yield)
        variable = bazel_helpers.OWN_OUTPUT_BASES_TEST_ENV
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
    """pytest-xdist's controller under `--dist loadgroup` (./dev test): the tests of the modules
    that may run Bazel all on one worker, in order; the rest on whichever worker is free."""
    if config.getoption("dist") != "loadgroup":
        return None
    from tests.support.xdist_bazel_group import BazelOnOneWorker

    return BazelOnOneWorker(config, log, bazel_fixtures=BAZEL_FIXTURES)


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
