"""The pytest-xdist scheduler of `./dev test`: the tests of the modules that may run Bazel in
this checkout go to one worker, in collection order; those of the modules that run Bazel only with
output bases of their own go to one worker, in collection order, beside them; the other tests are
handed out one by one, to whichever worker is free.

`./dev test` asks for `--dist loadgroup`, and tests/conftest.py's pytest_xdist_make_scheduler
answers with this scheduler instead of xdist's own: that one learns a test's group from a suffix
the worker appends to the node id, which pytest 9 no longer lets a plugin change, so its groups
are silently lost. Here the controller reads the group from the test module's text instead.

Why one worker for the checkout's Bazel tests: they share its one Bazel server and `bazel-bin`,
where a build with other flags replaces the outputs another test is about to load; and the
session's shared builds (tests/conftest.py) would be built once per worker. The modules that set
BAZEL_OWN_OUTPUT_BASES (tests/support/bazel_helpers.py, which enforces it) share none of that with them;
they run in order among themselves, as some of them share a workspace (the quickstart's, for one).
The two groups are the largest scopes, so xdist hands them out first, one to each worker: their
builds overlap the other's analysis, linking, loading and Python, which leave cores idle.

Which modules may run Bazel: tests.support.bazel_helpers.module_may_run_bazel, a superset of the tests
that conftest marks `bazel` (tests/workspace/test_pytest_workers.py checks it over every test). It imports
xdist, so only conftest's pytest_xdist_make_scheduler imports it: the other venvs' pytest runs
have no xdist.
"""

from __future__ import annotations

from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

from tests.support.bazel_helpers import module_may_run_bazel, module_uses_own_output_bases_only

CHECKOUT_BAZEL_SCOPE = "bazel"
OWN_OUTPUT_BASES_SCOPE = "bazel-own-output-bases"


class BazelOnOneWorker(LoadScopeScheduling):
    """LoadScopeScheduling with three kinds of scope: CHECKOUT_BAZEL_SCOPE and
    OWN_OUTPUT_BASES_SCOPE, all the tests of the modules that may run Bazel, split by where, and
    one scope per other test."""

    def __init__(self, config, log=None, *, bazel_fixtures: frozenset[str]) -> None:
        super().__init__(config, log)
        self._root = Path(config.rootpath)
        self._bazel_fixtures = bazel_fixtures
        self._module_scope: dict[str, str | None] = {}

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path not in self._module_scope:
            module = self._root / path
            source = module.read_text() if module.is_file() else ""
            scope = None
            if module_uses_own_output_bases_only(source):
                scope = OWN_OUTPUT_BASES_SCOPE
            elif module_may_run_bazel(source, self._bazel_fixtures):
                scope = CHECKOUT_BAZEL_SCOPE
            self._module_scope[path] = scope
        return self._module_scope[path] or nodeid
