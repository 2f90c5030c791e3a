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
at its runfiles instead. The standard library goes where the interpreter looks for it under a
PYTHONHOME (its path under the installation's prefix), without the parts the tools never import.
Its modules are compiled here into checked-hash .pyc files, with relative paths and a fixed hash
seed (set order in constants), so that the repository is the same bytes on every machine with the
same interpreter and no action compiles the standard library itself.

Standard library only: it runs with whichever interpreter the repository rule found.
"""

from __future__ import annotations

import compileall
import json
import os
import py_compile
import shutil
import sys
import sysconfig
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


prefix = os.path.realpath(sys.base_prefix)
stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
dest = under(stdlib, prefix)
shutil.copytree(stdlib, dest, ignore=left_out, ignore_dangling_symlinks=True)
for entry in sys.path:
    if os.path.basename(entry) == "lib-dynload" and os.path.isdir(entry):
        dynload = os.path.realpath(entry)
        if os.path.relpath(dynload, stdlib).startswith(os.pardir):
            shutil.copytree(dynload, under(dynload, os.path.realpath(sys.base_exec_prefix)))
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
compileall.compile_dir(dest, quiet=2, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
# Paths as their bytes, not JSON's \u escapes: Bazel reads the output, and holds paths, as
# Latin-1, one character per byte (tool/torch_probe.py's print_json).
line = json.dumps(
    {
        "executable": os.path.realpath(sys.executable),
        "libpython": libpython,
        "stdlib": dest,
    },
    ensure_ascii=False,
)
sys.stdout.buffer.write((line + "\n").encode("utf-8", "surrogateescape"))
