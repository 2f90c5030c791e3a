"""Writing generated files: all or nothing, never a stale or partial directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratedFile:
    path: str  # relative to its output directory
    text: str
    cuda: bool = False  # belongs to the CUDA library


def write_tree(out_dir: str, files: Iterable[GeneratedFile]) -> None:
    """Make ``out_dir`` hold exactly ``files``.

    Files are written to a sibling temporary directory first, which then
    replaces ``out_dir``; on any error the old ``out_dir`` is left untouched.
    """
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".atengen-", dir=parent)
    try:
        for f in files:
            path = os.path.join(tmp, f.path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(f.text)
        old = None
        if os.path.exists(out_dir):
            old = out_dir + ".old-" + os.path.basename(tmp)
            os.rename(out_dir, old)
        os.rename(tmp, out_dir)
        if old:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
