"""The tiny mode of benchmarks/bench_stable_call.py runs: both libraries built, loaded in one
process, each op timed through both paths, one row per op and the RATIO line."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

pytestmark = pytest.mark.slow  # g++ over torch's headers for the release-bound library

ROW = re.compile(r"^\| (passthrough|scale) \| (\d+) \| (\d+) \| ([\d.]+)x \|$", re.M)


def test_bench_stable_call_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_stable_call.py")
    rows = {
        m.group(1): (int(m.group(2)), int(m.group(3)), float(m.group(4)))
        for m in ROW.finditer(stdout)
    }
    assert set(rows) == {"passthrough", "scale"}, stdout
    for release, stable, ratio in rows.values():
        assert release > 0 and stable > 0, stdout
        assert ratio == pytest.approx(stable / release, abs=0.01), stdout
    assert printed_ratio(stdout, "stable_call") == pytest.approx(rows["scale"][2], abs=0.006)
    summary.append(f"bench_stable_call --tiny: stable/release {rows['scale'][2]}x (scale)")
