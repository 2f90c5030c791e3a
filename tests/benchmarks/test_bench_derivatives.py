"""The tiny mode of benchmarks/bench_derivatives.py runs (one repetition per side) and
both sides model the same derivatives.yaml: equal info and matched-function counts."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import run_benchmark_tiny

pytestmark = pytest.mark.slow  # runs both loaders in fresh processes


def test_bench_derivatives_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_derivatives.py")
    rows = {
        m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(
            r"^\| (torchgen|atengen) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| (\d+) \| (\d+) \|$",
            stdout,
            re.M,
        )
    }
    assert rows.keys() == {"torchgen", "atengen"}, stdout
    assert rows["atengen"] == rows["torchgen"], stdout
    ratio = re.search(r"^Ratio atengen/torchgen: total ([\d.]+)x", stdout, re.M)
    assert ratio is not None, stdout
    summary.append(f"bench_derivatives --tiny: atengen/torchgen {ratio.group(1)}x (1 repetition)")
