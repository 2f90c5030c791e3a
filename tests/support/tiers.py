"""What a test module's folder says about its tests: whether they run Bazel (the `bazel`
marker) and which group of `./dev test`'s pytest-xdist scheduler they join.

The folder, not the module's text, decides, so that the marker, the scheduler and the checks agree
on one rule a reader sees in the tree (docs/developing/tests.md describes each folder):

- `tests/workspace/`: Bazel in this checkout's workspace and output base (directly or through
  tests/conftest.py's shared builds). They share its one Bazel server and `bazel-bin`, where a
  build with other flags replaces the outputs another test is about to load: one worker, in
  order (CHECKOUT).
- `tests/workspaces/`: Bazel only in workspaces and output bases of their own (an example's, a
  workspace under /tmp). They share nothing with the checkout's builds, so they run on the other
  worker, beside them, in order among themselves, as some share a workspace (the quickstart's):
  OWN_OUTPUT_BASES. tests/support/bazel_helpers.py fails such a test that names no output base.
- `tests/benchmarks/workspaces/`: the benchmarks' tiny modes that build workspaces of their own.
- `tests/slices/<slice>/`: the modules of a slice that skip without it; cuda builds in the
  checkout, bazel7 and remote in output bases of their own, releases runs no Bazel.
- Every other folder (`unit/`, `repo/`, `benchmarks/`, `fuzz/`, `slices/releases/`): no Bazel;
  the scheduler hands their tests out one by one. A test there that runs Bazel fails
  (tests/support/bazel_helpers.py), and one that asks for a shared build fails collection.

Standard library only: pytest-xdist's controller imports it (tests/support/xdist_bazel_group.py),
and so do the release venvs' pytest runs, which have no xdist.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

TESTS = PurePosixPath("tests")
# The scheduler's group of the tests that build in the checkout, and of those with output bases of
# their own.
CHECKOUT = "bazel"
OWN_OUTPUT_BASES = "bazel-own-output-bases"


@dataclass(frozen=True)
class Tier:
    # Every test of the folder is marked `bazel` (left out by `./dev test --fast`).
    bazel: bool
    # CHECKOUT, OWN_OUTPUT_BASES, or None: each test scheduled alone.
    group: str | None


UNIT = Tier(bazel=False, group=None)
# Folder under tests/ -> the tier of every module in it or below it; the longest folder that holds
# a module decides, and a folder not named here (or below one) is UNIT.
FOLDERS = {
    "workspace": Tier(bazel=True, group=CHECKOUT),
    "workspaces": Tier(bazel=True, group=OWN_OUTPUT_BASES),
    "benchmarks/workspaces": Tier(bazel=True, group=OWN_OUTPUT_BASES),
    "slices/cuda": Tier(bazel=True, group=CHECKOUT),
    "slices/bazel7": Tier(bazel=True, group=OWN_OUTPUT_BASES),
    "slices/remote": Tier(bazel=True, group=OWN_OUTPUT_BASES),
}


def tier_of(path: str) -> Tier:
    """The tier of a test module, given by its path from the repository root (a node id's path
    part, `tests/workspace/test_x.py`); a path outside tests/ is UNIT."""
    parts = PurePosixPath(path.split("::", 1)[0]).parts
    if parts[:1] != TESTS.parts:
        return UNIT
    folders = parts[1:-1]
    for depth in range(len(folders), 0, -1):
        tier = FOLDERS.get("/".join(folders[:depth]))
        if tier is not None:
            return tier
    return UNIT
