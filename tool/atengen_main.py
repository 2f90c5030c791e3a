"""Bazel's entry point for atengen: runs the package as ``python -m atengen`` does.

A py_binary runs its main file as a script, which puts the script's directory first on
sys.path. With ``main = "atengen/__main__.py"`` that directory would be the package itself, and
its modules could shadow the standard library's; from here it is ``tool/``.

The interpreter's own site-packages are taken off sys.path: under Bazel every import comes from
the runfiles (the tool, @rules_aten_pip) or the standard library, which are the action's declared
inputs. A module missing from @rules_aten_pip then fails to import instead of being read from
whatever that interpreter has installed.
"""

import runpy
import site
import sys

if __name__ == "__main__":
    _site_dirs = {*site.getsitepackages(), site.getusersitepackages()}
    sys.path[:] = [p for p in sys.path if p not in _site_dirs]
    runpy.run_module("atengen", run_name="__main__", alter_sys=True)
