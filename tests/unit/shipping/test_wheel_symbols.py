"""atengen.facts.wheel_symbols: the ELF dynamic-symbol-table reader and the FunctionsManual.h scan.

A small ELF64 file built here (the layout of the ELF specification, written with struct) says
which symbols count and which names are taken from them; Hypothesis feeds the reader truncated,
corrupted and random files, which must give a result or one ValueError line, never another
exception. The real libraries are checked against `nm` by tests/unit/facts/test_torch_facts.py (the
installed wheel) and tests/slices/releases/test_releases.py (every release)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atengen.cli.common import read_autograd_helpers
from atengen.errors import AtengenError
from atengen.facts.wheel_facts import parse_wheel_facts
from atengen.facts.wheel_symbols import (
    exported_names,
    functions_manual_names,
    link_interface,
    native_function_names,
)

REPO = Path(__file__).resolve().parents[3]

GLOBAL, WEAK, LOCAL, UNIQUE = 1, 2, 0, 10
FUNC, OBJECT = 2, 1
DEFINED, UNDEF = 12, 0


def _n(name: str) -> str:
    return f"{len(name)}{name}"


# (mangled name, binding, type, section index)
SYMBOLS = [
    (f"_ZN2at6native{_n('abs_out')}ERKNS_6TensorERS2_", GLOBAL, FUNC, DEFINED),
    (f"_ZN2at6native{_n('weak_one')}Ev", WEAK, FUNC, DEFINED),
    (f"_ZN2at6native{_n('undefined_one')}Ev", GLOBAL, FUNC, UNDEF),  # not exported
    (f"_ZN2at6native{_n('local_one')}Ev", LOCAL, FUNC, DEFINED),  # not exported
    (f"_ZN2at6native{_n('templated')}IfEEvv", GLOBAL, FUNC, DEFINED),  # foo<float>(): not plain
    (f"_ZN2at6native{_n('tagged')}B5cxx11Ev", GLOBAL, FUNC, DEFINED),  # tagged[abi:cxx11]()
    (f"_ZN2at6native{_n('detail')}{_n('nested')}Ev", GLOBAL, FUNC, DEFINED),  # at::native::detail
    (f"_ZN2at6native{_n('a_variable')}E", GLOBAL, OBJECT, DEFINED),  # no parameters: no function
    (f"_ZZN2at6native{_n('with_static')}EvE5cache", UNIQUE, OBJECT, DEFINED),  # its local static
    (f"_ZN2at4meta{_n('structured_add_Tensor')}4metaERKNS_6TensorE", GLOBAL, FUNC, DEFINED),
    (f"_ZN2at4meta{_n('structured_mm')}C2Ev", GLOBAL, FUNC, DEFINED),  # a constructor only
    (f"_ZN2at4meta{_n('not_structured')}4metaEv", GLOBAL, FUNC, DEFINED),
    (f"_ZN5torch8autograd9generated7details{_n('copy_range')}ERSt6vectorEv", GLOBAL, FUNC, DEFINED),
    (f"_ZN5torch8autograd9generated7details{_n('kMessage')}E", GLOBAL, OBJECT, DEFINED),
    (f"_ZN5torch8autograd9generated7details{_n('hidden')}Ev", GLOBAL, FUNC, UNDEF),
    ("_ZN3c106detail3fooEv", GLOBAL, FUNC, DEFINED),
    ("plain_c_symbol", GLOBAL, FUNC, DEFINED),
]


def elf(symbols=SYMBOLS) -> bytes:
    """An ELF64 little-endian shared object with sections: null, .dynsym, .dynstr."""
    strtab = b"\0"
    entries = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)]  # symbol 0 is null
    for name, binding, kind, shndx in symbols:
        entries.append(struct.pack("<IBBHQQ", len(strtab), binding << 4 | kind, 0, shndx, 0, 0))
        strtab += name.encode() + b"\0"
    dynsym = b"".join(entries)
    dynsym_at = 64
    dynstr_at = dynsym_at + len(dynsym)
    shoff = dynstr_at + len(strtab)
    sections = [
        struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        struct.pack("<IIQQQQIIQQ", 0, 11, 2, 0, dynsym_at, len(dynsym), 2, 1, 8, 24),
        struct.pack("<IIQQQQIIQQ", 0, 3, 2, 0, dynstr_at, len(strtab), 0, 0, 1, 0),
    ]
    header = struct.pack(
        "<16sHHIQQQIHHHHHH",
        b"\x7fELF\x02\x01\x01" + bytes(9),
        3,  # ET_DYN
        62,  # x86-64
        1,
        0,
        0,
        shoff,
        0,
        64,
        0,
        0,
        64,
        len(sections),
        0,
    )
    return header + dynsym + strtab + b"".join(sections)


def test_names_are_taken_from_defined_exported_symbols_only(tmp_path):
    lib = tmp_path / "libx.so"
    lib.write_bytes(elf())
    names = exported_names(str(lib))
    assert names.native_functions == {"abs_out", "weak_one", "with_static"}
    assert names.structured_meta_classes == {"add_Tensor"}
    assert names.autograd_details == {"copy_range", "kMessage"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not an ELF file (0 bytes)"),
        (b"\x7fELF", "not an ELF file (4 bytes)"),
        (b"#!/bin/sh\n" + bytes(100), "not an ELF file"),
        (b"\x7fELF\x01\x01" + bytes(100), "not a 64-bit little-endian ELF file"),
        (b"\x7fELF\x02\x02" + bytes(100), "not a 64-bit little-endian ELF file"),
        (elf()[:64], "ELF section headers past the end of the file (truncated?)"),
    ],
)
def test_a_file_that_is_no_elf_library_is_one_error_line(tmp_path, data, message):
    lib = tmp_path / "lib.so"
    lib.write_bytes(data)
    with pytest.raises(ValueError) as e:
        exported_names(str(lib))
    assert str(e.value) == f"{lib}: {message}"


def test_a_missing_file_or_a_directory_is_one_error_line(tmp_path):
    with pytest.raises(ValueError, match=r"^\S+/absent\.so: cannot read: No such file"):
        exported_names(str(tmp_path / "absent.so"))
    with pytest.raises(ValueError, match=r"^\S+: not a regular file$"):
        exported_names(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"^\S+/fifo: not a regular file$"):
        exported_names(str(fifo))  # returns at once: no writer is waited for


def test_a_library_without_dynamic_symbols_is_one_error_line(tmp_path):
    data = bytearray(elf())
    shoff = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<I", data, shoff + 64 + 4, 2)  # .dynsym becomes SHT_SYMTAB
    lib = tmp_path / "lib.so"
    lib.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r": no dynamic symbol table \(\.dynsym\)$"):
        exported_names(str(lib))


# The readers of a whole library (tests/unit/shipping/test_link_interface.py has the interface's).
READERS = pytest.mark.parametrize(
    "read", [exported_names, link_interface], ids=lambda f: f.__name__
)


def _outcome(tmp_path: Path, data: bytes, read) -> None:
    lib = tmp_path / "fuzz.so"
    lib.write_bytes(data)
    try:
        read(str(lib))
    except ValueError as e:
        text = str(e)
        assert text.startswith(f"{lib}: ") and "\n" not in text and len(text) < 300, text


_FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@READERS
@_FUZZ
@given(st.integers(min_value=0, max_value=len(elf())))
def test_fuzz_truncated_files(tmp_path, read, length):
    _outcome(tmp_path, elf()[:length], read)


@READERS
@_FUZZ
@given(st.lists(st.tuples(st.integers(0, len(elf()) - 1), st.integers(0, 255)), max_size=8))
def test_fuzz_corrupted_bytes(tmp_path, read, changes):
    data = bytearray(elf())
    for at, value in changes:
        data[at] = value
    _outcome(tmp_path, bytes(data), read)


@READERS
@_FUZZ
@given(st.binary(max_size=600))
def test_fuzz_random_files(tmp_path, read, data):
    _outcome(tmp_path, data, read)


@READERS
@_FUZZ
@given(st.binary(min_size=0, max_size=400))
def test_fuzz_random_bytes_after_an_elf_header(tmp_path, read, tail):
    _outcome(tmp_path, elf()[:64] + tail, read)


HEADER = """\
#pragma once
// namespace torch::autograd::generated::details { a comment, not the namespace
namespace torch::autograd::generated::details {

extern const char* kMsg;
struct TORCH_API Ranges {
  size_t size() { return i; }
  size_t i = 0;
};
using Alias = int;
TORCH_API Tensor exported_one(const Tensor& t);
inline Tensor defined_here(const Tensor& t, bool c) {
  auto f = [](int x) { return x; };
  return c ? OptTensor(t) : Tensor();
}
template <typename T>
Tensor templated(const Tensor& grad, T other, const char* s = "a; b { c");
Tensor
split_over_lines(
    const Tensor& a,
    IntArrayRef sizes = {});
/* Tensor commented_out(const Tensor& t); */
} // namespace torch::autograd::generated::details

