"""Prints `ok`, or what the copied interpreter running it reads from outside its repository.

@rules_aten_python (rules/private/repositories/python.bzl) runs it with the copy it made, as the
launcher starts the copy: the copy must take its shared library, its prefix and every sys.path
entry from the repository (the first argument), not from the installation it was copied from
(which this machine still has, so a copy that fell back to it would otherwise work here and fail
in a sandbox or on a remote worker without it). Standard library only.
"""

from __future__ import annotations

import os
import sys

root = os.path.realpath(sys.argv[1])


def inside(path: str) -> bool:
    return (os.path.realpath(path) + os.sep).startswith(root + os.sep)


with open("/proc/self/maps") as maps:
    libs = {line.split()[-1] for line in maps if "libpython" in line}
outside = [p for p in [sys.prefix, sys.exec_prefix] + sys.path[1:] + sorted(libs) if not inside(p)]
print(" ".join(outside) or "ok")
