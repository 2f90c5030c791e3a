"""Describes an installed torch wheel as one JSON object on stdout: what the generator and the
rules read from the wheel itself instead of keeping by hand.

    python tool/torch_probe.py [--link_interfaces=DIR] [TORCH_DIR]

TORCH_DIR is the `torch` package directory to describe; without it, the one the interpreter would
import (found without importing it, which takes seconds). With --link_interfaces, it also writes
into DIR the link interface of each library of LINKED_LIBRARIES the wheel has (what a linker reads
of it, atengen/facts/wheel_symbols.py's link_interface), under the library's name: what a
library of rules_aten links against in place of the wheel's. Everything is read from the wheel's
files; only a CUDA wheel is imported, for what only the running module knows: its CUDA
architectures (torch.cuda.get_arch_list()). The @torch repository
rule (rules/private/repositories/torch.bzl) runs it with the interpreter it found and writes the result to
@torch//:torch_facts.json, which `atengen generate --torch_facts` reads. Standard library and
torch only (with the package atengen/facts/ beside it, which is too): it runs on the user's
interpreter, not the generator's.

Fields:
  version, release ("2.14"), cuda ("13.0", or "" for a CPU wheel), arch_list (the CUDA
  `sm_*`/`compute_*` list of torch.cuda.get_arch_list()), cxx11_abi (from libc10.so's symbols),
  torch_dir, torchgen_dir, headers (which of the optional headers the wheel
  ships), libraries (the torch/lib libraries it has), cuda_include_dirs (the nvidia-* packages'
  include directories beside the wheel), cuda_runtime (the CUDA runtime library there, or ""),
  native_kernels ({"libtorch_cpu": [...], "libtorch_cuda": [...]}, the at::native function names
  each exports), structured_meta_classes (the `at::meta::structured_<name>` classes whose meta()
  libtorch_cpu exports, which an external backend's structured ops reuse), link_interfaces (the
  libraries --link_interfaces wrote), autograd_helpers_exported (the names libtorch_cpu exports in
  torch::autograd::generated::details, the namespace of torch/csrc/autograd/FunctionsManual.h),
  autograd_helpers_declared and autograd_helpers_defined (the functions and variables that header declares there, and the ones
  it defines inline), aten_operators (the operator names of torchgen's packaged
  native_functions.yaml, which derivative formulas call unqualified), abi_source, import_error, and release_support: how rules_aten treats the
  release (atengen/facts/torch_facts.py's policy, which the @torch rule applies from here instead of
  keeping a copy): {"verdict": "supported", "newer" (built with the newest supported release's
  facts, after one warning), "older" (refused) or "unreadable"; "supported_releases": oldest
  first; "facts_release": the release whose facts apply, "" when none does}.

The exports are read from each library's dynamic symbol table by atengen/facts/wheel_symbols.py
(standard library only), so binutils are not needed; a library or header that
cannot be read stops the probe with one line.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import sys

from atengen.facts.torch_facts import NEWEST_RELEASE, SUPPORTED_RELEASES, release_support
from atengen.facts.wheel_facts import version_py_fields
from atengen.facts.wheel_symbols import (
    NATIVE_FUNCTIONS_YAML,
    defined_dynamic_symbols,
    exported_names,
    functions_manual_names,
    link_interface,
    native_function_names,
)

# Headers some rules need and some wheels lack, by the path under include/.
OPTIONAL_HEADERS = (
    "torch/csrc/lazy/core/shape_inference.h",
    "c10/cuda/impl/cuda_cmake_macros.h",
)
LIBRARIES = (
    "libc10.so",
    "libtorch_cpu.so",
    "libtorch.so",
    "libc10_cuda.so",
    "libtorch_cuda.so",
)
# What rules_aten's libraries link by path (@torch//:cpu_libraries, :cuda_libraries): all but
# libtorch.so.
LINKED_LIBRARIES = tuple(name for name in LIBRARIES if name != "libtorch.so")
FUNCTIONS_MANUAL = "torch/csrc/autograd/FunctionsManual.h"


def cuda_packages(site: str) -> tuple[list[str], str]:
    """The nvidia-* wheels' include directories (nvidia/cu13/include, nvidia/cudnn/include, ...)
    and the CUDA runtime library among their lib/ directories."""
    includes = sorted(glob.glob(os.path.join(site, "nvidia", "*", "include")))
    runtimes = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcudart.so*")))
    return includes, (runtimes[0] if runtimes else "")


def cxx11_abi_of(torch_dir: str) -> bool | None:
    """Whether the wheel is built with the C++11 ABI of libstdc++: whether libc10.so exports
    names with its `[abi:cxx11]` tag (`B5cxx11`), as std::string's mangle under that ABI only;
    None when libc10.so cannot be read."""
    try:
        symbols = defined_dynamic_symbols(os.path.join(torch_dir, "lib", "libc10.so"), (b"_Z",))
    except ValueError:
        return None
    return any(b"B5cxx11" in s for s in symbols)


def version_file(torch_dir: str) -> dict[str, str]:
    """version, release and cuda from torch/version.py, without importing torch."""
    try:
        with open(os.path.join(torch_dir, "version.py"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return {}
    found = version_py_fields(text)
    if "__version__" not in found:
        return {}
    version = found["__version__"]
    return {
        "version": version,
        "release": ".".join(version.split("+")[0].split(".")[:2]),
        "cuda": found.get("cuda", ""),
    }


def probe(override: str) -> dict[str, object]:
    info: dict[str, object] = {"abi_source": "default", "cxx11_abi": True, "version": "unknown"}
    info.update(release="unknown", cuda="", arch_list=[])
    if override:
        torch_dir = os.path.abspath(override)
    else:
        # Found as `import torch` would find it, without running it: importing torch takes two
        # to three seconds, before any other step of a user's first build.
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            missing = ModuleNotFoundError("No module named 'torch'")
            sys.exit(f"cannot import torch: {missing!r}")
        torch_dir = os.path.abspath(spec.submodule_search_locations[0])
    info.update(version_file(torch_dir))
    cxx11 = cxx11_abi_of(torch_dir)
    if cxx11 is not None:
        info["cxx11_abi"], info["abi_source"] = cxx11, "the symbols of libc10.so"
    if info["cuda"]:
        # Only the running module knows its CUDA architectures.
        if override:
            sys.path.insert(0, os.path.dirname(torch_dir))
        try:
            import torch

            imported = os.path.dirname(os.path.abspath(torch.__file__))
            if os.path.realpath(imported) == os.path.realpath(torch_dir):
                info["arch_list"] = list(torch.cuda.get_arch_list())
        except Exception as e:  # noqa: BLE001 - reported, the caller decides
            if not override:
                sys.exit(f"cannot import torch: {e!r}")
            info["import_error"] = repr(e)
    site = os.path.dirname(torch_dir)
    info["torch_dir"] = torch_dir
    info["torchgen_dir"] = os.path.join(site, "torchgen")
    include = os.path.join(torch_dir, "include")
    info["headers"] = {h: os.path.exists(os.path.join(include, h)) for h in OPTIONAL_HEADERS}
    lib = os.path.join(torch_dir, "lib")
    info["libraries"] = [name for name in LIBRARIES if os.path.exists(os.path.join(lib, name))]
    info["cuda_include_dirs"], info["cuda_runtime"] = cuda_packages(site)
    release = info["release"]
    assert isinstance(release, str), release  # "unknown", torch's or its version.py's
    info["release_support"] = support_of(release)
    try:
        info.update(wheel_exports(torch_dir))
    except ValueError as e:
        sys.exit(str(e))
    native = os.path.join(str(info["torchgen_dir"]), NATIVE_FUNCTIONS_YAML)
    if os.path.exists(native):
        try:
            with open(native, encoding="utf-8") as f:
                info["aten_operators"] = sorted(native_function_names(f.read()))
        except (OSError, UnicodeDecodeError) as e:
            sys.exit(f"{native}: cannot read: {e}")
    return info


def support_of(release: str) -> dict[str, object]:
    """The release_support field: the verdict on `release`, with what the messages name."""
    verdict = release_support(release)
    return {
        "verdict": verdict,
        "supported_releases": list(SUPPORTED_RELEASES),
        "facts_release": {"supported": release, "newer": NEWEST_RELEASE}.get(verdict, ""),
    }


def wheel_exports(torch_dir: str) -> dict[str, object]:
    """What the wheel's libraries export and FunctionsManual.h declares (the fields of each
    library or header it has); ValueError with one line for one that cannot be read."""
    found: dict[str, object] = {}
    kernels: dict[str, list[str]] = {}
    for name in ("libtorch_cpu", "libtorch_cuda"):
        path = os.path.join(torch_dir, "lib", name + ".so")
        if not os.path.exists(path):
            continue
        names = exported_names(path)
        kernels[name] = sorted(names.native_functions)
        if name == "libtorch_cpu":
            found["structured_meta_classes"] = sorted(names.structured_meta_classes)
            found["autograd_helpers_exported"] = sorted(names.autograd_details)
    if kernels:
        found["native_kernels"] = kernels
    header = os.path.join(torch_dir, "include", FUNCTIONS_MANUAL)
    if "autograd_helpers_exported" in found and os.path.exists(header):
        try:
            with open(header, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{header}: cannot read: {e}") from None
        declared = functions_manual_names(text, header)
        found["autograd_helpers_declared"] = sorted(declared.declared)
        found["autograd_helpers_defined"] = sorted(declared.defined)
    else:  # the three fields go together
        found.pop("autograd_helpers_exported", None)
    return found


def write_link_interfaces(torch_dir: str, out_dir: str) -> list[str]:
    """Writes the link interface of each of LINKED_LIBRARIES the wheel has into ``out_dir``;
    returns their names. ValueError with one line for a library that cannot be read."""
    written = []
    for name in LINKED_LIBRARIES:
        path = os.path.join(torch_dir, "lib", name)
        if os.path.exists(path):
            interface = link_interface(path)
            try:
                os.makedirs(out_dir, exist_ok=True)
                with open(os.path.join(out_dir, name), "wb") as f:
                    f.write(interface)
            except OSError as e:
                raise ValueError(f"{out_dir}/{name}: cannot write: {e.strerror}") from None
            written.append(name)
    return written


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="torch_probe.py")
    parser.add_argument("torch_dir", nargs="?", default="")
    parser.add_argument("--link_interfaces", default="")
    args = parser.parse_args(argv)
    info = probe(args.torch_dir)
    if args.link_interfaces:
        try:
            info["link_interfaces"] = write_link_interfaces(
                str(info["torch_dir"]), args.link_interfaces
            )
        except ValueError as e:
            sys.exit(str(e))
    print_json(info)


def print_json(value: object) -> None:
    """Prints ``value`` as JSON for rules/private/repositories/torch.bzl, paths as their bytes.

    Bazel 4 reads a process's output as Latin-1, one character per byte, and holds paths the same
    way. So a path printed as its own (UTF-8) bytes comes back as that path, where JSON's
    `\u00e9` would decode to the character itself, another path: a torch under a non-ASCII
    directory would then seem to have no include/. (surrogateescape: a name that is not UTF-8
    gets its bytes back.)"""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False) + "\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
