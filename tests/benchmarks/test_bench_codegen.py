"""The tiny mode of benchmarks/bench_codegen.py runs: torchgen.gen (with and without headers) and
atengen generate on the same cut-down copy of torch's op YAML, one repetition each."""

from __future__ import annotations

import re

import pytest

from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

pytestmark = pytest.mark.slow  # three generator runs in fresh processes

ROW = re.compile(
    r"^\| (torchgen \(all\)|torchgen \(sources\)|atengen) \| [\d.]+ \| (\d+) \| [\d.]+ \|$",
    re.M,
)


def test_bench_codegen_tiny_mode(summary: list[str]) -> None:
    stdout = run_benchmark_tiny("bench_codegen.py")
    files = {m.group(1): int(m.group(2)) for m in ROW.finditer(stdout)}
    assert len(files) == 3, stdout
    # --generate sources leaves out the headers the full run writes.
    assert 0 < files["torchgen (sources)"] < files["torchgen (all)"], stdout
    assert files["atengen"] > 0, stdout
    ratios = re.search(
        r"^atengen / torchgen \(all\): ([\d.]+)x; atengen / torchgen \(sources\): ([\d.]+)x "
        r"\(target <= 0.1x against sources: (met|NOT met)\)$",
        stdout,
        re.M,
    )
    assert ratios, stdout
    assert printed_ratio(stdout, "P1") == pytest.approx(float(ratios.group(2)), abs=0.001)
    cpu = re.search(r"^CPU seconds, atengen / torchgen \(sources\): ([\d.]+)x$", stdout, re.M)
    assert cpu, stdout
    assert printed_ratio(stdout, "P1_cpu") == pytest.approx(float(cpu.group(1)), abs=0.001)
    assert 0 < float(cpu.group(1)), stdout
    summary.append(
        f"bench_codegen --tiny: atengen/torchgen sources {ratios.group(2)}x (small YAML)"
    )
