"""A kernel that its wrapper would only call with the wrapper's own parameters is registered
itself, and a shard of only such kernels, whose types have light declaring headers, includes
neither ATen/core/Tensor.h nor a precompiled header. End to end: the shards compiled with g++
against the wheel, linked with -Wl,--no-undefined and loaded in a fresh interpreter, each op
called."""

from __future__ import annotations

import pytest

from tests.support.compile_helpers import build_library, run_with_library
from tests.support.model_helpers import TAGS_YAML

pytestmark = pytest.mark.slow  # g++ over torch's headers

OPS = """\
- func: fwops::scale(Tensor self, float factor) -> Tensor
  dispatch:
    CPU: scale_cpu
- func: fwops::pick(Tensor self, int[] dims, Tensor? other=None, str mode="sum") -> (Tensor, Tensor)
  dispatch:
    CPU: pick_cpu
- func: fwops::bump_(Tensor(a!) self, SymInt n) -> Tensor(a!)
  dispatch:
    CPU: bump_cpu_
- func: fwops::noisy(Tensor self, Generator? generator=None) -> Tensor
  dispatch:
    CPU: noisy_cpu
"""
KERNEL = """\
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include "fwops/ops/scale_native.h"
#include "fwops/ops/pick_native.h"
#include "fwops/ops/bump_native.h"
#include "fwops/ops/noisy_native.h"
namespace at::native {
at::Tensor scale_cpu(const at::Tensor& self, double factor) { return self.mul(factor); }
std::tuple<at::Tensor, at::Tensor> pick_cpu(const at::Tensor& self, at::IntArrayRef dims,
                                            const std::optional<at::Tensor>& other,
                                            c10::string_view mode) {
  at::Tensor base = other.has_value() ? self.add(*other) : self;
  at::Tensor reduced = mode == "sum" ? base.sum(dims) : base.amax(dims);
  return {reduced, base};
}
at::Tensor& bump_cpu_(at::Tensor& self, int64_t n) { return self.add_(n); }
at::Tensor noisy_cpu(const at::Tensor& self, std::optional<at::Generator> generator) {
  return self.add(generator.has_value() ? 1 : 0);
}
}  // namespace at::native
"""
CHECK = """\
import sys, torch
torch.ops.load_library(sys.argv[1])
ops = torch.ops.fwops
x = torch.arange(6.0).reshape(2, 3)
assert ops.scale(x, 2.0).tolist() == (x * 2).tolist()
total, base = ops.pick(x, [1])
assert total.tolist() == [3.0, 12.0] and base.tolist() == x.tolist()
top, _ = ops.pick(x, [0], torch.ones(2, 3), "max")
assert top.tolist() == [4.0, 5.0, 6.0]
y = torch.zeros(2)
assert ops.bump_(y, 3) is y and y.tolist() == [3.0, 3.0]
assert ops.noisy(x, torch.Generator()).tolist() == (x + 1).tolist()
assert ops.noisy(x).tolist() == x.tolist()
print("ok")
"""


def _includes(text: str) -> list[str]:
    return [line.split(None, 1)[1] for line in text.splitlines() if line.startswith("#include")]


def test_forwarded_kernels_are_registered_themselves(tmp_path) -> None:
    from atengen.cli.main import main

    (tmp_path / "ops.yaml").write_text(OPS)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    out, inc = tmp_path / "generated", tmp_path / "include"
    argv = ["atengen", "generate", "--shards=0", "--keys=CPU", f"--op_yaml={tmp_path / 'ops.yaml'}"]
    argv += [f"--tags_yaml={tmp_path / 'tags.yaml'}", f"--output_dir={out}"]
    assert main([*argv, f"--header_output_dir={inc}"]) == 0
    shard = {op: (out / f"RegisterCPU_fwops_{op}.cpp").read_text() for op in ("scale", "pick")}
    for op, text in shard.items():
        # Boxed: torch's C shim carries every type of theirs (test_boxed_kernels.py).
        assert f'm.impl_boxed("{op}", &::atengen::boxed<&at::native::{op}_cpu>);' in text, text
        assert "wrapper_CPU_" not in text and "ATENGEN_PCH" not in text, text
        assert "<ATen/core/Tensor.h>" not in _includes(text), text
    assert _includes(shard["pick"]) == [
        "<ATen/core/ATen_fwd.h>",
        "<c10/util/string_view.h>",
        "<optional>",
        "<tuple>",
        '"atengen/library.h"',
    ]
    # A SymInt the kernel takes as an int: the wrapper converts it.
    bump = (out / "RegisterCPU_fwops_bump.cpp").read_text()
    assert 'm.impl("bump_", &wrapper_CPU_bump_);' in bump and "guard_int" in bump, bump
    # A type without a light declaring header: registered itself, from the usual includes.
    noisy = (out / "RegisterCPU_fwops_noisy.cpp").read_text()
    assert 'm.impl("noisy", &at::native::noisy_cpu);' in noisy, noisy
    assert "<ATen/core/Tensor.h>" in _includes(noisy) and "ATENGEN_PCH_LIGHT" in noisy, noisy

    (tmp_path / "kernel.cpp").write_text(KERNEL)
    sources = [*sorted(out.iterdir()), tmp_path / "kernel.cpp"]
    run_with_library(build_library(sources, inc, tmp_path / "libfwops.so"), CHECK)
