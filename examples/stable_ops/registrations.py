"""What stableops' YAML files cannot derive, registered in Python: the fake kernel of scaled_add,
whose only kernels are for devices (torch.compile and torch.library.opcheck need it). The rest is
generated from ops.yaml and derivatives.yaml into stableops_registrations.py (scaled_add's and
mulcat's autograd, clamp_abs_inplace's fake kernel). demo.py imports both beside the library;
the wheel (aten_wheel in BUILD.bazel) imports both from its __init__.py."""

import torch


@torch.library.register_fake("stableops::scaled_add")
def _scaled_add_fake(self, other, alpha):
    torch._check(self.shape == other.shape, lambda: "scaled_add: one shape")
    return torch.empty_like(self, memory_format=torch.contiguous_format)
