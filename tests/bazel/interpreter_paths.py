"""Prints, as one JSON object, where the running interpreter took its files from: its prefixes,
sys.path, the libpython it loaded and the file of every module it imported (the standard library's
and the pinned packages' the generator uses). tests/workspace/test_hermetic_python.py runs it in a build
action that cannot see the host's Python installations."""

import json
import os
import sys

import jinja2  # noqa: F401 (imported for where it is loaded from)
import yaml  # noqa: F401


def main() -> None:
    with open("/proc/self/maps") as maps:
        libpython = sorted({line.split()[-1] for line in maps if "libpython" in line})
    modules = sorted(
        {m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)}
    )
    json.dump(
        {
            "cwd": os.getcwd(),
            "version": list(sys.version_info[:3]),
            "prefix": sys.prefix,
            "exec_prefix": sys.exec_prefix,
            "base_prefix": sys.base_prefix,
            "path": sys.path,
            "libpython": libpython,
            "modules": modules,
        },
        sys.stdout,
        indent=1,
    )


if __name__ == "__main__":
    main()
