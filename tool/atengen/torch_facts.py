"""Facts about one torch release (2.13) that the generator relies on, and nothing else.

Everything here is a property of the installed torch, not of the YAML formats: its dispatch
keys, its tags, the operators its own codegen treats by hand. A torch upgrade is a diff of this
file; tests/test_torch_facts.py compares every fact with the installed wheel and says which one
changed.
"""

from __future__ import annotations

TORCH_RELEASE = "2.13"

# --- Dispatch keys --------------------------------------------------------------------------

# Keys a `dispatch:` table in an op YAML may name: the in-tree backends and the composite alias
# keys. Out-of-tree backends (XLA, PrivateUse1, ...) register through a backend YAML instead.
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

# Other real c10 dispatch keys: valid names (a backend YAML's `backend:` may be one), but not
# for an op YAML's table.
OTHER_C10_KEYS = frozenset(
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

FUNCTIONALIZE_KEY = "Functionalize"

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

# Keys the installed (CPU or CUDA) torch can serve, in the order their sources are generated.
SERVABLE_KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "QuantizedCPU",
    "QuantizedCUDA",
    "QuantizedMeta",
    "SparseCPU",
    "SparseCUDA",
    "SparseMeta",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "SparseCsrMeta",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "NestedTensorMeta",
    "MkldnnCPU",
    "ZeroTensor",
    FUNCTIONALIZE_KEY,
)
# MPS, XPU, MTIA, HPU and the like need a torch built for them, so their kernels are left out.
UNSERVABLE_KEYS = frozenset(
    {
        "MPS",
        "XPU",
        "MTIA",
        "SparseMPS",
        "SparseCsrMPS",
        "SparseXPU",
        "SparseCsrXPU",
        "NestedTensorHPU",
        "NestedTensorXPU",
    }
)
# Keys whose kernels compile into the CUDA library; the rest go to the CPU side.
CUDA_KEYS = frozenset({"CUDA", "SparseCUDA", "SparseCsrCUDA", "QuantizedCUDA", "NestedTensorCUDA"})
# In-tree backends whose kernels need a device guard and same-device checks.
DEVICE_GUARD_KEYS = frozenset({"CUDA", "XPU"})
# Kernels under these keys also run on meta tensors: a functionalized view replays itself on a
# meta copy of its base to find where it lies.
META_CAPABLE_KEYS = frozenset(
    {"Meta", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"}
)

# --- Tags -----------------------------------------------------------------------------------

# The at::Tag values of this release (torch generates that enum from its own tags.yaml). Tags
# that only a custom tags YAML defines are model metadata and are not passed to m.def().
C10_TAGS = frozenset(
    {
        "inplace_view",
        "pt2_compliant_tag",
        "view_copy",
        "dynamic_output_shape",
        "data_dependent_output",
        "generated",
        "nondeterministic_seeded",
        "nondeterministic_bitwise",
        "needs_exact_strides",
        "needs_contiguous_strides",
        "needs_fixed_stride_order",
        "flexible_layout",
        "core",
        "pointwise",
        "maybe_aliasing_or_mutating",
        "cudagraph_unsafe",
        "reduction",
        "inplace",
        "out",
        "out_variant",
    }
)

# --- Operators torch's own codegen treats specially ------------------------------------------

# Out= ops in the torch YAML whose functional variant exists but cannot be paired by signature
# (private or differently shaped); everywhere else a lone out= op is an error.
LONE_OUT_OPS_ALLOWED = frozenset(
    {"adaptive_avg_pool3d_backward.grad_input", "_slow_conv2d_backward.grad_input"}
)
# Mutable ops in the torch YAML without tensor returns (so without an out= variant); everywhere
# else such an op is an error.
MUTABLE_OPS_WITHOUT_OUT_VARIANT = frozenset({"_cummax_helper", "_cummin_helper"})
# Arguments of torch's own ops named by a Python keyword, kept for compatibility; everywhere
# else such a name is an error (the Python bindings take arguments by name).
PYTHON_KEYWORD_ARGUMENTS_ALLOWED = frozenset(
    {("_has_compatible_shallow_copy_type", "from"), ("random_.from", "from"), ("uniform_", "from")}
)

# Mutating aten ops that torch's functionalization leaves alone: helpers that never reach a
# functionalized program and have no functional variant to call.
NOT_FUNCTIONALIZED = frozenset(
    {
        "aten::_cummax_helper",
        "aten::_cummin_helper",
        "aten::_fill_mem_eff_dropout_mask_",
        "aten::_flash_attention_forward_no_dropout_inplace",
        "aten::_slow_conv2d_backward.grad_input",
        "aten::adaptive_avg_pool3d_backward.grad_input",
        "aten::polygamma_",  # its argument order differs from polygamma's
        "aten::record_stream",
    }
)
# Groups (by any member's name) whose Functionalize kernels torch writes by hand.
HANDWRITTEN_FUNCTIONALIZE_GROUPS = frozenset(
    {"aten::lift", "aten::resize_", "aten::set_.source_Tensor"}
)
# View ops torch's functionalization must not see (the torch.Tensor constructor).
HANDWRITTEN_FUNCTIONALIZE_VIEWS = frozenset({"aten::lift_fresh"})
# Cumulative out= ops compute in the out tensor's dtype when no dtype is given; their
# functional call must be told that dtype explicitly.
OUT_DTYPE_OPS = frozenset({"aten::cumsum.out", "aten::cumprod.out"})

# Views whose result has another dtype than their base: scattering the view back into the base
# cannot express them, and each covers its whole base, so the base is the mutated view
# reinterpreted back. view -> (root of the op to call, its overload, the C++ type of its extra
# argument, the call's arguments).
DTYPE_VIEW_REVERSES = {
    "view.dtype": ("view_copy", "dtype", "at::ScalarType", "atg_mutated, atg_base.scalar_type()"),
    "view_as_real": ("view_as_complex_copy", "", "", "atg_mutated"),
    "view_as_complex": ("view_as_real_copy", "", "", "atg_mutated"),
}

# Functional-backend mode: operators outside "functional or view_copy" that such a backend still
# needs. They are how tensors reach and leave the device; the functionalization pass above the
# backend does not rewrite them.
FUNCTIONAL_BACKEND_EXTRA_OPS = frozenset(
    {"_copy_from", "_copy_from_and_resize", "_local_scalar_dense", "_to_copy", "lift_fresh"}
)
# Copies between a backend and other devices: their YAML entries keep the default
# `device_check: ExactSame`, which would make every .to()/.cpu() fail a same-device check.
CROSS_DEVICE_COPY_OPS = frozenset({"_copy_from", "_copy_from_and_resize"})
