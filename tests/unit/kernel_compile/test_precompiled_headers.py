"""The worker's precompiled headers, with g++ over the wheel's headers: a source's first compile
is plain and starts its header's precompile; once made, the header serves its next compiles,
which give the same object bytes; a changed input or compiler header retires it."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from atengen.kernel_compile.command_line import KernelCompile
from atengen.kernel_compile.precompiled import PrecompiledHeaders, store_root
from tests.support.compile_helpers import CXXFLAGS

pytestmark = pytest.mark.slow  # g++ precompiles ATen/core/Tensor.h

KERNEL = """\
// a comment first
#include <ATen/core/Tensor.h>
#include <vector>
#include "local.h"

namespace {{
at::Tensor helper(const at::Tensor& t) {{ return t.mul({factor}); }}
}}  // namespace
at::Tensor scale_twice(const at::Tensor& t) {{ static int calls = 0; ++calls; return helper(t); }}
"""


def compile_of(tmp: Path, source: Path, name: str) -> KernelCompile:
    obj = tmp / f"{name}.o"
    argv = ("g++", *CXXFLAGS, f"-I{tmp}", f"-frandom-seed={obj}", "-c", str(source), "-o", str(obj))
    return KernelCompile.parse((f"--source={source}", f"--output={obj}", "--", *argv))


def digests_of(paths: list[Path]) -> dict[str, bytes]:
    return {str(p): hashlib.sha256(p.read_bytes()).digest() for p in paths}


def test_a_header_is_made_beside_the_first_compile_and_serves_the_next(tmp_path: Path) -> None:
    (tmp_path / "local.h").write_text("#pragma once\n")
    source = tmp_path / "k.cpp"
    source.write_text(KERNEL.format(factor=2))
    store = PrecompiledHeaders(tmp_path / "store")
    plain = compile_of(tmp_path, source, "plain")
    digests = digests_of([tmp_path / "local.h"])

    first = store.header_for(plain, digests)
    assert first.header is None and "started" in first.why, first
    assert "under way" in store.header_for(plain, digests).why
    store.wait()
    (entry,) = (tmp_path / "store").iterdir()
    recorded = json.loads((entry / "ready.json").read_text())
    # What the precompile read: torch's headers and the compiler's, not the source's own.
    assert any(p.endswith("ATen/core/Tensor.h") for p in recorded), sorted(recorded)[:5]
    assert not any(p.endswith("local.h") for p in recorded)
    assert (
        (entry / "kernel_pch.h")
        .read_text()
        .endswith("#include <ATen/core/Tensor.h>\n#include <vector>\n")
    )

    # An edit of the body keeps the header; the object is the plain compile's, byte for byte.
    source.write_text(KERNEL.format(factor=3))
    with_header = compile_of(tmp_path, source, "with_header")
    choice = store.header_for(with_header, digests)
    assert choice.header == str(entry / "kernel_pch.h"), choice
    run(with_header.with_header(choice.header))
    run(plain.argv)
    assert (tmp_path / "with_header.o").read_bytes() == (tmp_path / "plain.o").read_bytes()

    # A header it read that Bazel gives another digest for (a new torch) retires it.
    tensor_h = next(p for p in recorded if p.endswith("ATen/core/Tensor.h"))
    assert recorded[tensor_h][0] == "stat"  # no digest given for it above
    with_digest = {**digests, tensor_h: b"old"}
    store.header_for(with_header, with_digest)  # retired (stat, not digest), remade
    store.wait()
    assert json.loads((entry / "ready.json").read_text())[tensor_h] == ["digest", b"old".hex()]
    assert store.header_for(with_header, with_digest).header == choice.header
    assert "started" in store.header_for(with_header, {**digests, tensor_h: b"new"}).why
    store.wait()


def test_sources_without_leading_torch_includes_compile_plainly(tmp_path: Path) -> None:
    source = tmp_path / "k.cpp"
    source.write_text('#include "local.h"\n#include <ATen/core/Tensor.h>\n')
    choice = PrecompiledHeaders(tmp_path / "store").header_for(
        compile_of(tmp_path, source, "k"), {}
    )
    assert choice.header is None and "no torch or standard header" in choice.why
    assert not (tmp_path / "store").exists()


def test_a_failed_precompile_is_not_retried_with_the_same_inputs(tmp_path: Path) -> None:
    source = tmp_path / "k.cpp"
    source.write_text("#include <no_such_header>\n")
    compile = compile_of(tmp_path, source, "k")
    store = PrecompiledHeaders(tmp_path / "store")
    assert "started" in store.header_for(compile, {"a": b"1"}).why
    store.wait()
    failed = store.header_for(compile, {"a": b"1"})
    assert failed.header is None and "failed" in failed.why, failed
    assert "no_such_header" in Path(failed.why.rpartition(": ")[2]).read_text()
    assert "started" in store.header_for(compile, {"a": b"2"}).why
    store.wait()


def test_the_store_lives_in_the_output_base() -> None:
    assert store_root(Path("/ob/execroot/_main")) == Path("/ob/rules_aten_kernel_pch")
    assert store_root(Path("/ob/bazel-workers/worker-3-AtenKernelCompile/_main")) == Path(
        "/ob/rules_aten_kernel_pch"
    )
    assert store_root(Path("/home/me/src")) is None


def run(argv: tuple[str, ...]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
