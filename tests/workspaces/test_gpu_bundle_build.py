"""`./dev gpu-bundle` built here with a small op selection against torch 2.11.0+cu130 (the GPU
machines' build), and its script run with that torch up to where it needs a GPU: both libraries
load, the dispatcher serves the aten library's CUDA-key registrations and the example's CUDA and
Autograd kernels from the generated files, the example's CPU reference passes, and the script
stops with exit 77 and its no-GPU line.

Needs the venv of torch 2.11.0+cu130, named by $RULES_ATEN_GPU_BUNDLE_PYTHON, which
`./dev test-releases` sets (after installing the venv); without it every test here is skipped,
saying so, or fails with one line where the release slice is required (tests/support/slices.py). The two builds use the bundler's own output bases (the temp directory, keyed by this
checkout and the interpreter) and the shared disk cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import slices

REPO = Path(__file__).resolve().parents[2]
BUNDLER = REPO / "devtools" / "gpu_bundle" / "make_gpu_bundle.py"
PYTHON_ENV = "RULES_ATEN_GPU_BUNDLE_PYTHON"
PYTHON = os.environ.get(PYTHON_ENV, "")
# abs: a CPU/CUDA kernel pair; add: CUDA kernel from ufunc loops (structured add.out).
OPS = ("abs", "add")
NO_GPU_LINE = (
    "no GPU: torch.cuda.is_available() is False; both libraries loaded and their dispatch "
    "tables checked, the example's CPU reference computed; no CUDA kernel was run"
)

if not PYTHON:
    slices.missing(
        "releases",
        f"${PYTHON_ENV} is not set: `./dev test-releases` runs these with the venv of "
        "torch 2.11.0+cu130 (CI does)",
    )
if not os.access(PYTHON, os.X_OK):
    slices.missing(
        "releases",
        f"${PYTHON_ENV}={PYTHON} is not an interpreter: `./dev setup-torches` installs "
        "the venv of torch 2.11.0+cu130",
    )
pytestmark = [pytest.mark.bazel, pytest.mark.slow]


def bundler(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUNDLER), "--python", PYTHON, *args],
        capture_output=True,
        text=True,
        timeout=3600,
    )


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, summary: list[str]) -> Path:
    out = tmp_path_factory.mktemp("gpu") / "gpu-bundle"
    result = bundler("--out", str(out), "--ops", ",".join(OPS), "--no-check")
    assert result.returncode == 0, result.stderr[-6000:]
    summary.append(f"gpu-bundle ({','.join(OPS)}): {result.stderr.strip().splitlines()[-2]}")
    return out


def test_the_bundle_holds_both_libraries_the_script_and_a_true_manifest(bundle: Path) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    names = {"libaten_generated.so", "libcudaops.so", "run_gpu.py", "opinfo_records.py"}
    names |= {"libstableops.so", "stable_demo.py", "registrations.py", "stableops_registrations.py"}
    assert set(manifest["files"]) == names
    assert {p.name for p in bundle.iterdir()} == names | {"manifest.json"}
    for name, entry in manifest["files"].items():
        data = (bundle / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, name
    version = subprocess.run(
        [PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
    ).stdout.split()[-1]
    assert manifest["torch"] == version and manifest["ops"] == sorted(OPS)
    assert ["CUDA", "abs.out"] in manifest["cuda_registrations"]
    assert ["CUDA", "add.out"] in manifest["cuda_registrations"]
    assert {op.split(".")[0].rstrip("_") for _, op in manifest["cuda_registrations"]} <= set(OPS)
    for script in ("run_gpu.py", "opinfo_records.py"):
        assert (bundle / script).read_bytes() == (BUNDLER.parent / script).read_bytes()
    assert bundler("--verify", str(bundle)).returncode == 0


def test_the_libraries_load_and_serve_the_cuda_keys_from_the_generated_files(bundle: Path) -> None:
    """Read from the dispatcher here, apart from the script: after loading, aten::abs.out's and
    aten::add.out's CUDA kernels and the example op's CUDA kernel are the generated ones."""
    script = f"""
import torch
def cuda_line(op):
    return [l for l in torch._C._dispatch_dump(op).splitlines() if l.startswith("CUDA: ")]
before = cuda_line("aten::abs.out")
torch.ops.load_library({str(bundle / "libaten_generated.so")!r})
torch.ops.load_library({str(bundle / "libcudaops.so")!r})
print(before, cuda_line("aten::abs.out"), cuda_line("aten::add.out"),
      cuda_line("cudaops::mul_add_scalar"), sep="\\n")
"""
    result = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    before, abs_out, add_out, example = result.stdout.strip().splitlines()[-4:]
    assert "aten_generated_codegen" not in before and "registered at" in before
    assert "aten_generated_codegen/cuda.cc/" in abs_out
    assert "aten_generated_codegen/cuda.cc/" in add_out
    assert "cudaops_codegen/cuda.cc/" in example


def test_the_script_stops_at_the_gpu_with_exit_77_after_the_rest_passed(
    bundle: Path, tmp_path: Path
) -> None:
    summary_path = tmp_path / "out" / "gpu.json"
    result = subprocess.run(
        [PYTHON, str(bundle / "run_gpu.py"), "--json", str(summary_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 77, (result.stdout, result.stderr[-4000:])
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == NO_GPU_LINE
    assert "RESULT" not in result.stdout
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == "no_gpu" and summary["failures"] == []
    dispatch = summary["dispatch"]
    assert dispatch["not_served"] == [] and dispatch["served"] == dispatch["cuda_registrations"]
    assert dispatch["served"] >= 4  # abs.out and add.out at least, on CUDA
    assert dispatch["example_cuda_generated"] and dispatch["example_autograd_generated"]
    assert summary["example"] == {"cpu_forward": True, "cpu_gradcheck": True}
    assert summary["opinfos_selected"] >= len(OPS)


def test_an_op_without_a_cuda_kernel_is_refused_with_one_line(tmp_path: Path) -> None:
    # (`cholesky_solve` has an OpInfo, but its kernels are composite: no CUDA key)
    result = bundler("--out", str(tmp_path / "out"), "--ops", "abs,cholesky_solve,no_such_op")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0] == (
        f"gpu-bundle: error: selecting the ops with {PYTHON}: --ops: cholesky_solve, no_such_op: "
        "not an op root of torch 2.11.0+cu130 with a CUDA kernel and an OpInfo on cuda"
    )
    assert not (tmp_path / "out").exists()
