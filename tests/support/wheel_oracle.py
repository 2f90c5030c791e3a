"""The oracle of what a torch wheel exports and declares, for the tests of atengen.facts.wheel_symbols:
binutils' `nm -DC --defined-only` (demangled names, matched as the probe matched them before it
read symbol tables itself) and a plain regex scan of FunctionsManual.h. Independent of the code
under test: no parsing of mangled names, no brace tracking."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest


def nm_names(lib: Path) -> tuple[set[str], set[str], set[str]]:
    """(at::native functions, at::meta::structured_ classes, names in
    torch::autograd::generated::details) that `nm -DC --defined-only` shows ``lib`` exports."""
    if shutil.which("nm") is None:
        pytest.fail("these checks need binutils' nm (apt-get install binutils)")
    symbols = subprocess.run(
        ["nm", "-DC", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    return (
        set(re.findall(r"at::native::(\w+)\(", symbols)),
        set(re.findall(r"at::meta::structured_(\w+)::meta\(", symbols)),
        set(re.findall(r"torch::autograd::generated::details::(\w+)\b", symbols)),
    )


def header_names(torch_dir: Path) -> tuple[set[str], set[str]]:
    """(declared, inline) names of FunctionsManual.h's namespace details: the function names
    before `(`, less the members of its one struct and a local type used as a constructor, and
    its extern variables; the functions defined `inline`."""
    header = (torch_dir / "include/torch/csrc/autograd/FunctionsManual.h").read_text()
    details = header[header.index("namespace torch::autograd::generated::details {") :]
    inline = set(re.findall(r"^inline\s[^(]*?(\w+)\(", details, re.M))
    declared = set(re.findall(r"[\s*&>](\w+)\(", details)) - {"OptTensor", "range", "size"}
    declared |= set(re.findall(r"^extern [^;(]*?(\w+);", details, re.M))
    return declared, inline
