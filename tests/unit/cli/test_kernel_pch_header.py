"""`atengen kernel-pch-header`: the header precompiled for a library's kernel sources holds the
torch and standard headers every source starts with, and nothing a source does not include first.
Expected values written by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atengen.render.leading_includes import (
    HEADER_COMMENT,
    common_leading_includes,
    leading_includes,
    precompiled_header_text,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('#include <ATen/ATen.h>\n#include "myops/ops/scale_native.h"\n', ("ATen/ATen.h",)),
        (
            "// Copyright\n/* a\n   block */\n#pragma once\n\n#include <ATen/core/Tensor.h>\n"
            "#  include <vector>  // lists\n#include <torch/library.h> /* why */\nint x;\n",
            ("ATen/core/Tensor.h", "vector", "torch/library.h"),
        ),
        # A define before the includes changes what they mean: nothing is taken.
        ("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n#include <ATen/core/Tensor.h>\n", ()),
        # A header the precompiled header's compile cannot find stops the scan.
        (
            "#include <ATen/core/Tensor.h>\n#include <mylib/util.h>\n#include <vector>\n",
            ("ATen/core/Tensor.h",),
        ),
        ("#include <stdio.h>\n#include <ATen/ATen.h>\n", ()),
        ('#include "local.h"\n#include <ATen/ATen.h>\n', ()),
        ("#if 1\n#include <ATen/ATen.h>\n#endif\n", ()),
        ("/* open comment\n#include <ATen/ATen.h>\n", ()),
        ("/* one */ /* two */ #include <c10/util/Exception.h>\n", ("c10/util/Exception.h",)),
        ("", ()),
    ],
)
def test_leading_includes(text: str, expected: tuple[str, ...]) -> None:
    assert leading_includes(text) == expected


def test_the_common_run_keeps_the_order_and_stops_at_the_first_difference() -> None:
    a = "#include <ATen/core/Tensor.h>\n#include <vector>\n#include <cmath>\n"
    b = "#include <ATen/core/Tensor.h>\n#include <vector>\n#include <string>\n"
    c = "#include <vector>\n#include <ATen/core/Tensor.h>\n"
    assert common_leading_includes([a, b]) == ("ATen/core/Tensor.h", "vector")
    assert common_leading_includes([a, b, c]) == ()
    assert common_leading_includes([]) == ()
    assert precompiled_header_text([a, a]) == (
        HEADER_COMMENT + "#include <ATen/core/Tensor.h>\n#include <vector>\n#include <cmath>\n"
    )
    assert precompiled_header_text([c, a]) == HEADER_COMMENT


def test_the_command_writes_the_header(tmp_path: Path) -> None:
    one = tmp_path / "one.cpp"
    one.write_bytes(b"#include <ATen/ATen.h>\n// caf\xe9 in Latin-1\nint f();\n")
    out = tmp_path / "out" / "kernels.h"
    out.parent.mkdir()
    result = _atengen("kernel-pch-header", f"--output={out}", str(one))
    assert result.returncode == 0, result.stderr
    assert out.read_text() == HEADER_COMMENT + "#include <ATen/ATen.h>\n"


def test_an_unreadable_source_is_one_line_and_no_header(tmp_path: Path) -> None:
    out = tmp_path / "kernels.h"
    missing = tmp_path / "missing.cpp"
    result = _atengen("kernel-pch-header", f"--output={out}", str(missing))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: {missing}: cannot read: No such file or directory"
    ]
    assert not out.exists()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list('#include <>/*ATenc.h\n "_v') + ["\n"]))))
def test_any_sources_give_a_header_of_includes_they_all_start_with(texts: list[str]) -> None:
    header = precompiled_header_text(texts)
    assert header.startswith(HEADER_COMMENT)
    names = [line[len("#include <") : -1] for line in header[len(HEADER_COMMENT) :].splitlines()]
    common = common_leading_includes(texts)
    assert names == list(dict.fromkeys(common))
    for text in texts:
        assert leading_includes(text)[: len(common)] == common


def _atengen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atengen", *args],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "tool")},
        capture_output=True,
        text=True,
        timeout=60,
    )
