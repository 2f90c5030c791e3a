"""Copies the interpreter that runs it into the current directory, the repository of
@rules_aten_python (rules/private/repositories/python.bzl), and prints, as one JSON line, where
the copy put what.

A venv's python resolves to the base interpreter: the tool needs none of a venv's packages (they
come from @rules_aten_pip), and the base binary is the same for every venv made from it, so action
keys do not depend on where a venv lives.

Copies, not symlinks: a symlink into the installation would make every action read that
installation's files, which a sandbox or a remote worker without them cannot, and the copied
binary would still find its libpython and standard library by their absolute installed paths (its
RUNPATH, its compiled-in prefix). The launcher (templates/python_launcher.sh.tpl) points the copy
at its runfiles instead. The standard library, without the parts the tools never import, goes
into one zip where the interpreter looks first under a PYTHONHOME (lib/pythonXY.zip), its modules
compiled here into .pyc files, with relative paths and a fixed hash seed (set order in
constants), so that the repository is the same bytes on every machine with the same interpreter
and no action compiles the standard library itself. One file, not some 1,300: a cold build
digests each of them, and links each into every runfiles tree and sandbox of a tool. Only the
compiled extension modules (lib-dynload), which load from files alone, stay files, under the
standard library's path below the installation's prefix.

Standard library only: it runs with whichever interpreter the repository rule found.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import py_compile
import shutil
import sys
import sysconfig
import tempfile
import zipfile
from typing import NoReturn


def fail(message: str) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(1)


def under(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        fail(path + " is not under the interpreter's prefix " + root)
    return rel


ANYWHERE = {"__pycache__", "test", "tests", "idle_test", "site-packages", "dist-packages"}
TOP = {"ensurepip", "idlelib", "tkinter", "turtledemo"}


def left_out(directory: str, names: list[str]) -> list[str]:
    top = os.path.samefile(directory, stdlib)
    return [
        n
        for n in names
        if n in ANYWHERE
        or n.endswith(".pyc")
        # config-* and _sysconfigdata* hold the prefix the interpreter was built for; only
        # sysconfig reads them.
        or (top and (n in TOP or n.startswith("config-") or n.startswith("_sysconfigdata")))
    ]


def compiled_module(module: tuple[str, str, str]) -> tuple[str, bytes]:
    """A module's zip entry: its .pyc, with the path ``dfile`` (relative) in its code and a hash
    that is never checked against its source (which the zip leaves out), the same bytes on every
    machine; or its source, where it does not compile (importing it fails as it would have)."""
    path, rel, dfile = module
    fd, pyc = tempfile.mkstemp(suffix=".pyc")
    os.close(fd)
    try:
        py_compile.compile(
            path,
            cfile=pyc,
            dfile=dfile,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        with open(pyc, "rb") as f:
            return rel[: -len(".py")] + ".pyc", f.read()
    except py_compile.PyCompileError:
        with open(path, "rb") as f:
            return rel, f.read()
    finally:
        os.unlink(pyc)


def zipped_stdlib(zip_path: str, dynload: str) -> None:
    """Writes the standard library's modules, compiled, and its other files into one zip at
    ``zip_path``, in a fixed order with fixed times, without ``dynload`` (the extension modules'
    directory, or "")."""
    entries: dict[str, bytes] = {}
    modules = []
    for directory, dirs, files in os.walk(stdlib, followlinks=True):  # as copytree did
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in left_out(directory, [d])
            and not (dynload and os.path.samefile(os.path.join(directory, d), dynload))
        )
        for name in sorted(set(files) - set(left_out(directory, files))):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, stdlib)
            if name.endswith(".py"):
                modules.append((path, rel, os.path.join(dest, rel)))
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    entries[rel] = f.read()
    # Compiled side by side: the compile is most of the repository's set-up, which a cold build
    # waits for. Forked, so that no worker runs this script again.
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(mp_context=context) as pool:
        entries.update(pool.map(compiled_module, modules, chunksize=16))
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_STORED) as archive:
        for rel in sorted(entries):
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, entries[rel])


prefix = os.path.realpath(sys.base_prefix)
stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
dest = under(stdlib, prefix)
dynload_dir = ""
for entry in sys.path:
    if os.path.basename(entry) == "lib-dynload" and os.path.isdir(entry):
        dynload_dir = os.path.realpath(entry)
        shutil.copytree(dynload_dir, under(dynload_dir, os.path.realpath(sys.base_exec_prefix)))
os.makedirs(dest, exist_ok=True)
zip_rel = os.path.join(sys.platlibdir, "python{}{}.zip".format(*sys.version_info[:2]))
os.makedirs(sys.platlibdir, exist_ok=True)
zipped_stdlib(zip_rel, dynload_dir)
os.makedirs("bin")
shutil.copy2(os.path.realpath(sys.executable), "bin/python3")
libpython = ""
if sysconfig.get_config_var("Py_ENABLE_SHARED"):
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY") or ""
    path = os.path.join(sysconfig.get_config_var("LIBDIR") or "", name)
    if name and os.path.isfile(path):
        libpython = "lib/" + os.path.basename(name)
        os.makedirs("lib", exist_ok=True)
        shutil.copy2(os.path.realpath(path), libpython)
# Paths as their bytes, not JSON's \u escapes: Bazel reads the output, and holds paths, as
# Latin-1, one character per byte (tool/torch_probe.py's print_json).
line = json.dumps(
    {
        "executable": os.path.realpath(sys.executable),
        "libpython": libpython,
        "stdlib": dest,
        "stdlib_zip": zip_rel,
    },
    ensure_ascii=False,
)
sys.stdout.buffer.write((line + "\n").encode("utf-8", "surrogateescape"))
