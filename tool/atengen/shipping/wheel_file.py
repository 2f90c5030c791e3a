"""The wheel of an operator library: its name, tags and metadata with `packaging`, its archive
and RECORD with `wheel`'s WheelFile, the same bytes for the same inputs.

    <package>/__init__.py    loads lib<name>.so beside it, imports ops and the user's modules
    <package>/ops.py         torch.ops.<ns>, typed by ops.pyi
    <package>/ops.pyi, py.typed
    <package>/lib<name>.so
    <package>/<py_srcs>
    <dist>-<version>.dist-info/METADATA, WHEEL, RECORD
"""

from __future__ import annotations

import keyword
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path

from packaging.metadata import Metadata, RawMetadata
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import InvalidName, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from wheel.wheelfile import WheelFile

from atengen.shipping.elf import LibraryFacts

# Every entry's time: the zip format's earliest. WheelFile stamps RECORD with SOURCE_DATE_EPOCH,
# which write_wheel sets to the same instant.
_EPOCH = 315532800  # 1980-01-01T00:00:00Z
_DATE = (1980, 1, 1, 0, 0, 0)
# The oldest glibc a tag names: manylinux2014's. An older glibc is not worth a tag pip ignores
# on every current system.
_OLDEST_GLIBC = (2, 17)
# The longest file name Linux file systems take (NAME_MAX), in bytes.
_NAME_MAX = 255
# The distributions a torch install needs (torch's unconditional Requires-Dist, and theirs; the
# CUDA wheels' triton): a wheel of one of these names would replace it, and torch with it.
# tests/unit/shipping/test_wheel_bad_input.py checks it against the installed torch's metadata. The tool also
# reads the metadata of a torch its interpreter sees (torch_dependencies), but the generator's
# environment need not have one.
TORCH_DEPENDENCIES = frozenset(
    {
        "filelock",
        "fsspec",
        "jinja2",
        "markupsafe",
        "mpmath",
        "networkx",
        "setuptools",
        "sympy",
        "triton",
        "typing-extensions",
    }
)
# Import names of those distributions that are not their names.
_TORCH_DEPENDENCY_PACKAGES = frozenset({"pkg_resources", "_distutils_hack"})


class WheelInputError(ValueError):
    """A bad aten_wheel input: one line."""


def torch_dependencies() -> frozenset[str]:
    """TORCH_DEPENDENCIES and the distributions (canonical names) that the metadata of a torch
    this interpreter sees requires, without extras."""
    try:
        texts = importlib_metadata.requires("torch") or []
    except importlib_metadata.PackageNotFoundError:
        return TORCH_DEPENDENCIES
    found = set(TORCH_DEPENDENCIES)
    for text in texts:
        try:
            r = Requirement(text)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                found.add(canonicalize_name(r.name))
        except (InvalidRequirement, ValueError):
            continue  # metadata of torch's own that packaging cannot read: the kept list stands
    return frozenset(found)


@dataclass(frozen=True)
class Names:
    distribution: str  # as given
    package: str  # the import name
    version: Version


def check_names(distribution: str, version: str) -> Names:
    """The distribution's import name and its version, or a WheelInputError naming the problem."""
    try:
        canonical = canonicalize_name(distribution, validate=True)
    except InvalidName:
        raise WheelInputError(
            f"distribution = {distribution!r} is not a valid distribution name (letters, digits, "
            "'.', '-' and '_', starting and ending with a letter or digit)"
        ) from None
    package = canonical.replace("-", "_")
    if not package.isidentifier() or keyword.iskeyword(package) or package == "torch":
        raise WheelInputError(
            f"distribution = {distribution!r} gives the package name {package!r}, which is not "
            "a valid Python package name (an identifier, not a keyword, not torch)"
        )
    if package in sys.stdlib_module_names:
        raise WheelInputError(
            f"distribution = {distribution!r} gives the package name {package!r}, a module of "
            "Python's standard library, which `import` would find first: choose another name"
        )
    if canonical in torch_dependencies() or package in _TORCH_DEPENDENCY_PACKAGES:
        raise WheelInputError(
            f"distribution = {distribution!r} is the name of one of torch's dependencies, which "
            "the wheel would replace: choose another name"
        )
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise WheelInputError(
            f"version = {version!r} is not a PEP 440 version (such as 1.0, 2.3.1, 1.0rc1, 1.0.post2)"
        ) from None
    return Names(distribution, package, parsed)


