"""The tiny mode of benchmarks/bench_stable_call.py runs: the three libraries built, loaded in
one process, each op timed through each, one row per op and the RATIO lines."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

pytestmark = pytest.mark.slow  # g++ over torch's headers for the release-bound library

ROW = re.compile(
    r"^\| (passthrough|scale) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+)x \| ([\d.]+)x \|$", re.M
)


def test_bench_stable_call_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_stable_call.py")
    rows = {m.group(1): m.groups()[1:] for m in ROW.finditer(stdout)}
    assert set(rows) == {"passthrough", "scale"}, stdout
    for row in rows.values():
        typed, release, stable = (int(x) for x in row[:3])
        assert typed > 0 and release > 0 and stable > 0, stdout
        assert float(row[3]) == pytest.approx(release / typed, abs=0.01), stdout
        assert float(row[4]) == pytest.approx(stable / release, abs=0.01), stdout
    release_call, stable_call = (float(x) for x in rows["scale"][3:])
    assert printed_ratio(stdout, "release_call") == pytest.approx(release_call, abs=0.006)
    assert printed_ratio(stdout, "stable_call") == pytest.approx(stable_call, abs=0.006)
    summary.append(
        f"bench_stable_call --tiny: release/typed {release_call}x, stable/release "
        f"{stable_call}x (scale)"
    )
