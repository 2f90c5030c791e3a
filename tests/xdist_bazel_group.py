"""The pytest-xdist scheduler of `./dev test`: every test of a module that may run Bazel goes to
one worker, in collection order; the other tests are handed out one by one, to whichever worker
is free.

`./dev test` asks for `--dist loadgroup`, and tests/conftest.py's pytest_xdist_make_scheduler
answers with this scheduler instead of xdist's own: that one learns a test's group from a suffix
the worker appends to the node id, which pytest 9 no longer lets a plugin change, so its groups
are silently lost. Here the controller reads the group from the test module's text instead.

Why one worker for Bazel: the tests that build in the checkout share its one Bazel server and
`bazel-bin`, where a build with other flags replaces the outputs another test is about to load;
each other Bazel module keeps one output base and workspace under /tmp for all its tests; and the
session's shared builds (tests/conftest.py) would be built once per worker.

Which modules may run Bazel: tests.bazel_helpers.module_may_run_bazel, a superset of the tests
that conftest marks `bazel` (tests/test_pytest_workers.py checks it over every test). It imports
xdist, so only conftest's pytest_xdist_make_scheduler imports it: the other venvs' pytest runs
have no xdist.
"""

from __future__ import annotations

from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

from tests.bazel_helpers import module_may_run_bazel

BAZEL_SCOPE = "bazel"


class BazelOnOneWorker(LoadScopeScheduling):
    """LoadScopeScheduling with two kinds of scope: BAZEL_SCOPE, all the tests of the modules that
    may run Bazel, and one scope per other test."""

    def __init__(self, config, log=None, *, bazel_fixtures: frozenset[str]) -> None:
        super().__init__(config, log)
        self._root = Path(config.rootpath)
        self._bazel_fixtures = bazel_fixtures
        self._module_runs_bazel: dict[str, bool] = {}

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path not in self._module_runs_bazel:
            module = self._root / path
            source = module.read_text() if module.is_file() else ""
            self._module_runs_bazel[path] = module_may_run_bazel(source, self._bazel_fixtures)
        return BAZEL_SCOPE if self._module_runs_bazel[path] else nodeid
