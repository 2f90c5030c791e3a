"""aten_kernel_hub's action (`atengen wheel --layout=kernel_hub`) without Bazel, read with
Hugging Face's `kernels` own parsers (tests/support/hub_tools.py): the variant names its
`parse_variant` reads and its resolver takes for the torch releases the library fits and refuses
for the others; the metadata its `Metadata` reads; the same bytes twice; each bad input one
`rules_aten: <label>: ...` line, exit 1 and nothing written, also when the write itself fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import hub_tools
from tests.support.bazel_helpers import REPO

# The layout read back with Hugging Face's own parsers (about 6 CPU s, most of it importing
# them): in the full suite, not the fast tier.
pytestmark = pytest.mark.slow

TOOL = REPO / "tool"
TAGS = Path(__import__("torchgen").__file__).parent / "packaged" / "ATen" / "native" / "tags.yaml"
OPS = REPO / "examples" / "stable_ops" / "ops.yaml"
# Any shared library stands in for lib<name>.so: the action reads its ELF facts and copies it.
LIBRARY = Path(__import__("torch").__file__).parent / "lib" / "libc10.so"
STABLE = {"abi": "stable", "torch_target": "2.11", "torch_release": "2.13"}
BOUND = {"abi": "release", "torch_release": "2.13"}


def _run(tmp_path: Path, *extra: str, **flags: str) -> tuple[subprocess.CompletedProcess, Path]:
    values = {"kernel_name": "stable-ops", "version": "1", "license": "Apache-2.0"}
    values |= STABLE | flags
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    result = subprocess.run(
        [sys.executable, "-m", "atengen", "wheel", "--layout=kernel_hub", "--label=//:h"]
        + [f"--op_yaml={OPS}", f"--tags_yaml={TAGS}"]
        + [f"--{k}={v}" for k, v in ({"library": str(LIBRARY)} | values).items()]
        + [*extra, f"--output_dir={out}"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TOOL)},
    )
    return result, out


def _variant(out: Path) -> Path:
    (variant,) = (out / "build").iterdir()
    return variant


def _one_line(result: subprocess.CompletedProcess, out: Path, start: str) -> str:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rules_aten: //:h: " + start), lines[0]
    assert not out.exists() or not list(out.iterdir()), list(out.iterdir())
    return lines[0]


@pytest.fixture(scope="module")
def kernels_lib():
    """`kernels`' parsers, from the hub tools' directory (last on sys.path, removed after)."""
    where = str(hub_tools.tools_dir())
    sys.path.append(where)
    try:
        from kernels import variants
        from kernels._rust import Metadata

        yield variants, Metadata
    finally:
        sys.path.remove(where)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (STABLE, "torch-stable-abi211-cpu-x86_64-linux"),
        (BOUND, "torch213-cxx11-cpu-x86_64-linux"),
        (BOUND | {"cxx11_abi": "0"}, "torch213-cxx98-cpu-x86_64-linux"),
        (BOUND | {"cuda": "13.0"}, "torch213-cxx11-cu130-x86_64-linux"),
        (STABLE | {"cuda": "12.8"}, "torch-stable-abi211-cu128-x86_64-linux"),
    ],
)
def test_variant_is_what_kernels_parses(tmp_path: Path, kernels_lib, flags, expected) -> None:
    variants, metadata_type = kernels_lib
    result, out = _run(tmp_path, **flags)
    assert result.returncode == 0, result.stderr
    variant = _variant(out)
    assert variant.name == expected
    assert variants.parse_variant(variant.name).variant_str == expected
    metadata = metadata_type.read_from_file(variant / "metadata.json")
    assert str(metadata.name) == "stable-ops" and metadata.version == 1
    assert metadata.license == "Apache-2.0" and metadata.python_depends == []
    cuda = "cuda" in flags
    assert str(metadata.backend.backend_type) == ("cuda" if cuda else "cpu"), metadata
    assert metadata.id.startswith("_stable_ops_" + ("cu" if cuda else "cpu_")), metadata.id
    package = variant / "stable_ops"
    assert sorted(p.name for p in package.iterdir()) == ["__init__.py", "_ops.py", "libc10.so"]
    assert (package / "libc10.so").read_bytes() == LIBRARY.read_bytes()
    init = (package / "__init__.py").read_text()
    assert "scaled_add = ops.scaled_add\n" in init and "mulcat = ops.mulcat\n" in init
    compile(init, "__init__.py", "exec")
    compile((package / "_ops.py").read_text(), "_ops.py", "exec")


def test_resolver_takes_the_releases_it_fits(kernels_lib) -> None:
    """`kernels`' own resolution (its system given explicitly): a stable variant of 2.11 in
    2.11 and later, not 2.10; a bound one in its release only; a CUDA 13.0 one on CUDA 13.x."""
    from packaging.version import Version

    variants, _ = kernels_lib
    backends = __import__("kernels.backends", fromlist=["CPU"])

    def accepted(name: str, torch: str, backend: object) -> bool:
        found, _ = variants._resolve_variant_for_system(
            variants=[variants.parse_variant(name)],
            selected_backend=backend,
            cpu="x86_64",
            os="linux",
            torch_version=Version(torch),
            torch_cxx11_abi=True,
            tvm_ffi_version=None,
        )
        return bool(found)

    cpu = backends.CPU()
    cuda132 = backends.CUDA(version=Version("13.2"))
    stable = "torch-stable-abi211-cpu-x86_64-linux"
    assert [accepted(stable, t, cpu) for t in ("2.10", "2.11", "2.13", "2.15")] == [
        False,
        True,
        True,
        True,
    ]
    bound = "torch213-cxx11-cpu-x86_64-linux"
    assert [accepted(bound, t, cpu) for t in ("2.11", "2.13", "2.15")] == [False, True, False]
    assert accepted("torch213-cxx11-cu130-x86_64-linux", "2.13", cuda132)
    assert not accepted("torch213-cxx11-cu130-x86_64-linux", "2.13", cpu)


def test_same_bytes_twice(tmp_path: Path) -> None:
    source = REPO / "examples" / "stable_ops" / "registrations.py"
    extra = (f"--py_src={source}", "--py_src_label=registrations.py")
    first, out = _run(tmp_path, *extra)
    assert first.returncode == 0, first.stderr
    tree = {
        str(p.relative_to(out)): (p.stat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in sorted(out.rglob("*"))
    }
    assert "build/torch-stable-abi211-cpu-x86_64-linux/stable_ops/registrations.py" in tree
    again, out = _run(tmp_path, *extra)
    assert again.returncode == 0
    assert tree == {
        str(p.relative_to(out)): (p.stat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in sorted(out.rglob("*"))
    }
    # Another library: another id, the name under which `kernels` imports the package.
    other = tmp_path / "libother.so"
    other.write_bytes(LIBRARY.read_bytes() + b"\0")
    third, out = _run(tmp_path, *extra, library=str(other))
    assert third.returncode == 0, third.stderr
    key = "build/torch-stable-abi211-cpu-x86_64-linux/metadata.json"
    assert (out / key).read_bytes() != tree[key][1]


@pytest.mark.parametrize(
    ("flags", "start"),
    [
        ({"kernel_name": "Stable_Ops"}, "kernel_name = 'Stable_Ops' is not a kernel name"),
        ({"kernel_name": "s"}, "kernel_name = 's' is not a kernel name"),
        ({"kernel_name": "ops-"}, "kernel_name = 'ops-' is not a kernel name"),
        ({"version": "0"}, "version = '0' is not a kernel version"),
        ({"version": "1.0"}, "version = '1.0' is not a kernel version"),
        ({"license": "MIT\nor not"}, "license = 'MIT\\nor not' is not a license"),
        ({"license": ""}, "license = '' is not a license"),
        ({"abi": "release", "torch_release": "10.1"}, "torch release '10.1' is not major.minor"),
        ({"cuda": "thirteen"}, "cuda = 'thirteen' is not a CUDA version"),
    ],
)
def test_bad_input_one_line(tmp_path: Path, flags: dict[str, str], start: str) -> None:
    result, out = _run(tmp_path, **flags)
    _one_line(result, out, start)


def test_py_srcs_replacing_the_package_module(tmp_path: Path) -> None:
    source = tmp_path / "_ops.py"
    source.write_text("import torch\n")
    result, out = _run(tmp_path, f"--py_src={source}", "--py_src_label=pkg/_ops.py")
    _one_line(result, out, "py_srcs: pkg/_ops.py would replace the package's own _ops.py")


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """The library's copy fails half-way (here: a full disk): nothing is left in the output
    directory, not even the partial tree."""
    from atengen.shipping.build import ShippingOptions, build_kernel_hub
    from atengen.shipping.wheel_file import WheelInputError

    real = Path.write_bytes

    def full_disk(self: Path, data: bytes) -> int:
        if self.name.endswith(".so"):
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    out = tmp_path / "out"
    out.mkdir()
    options = ShippingOptions(
        layout="kernel_hub",
        label="//:h",
        library=str(LIBRARY),
        op_yaml=str(OPS),
        tags_yaml=str(TAGS),
        kernel_name="stable-ops",
        version="1",
        license="MIT",
        abi="stable",
        torch_target="2.11",
        output_dir=str(out),
    )
    with pytest.raises(WheelInputError, match="No space left on device"):
        build_kernel_hub(options)
    assert list(out.iterdir()) == []
