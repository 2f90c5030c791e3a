"""What a torch wheel exports and declares, read from its files: the dynamic symbol table of a
shared library (ELF64, little-endian: the only kind torch ships for Linux), the helper
functions torch/csrc/autograd/FunctionsManual.h declares, and the names of the aten operators
of torchgen's packaged native_functions.yaml.

The symbol table is read directly, without binutils: the @torch repository (tool/torch_probe.py)
runs where `nm` may be missing, and reading it here takes a fraction of a second where `nm -DC`
takes over one for libtorch_cpu.so. Names are taken from the mangled (Itanium ABI) symbols, so
no demangler is needed either:

- at::native functions: `_ZN2at6native<len><name>E<parameters>` (free functions of at::native
  itself, not templates, not of nested namespaces or classes), and the functions whose local
  entities (static variables, lambdas) are exported, `_ZZN2at6native<len><name>E...`;
- structured meta classes: `_ZN2at4meta<len>structured_<name>4metaE...`, the exported meta() of
  at::meta::structured_<name>;
- autograd helpers: the first name after `_ZN5torch8autograd9generated7details`, i.e. the
  functions and variables of torch::autograd::generated::details.

Standard library only: the probe imports this module on the user's interpreter. Every malformed
file is a ValueError with one line.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass

# Type checkers read this as True; at run time `typing` (~2 ms to import) stays unimported.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

_ELF_MAGIC = b"\x7fELF"
_ELFCLASS64 = 2
_ELFDATA2LSB = 1
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHT_DYNSYM = 11
_SHT_SYMTAB = 2
_SHT_STRTAB = 3
_SHN_UNDEF = 0
_SHT_GNU_VERSYM, _SHT_GNU_VERNEED = 0x6FFFFFFF, 0x6FFFFFFE
_SHT_GNU_HASH = 0x6FFFFFF6
_SHT_HASH, _SHT_DYNAMIC, _SHT_NOBITS, _SHT_GNU_VERDEF = 5, 6, 8, 0x6FFFFFFD
_ET_DYN = 3
_MAX_ALIGNMENT = 1 << 16  # a page of any size Linux has; more is a corrupt header
_SHN_XINDEX = 0xFFFF
# The sections a linker reads of a shared library it links against (GNU ld, gold and lld alike):
# the dynamic symbols, their hash tables and versions, and the dynamic section (DT_SONAME, which
# the library linked against it records as DT_NEEDED). Their string tables are kept with them.
_LINK_VIEW = frozenset(
    {_SHT_DYNSYM, _SHT_DYNAMIC, _SHT_HASH, _SHT_GNU_HASH}
    | {_SHT_GNU_VERSYM, _SHT_GNU_VERDEF, _SHT_GNU_VERNEED}
)
_GNU_HASH_HEADER = struct.Struct("<IIII")  # nbuckets, symoffset, bloom words, bloom shift
_VERNEED = struct.Struct("<HHIII")  # Elf64_Verneed
_VERNAUX = struct.Struct("<IHHII")  # Elf64_Vernaux
_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
# What `nm -D --defined-only` lists: global, weak and (GNU) unique symbols.
_EXPORTED_BINDINGS = frozenset({_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE})
# In .symtab, a hidden symbol the link made local counts as defined too.
_ANY_BINDING = frozenset(range(16))

_NATIVE = b"N2at6native"
_META = b"N2at4meta"
_DETAILS = b"N5torch8autograd9generated7details"
# The symbols worth decoding: a name in at::native or at::meta, or a local entity of a function
# there (`_ZZ`), or a name in torch::autograd::generated::details.
_PREFIXES = (b"_Z" + _NATIVE, b"_ZZ" + _NATIVE, b"_Z" + _META, b"_Z" + _DETAILS)
_LENGTH = re.compile(rb"[1-9][0-9]*")


@dataclass(frozen=True)
class ExportedNames:
    """Names a library exports, from its defined dynamic symbols."""

    native_functions: frozenset[str]  # at::native::<name>(...)
    structured_meta_classes: frozenset[str]  # at::meta::structured_<name>::meta(...)
    autograd_details: frozenset[str]  # torch::autograd::generated::details::<name>


def exported_names(path: str) -> ExportedNames:
    """The names ``path`` (a shared library) exports; ValueError with one line when it is not a
    readable ELF64 little-endian file with a dynamic symbol table."""
    native, meta, details = set(), set(), set()
    for symbol in defined_dynamic_symbols(path, _PREFIXES):
        if symbol.startswith(b"_ZZ"):
            name, rest = _source_name(symbol, 3 + len(_NATIVE))
            if name is not None and rest.startswith(b"E"):
                native.add(name)
        elif symbol.startswith(_NATIVE, 2):
            name, rest = _source_name(symbol, 2 + len(_NATIVE))
            if name is not None and rest.startswith(b"E") and len(rest) > 1:
                native.add(name)  # a function: its parameters follow the name
        elif symbol.startswith(_META, 2):
            name, rest = _source_name(symbol, 2 + len(_META))
            if name is not None and name.startswith("structured_") and rest.startswith(b"4metaE"):
                meta.add(name.removeprefix("structured_"))
        else:
            name, _ = _source_name(symbol, 2 + len(_DETAILS))
            if name is not None:
                details.add(name)
    return ExportedNames(frozenset(native), frozenset(meta), frozenset(details))


def _source_name(symbol: bytes, at: int) -> tuple[str | None, bytes]:
    """The <length><identifier> at ``at`` of a mangled name, and what follows it; None when
    there is none there (a substitution, an operator name, a constructor)."""
    m = _LENGTH.match(symbol, at)
    if m is None:
        return None, b""
    end = m.end() + int(m.group())
    name = symbol[m.end() : end]
    if len(name) < end - m.end() or not name.isascii():
        return None, b""
    return name.decode("ascii"), symbol[end:]


def defined_dynamic_symbols(path: str, prefixes: tuple[bytes, ...]) -> list[bytes]:
    """The names of the defined global, weak and unique symbols of ``path``'s dynamic symbol
    table (.dynsym) that start with one of ``prefixes``."""
    return _read(path, lambda data: _defined(data, path, prefixes))


def defined_symbols(path: str, prefixes: tuple[bytes, ...]) -> list[bytes]:
    """Like defined_dynamic_symbols, and also the hidden ones of the full symbol table
    (.symtab, where the file has one): what a library defines but does not export."""

    def parse(data: mmap.mmap) -> list[bytes]:
        found = _defined(data, path, prefixes)
        try:
            table = _dynamic_table(data, path, _SHT_SYMTAB)
        except _NoSymbolTable:
            return found
        # (An exported symbol is in both tables: each name once, in the order first seen.)
        return list(dict.fromkeys(found + _defined_in(table, path, prefixes, _ANY_BINDING)))

    return _read(path, parse)


class _NoSymbolTable(Exception):  # noqa: N818 - a signal, caught where it is raised
    """The file has no .symtab (it was stripped)."""


def defined_among(path: str, names: frozenset[bytes]) -> frozenset[bytes]:
    """Which of ``names`` ``path``'s .dynsym defines (global, weak or unique), looked up through
    its GNU hash table (.gnu.hash), as the dynamic loader does: a few names of a library with
    tens of thousands (libtorch_cpu.so) take microseconds, not the tenth of a second reading
    every symbol takes. Without such a table, every symbol is read."""
    return _read(path, lambda data: _defined_among(data, path, names))


@dataclass(frozen=True)
class UndefinedSymbol:
    """A symbol a shared library needs from another (what `nm -D --undefined-only` lists)."""

    name: str
    weak: bool
    # The library its symbol version names (`libc.so.6`, `libstdc++.so.6`, from .gnu.version_r),
    # or None for an unversioned symbol (torch's libraries version none of theirs).
    library: str | None


def undefined_dynamic_symbols(path: str) -> list[UndefinedSymbol]:
    """The undefined symbols of ``path``'s .dynsym, in table order, with the library each one's
    version requirement names (the stable-ABI link check, atengen/linkcheck/stable.py)."""
    return _read(path, lambda data: _undefined(data, path))


def with_weak_references(path: str, names: frozenset[bytes]) -> tuple[bytes, int]:
    """The bytes of ``path`` (a shared library) with every undefined global symbol of its .dynsym
    whose name is in ``names`` made weak, and how many it made weak.

    The dynamic loader binds a weak reference that nothing defines to address 0 instead of
    refusing the library: the library's own code runs, and can say itself why it cannot run.
    Nothing else in the file changes (a symbol's binding is in no hash table)."""

    def weaken(data: mmap.mmap) -> tuple[bytes, int]:
        table = _dynamic_table(data, path)
        edited = bytearray(data)
        count = 0
        for i, (name, info, _, shndx, _, _) in enumerate(_SYM.iter_unpack(table.entries)):
            if i and shndx == _SHN_UNDEF and info >> 4 == _STB_GLOBAL:
                if _name(table.strings, name, path) in names:
                    edited[table.offset + i * _SYM.size + 4] = _STB_WEAK << 4 | info & 0xF
                    count += 1
        return bytes(edited), count

    return _read(path, weaken)


def link_interface(path: str) -> bytes:
    """What a linker reads of ``path`` (a shared library) to link against it, as an ELF file of
    its own: the sections of _LINK_VIEW, with their string tables and the section names, at new
    offsets; every other section keeps its header (name, address, size, flags) as SHT_NOBITS,
    without contents; no program headers, so that nothing can load it.

    A library linked against it is byte for byte the one linked against ``path``, and it is a
    small part of it (libtorch_cpu.so's: 7.8 of 434 MB): Bazel digests every file an action
    reads, the link's libraries too, once per output base and on one of its few threads."""

    def build(data: mmap.mmap) -> bytes:
        table = _dynamic_table(data, path)  # a readable ELF64 file with a .dynsym
        header = list(_EHDR.unpack_from(data, 0))
        if header[1] != _ET_DYN:
            raise ValueError(f"{path}: not a shared library (ELF type {header[1]})")
        sections = [
            list(_SHDR.unpack_from(data, table.shoff + i * _SHDR.size)) for i in range(table.shnum)
        ]
        names = header[13] if header[13] != _SHN_XINDEX else sections[0][6]
        kept = {i for i, s in enumerate(sections) if i and s[1] in _LINK_VIEW}
        kept |= {sections[i][6] for i in kept} | {names}
        out = bytearray(_EHDR.size)
        for i in sorted(kept - {0}):
            if i >= table.shnum:
                raise ValueError(f"{path}: a section names section {i} of {table.shnum}")
            section = sections[i]
            offset, size, align = section[4], section[5], max(section[8], 1)
            _within(data, path, offset, size, f"section {i}")
            if align & (align - 1) or align > _MAX_ALIGNMENT:
                raise ValueError(f"{path}: section {i} is aligned to {align} bytes")
            out += bytes(-len(out) % align)
            section[4] = len(out)
            out += data[offset : offset + size]
        out += bytes(-len(out) % 8)
        for i, section in enumerate(sections):
            if i and i not in kept:
                section[1], section[4] = _SHT_NOBITS, len(out)
        header[5], header[6], header[9], header[10] = 0, len(out), 0, 0  # phoff, shoff, phdrs
        out[: _EHDR.size] = _EHDR.pack(*header)
        for section in sections:
            out += _SHDR.pack(*section)
        return bytes(out)

    return _read(path, build)


def _read(path: str, parse: Callable[[mmap.mmap], T]) -> T:
    try:
        # O_NONBLOCK: opening a FIFO with no writer would block before fstat could refuse it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path}: not a regular file")
        if info.st_size < _EHDR.size:
            raise ValueError(f"{path}: not an ELF file ({info.st_size} bytes)")
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
            return parse(data)
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror}") from None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class _DynamicTable:
    shoff: int
    shnum: int
    offset: int  # .dynsym's, in the file
    entries: bytes  # .dynsym
    strings: bytes  # .dynstr
    index: int  # .dynsym's section index


