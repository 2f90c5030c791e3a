"""The tiny mode of benchmarks/full_compile.py runs: one op, one key, one file per op, compiled
with g++ against torch's headers (and the precompiled headers), and its report printed (written
to a temporary directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.model_helpers import REPO, run_benchmark_tiny

pytestmark = pytest.mark.slow  # one g++ compile against torch's headers


def test_full_compile_tiny_mode() -> None:
    report = Path(REPO) / "benchmarks" / "full_compile_report.md"
    before = report.read_bytes()
    stdout = run_benchmark_tiny("full_compile.py")
    assert "--ops _prelu_kernel --keys CPU --shards 0" in stdout, stdout
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+) \| \d+ \| \d+ \|$", stdout, re.M)
    # One op for one key, one file per op: a single CPU file, and it compiles; with it, the
    # kernel-signature file of its one signature.
    assert rows == [("CPU", "1", "1")], stdout
    assert re.search(r"^\| \(kernel signatures\) \| 1 \| 1 \| \d+ \| \d+ \|$", stdout, re.M), stdout
    assert re.search(
        r"^Total: 2 files, 2 compiled, \d+ CPU s \(the precompiled headers included\), "
        r"peak RSS \d+ MB\.$",
        stdout,
        re.M,
    )
    # Compiled as aten_codegen compiles: with the precompiled headers, built first.
    assert re.search(r"^\| \(precompiled headers\) \| 1 \| 1 \| \d+ \| \d+ \|$", stdout, re.M)
    assert "## Failures (0 operator/key files)" in stdout, stdout
    assert report.read_bytes() == before  # the checked-in report is left alone
