"""End to end: a custom namespace's factory op (TensorOptions arguments, no tensor argument)
reaches its CPU kernel through the generated BackendSelect kernel. Without one the dispatcher
has no tensor to pick a backend from and raises ("There were no tensor arguments to this
function"). Compiled with g++ against the wheel, loaded in a fresh interpreter."""

from __future__ import annotations

import pytest

from tests.support.compile_helpers import build_library, run_with_library
from tests.support.model_helpers import TAGS_YAML

pytestmark = pytest.mark.slow  # g++ over torch's headers

OPS = """\
- func: bsops::filled(int n, Scalar value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CPU: filled_cpu
"""
KERNEL = """\
#include "bsops/ops/filled_native.h"
#include <ATen/ATen.h>
namespace at::native {
at::Tensor filled_cpu(int64_t n, const at::Scalar& value, std::optional<at::ScalarType> dtype,
                      std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>) {
  return at::full({n}, value, at::TensorOptions().dtype(dtype.value_or(at::kFloat)));
}
}  // namespace at::native
"""
CHECK = """\
import sys, torch
torch.ops.load_library(sys.argv[1])
a = torch.ops.bsops.filled(3, 2.5)
b = torch.ops.bsops.filled(2, 4, dtype=torch.float64)
assert a.tolist() == [2.5, 2.5, 2.5] and a.dtype == torch.float32, a
assert b.tolist() == [4.0, 4.0] and b.dtype == torch.float64, b
dump = torch._C._dispatch_dump("bsops::filled")
assert any(line.startswith("BackendSelect:") for line in dump.splitlines()), dump
print("ok")
"""


def test_a_custom_factory_op_is_called_through_backend_select(tmp_path) -> None:
    from atengen.cli.main import main

    (tmp_path / "ops.yaml").write_text(OPS)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    out, inc = tmp_path / "generated", tmp_path / "include"
    argv = ["atengen", "generate", "--shards=0", f"--op_yaml={tmp_path / 'ops.yaml'}"]
    argv += [f"--tags_yaml={tmp_path / 'tags.yaml'}", f"--output_dir={out}"]
    assert main([*argv, f"--header_output_dir={inc}"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "KernelSignatures_b0.cpp",
        "RegisterBackendSelect_bsops_filled.cpp",
        "RegisterCPU_bsops_filled.cpp",
        "RegisterSchema_bsops_filled.cpp",
    ]
    (tmp_path / "kernel.cpp").write_text(KERNEL)
    sources = [out / n for n in names] + [tmp_path / "kernel.cpp"]
    run_with_library(build_library(sources, inc, tmp_path / "libbsops.so"), CHECK)
