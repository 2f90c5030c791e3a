"""The worker's store of precompiled headers: for each kernel source, the torch and standard
headers it starts with (leading_includes.py), precompiled with the source's own
flags.

A compile never waits for one. The first compile of a source is plain, and starts its header's
precompile in the background, at the lowest CPU priority: on a cold build the object is ready
seconds sooner than if the header came first (GCC spends most of a precompile writing its heap),
and the next edit of the source compiles in about a second instead of several. A source compiles
to the same object bytes with the header or without it (tests/unit/kernel_compile): the header
holds what the source includes first, and include guards skip the source's own includes.

A header serves while the files its precompile read are unchanged: each is recorded with the
digest Bazel gave for it (torch's headers are inputs) or, for the compiler's own headers, which
are not, with its size and modification time. A torch upgrade or a new compiler makes a new one.
Entries live under the output base (`bazel clean --expunge` removes them); the store keeps the
`KEEP` used most recently. Several workers share it: a lock per entry lets one precompile it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from atengen.kernel_compile.command_line import KernelCompile
from atengen.kernel_compile.leading_includes import leading_includes, precompiled_header_text

KEEP = 4
HEADER = "kernel_pch.h"
_READY = "ready.json"
_LOCK = "lock"
_FAILED = "failed.txt"


def store_root(cwd: Path) -> Path | None:
    """Where the store lives for a worker started in ``cwd``: the output base's
    `rules_aten_kernel_pch` (None outside an execroot, where nothing is kept)."""
    for parent in cwd.parents:
        if parent.name in ("execroot", "bazel-workers"):
            return parent.parent / "rules_aten_kernel_pch"
    return None


_PR_SET_PDEATHSIG = 1


def _libc_prctl() -> Callable[..., int]:
    """libc's prctl, looked up where a precompile starts and not at import: ctypes needs the
    system's libffi, which a remote worker's toolchain may lack, and a remote action imports
    this module but only compiles."""
    import ctypes  # noqa: PLC0415

    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


def _background_child(prctl: Callable[..., int]) -> None:
    """In the precompile's process before it runs GCC: the lowest CPU priority, so that on a
    cold build the library's other compiles come first; and signalled when the thread that
    waits for it dies, so that no compile outlives a worker that Bazel stopped. (It runs between fork and
    exec, and takes no lock another thread could hold.)

    Linux schedules each session's processes as one group against the others (autogroups,
    on by default), and a process's nice value only counts within its group: the worker, which
    Bazel starts in a session of its own, would get half the machine beside all of the build's
    other compiles. So the precompile gets a session of its own, whose group has the lowest
    priority too."""
    os.setsid()
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write("19")
    os.nice(19)
    prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


# The precompile under a shell that, sent SIGTERM when the worker's thread dies, kills its whole
# process group: GCC's driver and the cc1plus it runs (a parent-death signal reaches only the
# process it is set on, and cc1plus would run on).
_KILLED_WITH_ITS_GROUP = ("/bin/sh", "-c", 'trap "kill -KILL 0" TERM; "$@" & wait $!', "sh")


def _fingerprint(path: str, digests: Mapping[str, bytes]) -> list[object]:
    digest = digests.get(path, b"")
    if digest:
        return ["digest", digest.hex()]
    try:
        st = os.stat(path)
    except OSError:
        return ["missing"]
    return ["stat", st.st_size, st.st_mtime_ns]


def _inputs_digest(digests: Mapping[str, bytes]) -> str:
    sha = hashlib.sha256()
    for path, digest in sorted(digests.items()):
        sha.update(path.encode("utf-8", "surrogateescape") + b"\0" + digest)
    return sha.hexdigest()


def _depfile_paths(text: str) -> list[str]:
    """The prerequisites a GCC dependency file names (its first rule; escaped spaces kept)."""
    body = text.replace("\\\n", " ").split(":", 1)[1] if ":" in text else ""
    paths: list[str] = []
    for word in body.replace("\\ ", "\0").split():
        paths.append(word.replace("\0", " "))
    return paths


@dataclass(frozen=True)
class HeaderChoice:
    header: str | None  # the header to include first, its .gch beside it
    why: str  # for the worker's log


class PrecompiledHeaders:
    def __init__(self, root: Path) -> None:
        self._root = root
        self._builds: list[threading.Thread] = []

    def header_for(self, compile: KernelCompile, digests: Mapping[str, bytes]) -> HeaderChoice:
        """The header to include first for ``compile``, if its .gch is ready; if not, its
        precompile is started, unless it is under way or failed with these inputs."""
        try:
            with open(compile.source, "rb") as f:
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return HeaderChoice(None, "the source cannot be read")  # the compiler says why
        if not leading_includes(text):
            return HeaderChoice(None, "it starts with no torch or standard header")
        header_text = precompiled_header_text(text)
        key = hashlib.sha256(
            json.dumps([header_text, compile.key_argv()]).encode("utf-8", "surrogateescape")
        ).hexdigest()[:32]
        entry = self._root / key
        if self._valid(entry, digests):
            os.utime(entry / _READY)
            return HeaderChoice(str(entry / HEADER), "ready")
        if self._failed_before(entry, digests):
            return HeaderChoice(None, f"its precompile failed: {entry / _FAILED}")
        if self._start(entry, header_text, compile, digests):
            return HeaderChoice(None, f"its precompile started in {entry}")
        return HeaderChoice(None, f"its precompile is under way in {entry}")

    @staticmethod
    def _failed_before(entry: Path, digests: Mapping[str, bytes]) -> bool:
        """Whether this header's precompile failed with these very inputs (it is not retried
        until one of them changes)."""
        try:
            with open(entry / _FAILED, "rb") as f:
                return f.readline().strip() == _inputs_digest(digests).encode()
        except OSError:
            return False

    @staticmethod
    def _valid(entry: Path, digests: Mapping[str, bytes]) -> bool:
        try:
            recorded = json.loads((entry / _READY).read_text())
        except (OSError, ValueError):
            return False
        return all(_fingerprint(path, digests) == fp for path, fp in recorded.items())

    def _start(
        self, entry: Path, header_text: str, compile: KernelCompile, digests: Mapping[str, bytes]
    ) -> bool:
        entry.mkdir(parents=True, exist_ok=True)
        lock = open(entry / _LOCK, "w")  # noqa: SIM115 (held by the thread, closed there)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()  # another worker makes it
            return False
        thread = threading.Thread(
            target=self._precompile,
            args=(entry, lock, header_text, compile, dict(digests)),
            daemon=True,
        )
        self._builds.append(thread)
        thread.start()
        return True

    def _precompile(
        self,
        entry: Path,
        lock: object,
        header_text: str,
        compile: KernelCompile,
        digests: dict[str, bytes],
    ) -> None:
        try:
            for stale in (_READY, _FAILED):
                with contextlib.suppress(FileNotFoundError):
                    (entry / stale).unlink()
            header = entry / HEADER
            header.write_text(header_text)
            gch, depfile = entry / (HEADER + ".gch"), entry / "deps.d"
            gch_tmp = entry / (HEADER + ".gch.tmp")
            argv = compile.precompiling(str(header), str(gch_tmp), str(depfile))
            try:
                process = subprocess.Popen(
                    (*_KILLED_WITH_ITS_GROUP, *argv),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    preexec_fn=functools.partial(_background_child, _libc_prctl()),
                )
            except OSError as e:
                self._fail(entry, digests, str(e).encode())
                return
            _, errors = process.communicate()
            if process.returncode != 0:
                # The plain compiles go on; the message says why, for whoever looks.
                self._fail(entry, digests, errors[-4000:])
                return
            os.replace(gch_tmp, gch)
            paths = [p for p in _depfile_paths(depfile.read_text()) if p != str(header)]
            recorded = {p: _fingerprint(p, digests) for p in paths}
            ready_tmp = entry / (_READY + ".tmp")
            ready_tmp.write_text(json.dumps(recorded, sort_keys=True))
            os.replace(ready_tmp, entry / _READY)
            self._evict(keep=entry)
        except OSError:
            return
        finally:
            lock.close()  # type: ignore[attr-defined]

    @staticmethod
    def _fail(entry: Path, digests: Mapping[str, bytes], message: bytes) -> None:
        (entry / _FAILED).write_bytes(_inputs_digest(digests).encode() + b"\n" + message)

    def _evict(self, keep: Path) -> None:
        """Removes all but the KEEP entries used last (never one being made)."""
        entries = []
        for path in self._root.iterdir():
            with contextlib.suppress(OSError):
                ready = path / _READY
                entries.append(((ready if ready.exists() else path).stat().st_mtime_ns, path))
        entries.sort(reverse=True)
        for _, path in entries[KEEP:]:
            if path == keep:
                continue
            with open(path / _LOCK, "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue
                shutil.rmtree(path, ignore_errors=True)

    def wait(self) -> None:
        """Waits for the precompiles this process started (for the tests)."""
        for thread in self._builds:
            thread.join()
