"""Structured kernels in custom namespaces: the generated meta/impl classes and wrappers, the
errors of bad structured entries, and a backend's structured ops. Built with Bazel and checked in
torch: tests/workspace/test_structured_library.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO
from tests.support.model_helpers import TAGS_YAML, generate_into, run_cli

STRUCTURED_OPS = REPO / "tests" / "data" / "structured_ops"


@pytest.fixture
def tags_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tags.yaml"
    path.write_text(TAGS_YAML)
    return path


def generate(op_yaml: Path, tags_yaml: Path, tmp_path: Path):
    return generate_into(tmp_path, op_yaml, tags_yaml, "--shards=0")


def assert_one_error(result, path: Path, line: int, message: str, out: Path) -> None:
    """Exit 1 with one `path:line: error: ...message...` line, and nothing written."""
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{path}:{line}: error: "), lines[0]
    assert message in lines[0], lines[0]
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# What is generated


def test_headers_declare_meta_and_impl_classes(tmp_path: Path, tags_yaml: Path) -> None:
    result = generate(STRUCTURED_OPS / "ops.yaml", tags_yaml, tmp_path)
    assert result.returncode == 0, result.stderr
    ops = tmp_path / "inc" / "structured_ops" / "ops"
    assert sorted(p.name for p in ops.iterdir()) == [
        "muladd_meta.h",
        "muladd_native.h",
        "sumsq_meta.h",
        "sumsq_native.h",
    ]
    muladd_meta = (ops / "muladd_meta.h").read_text()
    assert "struct structured_muladd : public at::TensorIteratorBase {" in muladd_meta
    assert (
        "void meta(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha);"
        in muladd_meta
    )
    assert "#include <ATen/TensorIterator.h>" in muladd_meta
    assert (
        "#define STRUCTURED_OPS_META_FUNC(op) void ::structured_ops::meta::structured_##op::meta"
        in muladd_meta
    )
    sumsq_meta = (ops / "sumsq_meta.h").read_text()
    assert "struct structured_sumsq_dim : public at::impl::MetaBase {" in sumsq_meta
    assert "precompute_out<true> set_wrapped_dim(int64_t value) {" in sumsq_meta
    assert "meta_return_ty meta(const at::Tensor & self, int64_t dim, bool keepdim);" in sumsq_meta
    # impl() takes the precomputed wrapped_dim instead of dim, and the outputs last.
    sumsq_native = (ops / "sumsq_native.h").read_text()
    assert '#include "structured_ops/ops/sumsq_meta.h"' in sumsq_native
    assert (
        "struct structured_sumsq_out : public ::structured_ops::meta::structured_sumsq_dim {\n"
        "  void impl(const at::Tensor & self, int64_t wrapped_dim, bool keepdim, "
        "const at::Tensor & out);\n}"
    ) in sumsq_native
    # No plain kernel function is declared for the structured dispatch entry.
    assert "at::Tensor & sumsq_out(" not in sumsq_native


def test_every_variant_gets_kernels(tmp_path: Path, tags_yaml: Path) -> None:
    result = generate(STRUCTURED_OPS / "ops.yaml", tags_yaml, tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    registered = {}
    for path in out.glob("Register*.cpp"):
        key = re.match(r"Register(\w+?)_structured_ops_", path.name).group(1)
        registered.setdefault(key, set()).update(
            re.findall(r'm\.impl(?:_boxed)?\("([\w.]+)"', path.read_text())
        )
    every = {"muladd", "muladd_", "muladd.out", "sumsq.dim", "sumsq.dim_out"}
    assert registered["CPU"] == every
    assert registered["Meta"] == every
    # Backends with only an out= kernel get functional and in-place variants over it.
    assert registered["CompositeExplicitAutogradNonFunctional"] == {
        "muladd",
        "muladd_",
        "sumsq.dim",
    }
    assert registered["Functionalize"] == {"muladd_", "muladd.out", "sumsq.dim_out"}
    cpu = (out / "RegisterCPU_structured_ops_muladd.cpp").read_text()
    # The shard declares the classes itself (it includes no generated header).
    assert "namespace structured_ops::meta {\nstruct structured_muladd" in cpu
    assert "struct structured_muladd_out : public ::structured_ops::meta::structured_muladd" in cpu
    assert "structured_ops/ops/" not in cpu
    assert "final : public at::native::structured_muladd_out {" in cpu
    meta = (out / "RegisterMeta_structured_ops_muladd.cpp").read_text()
    assert "final : public structured_ops::meta::structured_muladd {" in meta
    assert "struct structured_muladd_out" not in meta


# ---------------------------------------------------------------------------------------------
# Bad input: one `file:line: error:` line each

BAD_STRUCTURED = [
    (
        "structured on a functional op",
        "- func: bad::f(Tensor self) -> Tensor\n  structured: True\n",
        2,
        "put structured: True on the out= variant; did you mean structured_delegate?",
    ),
    (
        "delegate to a missing op",
        "- func: bad::f(Tensor self) -> Tensor\n  structured_delegate: f.out\n",
        1,
        "'f' is a structured_delegate of 'f.out', which does not exist",
    ),
    (
        "precomputed on an op that is not structured",
        "- func: bad::f.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)\n"
        "  dispatch:\n    CPU: f_out\n  precomputed:\n  - dim -> int wrapped\n",
        4,
        "precomputed requires structured: True",
    ),
]


@pytest.mark.parametrize(
    "yaml, line, message", [c[1:] for c in BAD_STRUCTURED], ids=[c[0] for c in BAD_STRUCTURED]
)
def test_bad_structured_entries(
    tmp_path: Path, tags_yaml: Path, yaml: str, line: int, message: str
) -> None:
    op_yaml = tmp_path / "ops.yaml"
    op_yaml.write_text(yaml)
    result = generate(op_yaml, tags_yaml, tmp_path)
    assert_one_error(result, op_yaml, line, message, tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# Backends: `structured:` in a backend YAML (the op YAML is the installed torch's unless given)

BACKEND_HEAD = "backend: PrivateUse1\ncpp_namespace: my_backend\n"


def run_backend(tmp_path: Path, backend_yaml: str, *extra: str):
    path = tmp_path / "backend.yaml"
    path.write_text(backend_yaml)
    result = run_cli(
        "backend", f"--backend_yaml={path}", f"--output_dir={tmp_path / 'out'}", *extra
    )
    return path, result


def test_backend_structured_op_gets_every_variant(tmp_path: Path) -> None:
    _, result = run_backend(tmp_path, BACKEND_HEAD + "structured:\n  - sub.out\n")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    header = (out / "PrivateUse1NativeFunctions.h").read_text()
    assert "#include <ATen/ops/sub_meta.h>" in header
    assert (
        "struct structured_sub_out : public at::meta::structured_sub_Tensor {\n"
        "  void impl(const at::Tensor & self, const at::Tensor & other, "
        "const at::Scalar & alpha, const at::Tensor & out);\n};"
    ) in header
    text = "".join(p.read_text() for p in out.glob("Register*.cpp"))
    assert set(re.findall(r'm\.impl\("([\w.]+)"', text)) == {"sub.Tensor", "sub_.Tensor", "sub.out"}
    for variant in ("functional", "inplace", "out"):
        assert "final : public my_backend::structured_sub_out {" in text
        assert f"structured_sub_out_{variant} atg_op" in text
    # TensorIterator records outputs in the base class; out= resizes as aten's wrappers do.
    assert "my_backend::structured_sub_out::set_output_raw_strided(" in text
    assert "atengen::resize_out(out, sizes, strides, options);" in text


def test_backend_structured_kernel_check(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels.cpp"
    kernels.write_text("// nothing yet\n")
    path, result = run_backend(
        tmp_path, BACKEND_HEAD + "structured:\n  - sub.out\n", f"--impl_path={kernels}"
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{path}:4: error: my_backend::structured_sub_out::impl is defined 0 times in "
        f"{kernels}; the structured op 'sub.out' needs exactly one definition"
    )
    kernels.write_text(
        "void my_backend::structured_sub_out::impl(const at::Tensor& self, const at::Tensor& "
        "other, const at::Scalar& alpha, const at::Tensor& out) {}\n"
    )
    _, ok = run_backend(
        tmp_path, BACKEND_HEAD + "structured:\n  - sub.out\n", f"--impl_path={kernels}"
    )
    assert ok.returncode == 0, ok.stderr


def test_backend_structured_takes_the_meta_classes_the_wheel_exports(tmp_path: Path) -> None:
    """With --torch_facts (what @torch read of the wheel, as the rule passes it), the meta
    classes a structured op reuses are the wheel's own exports."""
    from torch_probe import probe

    facts = probe("")
    assert "sub_Tensor" in facts["structured_meta_classes"]
    exported = tmp_path / "facts.json"
    exported.write_text(json.dumps(facts))
    (tmp_path / "a").mkdir()
    _, ok = run_backend(
        tmp_path / "a", BACKEND_HEAD + "structured:\n  - sub.out\n", f"--torch_facts={exported}"
    )
    assert ok.returncode == 0, ok.stderr
    facts["structured_meta_classes"].remove("sub_Tensor")
    lacking = tmp_path / "lacking.json"
    lacking.write_text(json.dumps(facts))
    (tmp_path / "b").mkdir()
    path, result = run_backend(
        tmp_path / "b", BACKEND_HEAD + "structured:\n  - sub.out\n", f"--torch_facts={lacking}"
    )
    assert_one_error(
        result,
        path,
        4,
        "'sub.out' is structured in the op YAML, but the installed torch has no meta class "
        "at::meta::structured_sub_Tensor to reuse",
        tmp_path / "b" / "out",
    )