def _dynamic_table(data: mmap.mmap, path: str, wanted: int = _SHT_DYNSYM) -> _DynamicTable:
    """``wanted``: _SHT_DYNSYM (the default), or _SHT_SYMTAB, which a stripped file lacks."""
    ident, _, _, _, _, _, shoff, _, _, _, _, shentsize, shnum, _ = _EHDR.unpack_from(data, 0)
    if ident[:4] != _ELF_MAGIC:
        raise ValueError(f"{path}: not an ELF file")
    if ident[4] != _ELFCLASS64 or ident[5] != _ELFDATA2LSB:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    if shoff == 0:
        raise ValueError(f"{path}: ELF file without section headers")
    if shentsize != _SHDR.size:
        raise ValueError(f"{path}: ELF section headers of {shentsize} bytes, not {_SHDR.size}")
    if shnum == 0:  # more than 0xff00 sections: the count is section 0's size
        shnum = _section(data, path, shoff, 0)[2]
    if shoff + shnum * _SHDR.size > len(data):
        raise ValueError(f"{path}: ELF section headers past the end of the file (truncated?)")
    for i in range(shnum):
        sh_type, offset, size, link, entsize = _section(data, path, shoff, i)
        if sh_type == wanted:
            break
    else:
        if wanted == _SHT_SYMTAB:
            raise _NoSymbolTable
        raise ValueError(f"{path}: no dynamic symbol table (.dynsym)")
    if entsize != _SYM.size or size % _SYM.size:
        raise ValueError(f"{path}: .dynsym entries of {entsize} bytes, not {_SYM.size}")
    if link >= shnum:
        raise ValueError(f"{path}: .dynsym names string table {link} of {shnum} sections")
    str_type, str_offset, str_size = _section(data, path, shoff, link)[:3]
    if str_type != _SHT_STRTAB:
        raise ValueError(f"{path}: .dynsym's string table (section {link}) is not a string table")
    _within(data, path, offset, size, ".dynsym")
    _within(data, path, str_offset, str_size, ".dynstr")
    return _DynamicTable(
        shoff,
        shnum,
        offset,
        data[offset : offset + size],
        data[str_offset : str_offset + str_size],
        i,
    )


