"""The two ABI auditors of Hugging Face's kernel tooling over one library; prints one JSON line.

    python abi_audit.py HUB_TOOLS LIBRARY MANYLINUX_POLICY

- `torch-abi-audit -v --check torch LIBRARY` (its command line, run in this process): its exit
  code and output, whose `Torch ABI:` verdict is STABLE for a library of torch's stable ABI;
- `kernel_abi_check.ObjectFile(LIBRARY)`: its manylinux check against MANYLINUX_POLICY (such as
  manylinux_2_34) and its CPython ABI check (abi3 of 3.9), each a list of violations.

HUB_TOOLS (tests/support/hub_tools.py) goes last on sys.path.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

sys.path.append(sys.argv[1])

import kernel_abi_check  # noqa: E402
from torch_abi_audit.cli import main as audit  # noqa: E402


def run(library: str, policy: str) -> dict:
    out = io.StringIO()
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = audit(["-v", "--check", "torch", library])
    obj = kernel_abi_check.ObjectFile(library)
    return {
        "audit_rc": rc,
        "audit": out.getvalue(),
        "audit_stderr": err.getvalue(),
        "manylinux": [repr(v) for v in obj.check_manylinux(policy)],
        "python_abi": [repr(v) for v in obj.check_python_abi("3.9")],
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[2], sys.argv[3])))
