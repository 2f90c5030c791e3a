"""The layout Hugging Face's `kernels` loads (`kernels.get_local_kernel(path)`): one variant
directory per torch build a library fits, named the way `kernels/variants.py` parses it, with
the `metadata.json` its `Metadata` reads and the package its importer runs.

    build/<variant>/metadata.json    name, id, version, license, python-depends, backend
    build/<variant>/<package>/__init__.py, _ops.py, lib<name>.so, <py_srcs>

The variant of a stable-ABI library is `torch-stable-abi<major><minor>-<device>-<arch>-linux`
(its torch_target: `kernels` takes it in that release and every later one); of one bound to its
build's torch release, `torch<major><minor>-cxx11-<device>-<arch>-linux` (`cxx98` for a torch
built without the C++11 ABI). The device is `cpu`, or `cu<major><minor>` for a library with CUDA
code. `kernels` itself is not a dependency of the generator: tests/unit/shipping/test_kernel_hub_tool.py reads
what is written here with its own parsers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

# `kernels`' KernelName: lowercase letters, digits and `-`, from a letter to a letter or digit.
_KERNEL_NAME = re.compile(r"[a-z][-a-z0-9]*[a-z0-9]")
_RELEASE = re.compile(r"([0-9])\.([0-9]+)")
_CUDA = re.compile(r"([0-9]+)\.([0-9]+)(?:\.[0-9]+)*")


class HubInputError(ValueError):
    """A bad aten_kernel_hub input: one line."""


def check_kernel_name(name: str) -> str:
    """The package name (`-` as `_`) of the kernel ``name``, or a HubInputError."""
    if not _KERNEL_NAME.fullmatch(name):
        raise HubInputError(
            f"kernel_name = {name!r} is not a kernel name: lowercase ASCII letters, digits and "
            "'-', starting with a letter, ending with a letter or digit, at least 2 characters "
            "(such as my-ops)"
        )
    return name.replace("-", "_")


def check_version(version: str) -> int:
    if not version.isdigit() or not version.isascii() or int(version) < 1:
        raise HubInputError(f"version = {version!r} is not a kernel version (1, 2, ...)")
    return int(version)


def check_license(text: str) -> str:
    if not text.strip() or not text.isprintable():
        raise HubInputError(
            f"license = {text!r} is not a license: one line, such as Apache-2.0 or MIT"
        )
    return text


def device(cuda: str) -> str:
    """`cpu`, or `cu<major><minor>` for a library whose code needs CUDA ``cuda`` ("13.0")."""
    if not cuda:
        return "cpu"
    m = _CUDA.fullmatch(cuda)
    if not m:
        raise HubInputError(f"cuda = {cuda!r} is not a CUDA version (such as 13.0)")
    return f"cu{m[1]}{m[2]}"


def variant(*, abi: str, release: str, cxx11_abi: bool, cuda: str, machine: str) -> str:
    """The variant directory's name. ``release`` is the stable library's torch_target, or the
    bound library's torch release, major.minor."""
    m = _RELEASE.fullmatch(release)
    if not m:
        # `kernels` reads one digit of major version (its `torch(\d)(\d+)`).
        raise HubInputError(f"torch release {release!r} is not major.minor with a one-digit major")
    where = f"{device(cuda)}-{machine}-linux"
    if abi == "stable":
        return f"torch-stable-abi{m[1]}{m[2]}-{where}"
    if abi == "release":
        return f"torch{m[1]}{m[2]}-{'cxx11' if cxx11_abi else 'cxx98'}-{where}"
    raise HubInputError(f'abi = {abi!r} is not "stable" or "release"')


@dataclass(frozen=True)
class HubContents:
    kernel_name: str
    package: str
    version: int
    license: str
    variant: str
    backend: str  # metadata's backend type: "cpu" or "cuda"
    # (path in the package, bytes, executable), every file of the package directory
    files: tuple[tuple[str, bytes, bool], ...]


def kernel_id(package: str, device_name: str, files: tuple[tuple[str, bytes, bool], ...]) -> str:
    """`_<package>_<device>_<digest>`: kernel-builder's shape, with a digest of the package's
    files instead of a git revision, so that the same inputs give the same id and other inputs
    another (`kernels` imports the package under this name)."""
    digest = hashlib.sha256()
    for name, data, executable in sorted(files):
        digest.update(f"{name}\0{len(data)}\0{int(executable)}\0".encode())
        digest.update(data)
    return f"_{package}_{device_name}_{digest.hexdigest()[:10]}"


def metadata(contents: HubContents) -> bytes:
    """metadata.json: sorted keys, two-space indent, one newline at the end."""
    device_name = contents.variant.split("-")[-3]
    data = {
        "backend": {"type": contents.backend},
        "id": kernel_id(contents.package, device_name, contents.files),
        "license": contents.license,
        "name": contents.kernel_name,
        "python-depends": [],
        "version": contents.version,
    }
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def write_hub(contents: HubContents, output_dir: Path) -> Path:
    """Writes `build/<variant>/` into output_dir (which must exist and hold no `build`); returns
    the variant directory. The tree is written under a temporary name and renamed: a failure
    leaves nothing behind. Files are 0644 (the library 0755)."""
    final = output_dir / "build"
    if final.exists() or final.is_symlink():
        raise HubInputError(f"{final} exists: the output directory must be empty")
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=output_dir))
    try:
        top = partial / "build" / contents.variant
        package_dir = top / contents.package
        package_dir.mkdir(parents=True)
        (top / "metadata.json").write_bytes(metadata(contents))
        for name, data, executable in sorted(contents.files):
            path = package_dir / name
            path.write_bytes(data)
            os.chmod(path, stat.S_IMODE(0o755 if executable else 0o644))
        for directory in (top, package_dir, partial / "build"):
            os.chmod(directory, 0o755)
        os.chmod(top / "metadata.json", 0o644)
        os.replace(partial / "build", final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return final / contents.variant
