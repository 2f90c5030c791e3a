"""A fixed-seed slice of the fuzzing campaign (campaign.py runs the long one).

Each entry point gets a bounded, derandomized number of Hypothesis inputs, so CI
sees the same inputs every run; every input must keep the invariants listed in
harness.py (no traceback, one-line errors, no write outside the output
directories, no partial output).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz import harness, strategies
from tests.fuzz.entry_points import YAML_AND_FLAGS

# 60 inputs per entry point, each a full run of the command: 4 to 20 s a test on 2 cores.
pytestmark = pytest.mark.slow

FIXED_SLICE = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@FIXED_SLICE
@given(strategies.op_yaml())
def test_check_keeps_the_invariants(op_yaml):
    verdict = harness.check_case(op_yaml)
    assert not verdict.problems, verdict.problems


def _keeps_the_invariants(entry: str):
    """The CI test of one (YAML, flags) entry point of tests/fuzz/entry_points.py."""
    strategy, case = YAML_AND_FLAGS[entry]

    @FIXED_SLICE
    @given(*strategy)
    def test(yaml_text, flags):
        verdict = case(yaml_text, flags)
        assert not verdict.problems, verdict.problems

    test.__name__ = test.__qualname__ = f"test_{entry}_keeps_the_invariants"
    return test


test_generate_keeps_the_invariants = _keeps_the_invariants("generate")
test_backend_keeps_the_invariants = _keeps_the_invariants("backend")
test_lazy_keeps_the_invariants = _keeps_the_invariants("lazy")
test_autograd_keeps_the_invariants = _keeps_the_invariants("autograd")
