"""examples/lazy_backend: the TorchScript lazy backend regenerated with external_backend_codegen()
from its own workspace, compiled against the wheel, loaded over the built-in Lazy kernels, and run.

Like the privateuse1 example's test, the build keeps its output base in the temporary directory
between runs (keyed by this checkout's path) and leaves no convenience symlinks.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from pathlib import Path

import pytest

from tests import bazel_helpers
from tests.bazel_helpers import example_bazel, run_demo

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "lazy_backend"
PROGRAMS = ("elementwise", "reduction", "matmul", "views_inplace", "mlp_train_step")


@pytest.fixture(scope="module")
def example_library(summary: list[str]) -> Path:
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    output_base = Path(tempfile.gettempdir()) / f"rules_aten_lazy_example_{key}"
    start = time.monotonic()
    example_bazel(EXAMPLE, output_base, "build", "--symlink_prefix=/", "//:libts_lazy.so")
    summary.append(f"lazy example: bazel build //:libts_lazy.so {time.monotonic() - start:.0f} s")
    bin_dir = Path(example_bazel(EXAMPLE, output_base, "info", "bazel-bin").stdout.strip())
    yield bin_dir / "libts_lazy.so"
    example_bazel(EXAMPLE, output_base, "shutdown", check=False)


def test_generated_trees(example_library: Path) -> None:
    codegen = example_library.parent / "ts_lazy_codegen"
    sources = sorted(p.name for p in (codegen / "srcs.cc").iterdir())
    # shards = 4: four buckets of generated kernels and of Lazy registrations (no autograd ops).
    assert sources == [f"LazyNativeFunctions_b{i}.cpp" for i in range(4)] + [
        f"RegisterLazy_b{i}.cpp" for i in range(4)
    ], sources
    headers = sorted(p.name for p in (codegen / "include").iterdir())
    assert headers == [
        "LazyIr.h", "LazyIrCommon.h", *(f"LazyIr_b{i}.h" for i in range(4)),
        "LazyNativeFunctions.h", "LazyNonNativeIr.h",
    ]  # fmt: skip
    for name in sources:
        text = (codegen / "srcs.cc" / name).read_text()
        assert str(REPO) not in text and "/tmp" not in text  # no absolute paths
        assert "force_eager_fallback" not in text and "ltc_eager_fallback" not in text
    kernels = (codegen / "srcs.cc" / "LazyNativeFunctions_b0.cpp").read_text()
    assert '#include "torch/csrc/lazy/core/shape_inference.h"' in kernels
    assert re.search(r'#include "LazyIr_b0\.h"', kernels)


def test_programs_run_on_lazy_with_the_generated_kernels(example_library: Path) -> None:
    # demo.py runs its built-in reference in a separate interpreter, where our library is never
    # loaded; run_demo takes the absolute path as is.
    report = run_demo(str(EXAMPLE / "demo.py"), example_library)
    checks = report["checks"]
    assert len(checks) == 5 * len(PROGRAMS), sorted(checks)
    dispatch = report["details"]["dispatch"]
    assert "/ts_lazy_codegen/srcs.cc/RegisterLazy_" in dispatch["mm"]
    ir = report["details"]["ir"]["matmul"]
    assert "aten::mm" in ir and "aten::addmm" in ir and "N12lazy_example2MmE" in ir


def test_ltc_attributes_reach_the_generated_code() -> None:
    """external_backend_codegen's LTC attributes in a package below the root (generation only):
    the node base and its header, a shape-inference header of the package, checked and included
    by its workspace-relative path, no TorchScript lowerings, headers under the package."""
    target = "//tests/data/lazy:custom_lazy_codegen"
    bazel_helpers.bazel("build", target)
    bin_dir = Path(bazel_helpers.bazel("info", "bazel-bin").stdout.strip())
    codegen = bin_dir / "tests" / "data" / "lazy" / "custom_lazy_codegen"
    headers = codegen / "include" / "tests" / "data" / "lazy"
    assert sorted(p.name for p in headers.iterdir()) == [
        "LazyIr.h", "LazyIrCommon.h", "LazyIr_abs.h", "LazyIr_mm.h", "LazyIr_selu.h",
        "LazyNonNativeIr.h", "XLANativeFunctions.h",
    ]  # fmt: skip
    common = (headers / "LazyIrCommon.h").read_text()
    assert '#include "tests/data/lazy/test_node.h"' in common
    assert "ts_lowering_context.h" not in common
    abs_node = (headers / "LazyIr_abs.h").read_text()
    assert re.search(r"class Abs : public test_lazy::TestNode\b", abs_node), abs_node
    assert "Lower(" not in abs_node
    kernels = (codegen / "srcs.cc" / "XLANativeFunctions_abs.cpp").read_text()
    assert '#include "tests/data/lazy/test_shape_inference.h"' in kernels
    assert '#include "tests/data/lazy/LazyIr_abs.h"' in kernels
    assert "torch/csrc/lazy/core/shape_inference.h" not in kernels
