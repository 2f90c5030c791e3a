"""Our dispatcher C++ signatures equal the wheel's `using schema = ...` in ATen/ops/<op>_ops.h."""

from __future__ import annotations

import re
from pathlib import Path

from atengen.api.cpp_types import dispatcher_options, function_type
from atengen.model.operator_model import OperatorModel

_STRUCT_RE = re.compile(r"struct TORCH_API \w+ \{(.*?)\n\};", re.S)


def _wheel_signatures(include_dir: Path) -> dict[str, str]:
    out = {}
    for header in include_dir.glob("ATen/ops/*_ops.h"):
        for block in _STRUCT_RE.findall(header.read_text()):
            name = re.search(r'name = "aten::([^"]*)"', block).group(1)
            overload = re.search(r'overload_name = "([^"]*)"', block).group(1)
            sig = re.search(r"using schema = (.*);", block).group(1)
            out[f"{name}.{overload}" if overload else name] = sig
    return out


def test_dispatcher_signatures_match_the_wheel_headers(
    installed_yaml: tuple[Path, Path], installed_model: OperatorModel, summary: list[str]
):
    # site-packages/torchgen/packaged/ATen/native/native_functions.yaml -> site-packages
    include = installed_yaml[0].parents[4] / "torch" / "include"
    want = _wheel_signatures(include)
    assert len(want) > 1000, include
    model = installed_model
    mismatches = []
    for f in model.functions:
        got = function_type(f.func, dispatcher_options(f))
        if got != want.get(str(f.name)):
            mismatches.append(f"{f.name}: ours {got!r}, wheel {want.get(str(f.name))!r}")
    summary.append(
        f"dispatcher C++ signatures: {len(model.functions) - len(mismatches)}/"
        f"{len(model.functions)} equal the wheel's _ops.h"
    )
    assert not mismatches, "\n".join(mismatches[:20])
