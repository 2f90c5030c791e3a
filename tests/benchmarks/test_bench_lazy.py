"""The tiny mode of benchmarks/bench_lazy.py runs (one repetition per side), and both sides
register the same ops for torch_xla's lazy backend YAML."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import run_benchmark_tiny

pytestmark = pytest.mark.slow  # runs both generators in fresh processes

ROW = re.compile(
    r"^\| (torchgen gen_lazy_tensor|atengen lazy \(per op\)|atengen lazy \(4 buckets\)) "
    r"\| [\d.]+ \| [\d.]+ \| (\d+) \| (\d+) \| [\d.]+x \| ([\d.]+)x \|$",
    re.M,
)


def test_bench_lazy_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_lazy.py")
    rows = {
        m.group(1): (int(m.group(2)), int(m.group(3)), m.group(4)) for m in ROW.finditer(stdout)
    }
    assert len(rows) == 3, stdout
    torchgen = rows["torchgen gen_lazy_tensor"]
    # gen_lazy_tensor writes its six files; torch_xla's YAML registers ~800 XLA and
    # AutogradXLA kernels, the same ones on every side.
    assert torchgen[0] == 6, stdout
    assert torchgen[1] > 700, stdout
    assert {ops for _, ops, _ in rows.values()} == {torchgen[1]}, stdout
    assert rows["atengen lazy (4 buckets)"][0] < rows["atengen lazy (per op)"][0], stdout
    summary.append(
        "bench_lazy --tiny: atengen/torchgen CPU "
        + ", ".join(
            f"{k.removeprefix('atengen lazy ')} {v[2]}x"
            for k, v in rows.items()
            if k != "torchgen gen_lazy_tensor"
        )
        + " (1 repetition)"
    )
