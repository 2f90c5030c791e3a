"""Loading a generated library into torch without its C++ warnings."""

from __future__ import annotations

import os
import sys


def load_library_quietly(path: str) -> None:
    """torch.ops.load_library, with file descriptor 2 sent to /dev/null meanwhile: loading over
    torch's own kernels makes the C++ side print "Overriding a previously registered kernel",
    which bypasses sys.stderr."""
    import torch

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            torch.ops.load_library(path)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