def _name(strings: bytes, at: int, path: str) -> bytes:
    end = strings.find(b"\0", at)
    if end < 0:
        raise ValueError(f"{path}: a .dynstr name runs past its end")
    return strings[at:end]


def _defined(data: mmap.mmap, path: str, prefixes: tuple[bytes, ...]) -> list[bytes]:
    return _defined_in(_dynamic_table(data, path), path, prefixes, _EXPORTED_BINDINGS)


def _defined_in(
    table: _DynamicTable, path: str, prefixes: tuple[bytes, ...], bindings: frozenset[int]
) -> list[bytes]:
    found = []
    for name, info, _, shndx, _, _ in _SYM.iter_unpack(table.entries):
        if (
            shndx != _SHN_UNDEF
            and info >> 4 in bindings
            and name < len(table.strings)
            and table.strings.startswith(prefixes, name)
        ):
            found.append(_name(table.strings, name, path))
    return found


def _gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def _defined_among(data: mmap.mmap, path: str, names: frozenset[bytes]) -> frozenset[bytes]:
    table = _dynamic_table(data, path)
    count = len(table.entries) // _SYM.size
    for i in range(table.shnum):
        sh_type, offset, size, link, _ = _section(data, path, table.shoff, i)
        if sh_type == _SHT_GNU_HASH and link == table.index:
            break
    else:
        return frozenset(names & set(_defined(data, path, (b"",))))
    _within(data, path, offset, max(size, _GNU_HASH_HEADER.size), ".gnu.hash")
    buckets, first, bloom, _ = _GNU_HASH_HEADER.unpack_from(data, offset)
    at = offset + _GNU_HASH_HEADER.size + 8 * bloom
    chain_at = at + 4 * buckets
    if buckets == 0 or chain_at > offset + size or first > count:
        raise ValueError(f"{path}: a .gnu.hash that does not fit its section")
    found = set()
    for name in names:
        h = _gnu_hash(name)
        i = struct.unpack_from("<I", data, at + 4 * (h % buckets))[0]
        while first <= i < count and chain_at + 4 * (i - first + 1) <= offset + size:
            value = struct.unpack_from("<I", data, chain_at + 4 * (i - first))[0]
            if value | 1 == h | 1:
                name_at, info, _, shndx, _, _ = _SYM.unpack_from(table.entries, i * _SYM.size)
                if (
                    shndx != _SHN_UNDEF
                    and info >> 4 in _EXPORTED_BINDINGS
                    and _name(table.strings, name_at, path) == name
                ):
                    found.add(name)
                    break
            if value & 1:
                break
            i += 1
    return frozenset(found)


