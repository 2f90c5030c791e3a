"""nvcc from PyPI (rules/private/repositories/cuda_pypi.bzl): on a CUDA build of torch with no installed CUDA
toolkit of its CUDA major version, or with RULES_ATEN_CUDA_DIR=pypi, @local_cuda takes nvcc, its
headers and cicc from the wheels that //third_party:cuda_nvcc_wheels.lock pins for the CUDA
version torch's METADATA requires (`cuda-toolkit==PIN`). Part of the CUDA slice
(`./dev test-cuda`, on the CUDA venv); every test is skipped on a CPU torch, or fails
with one line where the CUDA slice is required (tests/support/slices.py).

On a copy of examples/cuda_ops, with its own output base: RULES_ATEN_CUDA_DIR=pypi builds
//:libcudaops.so (kernels.cu compiled by the PyPI nvcc for one architecture, linked with
-Wl,--no-undefined), and the line naming the chosen toolkit is printed once. Then the bad inputs,
each one line and a failed build: a toolkit of another CUDA major version named by
RULES_ATEN_CUDA_DIR, a wheel source that does not exist, a wheel whose sha256 is not the lock's,
and a lock without the wheel's CUDA version. The wheels are fetched with their sha256, so Bazel's
repository cache keeps them: a second run does not download them again. The two download cases
use an empty repository cache of their own, where Bazel must fetch.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from tests.support import slices
from tests.support.bazel_helpers import (
    DISK_CACHE,
    REPO,
    bazel,
    one_fail_message,
    own_output_base,
)

if not torch.version.cuda:
    slices.missing(
        "cuda",
        f"needs a CUDA build of torch (torch {torch.__version__} is a CPU build): "
        "run ./dev test-cuda",
    )

pytestmark = pytest.mark.bazel

EXAMPLE = REPO / "examples" / "cuda_ops"
LOCK = REPO / "third_party" / "cuda_nvcc_wheels.lock"
_KEY = hashlib.sha256(f"{REPO}:{sys.executable}".encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_cuda_pypi_{_KEY}"
OUTPUT_BASE = BASE / "output_base"
TARGET = "//:libcudaops.so"
# What links it: TARGET is that library with its references to torch made weak.
LINKED = "//:_cudaops_linked/libcudaops.so"
MAJOR = torch.version.cuda.split(".")[0]


def _pin() -> str:
    """The cuda-toolkit version torch requires, from its installed METADATA."""
    for requirement in importlib.metadata.requires("torch") or []:
        m = re.match(r"cuda-toolkit(\[[^\]]*\])?==([^;\s]+)", requirement)
        if m:
            return m.group(2)
    slices.missing("cuda", f"torch {torch.__version__}'s METADATA requires no cuda-toolkit")


def _lock_lines() -> list[list[str]]:
    return [line.split() for line in LOCK.read_text().splitlines() if line and line[0] != "#"]


def _lock_cuda(pin: str) -> str:
    """The lock's CUDA version whose toolkit line names `pin`."""
    cudas = [f[1] for f in _lock_lines() if f[0] == "toolkit" and pin in f[2:]]
    assert len(cudas) == 1, f"{LOCK} has no toolkit line for cuda-toolkit {pin}"
    return cudas[0]


def _lock_wheels(pin: str) -> list[list[str]]:
    """[package, version, url, sha256] of the lock's wheels for `pin`, in the lock's order."""
    cuda = _lock_cuda(pin)
    return [f[2:] for f in _lock_lines() if f[0] == "wheel" and f[1] == cuda]


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    for name in ("CUDA_HOME", "TORCH_CUDA_ARCH_LIST"):
        env.pop(name, None)
    env["RULES_ATEN_PYTHON"] = sys.executable
    env["RULES_ATEN_CUDA_DIR"] = "pypi"
    env.update(settings)
    return env


def _bazel(workspace: Path, *args: str, env: dict[str, str], check: bool = True):
    return bazel(
        *args, cwd=workspace, startup=own_output_base(OUTPUT_BASE, 300), env=env, check=check
    )


