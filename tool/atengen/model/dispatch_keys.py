"""Dispatch key names the generator knows, and which ones an op YAML may use."""

from __future__ import annotations

from collections.abc import Mapping

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
    import difflib  # only for error messages; not worth its import time on every run

    match = difflib.get_close_matches(name, sorted(_OP_YAML_KEY_SET | _OTHER_C10_KEYS), n=1)
    return f" (did you mean '{match[0]}'?)" if match else ""


# --- Which kernel serves a runtime key (spec section 3) ----------------------
# A kernel registered for a backend key itself wins. Otherwise the composite
# alias keys fill in, in precedence order NonFunctional > Explicit > Implicit.
COMPOSITE_PRECEDENCE = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)
# Functional backends (XLA, Lazy) want ops they can trace whole, and sparse
# kernels cannot run a dense decomposition into views and mutations, so the
# NonFunctional composite skips them.
_NON_FUNCTIONAL_EXCLUDED = frozenset({"XLA", "Lazy"})


def is_autograd_key(key: str) -> bool:
    return key.startswith("Autograd")


def composite_covers(alias: str, runtime_key: str) -> bool:
    """Whether a kernel registered under a composite alias key serves runtime_key."""
    if alias == "CompositeImplicitAutograd":
        # A math kernel serves every backend and, via autograd, the autograd keys.
        return True
    if is_autograd_key(runtime_key):
        return False  # explicit composites come with their own derivative formula
    if alias == "CompositeExplicitAutograd":
        return True
    if alias == "CompositeExplicitAutogradNonFunctional":
        return runtime_key not in _NON_FUNCTIONAL_EXCLUDED and not runtime_key.startswith("Sparse")
    raise ValueError(f"{alias} is not a composite key")


def serving_key(dispatch: Mapping[str, object], runtime_key: str) -> str | None:
    """The key of the `dispatch` entry that serves runtime_key, or None."""
    if runtime_key in dispatch:
        return runtime_key
    for alias in COMPOSITE_PRECEDENCE:
        if alias in dispatch and composite_covers(alias, runtime_key):
            return alias
    return None
