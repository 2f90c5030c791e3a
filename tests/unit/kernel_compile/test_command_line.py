"""The compile `atengen compile-kernel` is given, and the command lines made from it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from atengen.errors import AtengenError
from atengen.kernel_compile.command_line import KernelCompile
from tests.support.bazel_helpers import REPO

ARGUMENTS = (
    "--source=k.cpp", "--output=out/k.pic.o", "--",
    "/usr/bin/gcc", "-fPIC", "-frandom-seed=out/k.pic.o", "-Iinc", "-c", "k.cpp", "-o", "out/k.pic.o",
)  # fmt: skip


def test_with_a_header_first() -> None:
    compile = KernelCompile.parse(ARGUMENTS)
    assert compile.with_header("/s/h.h") == (
        "/usr/bin/gcc", "-include", "/s/h.h", "-Winvalid-pch", *ARGUMENTS[4:],
    )  # fmt: skip


def test_the_precompile_has_the_same_flags() -> None:
    assert KernelCompile.parse(ARGUMENTS).precompiling("h.h", "h.h.gch", "h.d") == (
        "/usr/bin/gcc", "-fPIC", "-frandom-seed=out/k.pic.o", "-Iinc",
        "-x", "c++-header", "-c", "h.h", "-o", "h.h.gch", "-MD", "-MF", "h.d",
    )  # fmt: skip


def test_two_sources_with_the_same_flags_share_a_key() -> None:
    other = tuple(a.replace("k.", "other.") for a in ARGUMENTS)
    assert KernelCompile.parse(other).key_argv() == KernelCompile.parse(ARGUMENTS).key_argv()
    assert KernelCompile.parse(ARGUMENTS).key_argv() == ("/usr/bin/gcc", "-fPIC", "-Iinc")


@pytest.mark.parametrize(
    "arguments, message",
    [
        ((), "expected --source=SOURCE --output=OBJECT -- COMPILER ARG..."),
        (ARGUMENTS[1:], "expected --source=SOURCE"),
        (ARGUMENTS[:2] + ARGUMENTS[3:], "expected --source=SOURCE"),
        (("--source=x.cpp",) + ARGUMENTS[1:], "the command line has no `-c x.cpp`"),
        (ARGUMENTS[:1] + ("--output=y.o",) + ARGUMENTS[2:], "the command line has no `-o y.o`"),
    ],
)
def test_a_bad_command_line_is_one_error(arguments: tuple[str, ...], message: str) -> None:
    with pytest.raises(AtengenError) as e:
        KernelCompile.parse(arguments)
    assert message in e.value.format_all() and "\n" not in e.value.format_all()


def test_a_plain_compile_needs_no_ctypes() -> None:
    """A remote action runs `compile-kernel` plainly, with the build's interpreter on a worker
    that may lack the system's libffi, which ctypes loads: the compile path must not import it
    (only a precompile, which runs in a local worker, does)."""
    blocked = (
        "import sys; sys.modules['ctypes'] = None; sys.modules['_ctypes'] = None; "
        "import atengen.cli.kernel_compile_command, atengen.kernel_compile.worker"
    )
    result = subprocess.run(
        [sys.executable, "-c", blocked],
        cwd=REPO / "tool",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
