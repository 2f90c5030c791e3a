"""The tiny mode of benchmarks/bench_model.py runs (one repetition per side) and prints both
sides' times and the ratio that benchmarks/run_all.py collects."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

pytestmark = pytest.mark.slow  # loads torch's op YAML in two fresh processes

NUM = r"(\d+\.\d+)"


def test_bench_model_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_model.py")
    assert "Median of 1 fresh-process reps" in stdout, stdout
    row = re.compile(
        rf"^\| (torchgen|atengen) \| {NUM} \| {NUM} \| {NUM} \| {NUM} \| {NUM} \|$", re.M
    )
    rows = {m.group(1): [float(x) for x in m.groups()[1:]] for m in row.finditer(stdout)}
    assert rows.keys() == {"torchgen", "atengen"}, stdout
    for side, (imp, call, total, _, _) in rows.items():
        assert total == pytest.approx(imp + call, abs=0.002), (side, stdout)
    # torchgen groups after parsing; atengen's load_model has grouped already.
    assert rows["torchgen"][3] > 0 and rows["atengen"][3] == 0, stdout
    grouped = re.search(rf"^Ratio with the groups on both sides, .*: {NUM}x$", stdout, re.M)
    assert grouped, stdout
    tg_imp, tg_call, _, tg_group, _ = rows["torchgen"]
    assert float(grouped.group(1)) == pytest.approx(
        rows["atengen"][2] / (tg_imp + tg_call + tg_group), abs=0.002
    )
    assert printed_ratio(stdout, "model_load_grouped") == pytest.approx(
        float(grouped.group(1)), abs=0.001
    )
    ratio = re.search(rf"^Ratio atengen/torchgen: total {NUM}x \(target <= 0.3x", stdout, re.M)
    assert ratio, stdout
    assert printed_ratio(stdout, "model_load") == pytest.approx(float(ratio.group(1)), abs=0.001)
    summary.append(f"bench_model --tiny: atengen/torchgen {ratio.group(1)}x (1 repetition)")
