"""`atengen bound-link`, the last step of an ABI-bound lib<name>.so: the references the
linked library makes to symbols the torch libraries define become weak, and nothing else does.

Checked on libraries gcc builds here, with binutils' `nm -D` and the dynamic loader (ctypes) as
the judges: the edited library loads where the torch library is missing, the unedited one does
not. The guard that then refuses such a library is exercised on real torch releases by
tests/workspaces/test_quickstart.py."""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atengen.facts.wheel_symbols import defined_among, with_weak_references
from tests.unit.shipping.test_wheel_symbols import elf

REPO = Path(__file__).resolve().parents[3]
TOOL = REPO / "tool"

PROVIDER = """
int torch_provided(void) { return 7; }
int torch_unused(void) { return 8; }
"""
# References one symbol of the provider, one of libc, and one nobody defines (a kernel the user
# declared and never wrote): only the provider's becomes weak.
USER = """
#include <stdio.h>
int torch_provided(void);
int never_defined(void);
int call_provided(void) { return torch_provided(); }
int call_libc(void) { return puts("x"); }
int call_missing(void) { return never_defined(); }
"""


def compile_library(
    tmp_path: Path, name: str, source: str, *flags: str, language: str = "c"
) -> Path:
    """lib<name>.so in tmp_path, from `source` in C (gcc) or, with language "c++", C++ (g++)."""
    compiler, suffix = ("g++", "cpp") if language == "c++" else ("gcc", "c")
    if shutil.which(compiler) is None:
        pytest.fail(f"{compiler} is not on PATH: the toolchain the build uses is missing")
    src = tmp_path / f"{name}.{suffix}"
    src.write_text(source)
    out = tmp_path / f"lib{name}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True)
    return out


def _run_tool(*flags: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atengen", "bound-link", *map(str, flags)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(TOOL)},
        timeout=120,
    )


def _link(label: str, linked: Path, output: Path, torch: Path) -> subprocess.CompletedProcess[str]:
    return _run_tool(f"--label={label}", f"--linked={linked}", f"--output={output}",
                     f"--torch_library={torch}")  # fmt: skip


def _undefined(library: Path) -> dict[str, str]:
    """{name: nm's letter} of the undefined dynamic symbols, from binutils."""
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1].split("@")[0]: line.split()[-2] for line in out.splitlines()}


@pytest.fixture
def libraries(tmp_path: Path) -> tuple[Path, Path]:
    provider = compile_library(tmp_path, "provider", PROVIDER)
    user = compile_library(tmp_path, "user", USER, f"-L{tmp_path}", "-lprovider", "-Wl,-z,now")
    return provider, user


def test_only_the_torch_references_become_weak(tmp_path: Path, libraries) -> None:
    provider, user = libraries
    before = _undefined(user)
    assert before["torch_provided"] == "U" and before["never_defined"] == "U", before
    out = tmp_path / "out" / "libuser.so"
    out.parent.mkdir()
    result = _link("//pkg:libuser.so", user, out, provider)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    after = _undefined(out)
    assert after == {**before, "torch_provided": "w"}, (before, after)
    # Only that one byte differs.
    assert out.stat().st_size == user.stat().st_size
    pairs = zip(user.read_bytes(), out.read_bytes(), strict=True)
    assert sum(a != b for a, b in pairs) == 1
    again = tmp_path / "again.so"
    assert _link("//pkg:libuser.so", user, again, provider).returncode == 0
    assert again.read_bytes() == out.read_bytes()


