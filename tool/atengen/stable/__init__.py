"""Stable-ABI mode: sources that use only the LibTorch stable ABI (`torch/csrc/stable/`,
`torch/headeronly/`), so that one compiled library loads into every torch release from its
target on.

- ``releases``: what each release's stable ABI carries (one table), and ``--target``;
- ``types``: schema types spelled in stable C++ types, or why the target cannot carry them;
- ``registrations``: a custom namespace's schemas (``STABLE_TORCH_LIBRARY_FRAGMENT``), its
  per-key registrations (``STABLE_TORCH_LIBRARY_IMPL`` with ``TORCH_BOX``) and kernel headers;
- ``call_api``: ``atengen::stable::<op>`` functions that call ATen operators through
  ``torch_call_dispatcher``.

Nothing here generates functionalization or autograd kernels: those are written against torch's
unstable C++ API.
"""
