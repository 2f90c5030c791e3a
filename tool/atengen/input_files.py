"""Reading an input file: a regular file of bounded size, or a one-line error.

Every input flag names a file atengen reads whole. A FIFO or a device (`/dev/zero`,
`/dev/urandom`) would never end, and a huge file would take minutes to reject, so only regular
files up to MAX_INPUT_BYTES are read.
"""

from __future__ import annotations

import os
import stat

from atengen.errors import AtengenError, Location

# Far above any real input (torch's native_functions.yaml is 0.6 MB, a backend's kernel sources
# a few hundred KB), far below what would keep a run busy for long.
MAX_INPUT_BYTES = 16 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_input_bytes(path: str, what: str, shown: str | None = None) -> bytes:
    """The bytes of input file ``path`` (``what`` it is, for messages; ``shown``: the name
    errors give, default ``path``)."""
    where = Location(shown or path, 1)
    try:
        # O_NONBLOCK: opening a FIFO with no writer would block before fstat could refuse it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise AtengenError(where, f"cannot read {what}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
            raise AtengenError(where, f"cannot read {what}: it is {kind}, not a regular file")
        if info.st_size > MAX_INPUT_BYTES:
            raise AtengenError(where, _too_large(what, info.st_size))
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_INPUT_BYTES:  # grew while being read
                raise AtengenError(where, _too_large(what, size))
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise AtengenError(where, f"cannot read {what}: {e.strerror}") from None
    finally:
        os.close(fd)


def _too_large(what: str, size: int) -> str:
    return (
        f"cannot read {what}: it is {size / 2**20:.1f} MiB, more than the "
        f"{MAX_INPUT_BYTES // 2**20} MiB atengen reads of one input"
    )
