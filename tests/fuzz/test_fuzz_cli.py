"""A fixed-seed slice of the fuzzing campaign (campaign.py runs the long one).

Each entry point gets a bounded, derandomized number of Hypothesis inputs, so CI
sees the same inputs every run; every input must keep the invariants listed in
harness.py (no traceback, one-line errors, no write outside the output
directories, no partial output).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.fuzz import harness, strategies

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


@FIXED_SLICE
@given(strategies.op_yaml(), strategies.GENERATE_FLAGS)
def test_generate_keeps_the_invariants(op_yaml, flags):
    verdict = harness.generate_case(op_yaml, flags)
    assert not verdict.problems, verdict.problems


@FIXED_SLICE
@given(strategies.backend_yaml(), strategies.BACKEND_FLAGS)
def test_backend_keeps_the_invariants(backend_yaml, flags):
    verdict = harness.backend_case(backend_yaml, flags)
    assert not verdict.problems, verdict.problems


@FIXED_SLICE
@given(strategies.lazy_yaml(), strategies.LAZY_FLAGS)
def test_lazy_keeps_the_invariants(lazy_yaml, flags):
    verdict = harness.lazy_case(lazy_yaml, flags)
    assert not verdict.problems, verdict.problems


@FIXED_SLICE
@given(strategies.derivatives_yaml(), strategies.AUTOGRAD_FLAGS)
def test_autograd_keeps_the_invariants(derivatives_yaml, flags):
    verdict = harness.autograd_case(derivatives_yaml, flags)
    assert not verdict.problems, verdict.problems