@pytest.fixture(scope="module")
def workspace() -> Path:
    """A copy of examples/cuda_ops whose WORKSPACE points at this checkout, and a Bazel server
    started afresh (so that @local_cuda is fetched, and its line printed, by the first build)."""
    root = BASE / "workspace"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("bazel-*"))
    text = (root / "WORKSPACE").read_text()
    assert text.count('path = "../.."') == 1, text
    (root / "WORKSPACE").write_text(text.replace('path = "../.."', f'path = "{REPO}"'))
    _bazel(root, "shutdown", env=_env(), check=False)
    yield root
    _bazel(root, "shutdown", env=_env(), check=False)


def _needed(library: Path) -> list[str]:
    out = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def test_pypi_nvcc_builds_the_example_and_says_so_once(workspace: Path, summary: list[str]) -> None:
    pin = _pin()
    wheels = _lock_wheels(pin)
    (nvcc_version,) = [w[1] for w in wheels if w[0] == "nvidia-cuda-nvcc"]
    env = _env(TORCH_CUDA_ARCH_LIST="9.0")
    start = time.monotonic()
    result = _bazel(
        workspace, "build", "--symlink_prefix=/", f"--disk_cache={DISK_CACHE}", TARGET, env=env
    )
    seconds = time.monotonic() - start
    chosen = [line for line in result.stderr.splitlines() if "rules_aten: nvcc " in line]
    expected = (
        f"rules_aten: nvcc {nvcc_version} from PyPI, cuda-toolkit {pin}'s "
        f"($RULES_ATEN_CUDA_DIR=pypi; torch {torch.__version__} (CUDA {torch.version.cuda}))"
    )
    assert len(chosen) == 1 and chosen[0].endswith(expected), result.stderr[-4000:]
    assert "toolkit at" not in result.stderr, result.stderr[-4000:]

    nvcc = _bazel(
        workspace, "aquery", "mnemonic(AtenNvcc, //:cudaops_cuda_kernels)", env=env
    ).stdout
    commands = [line for line in nvcc.splitlines() if "Command Line:" in line]
    assert len(commands) == 1, nvcc[-4000:]
    assert re.search(r"/external/rules_aten_cuda_nvcc/nvidia/cu\d+/bin/nvcc ", commands[0]), (
        commands[0]
    )
    gencode = re.findall(r"-gencode=arch=compute_\w+,code=\w+", nvcc)
    assert gencode == ["-gencode=arch=compute_90,code=sm_90"], nvcc[-4000:]
    link = _bazel(workspace, "aquery", f'mnemonic("CppLink", {LINKED})', env=env).stdout
    assert "-Wl,--no-undefined" in link, link[-4000:]

    bin_dir = Path(_bazel(workspace, "info", "bazel-bin", env=env).stdout.strip())
    assert (bin_dir / "_objs" / "cudaops_cuda_kernels" / "kernels.pic.o").exists()
    # Linked as needed: the kernel launches through the CUDA runtime, its guard is c10_cuda's.
    assert {"libc10_cuda.so", "libcudart.so.13"} <= set(_needed(bin_dir / "libcudaops.so"))
    summary.append(f"CUDA slice: {TARGET} with nvcc {nvcc_version} from PyPI: {seconds:.0f} s")


def _one_message(result: subprocess.CompletedProcess, start: str) -> str:
    """Asserts the build failed with one message that starts with `start`, and no nvcc was
    chosen; returns it."""
    message = one_fail_message(result, start)
    assert "rules_aten: nvcc " not in result.stderr, result.stderr[-4000:]
    return message


def _analyse(workspace: Path, env: dict[str, str], *extra: str):
    return _bazel(workspace, "build", "--nobuild", *extra, "//:cudaops", env=env, check=False)


