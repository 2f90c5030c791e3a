"""What stableops' C++ cannot carry under the stable ABI, registered in Python: the fake kernels
(torch.compile, torch.library.opcheck) and scaled_add's autograd formula. demo.py imports it
beside the library; the wheel (aten_wheel in BUILD.bazel) imports it from its __init__.py."""

import torch


@torch.library.register_fake("stableops::scaled_add")
def _scaled_add_fake(self, other, alpha):
    torch._check(self.shape == other.shape, lambda: "scaled_add: one shape")
    return torch.empty_like(self, memory_format=torch.contiguous_format)


@torch.library.register_fake("stableops::clamp_abs_inplace")
def _clamp_abs_inplace_fake(self, bound):
    return None


def _setup_context(ctx, inputs, output):
    ctx.alpha = inputs[2]


def _backward(ctx, grad):
    return grad, grad * ctx.alpha, None


torch.library.register_autograd("stableops::scaled_add", _backward, setup_context=_setup_context)
