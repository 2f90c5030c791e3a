"""The GPU architectures nvcc compiles `cuda_srcs` for (rules/private/common/cuda_archs.bzl):
TORCH_CUDA_ARCH_LIST in torch's syntax and with the family codes (`10.0f`) of torch's CMake build
and vLLM's, compiled by the local nvcc, the --@rules_aten//:cuda_archs build setting (which
wins), and one message for a value that does not parse.

On a copy of examples/cuda_ops with the default (CPU) torch and the local CUDA toolkit: with a
CPU wheel, //:cudaops_cuda still compiles kernels.cu with nvcc (it is not linked into the
library). The copy's kernels.cu is a one-line kernel: these tests are about which architectures
nvcc compiles for, and when, not what it compiles (the example's own, which includes torch's
headers, takes about 35 CPU s for each architecture; it is compiled and run in the CUDA slice,
tests/slices/cuda/test_cuda_wheel.py, and in the GPU run kit). The nvcc command lines are read with `bazel
aquery`; the last test compiles, twice, to show that a change of the variable reruns the nvcc
compile and what depends on it, and nothing else. The
wheel's own list (the default, with its one-line notice) is on a CUDA wheel only:
tests/slices/cuda/test_cuda_wheel.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.bazel_helpers import (
    REPO,
    VENV_PYTHON,
    bazel,
    one_fail_message,
    own_output_base,
    read_execution_log,
)

pytestmark = pytest.mark.bazel

EXAMPLE = REPO / "examples" / "cuda_ops"
TOOLKIT = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda")
KERNELS = "//:cudaops_cuda_kernels"
_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_cuda_archs_{_KEY}"
OUTPUT_BASE = BASE / "output_base"
WORKSPACE = BASE / "workspace"
# The copy's kernels.cu: no torch header, so that nvcc takes seconds.
ONE_LINE_KERNEL = "__global__ void cuda_archs_probe(float* x) { x[threadIdx.x] += 1.0f; }\n"
GENCODE = re.compile(r"-gencode=arch=compute_\w+,code=\w+")

if not (TOOLKIT / "include" / "cuda_runtime.h").exists():
    pytest.skip(
        f"no CUDA toolkit at {TOOLKIT} (set CUDA_HOME): nvcc's flags need one",
        allow_module_level=True,
    )


def _env(arch_list: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    env.pop("TORCH_CUDA_ARCH_LIST", None)
    env["RULES_ATEN_PYTHON"] = str(VENV_PYTHON)
    env["CUDA_HOME"] = str(TOOLKIT)
    if arch_list is not None:
        env["TORCH_CUDA_ARCH_LIST"] = arch_list
    return env


def _bazel(*args: str, arch_list: str | None = None, check: bool = True):
    return bazel(
        *args,
        cwd=WORKSPACE,
        startup=own_output_base(OUTPUT_BASE, 300),
        env=_env(arch_list),
        check=check,
    )


@pytest.fixture(scope="module", autouse=True)
def _workspace():
    """The copy of the example, its WORKSPACE pointing at this checkout, kept with the output
    base between runs (a copy with the same bytes keeps Bazel's caches valid)."""
    shutil.rmtree(WORKSPACE, ignore_errors=True)
    shutil.copytree(EXAMPLE, WORKSPACE, ignore=shutil.ignore_patterns("bazel-*"))
    text = (WORKSPACE / "WORKSPACE").read_text()
    assert text.count('path = "../.."') == 1, text
    (WORKSPACE / "WORKSPACE").write_text(text.replace('path = "../.."', f'path = "{REPO}"'))
    (WORKSPACE / "kernels.cu").write_text(ONE_LINE_KERNEL)
    yield
    bazel("shutdown", cwd=WORKSPACE, startup=own_output_base(OUTPUT_BASE), check=False)


def _gencode(*flags: str, arch_list: str | None = None) -> list[str]:
    """The -gencode flags of the nvcc command line of kernels.cu."""
    result = _bazel("aquery", *flags, f"mnemonic(AtenNvcc, {KERNELS})", arch_list=arch_list)
    commands = [line for line in result.stdout.splitlines() if "Command Line:" in line]
    assert len(commands) == 1, result.stdout[-4000:]
    return sorted(GENCODE.findall(result.stdout))


def _sm(n: str) -> str:
    return f"-gencode=arch=compute_{n},code=sm_{n}"


def _ptx(n: str) -> str:
    return f"-gencode=arch=compute_{n},code=compute_{n}"


@pytest.mark.parametrize(
    ("arch_list", "expected"),
    [
        ("9.0", [_sm("90")]),
        ("8.0;9.0+PTX", [_sm("80"), _ptx("90"), _sm("90")]),
        ("8.0 9.0", [_sm("80"), _sm("90")]),  # space-separated, as torch takes it
        ("Hopper", [_ptx("90"), _sm("90")]),  # torch's name: 9.0+PTX
        ("Ampere;9.0a", [_sm("80"), _ptx("86"), _sm("86"), _sm("90a")]),
        ("9.0;10.0f", [_sm("90"), _sm("100f")]),  # a family code: every GPU of the family
        ("10.0f;12.0f+PTX", [_sm("100f"), _sm("120f"), _ptx("120f")]),
    ],
)
def test_torch_cuda_arch_list_in_torchs_syntax(arch_list: str, expected: list[str]) -> None:
    assert _gencode(arch_list=arch_list) == sorted(expected)


def test_the_build_setting_wins_over_the_variable() -> None:
    flag = "--@rules_aten//:cuda_archs=8.6;12.0+PTX"
    assert _gencode(flag, arch_list="9.0") == sorted([_sm("86"), _sm("120"), _ptx("120")])
    family = "--@rules_aten//:cuda_archs=10.0f"
    assert _gencode(family, arch_list="9.0;10.0f") == [_sm("100f")]


@pytest.mark.parametrize(
    ("arch_list", "bad"),
    [
        ("9.1", "9.1"),
        ("native", "native"),
        ("8.0;;9.0", ""),
        ("Hopper+PTX", "9.0+PTX+PTX"),
        ("9.0;10.0x", "10.0x"),
        ("9.0f", "9.0f"),  # Hopper has no family code
    ],
)
def test_a_variable_that_does_not_parse_isone_fail_message(arch_list: str, bad: str) -> None:
    result = _bazel("build", "--nobuild", KERNELS, arch_list=arch_list, check=False)
    message = one_fail_message(
        result,
        f'rules_aten: TORCH_CUDA_ARCH_LIST="{arch_list}": unknown CUDA architecture "{bad}"',
    )
    assert "separated by ; or spaces" in message and "Hopper" in message, message


def test_a_build_setting_that_does_not_parse_isone_fail_message() -> None:
    result = _bazel("build", "--nobuild", "--@rules_aten//:cuda_archs=sm_90", KERNELS, check=False)
    one_fail_message(
        result,
        'rules_aten: --@rules_aten//:cuda_archs="sm_90": unknown CUDA architecture "sm_90"',
    )


def test_family_codes_compile_with_nvcc() -> None:
    """nvcc (13.0 here) takes the family code's -gencode: the build of kernels.cu for 9.0 and
    the 10.x family succeeds (Bazel's action cache keys the object by that command line)."""
    _bazel("build", "--symlink_prefix=/", KERNELS, arch_list="9.0;10.0f")
    assert _gencode(arch_list="9.0;10.0f") == sorted([_sm("90"), _sm("100f")])


def _tool_sources() -> str:
    """A digest of the generator's sources (tool/), to tell whether they changed."""
    digest = hashlib.sha256()
    for path in sorted((REPO / "tool").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def test_a_change_of_the_variable_reruns_only_the_nvcc_compile(tmp_path: Path) -> None:
    """//:cudaops_cuda (the CUDA registrations, compiled as C++, and kernels.cu) built with one
    list, then with another: only kernels.cu is compiled again, and the archive it is in made
    again (libcudaops_cuda_kernels.a).

    The generator's actions run again too when the generator's own sources (tool/) change
    between the two builds, as they may in a checkout being edited: then those are left out."""
    target = "//:cudaops_cuda"
    tool_before = _tool_sources()
    _bazel("build", "--symlink_prefix=/", target, arch_list="8.0")
    log = tmp_path / "exec.json"
    _bazel(
        "build",
        "--symlink_prefix=/",
        f"--execution_log_json_file={log}",
        target,
        arch_list="9.0",
    )
    spawns = read_execution_log(log)
    if _tool_sources() != tool_before:
        spawns = [s for s in spawns if s.get("mnemonic") in ("AtenNvcc", "CppLink")]
    ran = sorted((s.get("mnemonic"), Path(s["listedOutputs"][0]).name) for s in spawns)
    assert ran == [("AtenNvcc", "kernels.pic.o"), ("CppLink", "libcudaops_cuda_kernels.a")], ran
    (nvcc,) = [s for s in spawns if s.get("mnemonic") == "AtenNvcc"]
    assert GENCODE.findall(" ".join(nvcc["commandArgs"])) == [_sm("90")]
