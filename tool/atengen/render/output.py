"""Writing generated files: all or nothing, never a stale, partial or stray file.

A command's outputs (one or more directory trees, and stamp files) are written
by one ``write_outputs`` call in two phases:

1. stage: every path is resolved and checked to lie under its declared output
   directory, then each tree is written to a temporary sibling directory and
   each stamp to a temporary sibling file;
2. commit: each staged tree and stamp is renamed into place, what was there
   before being renamed aside first.

If anything fails, staged files are removed and whatever was moved aside is
put back, so the file system looks as it did before the command; the failure
is one ``error: cannot write ...`` line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

from atengen.errors import AtengenError


@dataclass(frozen=True)
class GeneratedFile:
    path: str  # relative to its output directory
    text: str
    cuda: bool = False  # belongs to the CUDA library


@dataclass(frozen=True)
class Outputs:
    """What a pipeline produces: files by output directory, stamp files, and text for the user.
    Nothing is written until ``write_outputs(outputs.trees, outputs.stamps)``."""

    trees: tuple[tuple[str, tuple[GeneratedFile, ...]], ...] = ()
    stamps: tuple[tuple[str, str], ...] = ()  # (path, text)
    warnings: tuple[str, ...] = ()  # one `file:line: warning: ...` line each, for stderr
    report: str = ""  # for stdout (counts, JSON lines)

    @staticmethod
    def of_trees(trees: Iterable[tuple[str, Iterable[GeneratedFile]]], **kwargs) -> Outputs:
        return Outputs(trees=tuple((d, tuple(files)) for d, files in trees), **kwargs)


def write_trees(trees: Iterable[tuple[str, Iterable[GeneratedFile]]]) -> None:
    """Make each directory hold exactly its files (``write_outputs`` without stamps)."""
    write_outputs([(d, list(files)) for d, files in trees])


def write_outputs(
    trees: list[tuple[str, list[GeneratedFile]]], stamps: Iterable[tuple[str, str]] = ()
) -> None:
    """Make each tree's directory hold exactly its files and each stamp path hold its text."""
    merged: dict[str, list[GeneratedFile]] = {}
    for out_dir, files in trees:
        merged.setdefault(os.path.realpath(out_dir), []).extend(files)
    dirs = sorted(merged)
    cwd = os.path.realpath(os.getcwd())
    for d in dirs:
        # Each output directory is replaced whole: `--output_dir=.` by hand would delete the
        # sources around it. (Bazel runs actions in the execroot, above every output.)
        if cwd == d or cwd.startswith(d.rstrip(os.sep) + os.sep):
            raise AtengenError(
                None,
                f"output directory {d} holds the current directory; atengen replaces its output "
                "directories whole, so give it a directory of its own",
            )
    for a in dirs:
        for b in dirs:
            if a != b and b.startswith(a + os.sep):
                raise AtengenError(None, f"output directories overlap: {b} is inside {a}")
    for out_dir, files in merged.items():
        for f in files:
            _check_inside(out_dir, f.path)
    stamps = [(os.path.realpath(p), text) for p, text in stamps]
    transaction = _Transaction()
    try:
        for out_dir, files in merged.items():
            transaction.stage_tree(out_dir, files)
        for path, text in stamps:
            transaction.stage_file(path, text)
        transaction.commit()
    except OSError as e:
        transaction.roll_back()
        where = e.filename or "output"
        raise AtengenError(None, f"cannot write {where}: {e.strerror or e}") from None
    except BaseException:
        transaction.roll_back()
        raise
    transaction.finish()


def _check_inside(out_dir: str, relative: str) -> None:
    """A generated path must name a file strictly inside its output directory."""
    target = os.path.realpath(os.path.join(out_dir, relative))
    if os.path.isabs(relative) or not target.startswith(out_dir + os.sep):
        raise AtengenError(
            None,
            f"generated file '{relative}' would be written outside its output directory "
            f"{out_dir}; check the names and prefixes that make up its path",
        )


class _Transaction:
    def __init__(self):
        self.created_dirs: list[str] = []  # parents made for the outputs, outermost first
        self.staged: list[tuple[str, str]] = []  # (temporary path, final path)
        self.placed: list[tuple[str, str | None]] = []  # (final path, where the old one went)

    def _make_parent(self, path: str) -> str:
        parent = os.path.dirname(path)
        missing = []
        d = parent
        while not os.path.isdir(d):
            missing.append(d)
            d = os.path.dirname(d)
        for d in reversed(missing):
            os.mkdir(d)
            self.created_dirs.append(d)
        return parent

    def stage_tree(self, out_dir: str, files: list[GeneratedFile]) -> None:
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise OSError(20, "exists and is not a directory", out_dir)
        tmp = tempfile.mkdtemp(prefix=".atengen-", dir=self._make_parent(out_dir))
        self.staged.append((tmp, out_dir))
        for f in files:
            path = os.path.join(tmp, f.path)
            with _naming(os.path.join(out_dir, f.path)):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(f.text)

    def stage_file(self, path: str, text: str) -> None:
        if os.path.isdir(path):
            raise OSError(21, "is a directory", path)
        fd, tmp = tempfile.mkstemp(prefix=".atengen-", dir=self._make_parent(path))
        self.staged.append((tmp, path))
        with _naming(path), os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)

    def commit(self) -> None:
        for tmp, final in self.staged:
            old = None
            with _naming(final):
                if os.path.lexists(final):
                    old = f"{tmp}.old"
                    os.rename(final, old)
                self.placed.append((final, old))
                os.rename(tmp, final)

    def roll_back(self) -> None:
        for final, old in reversed(self.placed):
            if os.path.lexists(final) and (old is None or os.path.lexists(old)):
                _remove(final)
            if old is not None and os.path.lexists(old):
                try:
                    os.rename(old, final)
                except OSError:
                    pass  # nothing better to do; the old output is still at `old`
        for tmp, _ in self.staged:
            _remove(tmp)
        for d in reversed(self.created_dirs):
            try:
                os.rmdir(d)
            except OSError:
                pass

    def finish(self) -> None:
        for _, old in self.placed:
            if old is not None:
                _remove(old)


@contextlib.contextmanager
def _naming(path: str):
    """An OSError inside names ``path``, the output being written: a failed write (`File too
    large`, `No space left on device`) carries no file name, and a failed rename names the
    temporary file, which is gone by the time the error is read."""
    try:
        yield
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), path) from None


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        try:
            os.remove(path)
        except OSError:
            pass
