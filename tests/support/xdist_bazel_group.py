"""The pytest-xdist scheduler of `./dev test`: the tests of the modules that build in this
checkout go to one worker, in collection order; those of the modules that run Bazel only with
output bases of their own go to one worker, in collection order, beside them; the other tests are
handed out one by one, to whichever worker is free.

`./dev test` asks for `--dist loadgroup`, and tests/conftest.py's pytest_xdist_make_scheduler
answers with this scheduler instead of xdist's own: that one learns a test's group from a suffix
the worker appends to the node id, which pytest 9 no longer lets a plugin change, so its groups
are silently lost. Here the controller reads the group from the test module's folder instead
(tests/support/tiers.py, which says why these groups).

The two groups are the largest scopes, so xdist hands them out first, one to each worker: their
builds overlap the other's analysis, linking, loading and Python, which leave cores idle.

It imports xdist, so only conftest's pytest_xdist_make_scheduler imports it: the other venvs'
pytest runs have no xdist.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

from tests.support.tiers import tier_of


class BazelOnOneWorker(LoadScopeScheduling):
    """LoadScopeScheduling with three kinds of scope: the groups of tests/support/tiers.py, all
    the tests of the folders that run Bazel, split by where, and one scope per other test."""

    def _split_scope(self, nodeid: str) -> str:
        return tier_of(nodeid).group or nodeid