def test_the_loader_binds_a_missing_weak_reference_instead_of_refusing(tmp_path: Path) -> None:
    provider = compile_library(tmp_path, "provider", PROVIDER)
    source = "int torch_provided(void);\nint answer(void) { return 3; }\n"
    source += "int use(void) { return torch_provided(); }\n"
    linked = compile_library(
        tmp_path,
        "linked",
        source,
        f"-L{tmp_path}",
        "-lprovider",
        "-Wl,-z,now",
        f"-Wl,-rpath,{tmp_path}",
    )
    out = tmp_path / "out" / "liblinked.so"
    out.parent.mkdir()
    assert _link("//pkg:x", linked, out, provider).returncode == 0
    # Another "torch", which lacks the symbol.
    compile_library(tmp_path, "provider", "int other(void) { return 0; }\n")
    with pytest.raises(OSError, match="undefined symbol: torch_provided"):
        ctypes.CDLL(str(linked), mode=ctypes.RTLD_LOCAL)
    # The edited library's own code runs (where the guard would refuse it).
    assert ctypes.CDLL(str(out), mode=ctypes.RTLD_LOCAL).answer() == 3


@pytest.mark.parametrize("broken", ["linked", "torch"])
def test_a_bad_input_is_one_line_and_no_output(tmp_path: Path, libraries, broken: str) -> None:
    provider, user = libraries
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"#!/bin/sh\n" + bytes(100))
    linked, torch = (bad, provider) if broken == "linked" else (user, bad)
    digests = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (user, provider, bad)}
    out = tmp_path / "out.so"
    result = _link("//pkg:libuser.so", linked, out, torch)
    assert result.returncode == 1, result
    assert result.stderr == f"rules_aten: //pkg:libuser.so: {bad}: not an ELF file\n"
    assert not out.exists()
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in digests} == digests


def test_a_missing_flag_is_a_usage_line(tmp_path: Path) -> None:
    result = _run_tool(
        "--label=//pkg:x", f"--linked={tmp_path / 'a.so'}", f"--output={tmp_path / 'b.so'}"
    )
    assert result.returncode == 2, result
    assert result.stderr.startswith("atengen bound-link: error: "), result
    assert "--torch_library" in result.stderr and result.stderr.count("\n") == 1


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(0, len(elf()) - 1), st.integers(0, 255)), max_size=8))
def test_fuzz_corrupted_libraries(tmp_path: Path, changes) -> None:
    data = bytearray(elf())
    for at, value in changes:
        data[at] = value
    lib = tmp_path / "fuzz.so"
    lib.write_bytes(bytes(data))
    try:
        edited, count = with_weak_references(str(lib), frozenset({b"_ZN3c106detail3fooEv"}))
    except ValueError as e:
        assert str(e).startswith(f"{lib}: ") and "\n" not in str(e), e
    else:
        assert len(edited) == len(data) and count >= 0


def _nm_defined(library: Path) -> set[bytes]:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1].split("@")[0].encode() for line in out.splitlines() if line.strip()}


def test_the_hash_table_lookup_agrees_with_nm_on_torch() -> None:
    """defined_among looks names up through .gnu.hash; nm reads every symbol."""
    import torch

    lib = Path(torch.__file__).parent / "lib" / "libc10.so"
    defined = _nm_defined(lib)
    undefined = {
        line.split()[-1].split("@")[0].encode()
        for line in subprocess.run(
            ["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    }
    asked = frozenset(sorted(defined)[::7]) | frozenset(undefined) | {b"no_such_symbol", b""}
    assert defined_among(str(lib), asked) == asked & defined


@pytest.fixture(scope="module")
def hashed_library(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A small library with a GNU hash table (gcc's default here)."""
    path = compile_library(tmp_path_factory.mktemp("hashed"), "provider", PROVIDER)
    sections = subprocess.run(
        ["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert ".gnu.hash" in sections, sections
    return path.read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(changes=st.lists(st.tuples(st.integers(0, 2**16), st.integers(0, 255)), max_size=8))
def test_fuzz_the_hash_table_lookup(tmp_path: Path, hashed_library: bytes, changes) -> None:
    data = bytearray(hashed_library)
    for at, value in changes:
        data[at % len(data)] = value
    lib = tmp_path / "fuzz.so"
    lib.write_bytes(bytes(data))
    asked = frozenset({b"torch_provided", b"torch_unused", b"absent"})
    try:
        found = defined_among(str(lib), asked)
    except ValueError as e:
        assert str(e).startswith(f"{lib}: ") and "\n" not in str(e), e
    else:
        assert found <= asked
