"""Derivative formulas calling the library's own operators by name, as aten's formulas call aten's:
a torchvision-style library (tests/data/roi_ops: roi_align and _roi_align_backward with
torchvision's schemas, and shift_rows) built with Bazel (aten_codegen, derivatives =), whose
roi_align formula calls `_roi_align_backward(..., input.sym_size(0), ...)` and whose shift_rows
formula calls `myvision::shift_rows(grad, -shift)`. gradcheck passes, the gradient equals a
reference written in plain Python, and a double backward differentiates the own-op call
(tests/scripts/check_roi_ops_autograd.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO, VENV_PYTHON, bazel, own_output_base
from tests.support.script_helpers import run_script

pytestmark = pytest.mark.bazel

ROI_OPS = REPO / "tests" / "data" / "roi_ops"
# tests/incremental's WORKSPACE: rules_aten from this checkout, Bazel's rule sets from Debian.
WORKSPACE = REPO / "tests" / "incremental" / "WORKSPACE.template"
BUILD = """\
load("@rules_aten//rules:defs.bzl", "aten_codegen")
load("@rules_cc//cc:defs.bzl", "cc_library")

aten_codegen(
    name = "roi_ops",
    derivatives = "derivatives.yaml",
    op_yaml = "ops.yaml",
    tags_yaml = "@torch//:tags.yaml",
    deps = [":kernels"],
)

cc_library(
    name = "kernels",
    srcs = ["kernels.cpp"],
    deps = [
        ":roi_ops_headers",
        "@torch//:torch_cpu",
    ],
)
"""


def test_formulas_call_the_librarys_own_ops(tmp_path: Path, summary: list[str]) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "WORKSPACE").write_text(WORKSPACE.read_text().replace("@RULES_ATEN_PATH@", str(REPO)))
    (root / "BUILD.bazel").write_text(BUILD)
    shutil.copy(REPO / ".bazelrc", root / ".bazelrc")
    for name in ("ops.yaml", "derivatives.yaml", "kernels.cpp"):
        shutil.copy(ROI_OPS / name, root / name)
    env = {**os.environ, "RULES_ATEN_PYTHON": str(VENV_PYTHON), "RULES_ATEN_CUDA_DIR": "none"}
    startup = own_output_base(tmp_path / "output_base", max_idle_secs=60)
    try:
        bazel("build", "//:libroi_ops.so", cwd=root, env=env, startup=startup)
        generated = "".join(
            p.read_text()
            for p in (root / "bazel-bin" / "roi_ops_codegen" / "autograd.cc").glob("*")
        )
        # The own ops the formulas call are reached through the dispatcher, by their names.
        assert "using ::myvision::_roi_align_backward;" in generated
        assert "at::Tensor shift_rows(const at::Tensor & self, c10::SymInt shift) {" in generated
        run = run_script("check_roi_ops_autograd.py", str(root / "bazel-bin" / "libroi_ops.so"))
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-4000:]
        assert run.stdout.splitlines() == [
            "roi_align: gradcheck ok and gradients equal the reference (aligned, sampling 2; "
            "legacy, adaptive)",
            "shift_rows: gradcheck and gradgradcheck ok; the backward's own-op call is "
            "differentiated",
        ], run.stdout
    finally:
        bazel("shutdown", cwd=root, env=env, startup=startup, check=False)
    summary.append("own-op calls in formulas (Bazel): " + "; ".join(run.stdout.splitlines()))
