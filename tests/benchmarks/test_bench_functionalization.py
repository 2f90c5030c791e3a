"""The tiny mode of benchmarks/bench_functionalization.py runs: a new mutating op added to a
cut-down copy of torch's op YAML, both sides' changed functionalization sources compiled with g++
against torch's headers."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

pytestmark = pytest.mark.slow  # two g++ compiles against torch's headers

ROW = re.compile(
    r"^\| add a mutating op \(bench_scale_ \+ autogen\) \| (\d+) files, \d+ CPU s "
    r"\| (\d+) files, \d+ CPU s \| ([\d.]+)x \|$",
    re.M,
)


def test_bench_functionalization_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_functionalization.py")
    rows = ROW.findall(stdout)
    assert len(rows) == 1, stdout
    tg_files, ag_files, ratio = rows[0]
    assert int(tg_files) >= 1 and int(ag_files) >= 1, stdout
    changed = re.search(
        r"^one-op edit: torchgen changed (\d+) sources, atengen (\d+)$", stdout, re.M
    )
    assert changed and changed.groups() == (tg_files, ag_files), stdout
    assert "failed compiles" not in stdout, stdout
    assert "full functionalization compile" not in stdout, stdout  # not in --tiny
    printed = printed_ratio(stdout, "functionalization_edit")
    assert printed == pytest.approx(float(ratio), abs=0.001)
    summary.append(f"bench_functionalization --tiny: one-op edit atengen/torchgen {ratio}x")