def test_a_named_toolkit_of_another_cuda_major_version_is_one_line(
    workspace: Path, tmp_path: Path
) -> None:
    fake = tmp_path / "cuda-12.8"
    (fake / "include").mkdir(parents=True)
    (fake / "include" / "cuda_runtime.h").write_text("")
    (fake / "include" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION 12080\n")
    result = _analyse(workspace, _env(RULES_ATEN_CUDA_DIR=str(fake)))
    message = _one_message(
        result,
        f"rules_aten: the CUDA toolkit at {fake} is CUDA 12.8, but torch {torch.__version__} "
        f"is built with CUDA {torch.version.cuda}: install a CUDA {MAJOR} toolkit",
    )
    assert "set it to pypi" in message, message


def test_a_wheel_source_that_does_not_exist_is_one_line(workspace: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no_such_dir"
    first = _lock_wheels(_pin())[0]
    name = first[2].rsplit("/", 1)[1]
    env = _env(RULES_ATEN_CUDA_WHEELS_URL=f"file://{missing}")
    result = _analyse(workspace, env, f"--repository_cache={tmp_path / 'repository_cache'}")
    message = _one_message(
        result,
        f"rules_aten: cannot download {name} ({first[0]} {first[1]}, the nvcc of torch "
        f"{torch.__version__}) from file://{missing}/{name}",
    )
    assert "RULES_ATEN_CUDA_WHEELS_URL" in message and "bazel sync --configure" in message


def test_a_wheel_whose_sha256_is_not_the_locks_is_one_line(workspace: Path, tmp_path: Path) -> None:
    wheels = _lock_wheels(_pin())
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    content = b"not the wheel the lock names\n"
    for wheel in wheels:
        (mirror / wheel[2].rsplit("/", 1)[1]).write_bytes(content)
    name, pinned = wheels[0][2].rsplit("/", 1)[1], wheels[0][3]
    env = _env(RULES_ATEN_CUDA_WHEELS_URL=f"file://{mirror}/")
    result = _analyse(workspace, env, f"--repository_cache={tmp_path / 'repository_cache'}")
    _one_message(
        result,
        f"rules_aten: {name} from file://{mirror}/{name} has sha256 "
        f"{hashlib.sha256(content).hexdigest()}, not the {pinned} that ",
    )


def test_a_cuda_version_the_lock_lacks_is_one_line(workspace: Path) -> None:
    """A lock without torch's CUDA version: @rules_aten_cuda_nvcc declared with its `lock`."""
    pin = _pin()
    cuda = _lock_cuda(pin)
    others = [
        line
        for line in LOCK.read_text().splitlines()
        if line.startswith(("toolkit ", "wheel ")) and line.split()[1] != cuda
    ]
    kept = sorted({p for line in others if line.startswith("toolkit ") for p in line.split()[2:]})
    assert others and kept, f"{LOCK} has no other CUDA version"
    (workspace / "other_cuda.lock").write_text("\n".join(others) + "\n")
    original = (workspace / "WORKSPACE").read_text()
    declared = (
        'load("@rules_aten//rules/private:repositories/cuda_pypi.bzl", "cuda_nvcc_pypi_repo")\n\n'
        'cuda_nvcc_pypi_repo(name = "rules_aten_cuda_nvcc", lock = "//:other_cuda.lock")\n\n'
    )
    anchor = "rules_aten_dependencies()\n"
    assert original.count(anchor) == 1, original
    (workspace / "WORKSPACE").write_text(original.replace(anchor, declared + anchor))
    try:
        result = _analyse(workspace, _env())
    finally:
        (workspace / "WORKSPACE").write_text(original)
    message = _one_message(
        result,
        f"rules_aten: torch {torch.__version__} requires cuda-toolkit=={pin}, which "
        "//:other_cuda.lock has no nvcc wheels for",
    )
    assert f"(it has cuda-toolkit {', '.join(kept)})" in message, message
    assert f"install a CUDA {MAJOR} toolkit and point RULES_ATEN_CUDA_DIR at it" in message
