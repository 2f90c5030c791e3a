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


def write_trees(trees: Iterable[tuple[str, Iterable[GeneratedFile]]]) -> None:
    """Make each output directory hold exactly its files, all of them or none.

    Every tree is written to a sibling temporary directory first; only when all are written do
    they replace their directories. On any error the old directories are left (or put back) as
    they were. Trees for one directory (`out` twice, or `out` and `./out`) are merged.
    """
    merged: dict[str, list[GeneratedFile]] = {}
    for out_dir, files in trees:
        merged.setdefault(os.path.abspath(out_dir), []).extend(files)
    staged: list[tuple[str, str]] = []  # (temporary dir, out_dir)
    swapped: list[tuple[str, str | None]] = []  # (out_dir, its previous contents' new name)
    try:
        for out_dir, files in merged.items():
            staged.append((_stage(out_dir, files), out_dir))
        for tmp, out_dir in staged:
            old = None
            if os.path.exists(out_dir):
                old = out_dir + ".old-" + os.path.basename(tmp)
                os.rename(out_dir, old)
            swapped.append((out_dir, old))
            os.rename(tmp, out_dir)
    except BaseException:
        for out_dir, old in reversed(swapped):
            if old is not None:
                if os.path.exists(out_dir):
                    shutil.rmtree(out_dir, ignore_errors=True)
                os.rename(old, out_dir)
        for tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    for _, old in swapped:
        if old is not None:
            shutil.rmtree(old)


def _stage(out_dir: str, files: Iterable[GeneratedFile]) -> str:
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".atengen-", dir=parent)
    try:
        for f in files:
            path = os.path.join(tmp, f.path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(f.text)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp
