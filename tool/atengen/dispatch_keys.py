"""Dispatch key names the generator knows, and which ones an op YAML may use."""

from __future__ import annotations

import difflib

# Keys a `dispatch:` table in an op YAML may name: the in-tree backends and the
# composite alias keys. Out-of-tree backends (XLA, PrivateUse1, ...) register
# through a backend YAML instead.
OP_YAML_DISPATCH_KEYS = (
    "CPU",
    "SparseCPU",
    "SparseCsrCPU",
    "MkldnnCPU",
    "CUDA",
    "MPS",
    "XPU",
    "SparseXPU",
    "SparseCsrXPU",
    "SparseCUDA",
    "SparseCsrCUDA",
    "SparseMPS",
    "SparseCsrMPS",
    "QuantizedCPU",
    "QuantizedCUDA",
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "NestedTensorXPU",
    "NestedTensorHPU",
    "Meta",
    "SparseMeta",
    "SparseCsrMeta",
    "QuantizedMeta",
    "NestedTensorMeta",
    "ZeroTensor",
    "MTIA",
)
_OP_YAML_KEY_SET = frozenset(OP_YAML_DISPATCH_KEYS)

# Other real c10 dispatch keys: valid names, but not for an op YAML's table.
_OTHER_C10_KEYS = frozenset(
    {
        "HPU",
        "VE",
        "Lazy",
        "XLA",
        "IPU",
        "MAIA",
        "HIP",
        "FPGA",
        "Vulkan",
        "Metal",
        "PrivateUse1",
        "PrivateUse2",
        "PrivateUse3",
        "QuantizedXPU",
        "QuantizedPrivateUse1",
        "SparsePrivateUse1",
        "SparseCsrPrivateUse1",
        "NestedTensorPrivateUse1",
        "AutogradCPU",
        "AutogradCUDA",
        "AutogradXLA",
        "AutogradLazy",
        "AutogradMeta",
        "AutogradMPS",
        "AutogradXPU",
        "AutogradHPU",
        "AutogradMTIA",
        "AutogradMAIA",
        "AutogradPrivateUse1",
        "AutogradPrivateUse2",
        "AutogradPrivateUse3",
        "AutogradNestedTensor",
        "Autograd",
        "Functionalize",
        "BackendSelect",
        "Python",
        "Undefined",
    }
)

COMPOSITE_KEYS = (
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)
# Structured kernels: these keys get the generated structured wrappers, so a
# structured_delegate op must not name them (its delegate provides them).
STRUCTURED_DISPATCH_KEYS = frozenset({"CPU", "CUDA", "MPS", "XPU", "MTIA"})
# ufunc_inner_loop entries generate kernels for these keys.
UFUNC_DISPATCH_KEYS = ("CPU", "CUDA")


def is_known_dispatch_key(name: str) -> bool:
    return name in _OP_YAML_KEY_SET or name in _OTHER_C10_KEYS


def is_op_yaml_dispatch_key(name: str) -> bool:
    return name in _OP_YAML_KEY_SET


def closest_key(name: str) -> str:
    """' (did you mean X?)' or '' — for error messages."""
    match = difflib.get_close_matches(name, sorted(_OP_YAML_KEY_SET | _OTHER_C10_KEYS), n=1)
    return f" (did you mean '{match[0]}'?)" if match else ""
