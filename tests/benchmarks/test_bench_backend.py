"""The tiny mode of benchmarks/bench_backend.py runs (one repetition per side): gen_backend_stubs
and both atengen layouts on the 305-op backend YAML, with ratios to torchgen."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

pytestmark = pytest.mark.slow  # three generator runs in fresh processes

ROW = re.compile(
    r"^\| (torchgen gen_backend_stubs|atengen backend \(per op\)|atengen backend \(4 buckets\)) "
    r"\| [\d.]+ \| (\d+) \| ([\d.]+)x \|$",
    re.M,
)


def test_bench_backend_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_backend.py")
    rows = {m.group(1): (int(m.group(2)), float(m.group(3))) for m in ROW.finditer(stdout)}
    assert len(rows) == 3, stdout
    # gen_backend_stubs writes its three files (header, registration, native functions);
    # four buckets per key are fewer files than one file per op.
    assert rows["torchgen gen_backend_stubs"] == (3, 1.0), stdout
    assert 0 < rows["atengen backend (4 buckets)"][0] < rows["atengen backend (per op)"][0], stdout
    ratio = printed_ratio(stdout, "P5")
    assert ratio == pytest.approx(rows["atengen backend (4 buckets)"][1], abs=0.006)
    summary.append(f"bench_backend --tiny: atengen (4 buckets)/torchgen {ratio}x")
