"""examples/privateuse1_backend: built with external_backend_codegen() from its own workspace
(which loads rules_aten through `local_repository(path = "../..")`), loaded into torch, and run.

The build uses an output base kept in the temporary directory between runs (keyed by this
checkout's path), so that a second run of the suite finds it up to date; it leaves no
convenience symlinks in the example (--symlink_prefix=/).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO, example_bazel, run_demo

pytestmark = pytest.mark.bazel

EXAMPLE = REPO / "examples" / "privateuse1_backend"


@pytest.fixture(scope="module")
def example_library(summary: list[str]) -> Path:
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    output_base = Path(tempfile.gettempdir()) / f"rules_aten_privateuse1_{key}"
    start = time.monotonic()
    # Both libraries in one build: they share device.cpp's sources and the generator's output.
    targets = ["//:libhost_device.so", "//:libhost_functional.so"]
    example_bazel(EXAMPLE, output_base, "build", "--symlink_prefix=/", *targets)
    summary.append(
        f"privateuse1 example: bazel build {' '.join(targets)} {time.monotonic() - start:.0f} s"
    )
    bin_dir = Path(example_bazel(EXAMPLE, output_base, "info", "bazel-bin").stdout.strip())
    yield bin_dir / "libhost_device.so"
    example_bazel(EXAMPLE, output_base, "shutdown", check=False)


def test_generated_tree(example_library: Path) -> None:
    codegen = example_library.parent / "host_device_codegen"
    sources = sorted(p.name for p in (codegen / "srcs.cc").iterdir())
    # AutogradPrivateUse1_b1.cpp: tanh's autograd kernel, generated from derivatives.yaml.
    assert sources == [
        "AutogradPrivateUse1_b1.cpp",
        "RegisterAutogradPrivateUse1_b0.cpp",
        "RegisterPrivateUse1_b0.cpp",
        "RegisterPrivateUse1_b1.cpp",
    ], sources
    # The root package: the header is included as "PrivateUse1NativeFunctions.h".
    assert [p.name for p in (codegen / "include").iterdir()] == ["PrivateUse1NativeFunctions.h"]
    for name in sources:
        text = (codegen / "srcs.cc" / name).read_text()
        assert str(REPO) not in text and "/tmp" not in text  # no absolute paths
        if name.startswith("Register"):
            assert '#include "PrivateUse1NativeFunctions.h"' in text
            assert '#include "host_device.h"' in text  # extra_headers


def test_program_runs_on_the_device_and_matches_cpu(example_library: Path) -> None:
    report = run_demo(EXAMPLE / "demo.py", example_library)
    assert len(report["checks"]) >= 18
    dispatch = report["details"]["dispatch"]
    assert "RegisterAutogradPrivateUse1_b0.cpp" in dispatch["relu"]["AutogradPrivateUse1"]
    assert "/host_device_codegen/srcs.cc/RegisterPrivateUse1_" in dispatch["add.out"]["PrivateUse1"]
    # Trained on hostdev through the generated AutogradPrivateUse1 kernel of tanh: equal to CPU.
    assert report["checks"]["train_generated_autograd"], report["details"]
    assert "/srcs.cc/AutogradPrivateUse1_b1.cpp" in dispatch["tanh"]["AutogradPrivateUse1"]
    losses = report["details"]["train_losses"]
    assert len(set(map(tuple, losses.values()))) == 1, losses
    # sub.out is listed under `structured:`: its three variants run torch's meta() and our impl().
    for op in ("sub.Tensor", "sub_.Tensor", "sub.out"):
        assert "/host_device_codegen/srcs.cc/RegisterPrivateUse1_" in dispatch[op]["PrivateUse1"]
    assert all(report["checks"][c] for c in ("structured_inplace", "structured_meta_checks"))


def test_functional_backend_registers_no_mutating_kernels(example_library: Path) -> None:
    """functional = True: the functional backend's sources register exactly the listed
    operators, and no out=/inplace copy-back wrappers (add_.Tensor, add.out)."""
    srcs = example_library.parent / "host_functional_codegen" / "srcs.cc"
    text = "".join(p.read_text() for p in sorted(srcs.iterdir()))
    registered = set(re.findall(r'm\.impl\("([\w.]+)"', text))
    yaml = (EXAMPLE / "backend_functional.yaml").read_text()
    supported = yaml.split("supported:")[1].split("device_guard:")[0]
    listed = set(re.findall(r"^  - (\S+)", supported, re.MULTILINE))
    assert registered == listed, sorted(registered ^ listed)
    assert "at::_copy_from" not in text  # what copy-back wrappers would call


def test_functional_backend_under_functionalize(example_library: Path) -> None:
    """functional_demo.py on libhost_functional.so, in a fresh interpreter: programs with
    inplace ops, out= calls, writes through views and inplace_view ops, functionalized, equal the
    CPU; every op that reached PrivateUse1 is listed in backend_functional.yaml (none through the
    fallback); without functionalize the same mutations and views fail in the fallback."""
    library = example_library.parent / "libhost_functional.so"
    details = run_demo(EXAMPLE / "functional_demo.py", library)["details"]
    # The mutation was rewritten, not copied back: functional kernels and view_copy/scatter ops.
    assert {"select_copy.int", "select_scatter", "view_copy"} <= set(details["through_views"])
    assert set(details["inplace"]) == {"abs", "add.Tensor", "clone", "mul.Tensor"}
    assert "fallback:add.out" in details["without_functionalize_calls"]
    assert "mutates its arguments" in details["without_functionalize"]["add_"]
    assert "returns a view" in details["without_functionalize"]["view"]


def test_missing_kernel_fails_the_build(tmp_path: Path) -> None:
    """The missing-kernel check: a kernel deleted from kernels.cpp fails `bazel build` of the
    library with the list of what is missing, before any C++ compiles (they wait for it)."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns("bazel-*"))
    workspace = (ws / "WORKSPACE").read_text()
    (ws / "WORKSPACE").write_text(workspace.replace('path = "../.."', f'path = "{REPO}"'))
    kernels = (ws / "kernels.cpp").read_text()
    start = kernels.index("at::Tensor PrivateUse1NativeFunctions::mul(")
    end = kernels.index("at::Tensor PrivateUse1NativeFunctions::abs(")
    (ws / "kernels.cpp").write_text(kernels[:start] + kernels[end:])
    output_base = tmp_path / "output_base"
    try:
        result = example_bazel(ws, output_base, "build", "//:libhost_device.so", check=False)
        assert result.returncode != 0
        assert (
            "PrivateUse1NativeFunctions is missing a kernel definition for mul. We found 0 "
            "kernel(s) with that name" in result.stderr
        ), result.stderr[-6000:]
        assert "backend.yaml:" in result.stderr
        assert "Compiling" not in result.stderr, result.stderr[-6000:]
        # With the kernel back, the check passes.
        (ws / "kernels.cpp").write_text(kernels)
        example_bazel(ws, output_base, "build", "//:host_device_codegen_kernel_check")
    finally:
        example_bazel(ws, output_base, "shutdown", check=False)


