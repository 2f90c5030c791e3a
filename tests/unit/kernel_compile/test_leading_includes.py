"""The header the compile worker precompiles for a kernel source holds the torch and standard
headers the source starts with, and nothing it does not include first. Expected values written by
hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atengen.kernel_compile.leading_includes import (
    HEADER_COMMENT,
    leading_includes,
    precompiled_header_text,
)


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


def test_the_header_includes_each_leading_header_once_in_order() -> None:
    a = "#include <ATen/core/Tensor.h>\n#include <vector>\n#include <vector>\n#include <cmath>\n"
    assert precompiled_header_text(a) == (
        HEADER_COMMENT + "#include <ATen/core/Tensor.h>\n#include <vector>\n#include <cmath>\n"
    )
    assert precompiled_header_text('#include "local.h"\n') == HEADER_COMMENT


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('#include <>/*ATenc.h\n "_v') + ["\n"])))
def test_any_source_gives_a_header_of_includes_it_starts_with(text: str) -> None:
    header = precompiled_header_text(text)
    assert header.startswith(HEADER_COMMENT)
    names = [line[len("#include <") : -1] for line in header[len(HEADER_COMMENT) :].splitlines()]
    assert names == list(dict.fromkeys(leading_includes(text)))
