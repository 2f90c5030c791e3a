"""The tiny mode of benchmarks/bench_derivatives.py runs (one repetition per side) and
both sides model the same derivatives.yaml: equal info and matched-function counts."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.model_helpers import REPO


def test_bench_derivatives_tiny_mode(summary: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_derivatives.py", "--tiny"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {
        m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(
            r"^\| (torchgen|atengen) \| [\d.]+ \| [\d.]+ \| [\d.]+ \| (\d+) \| (\d+) \|$",
            proc.stdout,
            re.M,
        )
    }
    assert rows.keys() == {"torchgen", "atengen"}, proc.stdout
    assert rows["atengen"] == rows["torchgen"], proc.stdout
    ratio = re.search(r"^Ratio atengen/torchgen: total ([\d.]+)x", proc.stdout, re.M)
    assert ratio is not None, proc.stdout
    summary.append(f"bench_derivatives --tiny: atengen/torchgen {ratio.group(1)}x (1 repetition)")