def _undefined(data: mmap.mmap, path: str) -> list[UndefinedSymbol]:
    table = _dynamic_table(data, path)
    versions, libraries = _version_sections(data, path, table)
    found = []
    for i, (name, info, _, shndx, _, _) in enumerate(_SYM.iter_unpack(table.entries)):
        if i == 0 or shndx != _SHN_UNDEF:  # entry 0 is the null symbol
            continue
        index = versions[i] & 0x7FFF if i < len(versions) else 0
        found.append(
            UndefinedSymbol(
                _name(table.strings, name, path).decode("utf-8", "replace"),
                info >> 4 == _STB_WEAK,
                libraries.get(index),
            )
        )
    return found


def _version_sections(
    data: mmap.mmap, path: str, table: _DynamicTable
) -> tuple[tuple[int, ...], dict[int, str]]:
    """.gnu.version (a version index per .dynsym entry) and, from .gnu.version_r, the library
    each needed version index names. Both empty for a library without symbol versions."""
    versions: tuple[int, ...] = ()
    libraries: dict[int, str] = {}
    for i in range(table.shnum):
        sh_type, offset, size, link, _ = _section(data, path, table.shoff, i)
        if sh_type == _SHT_GNU_VERSYM:
            _within(data, path, offset, size, ".gnu.version")
            versions = struct.unpack_from(f"<{size // 2}H", data, offset)
        elif sh_type == _SHT_GNU_VERNEED:
            for index, library, _ in _needed_versions(data, path, table.shoff, offset, link):
                libraries[index] = library
    return versions, libraries


