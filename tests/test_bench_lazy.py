"""The tiny mode of benchmarks/bench_lazy.py runs (one repetition per side), and both sides
register the same ops for torch_xla's lazy backend YAML."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.model_helpers import REPO

ROW = re.compile(
    r"^\| (torchgen gen_lazy_tensor|atengen lazy \(per op\)|atengen lazy \(4 buckets\)) "
    r"\| [\d.]+ \| [\d.]+ \| (\d+) \| (\d+) \| [\d.]+x \| ([\d.]+)x \|$",
    re.M,
)


def test_bench_lazy_tiny_mode(summary: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_lazy.py", "--tiny"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {
        m.group(1): (int(m.group(2)), int(m.group(3)), m.group(4))
        for m in ROW.finditer(proc.stdout)
    }
    assert len(rows) == 3, proc.stdout
    torchgen = rows["torchgen gen_lazy_tensor"]
    # gen_lazy_tensor writes its six files; torch_xla's YAML registers ~800 XLA and
    # AutogradXLA kernels, the same ones on every side.
    assert torchgen[0] == 6, proc.stdout
    assert torchgen[1] > 700, proc.stdout
    assert {ops for _, ops, _ in rows.values()} == {torchgen[1]}, proc.stdout
    assert rows["atengen lazy (4 buckets)"][0] < rows["atengen lazy (per op)"][0], proc.stdout
    summary.append(
        "bench_lazy --tiny: atengen/torchgen CPU "
        + ", ".join(
            f"{k.removeprefix('atengen lazy ')} {v[2]}x"
            for k, v in rows.items()
            if k != "torchgen gen_lazy_tensor"
        )
        + " (1 repetition)"
    )
