"""The tiny mode of benchmarks/bench_cold_build.py runs: the README quickstart built cold (a fresh
output base, no disk cache) and a second library of its workspace, against
torch.utils.cpp_extension.load() of the same kernel from an empty build directory, each loaded."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

# Cold Bazel builds in output bases of its own.
pytestmark = [pytest.mark.slow, pytest.mark.bazel]

NUMBER = r"([\d.]+)"
SIDE = r"^\| this checkout: "
QUICKSTART = re.compile(
    SIDE + r"README quickstart //:libmyops.so, median of 1 \(s\) \| "
    rf"{NUMBER} \| {NUMBER} \| {NUMBER} \| {NUMBER} \| {NUMBER} \| [\d.]+ \|$",
    re.M,
)
EXTENSION = re.compile(
    SIDE + rf"cpp_extension.load\(\), same kernel, median of 1 \(s\) \| {NUMBER} \|", re.M
)
SECOND = re.compile(
    SIDE + rf"second library of the workspace \(warm server\), median of 1 \(s\) \| {NUMBER} \|",
    re.M,
)


def test_bench_cold_build_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_cold_build.py", timeout=1200)
    ((wall, before, pch, compiles, link),) = (
        tuple(float(x) for x in m) for m in QUICKSTART.findall(stdout)
    )
    (theirs,) = (float(x) for x in EXTENSION.findall(stdout))
    (second,) = (float(x) for x in SECOND.findall(stdout))
    assert 0 < before < wall and compiles > 0 and link > 0 and pch >= 0, stdout
    assert theirs > 0 and second > 0, stdout
    assert printed_ratio(stdout, "P13") == pytest.approx(wall / theirs, rel=0.02)
    summary.append(
        f"bench_cold_build --tiny: quickstart {wall:.1f} s (before the first action {before:.1f} s,"
        f" precompiled headers {pch:.1f} s) against load() {theirs:.1f} s: "
        f"{wall / theirs:.2f}x; a second library {second:.1f} s"
    )
