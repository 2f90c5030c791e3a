"""How tests compile generated C++ against the installed torch: one set of flags, read from the
wheel (its include directories and its C++ ABI), as Bazel's @torch and cpp_extension use them."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import torch.utils.cpp_extension

TORCH_INCLUDES = [Path(p) for p in torch.utils.cpp_extension.include_paths()]
RUNTIME_INCLUDE = Path(__file__).resolve().parents[2] / "rules" / "runtime"


def cxxflags(cxx11_abi: int, torch_includes: list[Path]) -> list[str]:
    """C++20 as the rules compile; -fPIC for objects loaded with torch.ops.load_library; the
    wheel's own ABI (a mismatch links but fails at load on std::string symbols); its headers and
    the runtime's."""
    return [
        "-std=c++20",
        "-fPIC",
        f"-D_GLIBCXX_USE_CXX11_ABI={cxx11_abi}",
        *(f"-I{p}" for p in torch_includes),
        f"-I{RUNTIME_INCLUDE}",
    ]


CXXFLAGS = cxxflags(int(torch._C._GLIBCXX_USE_CXX11_ABI), TORCH_INCLUDES)
TORCH_LIB = Path(torch.__file__).resolve().parent / "lib"
# Compiled into every library of generated registrations, as //rules/runtime is: the torch
# release guard they all call first.
RUNTIME_SOURCES = [RUNTIME_INCLUDE / "atengen" / "torch_release_guard.cc"]


def build_library(
    sources: list[Path],
    include: Path,
    lib: Path,
    flags: list[str] = CXXFLAGS,
    torch_lib: Path = TORCH_LIB,
) -> Path:
    """``lib``: ``sources`` (with RUNTIME_SOURCES) compiled with ``flags`` (CXXFLAGS: the running
    torch's) and ``-I include``, two at a time, and linked against the libc10 and libtorch_cpu of
    ``torch_lib`` with no symbol left undefined; asserts that each step succeeded."""
    every = [*sources, *RUNTIME_SOURCES]
    objects = [lib.parent / f"{s.stem}.o" for s in every]

    def compile_one(pair: tuple[Path, Path]) -> subprocess.CompletedProcess[bytes]:
        src, obj = pair
        command = [*flags, f"-I{include}", "-c", str(src), "-o", str(obj)]
        return subprocess.run(["g++", *command], capture_output=True)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for proc in pool.map(compile_one, zip(every, objects, strict=True)):
            assert proc.returncode == 0, proc.stderr.decode()[-4000:]
    link = [
        "g++", "-shared", "-o", str(lib), *map(str, objects), f"-L{torch_lib}", "-lc10",
        "-ltorch_cpu", f"-Wl,-rpath,{torch_lib}", "-Wl,--no-undefined",
    ]  # fmt: skip
    proc = subprocess.run(link, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return lib


def run_with_library(lib: Path, script: str, python: str = sys.executable) -> None:
    """Runs ``script`` (Python, ``sys.argv[1]`` is ``lib``) in a fresh interpreter (``python``'s);
    asserts that it printed `ok` last."""
    run = subprocess.run(
        [python, "-c", script, str(lib)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-4000:]
