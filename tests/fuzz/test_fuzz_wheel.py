"""A fixed-seed slice of the wheel tool's and the ELF readers' fuzzing (campaign.py `--entry
wheel` and `--entry elf` run the long one): the invariants of wheel_fuzz.py (no traceback, exit
0 or one-line errors, a wheel whose Python parses, nothing left behind by a failure).

Each case runs in this process, a few tens of milliseconds: about 5 s for both tests.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz import wheel_fuzz

# Two campaigns of a few seconds each: in the full suite, not the fast tier.
pytestmark = pytest.mark.slow


def _slice(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


@_slice(80)
@given(wheel_fuzz.WHEEL_ARGS)
def test_wheel_arguments_keep_the_invariants(args: dict) -> None:
    verdict = wheel_fuzz.wheel_case(args)
    assert not verdict.problems, (verdict.problems, args)


@_slice(100)
@given(wheel_fuzz.ELF_SEEDS)
def test_mutated_elf_files_keep_the_invariants(seed_value: int) -> None:
    """One mutated library through `atengen wheel`, `atengen stable-link-check`, `atengen
    bound-link` and the probe's exported_names."""
    verdict = wheel_fuzz.elf_case(seed_value)
    assert not verdict.problems, (verdict.problems, seed_value)
