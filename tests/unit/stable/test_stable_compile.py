"""A stable-ABI library built once and loaded into two torch releases: the quickstart's
`myops::scale` and an op whose kernel calls ATen through the generated call API
(`atengen::stable::mul`, `cat`, `empty_like`, `contiguous`), compiled with g++ against the 2.13
wheel for target 2.11, then loaded with `torch.ops.load_library` into torch 2.13 (.venv) and
torch 2.11 (its release venv; skipped, saying so, without it) and checked against Python and
`torch.library.opcheck`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.model_helpers import run_cli
from tests.support.release_venvs import installed_venv
from tests.unit.stable.test_stable_releases import installed_torch_dirs

pytestmark = pytest.mark.slow

OPS_YAML = """\
- func: myops::scale(Tensor self, float factor) -> Tensor
  dispatch:
    CPU: scale_cpu

- func: myops::mulcat(Tensor a, Tensor b, int dim=0) -> Tensor
  dispatch:
    CompositeExplicitAutograd: mulcat
"""

# Written by hand, as a user would: stable types only.
KERNELS = """\
#include "myops/ops/mulcat_native.h"
#include "myops/ops/scale_native.h"

#include "atengen/stable/ops/cat.h"
#include "atengen/stable/ops/contiguous.h"
#include "atengen/stable/ops/empty_like.h"
#include "atengen/stable/ops/mul.h"

namespace myops {

torch::stable::Tensor scale_cpu(const torch::stable::Tensor& self, double factor) {
  STD_TORCH_CHECK(
      self.scalar_type() == torch::headeronly::ScalarType::Float, "scale: float32 only");
  torch::stable::Tensor in = atengen::stable::contiguous(self);
  torch::stable::Tensor out = atengen::stable::empty_like(in);
  const float* x = static_cast<const float*>(in.const_data_ptr());
  float* y = static_cast<float*>(out.mutable_data_ptr());
  for (int64_t i = 0; i < in.numel(); ++i) {
    y[i] = static_cast<float>(x[i] * factor);
  }
  return out;
}

torch::stable::Tensor mulcat(
    const torch::stable::Tensor& a, const torch::stable::Tensor& b, int64_t dim) {
  return atengen::stable::cat({atengen::stable::mul(a, b), a}, dim);
}

}  // namespace myops
"""

CHECK = """\
import sys
import torch
torch.ops.load_library(sys.argv[1])

@torch.library.register_fake("myops::scale")
def _(self, factor):
    return torch.empty_like(self)

x = torch.randn(7)
torch.testing.assert_close(torch.ops.myops.scale(x, 2.5), x * 2.5, rtol=0, atol=0)
torch.testing.assert_close(torch.ops.myops.scale(x[::2], -1.0), -x[::2])
a, b = torch.randn(2, 3), torch.randn(2, 3)
torch.testing.assert_close(torch.ops.myops.mulcat(a, b), torch.cat([a * b, a]))
torch.testing.assert_close(torch.ops.myops.mulcat(a, b, 1), torch.cat([a * b, a], 1))
torch.library.opcheck(torch.ops.myops.scale.default, (x, 2.0))
torch.library.opcheck(torch.ops.myops.mulcat.default, (a, b, 1))
print("OK", torch.__version__)
"""

TORCH_DIRS = installed_torch_dirs()
TORCH_2_11 = installed_venv("2.11.0")


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("stable")
    (d / "ops.yaml").write_text(OPS_YAML)
    (d / "kernels.cpp").write_text(KERNELS)
    torch_dir = TORCH_DIRS["2.13"]
    # The call API from the target release's own op YAML where it is installed.
    yaml_torch = TORCH_DIRS.get("2.11", torch_dir)
    aten_yaml = yaml_torch.parent / "torchgen" / "packaged" / "ATen" / "native"
    r = run_cli(
        "stable",
        f"--op_yaml={d / 'ops.yaml'}",
        f"--tags_yaml={aten_yaml / 'tags.yaml'}",
        "--target=2.11",
        f"--output_dir={d / 'out'}",
        f"--header_output_dir={d / 'inc'}",
    )
    assert r.returncode == 0, r.stderr
    r = run_cli(
        "stable",
        f"--op_yaml={aten_yaml / 'native_functions.yaml'}",
        "--ops=mul,cat,empty_like,contiguous",
        "--target=2.11",
        f"--call_api_dir={d / 'api'}",
    )
    assert r.returncode == 0, r.stderr
    sources = sorted((d / "out").glob("*.cpp")) + [d / "kernels.cpp"]
    lib = d / "libmyops_stable.so"
    compile_cmd = [
        "g++",
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-O1",
        "-DTORCH_TARGET_VERSION=0x020B000000000000",
        f"-I{torch_dir / 'include'}",
        f"-I{d / 'inc'}",
        f"-I{d / 'api'}",
        *map(str, sources),
        "-o",
        str(lib),
        f"-L{torch_dir / 'lib'}",
        "-ltorch_cpu",
    ]
    result = subprocess.run(compile_cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-5000:]
    return lib


def test_no_unstable_symbols(library):
    undefined = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    unstable = [
        line
        for line in undefined.splitlines()
        if any(s in line for s in ("_ZN2at", "_ZN3c10", "_ZN5torch"))
    ]
    assert not unstable, "\n".join(unstable)
    assert "torch_call_dispatcher" in undefined


def _check(python: str, library: Path) -> None:
    # A fresh interpreter: a library loads once per process, and each torch is its own venv.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [python, "-c", CHECK, str(library)], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr[-5000:]
    return r.stdout


def test_loads_into_torch_2_13(library):
    assert _check(sys.executable, library).startswith("OK 2.13")


def test_the_same_library_loads_into_torch_2_11(library):
    if TORCH_2_11 is None:
        pytest.skip("no torch 2.11 venv installed (./dev setup-torches)")
    assert _check(str(TORCH_2_11 / "bin" / "python"), library).startswith("OK 2.11")
