"""The tiny mode of benchmarks/bench_aten_edit.py runs: a workspace with one aten op, built, its
CPU kernel renamed in the op YAML, built again; the edit's actions are reported."""

from __future__ import annotations

import re

import pytest

from tests.support.bazel_helpers import session_disk_cache_flags
from tests.support.model_helpers import run_benchmark_tiny

# A workspace of its own, built with Bazel from scratch the first time.
pytestmark = [pytest.mark.slow, pytest.mark.bazel]


def test_bench_aten_edit_tiny_mode(summary: list[str]) -> None:
    # The session's disk cache (tests/conftest.py): aten_generated's precompiled headers come
    # from it when the checkout's build made them first.
    stdout = run_benchmark_tiny("bench_aten_edit.py", *session_disk_cache_flags(), timeout=1500)
    wall = re.search(
        r"^\| after dropping the CPU kernel (\w+) of _prelu_kernel: wall \(s\) \| ([\d.]+) \|$",
        stdout,
        re.M,
    )
    assert wall and float(wall.group(2)) > 0, stdout
    actions = re.search(r"^actions of the edit: (.*)$", stdout, re.M).group(1)
    # The generator ran again, and the library was linked again without the op's CPU shard (in
    # the tiny selection the op was the shard's only kernel, so nothing is left to compile).
    assert "Generating ATen registrations" in actions, actions
    assert "Linking _aten_all_linked/libaten_all.so" in actions, actions
    assert "Checking //:libaten_all.so's kernels and making its references" in actions, actions
    assert "Compiling" not in actions, actions
    assert "Precompiling" not in actions, actions
    summary.append(f"bench_aten_edit --tiny: the edit rebuilt in {wall.group(2)} s")
