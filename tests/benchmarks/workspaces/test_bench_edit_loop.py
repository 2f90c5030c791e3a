"""The tiny mode of benchmarks/bench_edit_loop.py runs: one kernel edit of the README quickstart
workspace, rebuilt by Bazel and by torch.utils.cpp_extension.load(), each loaded and checked."""

from __future__ import annotations

import re

import pytest

from tests.support.bazel_helpers import session_disk_cache_flags
from tests.support.model_helpers import printed_ratio, run_benchmark_tiny

# It builds the quickstart workspace with Bazel (the output base of tests/workspaces/test_quickstart.py).
pytestmark = [pytest.mark.slow, pytest.mark.bazel]

ROW = re.compile(
    r"^\| kernel edit to loadable library, median of 1 \(s\) \| ([\d.]+) \| ([\d.]+) \| "
    r"([\d.]+)x \|$",
    re.M,
)


def test_bench_edit_loop_tiny_mode(summary: list[str]) -> None:
    # The first build of the quickstart workspace (when test_quickstart has not made it yet)
    # runs the repository rules, and takes the precompiled headers and the library's objects
    # from the session's disk cache (tests/conftest.py) when another test built them.
    stdout = run_benchmark_tiny("bench_edit_loop.py", *session_disk_cache_flags(), timeout=1500)
    rows = ROW.findall(stdout)
    assert len(rows) == 1, stdout
    ours, theirs, ratio = (float(x) for x in rows[0])
    assert ours > 0 and theirs > 0, stdout
    assert printed_ratio(stdout, "P10") == pytest.approx(ours / theirs, rel=0.02)
    # The edit recompiled the kernel alone and relinked: no codegen, no precompiled header.
    actions = re.search(r"^rules_aten actions of the last edit: (.*)$", stdout, re.M).group(1)
    assert "Compiling kernels.cpp" in actions and "Linking _myops_linked/libmyops.so" in actions
    assert "making its references to torch weak" in actions, actions
    assert "Precompiling" not in actions and "atengen" not in actions.lower(), actions
    for part in ("analysis", "compile", "archive and link"):
        assert re.search(rf"^\| of which {part} \(s\) \| [\d.]+ \|", stdout, re.M), stdout
    summary.append(f"bench_edit_loop --tiny: rules_aten/cpp_extension {ratio}x")