def needed_versions(path: str) -> list[tuple[str, str]]:
    """(library, version) of each symbol version ``path`` requires (.gnu.version_r):
    ("libc.so.6", "GLIBC_2.34"), ...; empty for a library without symbol versions."""

    def read(data: mmap.mmap) -> list[tuple[str, str]]:
        table = _dynamic_table(data, path)
        found = []
        for i in range(table.shnum):
            sh_type, offset, _, link, _ = _section(data, path, table.shoff, i)
            if sh_type == _SHT_GNU_VERNEED:
                found += [
                    (lib, v)
                    for _, lib, v in _needed_versions(data, path, table.shoff, offset, link)
                ]
        return found

    return _read(path, read)


def _needed_versions(
    data: mmap.mmap, path: str, shoff: int, offset: int, link: int
) -> list[tuple[int, str, str]]:
    """The entries of the .gnu.version_r at ``offset``: (version index, library, version name)."""
    strings = data[slice(*_string_table(data, path, shoff, link))]
    found = []
    need = offset
    while True:
        _within(data, path, need, _VERNEED.size, ".gnu.version_r")
        _, count, file, aux, following = _VERNEED.unpack_from(data, need)
        library = _name(strings, file, path).decode("utf-8", "replace")
        entry = need + aux
        for _ in range(count):
            _within(data, path, entry, _VERNAUX.size, ".gnu.version_r")
            _, _, other, name, step = _VERNAUX.unpack_from(data, entry)
            found.append((other, library, _name(strings, name, path).decode("utf-8", "replace")))
            if not step:
                break
            entry += step
        if not following:
            break
        need += following
    return found


def _string_table(data: mmap.mmap, path: str, shoff: int, index: int) -> tuple[int, int]:
    sh_type, offset, size = _section(data, path, shoff, index)[:3]
    if sh_type != _SHT_STRTAB:
        raise ValueError(f"{path}: .gnu.version_r's string table is not a string table")
    _within(data, path, offset, size, ".gnu.version_r's strings")
    return offset, offset + size


