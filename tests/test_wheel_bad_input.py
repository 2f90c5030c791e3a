"""aten_wheel's action (tool/aten_wheel.py) without Bazel: each bad input is one
`rules_aten: <label>: ...` line, exit 1 and no wheel (a library with no custom operator, a
version that is not PEP 440, a distribution that is not a valid package name, py_srcs importing
what the wheel neither ships nor requires); a good one gives the same bytes twice and the typed
stub; the manylinux table of the C++ runtime equals auditwheel's policies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tests.bazel_helpers import REPO

TOOL = REPO / "tool"
TAGS = Path(__import__("torchgen").__file__).parent / "packaged" / "ATen" / "native" / "tags.yaml"
OPS = REPO / "examples" / "stable_ops" / "ops.yaml"
# Any shared library stands in for lib<name>.so: the action reads its ELF facts and copies it.
LIBRARY = Path(__import__("torch").__file__).parent / "lib" / "libc10.so"


def _run(tmp_path: Path, *extra: str, op_yaml: Path = OPS, **flags: str):
    values = {"distribution": "stableops", "version": "1.0", "abi": "stable"} | flags
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    args = [f"--{k}={v}" for k, v in values.items()]
    result = subprocess.run(
        [sys.executable, str(TOOL / "aten_wheel.py"), "--label=//:w", f"--library={LIBRARY}"]
        + [f"--op_yaml={op_yaml}", f"--tags_yaml={TAGS}", "--torch_target=2.11"]
        + [*args, *extra, f"--output_dir={out}"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TOOL)},
    )
    return result, out


def _one_line(result: subprocess.CompletedProcess, out: Path, start: str) -> str:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rules_aten: //:w: " + start), lines[0]
    assert not list(out.glob("*.whl")) if out.exists() else True
    return lines[0]


def test_no_ops(tmp_path: Path) -> None:
    empty = tmp_path / "ops.yaml"
    # Only an aten operator: the library registers nothing of a namespace of its own.
    empty.write_text("- func: abs(Tensor self) -> Tensor\n")
    result, out = _run(tmp_path, op_yaml=empty)
    line = _one_line(result, out, "error: the op YAML of libc10.so declares no operator")
    assert "custom namespace" in line


def test_version_not_pep440(tmp_path: Path) -> None:
    result, out = _run(tmp_path, version="1.0-beta_x")
    _one_line(result, out, "version = '1.0-beta_x' is not a PEP 440 version")


@pytest.mark.parametrize(
    ("distribution", "start"),
    [
        ("9ops", "distribution = '9ops' gives the package name '9ops', which is not a valid"),
        ("my ops", "distribution = 'my ops' is not a valid distribution name"),
        ("class", "distribution = 'class' gives the package name 'class'"),
    ],
)
def test_distribution_not_a_package_name(tmp_path: Path, distribution: str, start: str) -> None:
    result, out = _run(tmp_path, distribution=distribution)
    _one_line(result, out, start)


def test_py_srcs_import_what_is_not_shipped(tmp_path: Path) -> None:
    source = tmp_path / "registrations.py"
    source.write_text("import torch\nimport json\n\nimport numpy\n")
    result, out = _run(tmp_path, f"--py_src={source}", "--py_src_label=pkg/registrations.py")
    line = _one_line(result, out, "py_srcs pkg/registrations.py:4 imports numpy, which the wheel")
    assert "requires" in line
    # Named in requires, it is allowed.
    result, out = _run(tmp_path, f"--py_src={source}", "--py_src_label=pkg/registrations.py", "--requires=numpy>=2")
    assert result.returncode == 0, result.stderr
    # A sibling imported by its bare name would not be found inside the package.
    source.write_text("import helpers\n")
    (tmp_path / "helpers.py").write_text("")
    result, out = _run(
        tmp_path,
        f"--py_src={source}", "--py_src_label=pkg/registrations.py",
        f"--py_src={tmp_path / 'helpers.py'}",
        "--py_src_label=pkg/helpers.py",
    )
    _one_line(result, out, "py_srcs pkg/registrations.py:1 imports helpers by its bare name")


def test_same_bytes_and_the_stub(tmp_path: Path) -> None:
    first, out = _run(tmp_path)
    assert first.returncode == 0, first.stderr
    (wheel,) = out.glob("*.whl")
    data = wheel.read_bytes()
    again, _ = _run(tmp_path)
    assert again.returncode == 0 and wheel.read_bytes() == data
    import zipfile

    stub = zipfile.ZipFile(wheel).read("stableops/ops.pyi").decode()
    assert (
        "def scaled_add(\n    self: Tensor,\n    other: Tensor,\n    alpha: float,\n) -> Tensor:"
        in stub
    )
    assert "    dim: int = ...,\n) -> Tensor:" in stub
    assert "def clamp_abs_inplace(" in stub and ") -> None:" in stub


def test_stub_types(tmp_path: Path) -> None:
    ops = tmp_path / "ops.yaml"
    ops.write_text(
        "- func: t::f(Tensor? a, int[] b, Tensor[] c, *, float? d=None, bool e=False, "
        "Scalar s=1, str m='x') -> (Tensor, Tensor[])\n"
        "- func: t::g(Tensor a) -> Tensor\n- func: t::g.two(Tensor a, Tensor b) -> Tensor\n"
    )
    result, out = _run(tmp_path, op_yaml=ops)
    assert result.returncode == 0, result.stderr
    import zipfile

    (wheel,) = out.glob("*.whl")
    stub = zipfile.ZipFile(wheel).read("stableops/ops.pyi").decode()
    assert (
        "    a: Optional[Tensor],\n    b: Sequence[int],\n    c: Sequence[Tensor],\n    *,\n"
        in stub
    )
    assert "    d: Optional[float] = ...,\n    e: bool = ...,\n    s: Number = ...," in stub
    assert ") -> tuple[Tensor, list[Tensor]]:" in stub
    assert stub.count("@overload\ndef g(") == 2


def test_cxx_runtime_table_is_auditwheels() -> None:
    """Each version of the table is the newest of some manylinux policy, at that policy's
    glibc, and each policy's newest versions are in it."""
    from atengen.shipping.elf import CXX_RUNTIME_GLIBC

    policies = json.loads(
        resources.files("auditwheel.policy").joinpath("manylinux-policy.json").read_text()
    )
    expected: dict[str, dict[tuple[int, ...], tuple[int, int]]] = {}
    for policy in policies:
        if not policy["name"].startswith("manylinux_"):
            continue
        glibc = tuple(int(n) for n in policy["name"].split("_")[1:3])
        if glibc < (2, 17):
            continue
        for name, versions in policy["symbol_versions"]["x86_64"].items():
            if name in CXX_RUNTIME_GLIBC:
                # Numbered versions only (not CXXABI_TM_1, which no compiler here emits).
                numbered = [v for v in versions if v.replace(".", "").isdigit()]
                newest = max(tuple(int(n) for n in v.split(".")) for v in numbered)
                expected.setdefault(name, {}).setdefault(newest, glibc)  # oldest policy first
    assert {k: tuple(sorted(v.items())) for k, v in expected.items()} == CXX_RUNTIME_GLIBC
