"""Loads the myops library (tests/data/custom_ops) into torch and calls its ops.

Run by tests/workspace/test_bazel_codegen.py in a fresh interpreter:
    python tests/scripts/check_myops.py LIBRARY [OP...]
Each OP must exist in torch.ops.myops as well. Prints "myops ok" when every check passed.
"""

import sys

import torch


def main(library: str, extra_ops: list[str]) -> None:
    torch.ops.load_library(library)
    x = torch.arange(4.0)
    assert torch.equal(torch.ops.myops.scale(x, 2.0), x * 2)
    assert torch.equal(torch.ops.myops.scale_(x.clone(), 3.0), x * 3)
    out = torch.empty(0)
    torch.ops.myops.scale.out(x, 0.5, out=out)
    assert torch.equal(out, x * 0.5)
    assert torch.equal(torch.ops.myops.shift(x, 1.0, 2), x + 2)
    for name in extra_ops:
        assert hasattr(torch.ops.myops, name), name
    print("myops ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
