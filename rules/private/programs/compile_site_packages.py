"""Compiles every module under the directory it is given into checked-hash .pyc files, and prints
the interpreter's cache tag.

@rules_aten_pip (rules/private/repositories/pip.bzl) runs it with the interpreter that runs the
tools, over what pip installed: the .pyc files are valid whatever the files' mtimes (the import
still checks each against its source). Otherwise every build action that runs the generator
compiles jinja2, absl and yaml from source first: about 20 ms of CPU an action.
"""

from __future__ import annotations

import compileall
import py_compile
import sys

compileall.compile_dir(
    sys.argv[1], quiet=2, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
)
print(sys.implementation.cache_tag)
