"""What a wheel's tags and checks need of a built `lib<name>.so`: its machine, the libraries it
needs (DT_NEEDED), its RUNPATH/RPATH, and the highest GLIBC symbol version it requires. Read from
the ELF file directly (64-bit little-endian, as wheel_symbols.py reads torch's), so that the
wheel action needs no binutils."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_DYN = struct.Struct("<qQ")  # Elf64_Dyn
_VERNEED = struct.Struct("<HHIII")  # Elf64_Verneed
_VERNAUX = struct.Struct("<IHHII")  # Elf64_Vernaux
_SHT_DYNAMIC, _SHT_GNU_VERNEED = 6, 0x6FFFFFFE
_DT_NULL, _DT_NEEDED, _DT_RPATH, _DT_RUNPATH = 0, 1, 15, 29
# e_machine to the platform tag's architecture (the two Linux machines torch ships wheels for).
_MACHINES = {62: "x86_64", 183: "aarch64"}
_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")


@dataclass(frozen=True)
class LibraryFacts:
    machine: str  # "x86_64"
    needed: tuple[str, ...]
    runpath: tuple[str, ...]  # RUNPATH and RPATH entries
    glibc: tuple[int, int] | None  # the highest GLIBC_x.y a symbol requires


def read_library_facts(path: Path) -> LibraryFacts:
    """The facts of the shared library at ``path``; a ValueError with one line when it is not a
    64-bit little-endian ELF file of a known machine."""
    data = path.read_bytes()
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        raise ValueError(f"{path.name} is not an ELF file")
    ident, _, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, _ = _EHDR.unpack_from(data)
    if ident[4] != 2 or ident[5] != 1 or shentsize != _SHDR.size:
        raise ValueError(f"{path.name} is not a 64-bit little-endian ELF file")
    if machine not in _MACHINES:
        raise ValueError(f"{path.name} is for ELF machine {machine}, not x86_64 or aarch64")
    sections = []
    for i in range(shnum):
        at = shoff + i * _SHDR.size
        if at + _SHDR.size > len(data):
            raise ValueError(f"{path.name}: section headers past the end of the file")
        sh = _SHDR.unpack_from(data, at)
        sections.append((sh[1], sh[4], sh[5], sh[6]))  # type, offset, size, link

    def strings(index: int) -> bytes:
        _, offset, size, _ = sections[index]
        return data[offset : offset + size]

    def name(table: bytes, at: int) -> str:
        return table[at : table.index(b"\0", at)].decode("utf-8", "replace")

    needed: list[str] = []
    runpath: list[str] = []
    versions: list[str] = []
    for sh_type, offset, size, link in sections:
        if sh_type == _SHT_DYNAMIC:
            table = strings(link)
            for tag, value in _DYN.iter_unpack(data[offset : offset + size - size % _DYN.size]):
                if tag == _DT_NULL:
                    break
                if tag == _DT_NEEDED:
                    needed.append(name(table, value))
                elif tag in (_DT_RPATH, _DT_RUNPATH):
                    runpath += name(table, value).split(":")
        elif sh_type == _SHT_GNU_VERNEED:
            table = strings(link)
            need = offset
            while True:
                _, count, _, aux, following = _VERNEED.unpack_from(data, need)
                entry = need + aux
                for _ in range(count):
                    _, _, _, vna_name, step = _VERNAUX.unpack_from(data, entry)
                    versions.append(name(table, vna_name))
                    if not step:
                        break
                    entry += step
                if not following:
                    break
                need += following
    glibc = [(int(m[1]), int(m[2])) for m in map(_GLIBC.match, versions) if m]
    return LibraryFacts(
        machine=_MACHINES[machine],
        needed=tuple(needed),
        runpath=tuple(runpath),
        glibc=max(glibc) if glibc else None,
    )