# An aten op structured in this YAML whose meta class the installed torch does not export.
NOT_IN_THE_WHEEL = """\
- func: frobnicate.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: frobnicate_out
- func: frobnicate(Tensor self) -> Tensor
  structured_delegate: frobnicate.out
"""

BAD_BACKEND_STRUCTURED = [
    (
        "meta class not in the wheel",
        "structured:\n  - frobnicate.out\n",
        4,
        "'frobnicate.out' is structured in the op YAML, but the installed torch has no meta "
        "class at::meta::structured_frobnicate to reuse",
    ),
    (
        "not structured",
        "structured:\n  - abs.out\n",
        4,
        "'abs.out' is not the out= variant of a structured op",
    ),
    (
        "functional variant instead of out=",
        "structured:\n  - sub.Tensor\n",
        4,
        "did you mean 'sub.out'?",
    ),
    (
        "variant listed twice",
        "supported:\n  - sub_.Tensor\nstructured:\n  - sub.out\n",
        4,
        "'sub_.Tensor' gets a generated kernel from 'sub.out' (line 6, \"structured\")",
    ),
]


@pytest.mark.parametrize(
    "yaml, line, message",
    [c[1:] for c in BAD_BACKEND_STRUCTURED],
    ids=[c[0] for c in BAD_BACKEND_STRUCTURED],
)
def test_bad_backend_structured(
    tmp_path: Path, tags_yaml: Path, yaml: str, line: int, message: str
) -> None:
    extra: tuple[str, ...] = ()
    if "frobnicate" in yaml:
        op_yaml = tmp_path / "ops.yaml"
        op_yaml.write_text(NOT_IN_THE_WHEEL)
        extra = (f"--op_yaml={op_yaml}", f"--tags_yaml={tags_yaml}")
    path, result = run_backend(tmp_path, BACKEND_HEAD + yaml, *extra)
    assert_one_error(result, path, line, message, tmp_path / "out")
