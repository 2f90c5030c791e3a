"""The test slices that need more than .venv, and the variable that makes them required.

A slice's modules skip, saying why, where what they test is not there: the CUDA slice on a CPU
torch (`./dev test` runs every module on .venv's), the release slice without the unpacked wheels
and venvs that `./dev test-releases` names in its variables. A run that is there to test a slice
must not pass that way: $RULES_ATEN_REQUIRED_SLICES (comma-separated names of SLICES; `./dev
test-cuda` and `./dev test-releases` add their own, `.ci/run` names every slice it runs) turns such
a skip into a failure, with one line naming the slice and what it lacks. A skip for want of a GPU
is not one of these: no machine the slices run on has one.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRED_ENV = "RULES_ATEN_REQUIRED_SLICES"
# name -> the command that runs the slice (and sets up what it needs)
SLICES = {
    "cuda": "./dev test-cuda",
    "releases": "./dev test-releases",
    "bazel7": "./dev test-bazel7",
    "remote": "./dev test-remote",
}


def required_slices() -> list[str]:
    """The names in $RULES_ATEN_REQUIRED_SLICES (tests/conftest.py refuses unknown ones)."""
    return [n.strip() for n in os.environ.get(REQUIRED_ENV, "").split(",") if n.strip()]


def unknown_slices() -> list[str]:
    return [n for n in required_slices() if n not in SLICES]


def missing_line(name: str, reason: str) -> str:
    return (
        f'rules_aten: the required test slice "{name}" cannot run: {reason} '
        f"(${REQUIRED_ENV}={os.environ.get(REQUIRED_ENV, '')}; {SLICES[name]} sets it up)"
    )


def fail_if_required(name: str, reason: str) -> None:
    """Fails the caller (a module at import, a fixture or a test) with one line when the slice
    `name` is required; returns otherwise."""
    __tracebackhide__ = True  # pytest's report names the caller's line, not this one
    if name in required_slices():
        pytest.fail(missing_line(name, reason), pytrace=False)


def missing(name: str, reason: str) -> NoReturn:
    """What the slice `name` needs is not there: fails with one line when the slice is required,
    else skips the caller (a whole module when called at import) with `reason`."""
    __tracebackhide__ = True
    fail_if_required(name, reason)
    pytest.skip(reason, allow_module_level=True)
