"""Kernels of custom operators registered boxed, through torch's C shim (m.impl_boxed): which
operators get them, that a library of only those compiles its kernel-signature source without
torch/library.h, and, end to end, that every type they take and return reaches the kernel and
comes back: the sources compiled with g++ against the wheel, loaded in a fresh interpreter and
called from Python, with opcheck, torch.compile and the tensors' reference counts. The same
library is also built against torch 2.11.0 and 2.15.0 and loaded into them (their release venvs;
skipped, saying so, without them: `./dev test-releases` runs it after installing them)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.compile_helpers import build_library, cxxflags, run_with_library
from tests.support.model_helpers import TAGS_YAML, generate_into
from tests.support.release_venvs import installed_venv

BOXED_SCHEMAS = [
    "(Tensor self, float factor) -> Tensor",
    "(Tensor(a!) self, int n) -> Tensor(a!)",
    "(Tensor self, Tensor? w, int[] dims, float[2] fs, str mode, Tensor[] ts) -> (Tensor, Tensor)",
    "(Tensor self, int? n, ScalarType dtype, ScalarType? other, bool flag, float? e, bool? b) -> Tensor",
    "(Tensor[] ts, *, Tensor(a!) out) -> ()",
    "(Tensor self, int n) -> Tensor[]",
    "(Tensor self) -> (int, float, bool)",
]
TYPED_SCHEMAS = [
    "(Tensor self, SymInt n) -> Tensor",
    "(Tensor self, Scalar s) -> Tensor",
    "(Tensor self, Generator? g=None) -> Tensor",
    "(Tensor self, Device d) -> Tensor",
    "(Tensor self, Layout l) -> Tensor",
    "(Tensor self, MemoryFormat m) -> Tensor",
    "(Tensor self, int[]? dims) -> Tensor",
    "(Tensor self, Tensor?[] ts) -> Tensor",
    "(Tensor self, str? mode) -> Tensor",
    "(Tensor self, bool[3] mask) -> Tensor",
    "(Tensor self, SymInt[] sizes) -> Tensor",
    "(Tensor self) -> Tensor?",
    "(Tensor self) -> SymInt",
    "(Tensor self) -> Scalar",
]


def _registration(tmp_path, schema: str, namespace: str = "bx") -> str:
    yaml = f"- func: {namespace}::op{schema}\n  dispatch:\n    CPU: op_cpu\n"
    (tmp_path / "ops.yaml").write_text(yaml)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    r = generate_into(tmp_path, tmp_path / "ops.yaml", tmp_path / "tags.yaml", "--keys=CPU")
    assert r.returncode == 0, r.stderr
    (shard,) = (tmp_path / "out").glob("RegisterCPU_*.cpp")
    return shard.read_text()


@pytest.mark.parametrize("schema", BOXED_SCHEMAS)
def test_types_the_shim_carries_are_registered_boxed(tmp_path, schema) -> None:
    text = _registration(tmp_path, schema)
    assert 'm.impl_boxed("op", &::atengen::boxed<&' in text, text
    assert 'm.impl("op"' not in text, text


@pytest.mark.parametrize("schema", TYPED_SCHEMAS)
def test_other_types_are_registered_typed(tmp_path, schema) -> None:
    text = _registration(tmp_path, schema)
    assert 'm.impl("op", &' in text and "impl_boxed" not in text, text


def test_aten_operators_are_registered_typed(tmp_path) -> None:
    # Their C++ callers (at::_ops) would box every argument to reach a boxed kernel.
    text = _registration(tmp_path, "(Tensor self, float factor) -> Tensor", namespace="aten")
    assert 'm.impl("op", &' in text and "impl_boxed" not in text, text


def _includes(text: str) -> list[str]:
    return re.findall(r"^#include (\S+)", text, re.MULTILINE)


def test_only_typed_signatures_and_tags_need_torch_library_h(tmp_path) -> None:
    boxed_only = "- func: bx::a(Tensor self) -> Tensor\n  dispatch:\n    CPU: a_cpu\n"
    tagged = "- func: bx::t(Tensor self) -> Tensor\n  tags: pt2_compliant_tag\n"
    typed = "- func: bx::s(Tensor self, Scalar s) -> Tensor\n  dispatch:\n    CPU: s_cpu\n"
    for name, yaml, wants_library_h in (
        ("boxed", boxed_only, False),
        ("tagged", boxed_only + tagged, True),
        ("typed", boxed_only + typed, True),
    ):
        work = tmp_path / name
        work.mkdir()
        (work / "ops.yaml").write_text(yaml)
        (work / "tags.yaml").write_text(TAGS_YAML)
        r = generate_into(work, work / "ops.yaml", work / "tags.yaml", "--keys=CPU")
        assert r.returncode == 0, r.stderr
        (signatures,) = (work / "out").glob("KernelSignatures_*.cpp")
        includes = _includes(signatures.read_text())
        assert ("<torch/library.h>" in includes) == wants_library_h, (name, includes)
        assert '"atengen/shim_library.h"' in includes, includes
        assert '"atengen/boxed_kernels.h"' in includes, includes  # bx::a, in every one


OPS = """\
- func: bx::scale(Tensor self, float factor) -> Tensor
  dispatch:
    CPU: scale_cpu
    Meta: scale_meta
    QuantizedMeta: scale_meta
