"""How tests compile generated C++ against the installed torch: one set of flags, read from the
wheel (its include directories and its C++ ABI), as Bazel's @torch and cpp_extension use them."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.utils.cpp_extension

TORCH_INCLUDES = [Path(p) for p in torch.utils.cpp_extension.include_paths()]
RUNTIME_INCLUDE = Path(__file__).resolve().parents[2] / "rules" / "runtime"

# C++20 as the rules compile; -fPIC for objects loaded with torch.ops.load_library; the wheel's
# own ABI (a mismatch links but fails at load on std::string symbols).
CXXFLAGS = [
    "-std=c++20",
    "-fPIC",
    f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
    *(f"-I{p}" for p in TORCH_INCLUDES),
    f"-I{RUNTIME_INCLUDE}",
]
TORCH_LIB = Path(torch.__file__).resolve().parent / "lib"
# Compiled into every library of generated registrations, as //rules/runtime is: the torch
# release guard they all call first.
RUNTIME_SOURCES = [RUNTIME_INCLUDE / "atengen" / "torch_release_guard.cc"]
