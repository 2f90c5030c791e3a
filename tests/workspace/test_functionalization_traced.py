"""Functionalize-key kernels end to end in torch: `make_fx(torch.func.functionalize(f))` over
//:aten_generated and the fzops custom-namespace library (tests/data/fzops/), both built by Bazel
through the shared fixtures of tests/conftest.py. The model and the codegen without Bazel:
tests/unit/aten/test_functionalization.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.script_helpers import run_script


def trace(library: Path, which: str) -> dict[str, dict]:
    result = run_script("trace_functionalized.py", str(library), which)
    assert result.returncode == 0, result.stderr[-6000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {r["name"]: r for r in reports}


def assert_functional(report: dict, must_contain: list[str]) -> None:
    assert report["equal"], f"{report['name']}: traced result differs from eager"
    assert report["bad"] == [], f"{report['name']}: {report['bad']} in {report['ops']}"
    for op in must_contain:
        assert op in report["ops"], f"{report['name']}: {op} not in {report['ops']}"


def test_aten_programs_functionalize_through_our_kernels(aten_generated, summary) -> None:
    dump = run_script(
        "dispatch_dump.py",
        str(aten_generated.library),
        "add_.Tensor",
        "add.out",
        "transpose_",
        "unsqueeze_",
        "transpose.int",
        "select.int",
        "_fused_moving_avg_obs_fq_helper",
    )
    assert dump.returncode == 0, dump.stderr[-6000:]
    ours = [line for line in dump.stdout.splitlines() if line.startswith("Functionalize: ")]
    assert len(ours) == 7 and all("/RegisterFunctionalize_b" in line for line in ours), ours

    reports = trace(aten_generated.library, "aten")
    # Our view kernels undo a view by scattering it back with as_strided_scatter (torch's own
    # kernels use per-op inverses), so its presence shows that our kernels ran.
    assert_functional(reports["in-place chain"], ["aten.add.Tensor", "aten.mul.Tensor"])
    assert_functional(reports["out= calls"], ["aten.add.Tensor", "aten.mul.Tensor"])
    assert_functional(
        reports["mutation through a view"],
        ["aten.transpose_copy.int", "aten.select_copy.int", "aten.as_strided_scatter.default"],
    )
    assert_functional(
        reports["inplace_view ops"],
        ["aten.transpose_copy.int", "aten.unsqueeze_copy.default"],
    )
    assert_functional(
        reports["multi-output mutable op"],
        ["aten._fused_moving_avg_obs_fq_helper_functional.default"],
    )
    # Traced with symbolic sizes, the graph replays correctly on other shapes.
    assert_functional(reports["symbolic shapes"], ["aten.as_strided_scatter.default"])
    edges = reports["edges"]
    assert (
        "mutating a non-functional tensor with a functional tensor is not allowed"
        in (edges["mixed"])
    ), edges
    assert edges["plain"] == [2.0, 2.0, 2.0], edges
    summary.append(f"functionalization (aten): {len(reports) - 1} programs traced and compared")


def test_custom_namespace_programs_functionalize(fzops_library: Path, summary) -> None:
    reports = trace(fzops_library, "fzops")
    assert_functional(reports["fzops inplace"], ["fzops.bump.default"])
    assert_functional(reports["fzops mutable"], ["fzops.track_functional.default"])
    assert_functional(reports["fzops out="], ["fzops.axpy.default"])
    assert_functional(
        reports["fzops view"], ["fzops.head_copy.default", "aten.as_strided_scatter.default"]
    )
    summary.append(f"functionalization (fzops): {len(reports)} programs traced and compared")