def test_backend_outside_the_root_package(tmp_path: Path) -> None:
    """The example as //some/pkg of a larger workspace: the kernels' "PrivateUse1NativeFunctions.h"
    and the YAML's extra_headers "host_device.h" are found there too (the generated header is
    some/pkg/PrivateUse1NativeFunctions.h under the tree; tests/slices/bazel7/test_bazel7.py builds the
    examples module the same way on Bazel 7), and the library loads and runs the demo."""
    ws = tmp_path / "ws"
    shutil.copytree(
        EXAMPLE, ws / "some" / "pkg", ignore=shutil.ignore_patterns("bazel-*", "WORKSPACE")
    )
    workspace = (EXAMPLE / "WORKSPACE").read_text()
    (ws / "WORKSPACE").write_text(workspace.replace('path = "../.."', f'path = "{REPO}"'))
    (ws / ".bazelrc").write_text((EXAMPLE / ".bazelrc").read_text())  # C++20, as the example's
    output_base = tmp_path / "output_base"
    try:
        example_bazel(
            ws, output_base, "build", "--symlink_prefix=/", "//some/pkg:libhost_device.so"
        )
        bin_dir = Path(example_bazel(ws, output_base, "info", "bazel-bin").stdout.strip())
        header = "some/pkg/host_device_codegen/include/some/pkg/PrivateUse1NativeFunctions.h"
        assert (bin_dir / header).is_file()
        # And it loads and runs: the example's demo, every check passed, on the device.
        report = run_demo(EXAMPLE / "demo.py", bin_dir / "some" / "pkg" / "libhost_device.so")
        dispatch = report["details"]["dispatch"]
        assert "some/pkg/host_device_codegen/" in dispatch["add.out"]["PrivateUse1"], dispatch
    finally:
        example_bazel(ws, output_base, "shutdown", check=False)