def requirement(text: str) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement as e:
        # packaging's message goes on with the text and a caret under the problem: its first
        # line says what is wrong.
        why = str(e).splitlines()[0] if str(e) else "not parsed"
        raise WheelInputError(f"requires: {text!r} is not a PEP 508 requirement: {why}") from None


def wheel_tag(facts: LibraryFacts) -> Tag:
    """py3-none-manylinux_<glibc>_<arch> for a library that does not link libpython (it is
    loaded by torch, not imported by CPython), else cp3X-cp3X for the libpython it links. The
    glibc is the newest its symbols require, of glibc itself or of the C++ runtime."""
    if facts.newer_cxx_runtime:
        raise WheelInputError(
            f"the library requires {facts.newer_cxx_runtime}, newer than any manylinux "
            "policy's C++ runtime: build it with an older compiler"
        )
    glibc = max(
        facts.glibc or _OLDEST_GLIBC, facts.cxx_runtime_glibc or _OLDEST_GLIBC, _OLDEST_GLIBC
    )
    platform = f"manylinux_{glibc[0]}_{glibc[1]}_{facts.machine}"
    pythons = [n for n in facts.needed if n.startswith("libpython3.")]
    if not pythons:
        return Tag("py3", "none", platform)
    minor = pythons[0].removeprefix("libpython3.").split(".")[0].rstrip("dm")
    return Tag(f"cp3{minor}", f"cp3{minor}", platform)


@dataclass(frozen=True)
class WheelContents:
    names: Names
    tag: Tag
    requires: tuple[Requirement, ...]
    classifiers: tuple[str, ...]
    summary: str
    # (path in the package, bytes, executable), every file of the package directory
    files: tuple[tuple[str, bytes, bool], ...]


def metadata(contents: WheelContents) -> bytes:
    """METADATA, checked by packaging; a WheelInputError naming the first field it refuses."""
    names = contents.names
    raw: RawMetadata = {
        "metadata_version": "2.1",
        "name": names.distribution,
        "version": str(names.version),
        "summary": contents.summary,
        "requires_dist": [str(r) for r in contents.requires],
        "classifiers": list(contents.classifiers),
    }
    try:
        return bytes(Metadata.from_raw(raw).as_rfc822())
    except ExceptionGroup as group:
        # One exception per invalid field, each naming the field ("'summary' must be a single
        # line"); the first is the line.
        first = group.exceptions[0]
        raise WheelInputError(f"invalid metadata: {first}".splitlines()[0]) from None


def _wheel_metadata(tag: Tag) -> bytes:
    # Root-Is-Purelib false: the package holds a shared library (platlib).
    return (
        "Wheel-Version: 1.0\n"
        "Generator: rules_aten (aten_wheel)\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    ).encode()


def wheel_filename(names: Names, tag: Tag) -> str:
    escaped = canonicalize_name(names.distribution).replace("-", "_")
    filename = f"{escaped}-{names.version}-{tag}.whl"
    parse_wheel_filename(filename)  # packaging's own check of what it will be installed as
    if len(filename.encode()) > _NAME_MAX:
        raise WheelInputError(
            f"the wheel's file name would be {len(filename.encode())} bytes, over the "
            f"{_NAME_MAX} a file name may have: shorten distribution or version"
        )
    return filename


def write_wheel(contents: WheelContents, output_dir: Path) -> Path:
    """Writes the wheel into output_dir, which must exist; returns its path. Entries sorted,
    times and modes fixed: the same contents give the same bytes. Everything that can be
    refused is checked before the first byte is written, and the wheel is written under a
    temporary name and renamed: a failure leaves no wheel behind."""
    filename = wheel_filename(contents.names, contents.tag)
    meta = metadata(contents)
    path = output_dir / filename
    os.environ["SOURCE_DATE_EPOCH"] = str(_EPOCH)
    package = contents.names.package
    # WheelFile takes the dist-info directory from its file's name: the wheel is written with
    # its own name in a directory of its own, then moved.
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=output_dir))
    try:
        with WheelFile(str(partial / filename), "w") as wheel:
            entries = [(f"{package}/{name}", data, ex) for name, data, ex in contents.files]
            for arcname, data, executable in sorted(entries):
                _add(wheel, arcname, data, executable)
            dist_info = wheel.dist_info_path
            _add(wheel, f"{dist_info}/METADATA", meta, False)
            _add(wheel, f"{dist_info}/WHEEL", _wheel_metadata(contents.tag), False)
        os.replace(partial / filename, path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return path


def _add(wheel: WheelFile, arcname: str, data: bytes, executable: bool) -> None:
    info = zipfile.ZipInfo(arcname, date_time=_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
    wheel.writestr(info, data)
