"""What a wheel's tags and checks need of a built `lib<name>.so`: its machine, the libraries it
needs (DT_NEEDED), its RUNPATH/RPATH, and the highest GLIBC symbol version it requires. Read from
the ELF file directly (64-bit little-endian, as wheel_symbols.py reads torch's), so that the
wheel action needs no binutils."""

from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from atengen.facts.wheel_symbols import needed_versions

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_DYN = struct.Struct("<qQ")  # Elf64_Dyn
_SHT_STRTAB, _SHT_DYNAMIC = 3, 6
_ET_DYN = 3
_DT_NULL, _DT_NEEDED, _DT_RPATH, _DT_RUNPATH = 0, 1, 15, 29
# e_machine to the platform tag's architecture (the two Linux machines torch ships wheels for).
_MACHINES = {62: "x86_64", 183: "aarch64"}
_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")
_VERSION = re.compile(r"^(GLIBCXX|CXXABI|GCC)_(\d+(?:\.\d+)*)$")
# The C++ runtime's symbol versions also bound the glibc a tag may name: manylinux_2_X promises
# the libstdc++ and libgcc_s of the distributions with glibc 2.X. For each, the newest version
# of a manylinux policy, and the glibc of the oldest policy that has it (auditwheel's policy
# table, manylinux-policy.json, which tests/unit/shipping/test_wheel_bad_input.py compares with this one).
CXX_RUNTIME_GLIBC: dict[str, tuple[tuple[tuple[int, ...], tuple[int, int]], ...]] = {
    "GLIBCXX": (
        ((3, 4, 19), (2, 17)),
        ((3, 4, 22), (2, 24)),
        ((3, 4, 24), (2, 27)),
        ((3, 4, 28), (2, 31)),
        ((3, 4, 29), (2, 34)),
        ((3, 4, 30), (2, 35)),
        ((3, 4, 33), (2, 39)),
    ),
    "CXXABI": (
        ((1, 3, 7), (2, 17)),
        ((1, 3, 10), (2, 24)),
        ((1, 3, 11), (2, 27)),
        ((1, 3, 12), (2, 31)),
        ((1, 3, 13), (2, 34)),
        ((1, 3, 15), (2, 39)),
    ),
    "GCC": (
        ((4, 8, 0), (2, 17)),
        ((7, 0, 0), (2, 27)),
        ((12, 0, 0), (2, 35)),
        ((14, 0, 0), (2, 39)),
    ),
}


@dataclass(frozen=True)
class LibraryFacts:
    machine: str  # "x86_64"
    needed: tuple[str, ...]
    runpath: tuple[str, ...]  # RUNPATH and RPATH entries
    glibc: tuple[int, int] | None  # the highest GLIBC_x.y a symbol requires
    # The oldest glibc whose manylinux policy has every GLIBCXX_, CXXABI_ and GCC_ version it
    # requires; None without such requirements, or with one newer than every policy's.
    cxx_runtime_glibc: tuple[int, int] | None = None
    newer_cxx_runtime: str = ""  # such a version, newer than every policy's


def _file_bytes(path: Path) -> bytes:
    """The bytes of a regular file; a ValueError (one line) for anything else."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer would block before fstat could refuse it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror}") from None
    finally:
        os.close(fd)


def read_library_facts(path: Path) -> tuple[LibraryFacts, bytes]:
    """The facts of the shared library at ``path``, and its bytes; a ValueError with one line
    when it cannot be read or is not a 64-bit little-endian ELF shared library of a known
    machine whose dynamic section holds together."""
    data = _file_bytes(path)
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        raise ValueError(f"{path.name} is not an ELF file")
    ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, _ = _EHDR.unpack_from(
        data
    )
    if ident[4] != 2 or ident[5] != 1 or shentsize != _SHDR.size:
        raise ValueError(f"{path.name} is not a 64-bit little-endian ELF file")
    if e_type != _ET_DYN:
        raise ValueError(f"{path.name} is an ELF file of type {e_type}, not a shared library")
    if machine not in _MACHINES:
        raise ValueError(f"{path.name} is for ELF machine {machine}, not x86_64 or aarch64")
    invalid = f"{path.name} is not a valid ELF shared library"
    sections = []
    for i in range(shnum):
        at = shoff + i * _SHDR.size
        if at + _SHDR.size > len(data):
            raise ValueError(f"{invalid}: section headers past the end of the file")
        sh = _SHDR.unpack_from(data, at)
        sections.append((sh[1], sh[4], sh[5], sh[6]))  # type, offset, size, link

    def contents(index: int, what: str) -> bytes:
        _, offset, size, _ = sections[index]
        if offset + size > len(data):
            raise ValueError(f"{invalid}: its {what} runs past the end of the file")
        return data[offset : offset + size]

    def name(table: bytes, at: int) -> str:
        end = table.find(b"\0", at)
        if end < 0:
            raise ValueError(f"{invalid}: a name of its dynamic section is outside its strings")
        return table[at:end].decode("utf-8", "replace")

    needed: list[str] = []
    runpath: list[str] = []
    for index, (sh_type, _, _, link) in enumerate(sections):
        if sh_type != _SHT_DYNAMIC:
            continue
        if link >= len(sections) or sections[link][0] != _SHT_STRTAB:
            raise ValueError(f"{invalid}: its dynamic section's string table (section {link}) "
                             "is missing")  # fmt: skip
        table = contents(link, "dynamic string table")
        entries = contents(index, "dynamic section")
        for tag, value in _DYN.iter_unpack(entries[: len(entries) - len(entries) % _DYN.size]):
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED:
                needed.append(name(table, value))
            elif tag in (_DT_RPATH, _DT_RUNPATH):
                runpath += name(table, value).split(":")
    try:
        versions = [version for _, version in needed_versions(str(path))]
    except ValueError as e:
        # wheel_symbols' lines start with the path, which `invalid` names already.
        raise ValueError(f"{invalid}: {str(e).removeprefix(f'{path}: ')}") from None
    glibc = [(int(m[1]), int(m[2])) for m in map(_GLIBC.match, versions) if m]
    runtime: list[tuple[int, int]] = []
    newer = ""
    for m in filter(None, map(_VERSION.match, versions)):
        number = tuple(int(n) for n in m[2].split("."))
        fits = [g for newest, g in CXX_RUNTIME_GLIBC[m[1]] if number <= newest]
        if fits:
            runtime.append(fits[0])
        else:
            newer = m[0]
    facts = LibraryFacts(
        machine=_MACHINES[machine],
        needed=tuple(needed),
        runpath=tuple(runpath),
        glibc=max(glibc) if glibc else None,
        cxx_runtime_glibc=max(runtime) if runtime else None,
        newer_cxx_runtime=newer,
    )
    return facts, data
