"""Loads a library into torch and prints torch's dispatch table of the given aten operators.

Run by the tests in a fresh interpreter:
    python tests/scripts/dispatch_dump.py LIBRARY OP...
OP is an operator name with its overload (e.g. add_.Tensor); each table is
torch._C._dispatch_dump's text, one line per dispatch key that has a kernel.
"""

import sys

import torch


def main(library: str, ops: list[str]) -> None:
    torch.ops.load_library(library)
    print("\n".join(torch._C._dispatch_dump("aten::" + name) for name in ops))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
