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

from tests.support.bazel_helpers import example_bazel, run_demo

pytestmark = pytest.mark.bazel

REPO = Path(__file__).resolve().parents[2]
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
    # shards = 2: two buckets of generated kernels and of Lazy registrations (no autograd ops).
    assert sources == [f"LazyNativeFunctions_b{i}.cpp" for i in range(2)] + [
        f"RegisterLazy_b{i}.cpp" for i in range(2)
    ], sources
    headers = sorted(p.name for p in (codegen / "include").iterdir())
    assert headers == [
        "LazyIr.h", "LazyIrCommon.h", *(f"LazyIr_b{i}.h" for i in range(2)),
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
