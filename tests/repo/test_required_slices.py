"""$RULES_ATEN_REQUIRED_SLICES (tests/support/slices.py): a slice whose venv, wheels or CUDA torch are
missing skips where it is not required, and fails with one line naming it where it is, as under
`./dev test-cuda`, `./dev test-releases` and `.ci/run`, which would otherwise stay green with the
slice skipped. pytest runs in a subprocess on the slices' modules, with what they need pointed at
a directory that does not exist; no test there gets as far as running Bazel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support.model_helpers import REPO
from tests.support.slices import REQUIRED_ENV, SLICES

# The modules, the slice each belongs to, and the start of the line its missing part gives.
MODULES = {
    "tests/workspaces/test_gpu_bundle_build.py": ("releases", "$RULES_ATEN_GPU_BUNDLE_PYTHON="),
    "tests/slices/releases/test_releases.py": ("releases", "$RULES_ATEN_RELEASES names "),
    "tests/slices/cuda/test_cuda_wheel.py": ("cuda", "needs a CUDA build of torch"),
    "tests/slices/remote/test_remote_execution.py": ("remote", "no BuildGrid ("),
}
# The fast tests take the one module that imports neither torch nor the generator (a second of
# CPU); the slow one all three.
LIGHT = "tests/workspaces/test_gpu_bundle_build.py"

pytestmark = pytest.mark.skipif(
    bool(torch.version.cuda), reason="needs .venv's CPU torch, on which the CUDA slice skips"
)


def _pytest(
    tmp_path: Path, required: str | None, *modules: str
) -> subprocess.CompletedProcess[str]:
    missing = tmp_path / "missing"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    env["RULES_ATEN_GPU_BUNDLE_PYTHON"] = str(missing / "venv-torch-2.11.0" / "bin" / "python")
    env["RULES_ATEN_RELEASES"] = str(missing / "releases" / "2.15.0" / "torch")
    env["RULES_ATEN_BUILDGRID_VENV"] = str(missing / "venv-buildgrid")
    if required is not None:
        env[REQUIRED_ENV] = required
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _assert_fails_naming_the_slices(tmp_path: Path, required: str, modules: list[str]) -> None:
    result = _pytest(tmp_path, required, *modules)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for module in modules:
        name, reason = MODULES[module]
        start = f'rules_aten: the required test slice "{name}" cannot run: {reason}'
        lines = [line for line in output.splitlines() if line.startswith(start)]
        assert len(lines) == 1, (module, output)  # the line, and no traceback
        assert str(tmp_path / "missing") in lines[0] or name == "cuda", lines[0]
        assert f"${REQUIRED_ENV}={required}; {SLICES[name]} sets it up" in lines[0], lines[0]
        assert f"ERROR {module} - Failed: rules_aten: " in output, output  # the short summary
    assert "Traceback" not in output, output


def test_a_required_slice_that_would_skip_fails_with_one_line_naming_it(tmp_path: Path) -> None:
    _assert_fails_naming_the_slices(tmp_path, "releases", [LIGHT])


def test_without_the_variable_it_skips_saying_why(tmp_path: Path) -> None:
    result = _pytest(tmp_path, None, LIGHT)
    output = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, output  # skipped
    assert "1 skipped" in output and MODULES[LIGHT][1] in output, output  # -ra: with its reason
    assert "required test slice" not in output, output


def test_a_slice_that_does_not_exist_stops_the_run(tmp_path: Path) -> None:
    result = _pytest(tmp_path, "releases,cdua", LIGHT)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert f"${REQUIRED_ENV} names cdua: the slices are cuda, releases" in result.stderr
    assert "passed" not in result.stdout and "skipped" not in result.stdout, result.stdout


@pytest.mark.slow
def test_every_slice_module_fails_when_required(tmp_path: Path) -> None:
    _assert_fails_naming_the_slices(tmp_path, "cuda,releases,remote", list(MODULES))