namespace other {
Tensor not_a_helper(const Tensor& t);
}
"""


def test_the_header_scan_takes_the_namespaces_top_level_names():
    names = functions_manual_names(HEADER)
    assert names.declared == {
        "kMsg",
        "exported_one",
        "defined_here",
        "templated",
        "split_over_lines",
    }
    assert names.defined == {"defined_here"}


def test_a_header_without_the_namespace_is_one_error_line():
    with pytest.raises(ValueError) as e:
        functions_manual_names("namespace at {}\n", "/x/FunctionsManual.h")
    assert str(e.value) == "/x/FunctionsManual.h: no namespace torch::autograd::generated::details"


@_FUZZ
@given(st.text(alphabet="{};()\n /*\"'#abc", max_size=200))
def test_fuzz_the_header_scan(text):
    names = functions_manual_names("namespace torch::autograd::generated::details {\n" + text)
    assert names.defined <= names.declared


def _torch_dir(tmp_path: Path, lib: bytes, header: str | None = HEADER) -> Path:
    root = tmp_path / "site" / "torch"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libtorch_cpu.so").write_bytes(lib)
    if header is not None:
        manual = root / "include/torch/csrc/autograd/FunctionsManual.h"
        manual.parent.mkdir(parents=True)
        manual.write_text(header)
    (root / "version.py").write_text("__version__ = '2.13.0+cpu'\ncuda = None\n")
    # Not importable (the probe then reads version.py), and quickly so: without an __init__.py
    # the installed torch would be imported instead.
    (root / "__init__.py").write_text("raise ImportError('a stand-in for a torch wheel')\n")
    return root


def test_a_torch_dir_is_read_into_autograd_helpers(tmp_path):
    symbols = [
        (f"_ZN5torch8autograd9generated7details{_n('exported_one')}Ev", GLOBAL, FUNC, DEFINED),
    ]
    helpers = read_autograd_helpers(str(_torch_dir(tmp_path, elf(symbols))))
    assert helpers.callable_names == {"exported_one", "defined_here"}
    assert helpers.unexported_names == {"kMsg", "templated", "split_over_lines"}


def test_an_unreadable_library_or_header_is_one_error_line(tmp_path):
    root = _torch_dir(tmp_path / "a", b"not an elf file at all" * 4)
    with pytest.raises(AtengenError) as e:
        read_autograd_helpers(str(root))
    assert str(e.value) == f"error: {root}/lib/libtorch_cpu.so: not an ELF file"
    root = _torch_dir(tmp_path / "b", elf(), header=None)
    with pytest.raises(AtengenError, match=r"FunctionsManual\.h:1: error: cannot read"):
        read_autograd_helpers(str(root))


def test_the_probe_reports_an_unreadable_library_in_one_line(tmp_path):
    root = _torch_dir(tmp_path, elf()[:100])
    proc = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"{root}/lib/libtorch_cpu.so: ELF section headers past the end of the file (truncated?)"
    ]


def test_the_probe_reads_a_torch_dir_without_nm(tmp_path):
    """Its facts come from the files alone: with no binutils on PATH they are the same."""
    root = _torch_dir(tmp_path, elf())
    proc = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PATH=str(tmp_path / "empty")),
    )
    assert proc.returncode == 0, proc.stderr
    facts = __import__("json").loads(proc.stdout)
    assert facts["native_kernels"] == {"libtorch_cpu": ["abs_out", "weak_one", "with_static"]}
    assert facts["structured_meta_classes"] == ["add_Tensor"]
    assert facts["autograd_helpers_exported"] == ["copy_range", "kMessage"]
    assert facts["autograd_helpers_defined"] == ["defined_here"]
    assert "split_over_lines" in facts["autograd_helpers_declared"]


NATIVE_FUNCTIONS = """\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
- func: expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
# - func: commented_out(Tensor self) -> Tensor
"""


def test_the_wheels_aten_operator_names_are_read(tmp_path):
    """The names of the wheel's native_functions.yaml (without overloads), which formulas may
    call unqualified: by the probe into the facts, and without facts from the torch dir."""
    assert native_function_names(NATIVE_FUNCTIONS) == {"add", "add_", "expand"}
    root = _torch_dir(tmp_path, elf())
    native = root.parent / "torchgen" / "packaged" / "ATen" / "native" / "native_functions.yaml"
    native.parent.mkdir(parents=True)
    native.write_text(NATIVE_FUNCTIONS)
    helpers = read_autograd_helpers(str(root))
    assert helpers.aten_operators == {
        "add",
        "add_symint",
        "add_",
        "add__symint",
        "expand",
        "expand_symint",
    }
    proc = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    facts = __import__("json").loads(proc.stdout)
    assert facts["aten_operators"] == ["add", "add_", "expand"]
    assert parse_wheel_facts(proc.stdout).autograd_helpers.aten_operators == helpers.aten_operators
