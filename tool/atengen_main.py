"""Bazel's entry point for atengen: runs the package as ``python -m atengen`` does.

A py_binary runs its main file as a script, which puts the script's directory first on
sys.path. With ``main = "atengen/__main__.py"`` that directory would be the package itself, and
its modules could shadow the standard library's; from here it is ``tool/``.
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("atengen", run_name="__main__", alter_sys=True)
