"""The generated autograd of libroi_ops.so (tests/data/roi_ops): formulas calling the library's own
operators by name.

    python tests/scripts/check_roi_ops_autograd.py bazel-bin/libroi_ops.so

Run by tests/workspace/test_autograd_own_ops.py. roi_align's backward formula calls _roi_align_backward (by
bare name, SymInt sizes from `input.sym_size(i)`); shift_rows' calls `myvision::shift_rows`.
Prints one line per check that passed; an assertion fails the run.
"""

import math
import sys

import torch
from torch.autograd import gradcheck, gradgradcheck

torch.ops.load_library(sys.argv[1])
ops = torch.ops.myvision


def bilinear(y: float, x: float, height: int, width: int) -> list[tuple[int, int, float]]:
    """(row, column, weight) of the four pixels a bilinear sample at (y, x) reads, as torchvision
    samples: nothing outside [-1, size], coordinates clamped at the border."""
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return [
        (y0, x0, (1 - ly) * (1 - lx)),
        (y0, x1, (1 - ly) * lx),
        (y1, x0, ly * (1 - lx)),
        (y1, x1, ly * lx),
    ]


def reference_matrix(shape, rois, scale, pooled, sampling, aligned) -> torch.Tensor:
    """RoIAlign as a matrix: output.flatten() = M @ input.flatten(). Written from torchvision's
    description, in plain Python: the reference the library's kernels are checked against."""
    n, c, h, w = shape
    ph_n, pw_n = pooled
    m = torch.zeros(len(rois) * c * ph_n * pw_n, n * c * h * w, dtype=torch.float64)
    offset = 0.5 if aligned else 0.0
    for r, (b, x1, y1, x2, y2) in enumerate(rois.tolist()):
        sw, sh = x1 * scale - offset, y1 * scale - offset
        rw, rh = x2 * scale - offset - sw, y2 * scale - offset - sh
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph_n, rw / pw_n
        gh = sampling if sampling > 0 else math.ceil(rh / ph_n)
        gw = sampling if sampling > 0 else math.ceil(rw / pw_n)
        count = max(gh * gw, 1)
        for ch in range(c):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    row = ((r * c + ch) * ph_n + ph) * pw_n + pw
                    for iy in range(gh):
                        y = sh + ph * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            x = sw + pw * bw + (ix + 0.5) * bw / gw
                            for yy, xx, weight in bilinear(y, x, h, w):
                                col = ((int(b) * c + ch) * h + yy) * w + xx
                                m[row, col] += weight / count
    return m


torch.manual_seed(0)
x = torch.randn(2, 3, 7, 8, dtype=torch.float64, requires_grad=True)
# Boxes (batch, x1, y1, x2, y2) in input coordinates before spatial_scale; the last one leaves
# the image, so the border rules count too.
rois = torch.tensor(
    [[0, 0.5, 1.0, 9.0, 10.0], [1, 2.0, 0.0, 6.5, 5.0], [1, 10.0, 8.0, 17.0, 16.0]],
    dtype=torch.float64,
)
settings = [  # (spatial_scale, pooled (h, w), sampling_ratio, aligned)
    (0.5, (2, 3), 2, True),
    (0.75, (3, 2), 0, False),
]
for scale, (ph, pw), sampling, aligned in settings:

    def fn(a, scale=scale, ph=ph, pw=pw, sampling=sampling, aligned=aligned):
        return ops.roi_align(a, rois, scale, ph, pw, sampling, aligned)

    assert gradcheck(fn, (x,)), (scale, aligned)
    out = fn(x)
    assert out.grad_fn.name() == "myvision::RoiAlignBackward0", out.grad_fn.name()
    m = reference_matrix(x.shape, rois, scale, (ph, pw), sampling, aligned)
    torch.testing.assert_close(out.detach().flatten(), m @ x.detach().flatten())
    weights = torch.randn(out.shape, dtype=torch.float64)
    (ours,) = torch.autograd.grad((out * weights).sum(), [x])
    torch.testing.assert_close(ours.flatten(), m.T @ weights.flatten())
print(
    "roi_align: gradcheck ok and gradients equal the reference (aligned, sampling 2; legacy, adaptive)"
)

y = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
assert gradcheck(lambda a: ops.shift_rows(a, 2), (y,))
assert gradgradcheck(lambda a: ops.shift_rows(a, 2), (y,))
(g,) = torch.autograd.grad(ops.shift_rows(y, 2), [y], torch.arange(15.0, dtype=y.dtype).view(5, 3))
torch.testing.assert_close(g, torch.arange(15.0, dtype=y.dtype).view(5, 3).roll(-2, 0))
# The backward's call of shift_rows went through the dispatcher to shift_rows' Autograd kernel:
# with create_graph and a gradient that requires grad, the result has a ShiftRowsBackward0 of its
# own, whose backward rolls forward again.
v = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
(g,) = torch.autograd.grad(ops.shift_rows(y, 2), [y], v, create_graph=True)
assert g.grad_fn.name() == "myvision::ShiftRowsBackward0", g.grad_fn
(gg,) = torch.autograd.grad(g, [v], torch.arange(15.0, dtype=y.dtype).view(5, 3))
torch.testing.assert_close(gg, torch.arange(15.0, dtype=y.dtype).view(5, 3).roll(2, 0))
print("shift_rows: gradcheck and gradgradcheck ok; the backward's own-op call is differentiated")