def _section(data: mmap.mmap, path: str, shoff: int, index: int) -> tuple[int, ...]:
    """Section ``index``'s type, offset, size, link and entry size."""
    at = shoff + index * _SHDR.size
    if at + _SHDR.size > len(data):
        raise ValueError(f"{path}: ELF section header {index} past the end of the file")
    _, sh_type, _, _, offset, size, link, _, _, entsize = _SHDR.unpack_from(data, at)
    return sh_type, offset, size, link, entsize


def _within(data: mmap.mmap, path: str, offset: int, size: int, what: str) -> None:
    if offset + size > len(data):
        raise ValueError(f"{path}: {what} runs past the end of the file (truncated?)")


# --- FunctionsManual.h ----------------------------------------------------------------------

_DETAILS_NAMESPACE = re.compile(r"\bnamespace\s+torch::autograd::generated::details\s*\{")
# Comments, string and character literals, and preprocessor lines: nothing a declaration needs,
# and they may hold braces or semicolons.
_NOISE = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|^[ \t]*#[^\n]*", re.S | re.M
)
_CALLED = re.compile(r"(\w+)\s*\(")
_VARIABLE = re.compile(r"(\w+)\s*(?:=[^;]*)?$")


@dataclass(frozen=True)
class HeaderNames:
    """The names torch/csrc/autograd/FunctionsManual.h declares in its namespace."""

    declared: frozenset[str]  # its functions and (extern) variables
    defined: frozenset[str]  # the functions it defines itself (inline): callable unexported


def functions_manual_names(text: str, path: str = "FunctionsManual.h") -> HeaderNames:
    """The functions and variables declared at the top level of the header's namespace
    torch::autograd::generated::details, and those of them it defines. What a class or a
    function body holds is skipped: its members and local names are no helpers. ValueError with
    one line when the header has no such namespace."""
    text = _NOISE.sub(lambda m: '""' if m.group().startswith('"') else " ", text)
    found = _DETAILS_NAMESPACE.search(text)
    if found is None:
        raise ValueError(f"{path}: no namespace torch::autograd::generated::details")
    declared, defined = set(), set()
    # Braces and semicolons inside parentheses (a default argument `= {}`, a lambda) neither
    # open a body nor end a statement.
    depth, parens, start = 0, 0, found.end()
    for m in re.finditer(r"[{};()]", text[found.end() :]):
        at = found.end() + m.start()
        char = m.group()
        if char in "()":
            parens = max(0, parens + (1 if char == "(" else -1))
        elif parens:
            continue
        elif char == "{":
            if depth == 0:
                name = _declared_name(text[start:at], body=True)
                if name is not None:
                    declared.add(name)
                    defined.add(name)
            depth += 1
        elif char == "}":
            if depth == 0:
                break  # the namespace's end
            depth -= 1
            if depth == 0:
                start = at + 1
        elif depth == 0:
            name = _declared_name(text[start:at], body=False)
            if name is not None:
                declared.add(name)
            start = at + 1
    return HeaderNames(frozenset(declared), frozenset(defined))


def _declared_name(statement: str, body: bool) -> str | None:
    """The function a top-level statement declares (or defines, with a body), or the variable an
    `extern` one declares; None for a type, an alias or an empty statement."""
    words = statement.split()
    if not words or words[0] in ("struct", "class", "union", "enum", "using", "namespace"):
        return None
    called = _CALLED.search(statement)
    if called is not None:
        return called.group(1)
    if not body and words[0] == "extern":
        variable = _VARIABLE.search(statement.strip())
        return variable.group(1) if variable else None
    return None


# An entry's schema in native_functions.yaml: `- func: add.Tensor(...)`, `- func: add_(...)`.
_FUNC_NAME = re.compile(r"^- func: ([A-Za-z_]\w*)[.(]", re.MULTILINE)
NATIVE_FUNCTIONS_YAML = os.path.join("packaged", "ATen", "native", "native_functions.yaml")


def native_function_names(text: str) -> frozenset[str]:
    """The operator names (`add`, `add_`: without the overload) of a native_functions.yaml's
    text, read line by line: the wheel's C++ API declares at::<name> for each, which formulas
    call unqualified. A scan instead of a YAML parse: the file is 600 KB, and the probe runs
    without PyYAML."""
    return frozenset(_FUNC_NAME.findall(text))