- func: bx::scale_(Tensor(a!) self, float factor) -> Tensor(a!)
  dispatch:
    CPU: scale_cpu_
- func: bx::scale.out(Tensor self, float factor, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: scale_out_cpu
- func: bx::many(Tensor self, Tensor? w, int[] dims, float[] fs, str mode, Tensor[] ts, int? n, ScalarType dtype, ScalarType? other, bool flag, float? eps, bool? b) -> (Tensor, Tensor)
  dispatch:
    CPU: many_cpu
- func: bx::accumulate(Tensor[] ts, *, Tensor(a!) out) -> ()
  dispatch:
    CPU: accumulate_cpu
- func: bx::chunks(Tensor self, int n) -> Tensor[]
  dispatch:
    CPU: chunks_cpu
- func: bx::stats(Tensor self) -> (int, float, bool)
  dispatch:
    CPU: stats_cpu
- func: bx::shift(Tensor self, Scalar amount) -> Tensor
  tags: pt2_compliant_tag
  dispatch:
    CPU: shift_cpu
"""
KERNELS = """\
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include "bx/ops/scale_native.h"
#include "bx/ops/many_native.h"
#include "bx/ops/accumulate_native.h"
#include "bx/ops/chunks_native.h"
#include "bx/ops/stats_native.h"
#include "bx/ops/shift_native.h"
namespace at::native {
at::Tensor scale_cpu(const at::Tensor& self, double factor) {
  TORCH_CHECK(factor != 13, "bx::scale: factor 13 is refused");
  return self.mul(factor);
}
at::Tensor scale_meta(const at::Tensor& self, double factor) { return at::empty_like(self); }
at::Tensor& scale_cpu_(at::Tensor& self, double factor) { return self.mul_(factor); }
at::Tensor& scale_out_cpu(const at::Tensor& self, double factor, at::Tensor& out) {
  out.resize_(self.sizes());
  return out.copy_(self.mul(factor));
}
std::tuple<at::Tensor, at::Tensor> many_cpu(
    const at::Tensor& self, const std::optional<at::Tensor>& w, at::IntArrayRef dims,
    at::ArrayRef<double> fs, c10::string_view mode, at::TensorList ts, std::optional<int64_t> n,
    at::ScalarType dtype, std::optional<at::ScalarType> other, bool flag, std::optional<double> eps,
    std::optional<bool> b) {
  // Each argument adds a distinct amount, so a misread one shows in the sum.
  double s = 0;
  for (int64_t d : dims) s += d;
  for (double f : fs) s += 10 * f;
  s += 100 * static_cast<double>(mode.size());
  for (const auto& t : ts) s += 1000 * t.sum().item<double>();
  s += 10000 * n.value_or(-1);
  s += other.has_value() ? 100000 : 0;
  s += flag ? 1000000 : 0;
  s += eps.value_or(0.5);
  s += b.has_value() ? (*b ? 0.25 : 0.125) : 0;
  at::Tensor sum = self.add(s);
  return {w.has_value() ? sum.mul(*w) : sum, self.to(other.value_or(dtype))};
}
void accumulate_cpu(at::TensorList ts, at::Tensor& out) {
  for (const auto& t : ts) out.add_(t);
}
std::vector<at::Tensor> chunks_cpu(const at::Tensor& self, int64_t n) { return self.split(n); }
std::tuple<int64_t, double, bool> stats_cpu(const at::Tensor& self) {
  return {self.numel(), self.sum().item<double>(), self.is_contiguous()};
}
at::Tensor shift_cpu(const at::Tensor& self, const at::Scalar& amount) { return self.add(amount); }
}  // namespace at::native
"""
CHECK = """\
import sys, torch
from torch.library import opcheck
torch.ops.load_library(sys.argv[1])
ops = torch.ops.bx
x = torch.arange(4.0)
assert ops.scale(x, 2.0).tolist() == [0.0, 2.0, 4.0, 6.0]
y = x.clone()
assert ops.scale_(y, 3.0) is y and y.tolist() == [0.0, 3.0, 6.0, 9.0]
out = torch.empty(0)
assert ops.scale.out(x, 0.5, out=out) is out and out.tolist() == [0.0, 0.5, 1.0, 1.5]
a, b = ops.many(x, torch.full((4,), 2.0), [1, 2], [0.25, 0.5], "abc", [torch.ones(2)],
                3, torch.float64, torch.int32, True, None, False)
s = 3 + 7.5 + 300 + 2000 + 30000 + 100000 + 1000000 + 0.5 + 0.125
assert a.tolist() == ((x + s) * 2).tolist(), a
assert b.dtype == torch.int32
a, b = ops.many(x, None, [], [], "", [], None, torch.float16, None, False, 1.5, None)
assert a.tolist() == (x + (-10000 + 1.5)).tolist() and b.dtype == torch.float16, a
acc = torch.zeros(2)
assert ops.accumulate([torch.ones(2), torch.full((2,), 2.0)], out=acc) is None
assert acc.tolist() == [3.0, 3.0]
assert [c.tolist() for c in ops.chunks(torch.arange(5.0), 2)] == [[0.0, 1.0], [2.0, 3.0], [4.0]]
assert ops.stats(x) == (4, 6.0, True)
assert ops.shift(x, 1).tolist() == [1.0, 2.0, 3.0, 4.0]
assert torch.Tag.pt2_compliant_tag in ops.shift.default.tags
assert "QuantizedMeta: registered at" in torch._C._dispatch_dump("bx::scale")
try:
    ops.scale(x, 13.0)
    raise AssertionError("no error")
except RuntimeError as e:
    assert "factor 13 is refused" in str(e), e
# Each call releases what it was handed and what it returned: the tensors' counts stay.
z = torch.zeros(2)
before = (x._use_count(), y._use_count(), z._use_count(), acc._use_count())
for _ in range(200):
    ops.scale(x, 1.0); ops.scale_(y, 1.0); ops.accumulate([z], out=acc); ops.chunks(x, 1)
assert (x._use_count(), y._use_count(), z._use_count(), acc._use_count()) == before
opcheck(ops.scale.default, (torch.randn(3), 2.0))
compiled = torch.compile(lambda t: ops.scale(t, 3.0) + 1, fullgraph=True, backend="eager")
assert compiled(torch.ones(2)).tolist() == [4.0, 4.0]
print("ok")
"""


def _generate_library(tmp_path: Path) -> list[Path]:
    """The sources of OPS' library (generated, and KERNELS)."""
    (tmp_path / "ops.yaml").write_text(OPS)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    r = generate_into(
        tmp_path,
        tmp_path / "ops.yaml",
        tmp_path / "tags.yaml",
        "--keys=CPU,Meta,QuantizedMeta",
        "--shards=0",
    )
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    boxed = {
        op
        for p in out.glob("Register*.cpp")
        for op in re.findall(r'impl_boxed\("([\w.]+)"', p.read_text())
    }
    assert boxed == {"scale", "scale_", "scale.out", "many", "accumulate", "chunks", "stats"}
    # torch's C shim cannot name QuantizedMeta: torch/library.h makes that library object.
    quantized = (out / "RegisterQuantizedMeta_bx_scale.cpp").read_text()
    assert "ATENGEN_TYPED_LIBRARY_IMPL(bx, QuantizedMeta, m)" in quantized, quantized
    (tmp_path / "kernels.cpp").write_text(KERNELS)
    return [*sorted(out.iterdir()), tmp_path / "kernels.cpp"]


@pytest.mark.slow  # g++ over torch's headers
def test_boxed_kernels_take_and_return_every_carried_type(tmp_path) -> None:
    sources = _generate_library(tmp_path)
    run_with_library(build_library(sources, tmp_path / "inc", tmp_path / "libbx.so"), CHECK)


_WHEEL_FLAGS = """\
import os, torch, torch.utils.cpp_extension as c
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
print("\\n".join(c.include_paths()))
"""


@pytest.mark.slow  # g++ over each release's headers
@pytest.mark.parametrize("version", ["2.11.0", "2.15.0"])
def test_boxed_kernels_in_other_releases(tmp_path, version) -> None:
    """The library built against another release's headers, in that release's encoding of the
    stack, and loaded into it: the same checks."""
    venv = installed_venv(version)
    if venv is None:
        pytest.skip(f"no release venv of torch {version}: `./dev test-releases` installs it")
    python = str(venv / "bin" / "python")
    abi, lib_dir, *includes = subprocess.run(
        [python, "-c", _WHEEL_FLAGS], capture_output=True, text=True, check=True
    ).stdout.split()
    flags = cxxflags(int(abi), [Path(i) for i in includes])
    lib = build_library(
        _generate_library(tmp_path), tmp_path / "inc", tmp_path / "libbx.so", flags, Path(lib_dir)
    )
    run_with_library(lib, CHECK, python)
