"""atengen.facts.wheel_symbols.link_interface: what a linker reads of a shared library.

@torch's link/ holds the link interfaces of torch's libraries (tool/torch_probe.py
--link_interfaces), which libN.so links in place of the wheel's files. The oracles are binutils
and the linkers themselves: `nm -D` lists the same dynamic symbols, and a library linked against
the interfaces is byte for byte the one linked against the wheel's libraries, with GNU ld and
gold. tests/unit/shipping/test_wheel_symbols.py fuzzes it with the other readers: a result or
one ValueError line.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from atengen.facts.wheel_symbols import link_interface
from tests.unit.shipping.test_wheel_symbols import elf

REPO = Path(__file__).resolve().parents[3]
TORCH_LIB = Path(torch.__file__).parent / "lib"

# A function of at::_ops (every release has `add.Tensor`) and one of c10, called from C so that
# nothing but their names is needed: the linkers resolve them in the libraries given.
CALLER = """\
extern void _ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE(void);
extern void _ZN3c1019UndefinedTensorImpl10_singletonE(void);
void call_torch(void) {
  _ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE();
  _ZN3c1019UndefinedTensorImpl10_singletonE();
}
"""


def _nm(path: Path) -> list[str]:
    """`nm -D`'s names and values (its letter says which kind of section, which an interface's
    sections without contents change from data to bss)."""
    out = subprocess.run(["nm", "-D", str(path)], capture_output=True, text=True, check=True)
    return [" ".join(line.split()[::2]) for line in out.stdout.splitlines()]


@pytest.fixture(scope="module")
def interfaces(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("link")
    for name in ("libc10.so", "libtorch_cpu.so"):
        (out / name).write_bytes(link_interface(str(TORCH_LIB / name)))
    return out


def test_the_interface_has_the_librarys_dynamic_symbols_in_a_small_part_of_it(interfaces):
    for name in ("libc10.so", "libtorch_cpu.so"):
        interface, library = interfaces / name, TORCH_LIB / name
        assert _nm(interface) == _nm(library), name
        assert interface.stat().st_size < library.stat().st_size / 4, name
    soname = subprocess.run(
        ["readelf", "-SW", str(interfaces / "libtorch_cpu.so")], capture_output=True, text=True
    ).stdout
    assert " .dynamic " in soname and " .text " in soname and "NOBITS" in soname


@pytest.mark.parametrize("linker", ["bfd", "gold"])
def test_a_library_linked_against_the_interfaces_is_the_same_bytes(tmp_path, interfaces, linker):
    if shutil.which(f"ld.{linker}") is None:
        pytest.fail(f"ld.{linker} is not installed (binutils)")
    source = tmp_path / "caller.c"
    source.write_text(CALLER)
    obj = tmp_path / "caller.o"
    subprocess.run(["gcc", "-fPIC", "-c", str(source), "-o", str(obj)], check=True)
    built = {}
    for kind, lib_dir in (("wheel", TORCH_LIB), ("interface", interfaces)):
        out = tmp_path / "libcaller.so"  # one name: the link writes it into the library
        subprocess.run(
            ["gcc", "-shared", f"-fuse-ld={linker}", "-Wl,--no-undefined", "-o", str(out)]
            + [str(obj), str(lib_dir / "libc10.so"), str(lib_dir / "libtorch_cpu.so")],
            check=True,
        )
        built[kind] = out.read_bytes()
    assert built["interface"] == built["wheel"]
    needed = subprocess.run(
        ["readelf", "-dW", str(tmp_path / "libcaller.so")], capture_output=True, text=True
    ).stdout
    assert "[libtorch_cpu.so]" in needed and "[libc10.so]" in needed and "link" not in needed


def test_nothing_loads_an_interface(interfaces):
    with pytest.raises(OSError, match="libtorch_cpu.so"):
        ctypes.CDLL(str(interfaces / "libtorch_cpu.so"))


def test_the_probe_writes_the_interfaces_of_the_libraries_it_finds(tmp_path):
    out = tmp_path / "link"
    proc = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py"), f"--link_interfaces={out}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)["link_interfaces"]
    assert {"libc10.so", "libtorch_cpu.so"} <= set(written)
    assert sorted(p.name for p in out.iterdir()) == sorted(written)
    assert (out / "libc10.so").read_bytes() == link_interface(str(TORCH_LIB / "libc10.so"))


def test_an_object_file_is_one_error_line(tmp_path):
    data = bytearray(elf())
    data[16] = 1  # ET_REL
    lib = tmp_path / "x.o"
    lib.write_bytes(bytes(data))
    with pytest.raises(ValueError) as e:
        link_interface(str(lib))
    assert str(e.value) == f"{lib}: not a shared library (ELF type 1)"


def test_the_interface_of_a_minimal_library_keeps_its_symbols(tmp_path):
    lib = tmp_path / "libx.so"
    lib.write_bytes(elf())
    interface = tmp_path / "interface.so"
    interface.write_bytes(link_interface(str(lib)))
    assert _nm(interface) == _nm(lib)
    assert link_interface(str(interface)) == interface.read_bytes()  # a fixed point
