"""Facts about the torch releases the generator supports (2.11 to 2.15), and nothing else.

Everything here is a property of torch, not of the YAML formats: its dispatch keys, its tags,
the operators its own codegen treats by hand. Where a fact differs between releases it is kept
per release (`..._BY_RELEASE`), and the module-level value is the one that is safe for every
supported release (the union of what the generator must refuse or may use). A torch upgrade is a
new entry in SUPPORTED_RELEASES and in each `_BY_RELEASE` table; tests/test_torch_facts.py
compares every fact with the installed wheel and says which one changed, and
tests/test_releases.py each release's codegen facts with that release's torchgen.

A release older than SUPPORTED_RELEASES[0] is refused; one newer than SUPPORTED_RELEASES[-1] is
built with the newest release's facts, with one warning (facts_release below).

What can be read from the wheel itself is not kept here: the @torch repository runs
tool/torch_probe.py and writes @torch//:torch_facts.json (the release, its CUDA version and arch
list, its dispatch keys, the at::native kernels libtorch_cpu and libtorch_cuda export, the
structured meta classes and the FunctionsManual.h helpers libtorch_cpu exports, and the helpers
that header declares), which `atengen generate|backend|autograd --torch_facts` read into a
WheelFacts. A run of `atengen autograd` without it reads the installed torch's helpers directly
(atengen.wheel_symbols). NATIVE_KERNELS_NOT_EXPORTED and WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE
below are only the fallbacks of a generate or backend run without --torch_facts.
"""

from __future__ import annotations

from dataclasses import dataclass

# Type checkers read this as True; at run time `typing` (~2 ms to import) stays unimported.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")
    D = TypeVar("D")

# One line: rules/private/torch.bzl reads it to refuse older releases and warn of newer ones.
SUPPORTED_RELEASES = ("2.11", "2.12", "2.13", "2.14", "2.15")
OLDEST_RELEASE = SUPPORTED_RELEASES[0]
NEWEST_RELEASE = SUPPORTED_RELEASES[-1]

# The release of the default development venv (third_party/requirements_dev.lock).
TORCH_RELEASE = "2.13"


def release_number(release: str) -> tuple[int, int] | None:
    """(major, minor) of "2.14", or None when it is not two numbers."""
    major, dot, minor = release.partition(".")
    if not (dot and major.isdigit() and minor.isdigit()):
        return None
    return int(major), int(minor)


def facts_release(release: str, version: str) -> tuple[str, str | None]:
    """The release whose facts apply to torch `version` (of `release`), and the one-line warning
    to print when that is another release (a release newer than the newest known one).
    ValueError with one line for a release older than the oldest supported one, or unreadable."""
    number = release_number(release)
    if number is None:
        raise ValueError(f"torch {version}: cannot read its release from '{release}'")
    oldest, newest = release_number(OLDEST_RELEASE), release_number(NEWEST_RELEASE)
    assert oldest is not None and newest is not None
    if number < oldest:
        raise ValueError(
            f"torch {version} is older than torch {OLDEST_RELEASE}, the oldest release "
            f"rules_aten supports; install torch {OLDEST_RELEASE} or newer"
        )
    if number > newest:
        return NEWEST_RELEASE, (
            f"torch {version} is newer than the releases rules_aten knows "
            f"({OLDEST_RELEASE} to {NEWEST_RELEASE}): building it with the facts of torch "
            f"{NEWEST_RELEASE} (tool/atengen/torch_facts.py)"
        )
    if release not in SUPPORTED_RELEASES:  # "2.013"
        raise ValueError(f"torch {version}: cannot read its release from '{release}'")
    return release, None


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

# Factory ops (TensorOptions arguments) get a kernel here that picks the backend from their
# dtype, layout and device, and redispatches.
BACKEND_SELECT_KEY = "BackendSelect"

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
    BACKEND_SELECT_KEY,
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

# The at::Tag values of each release (torch generates that enum from its own tags.yaml). Tags
# that only a custom tags YAML defines are model metadata and are not passed to m.def().
_C10_TAGS_2_13 = frozenset(
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
_C10_TAGS_2_11 = _C10_TAGS_2_13 - {"inplace", "out"}
C10_TAGS_BY_RELEASE = {
    "2.11": _C10_TAGS_2_11,
    "2.12": _C10_TAGS_2_11,
    "2.13": _C10_TAGS_2_13,
    "2.14": _C10_TAGS_2_13,
    "2.15": _C10_TAGS_2_13,
}
# The tags every supported release's at::Tag has: what a run without --torch_facts passes.
C10_TAGS = frozenset.intersection(*C10_TAGS_BY_RELEASE.values())


def c10_tags(wheel: WheelFacts | None) -> frozenset[str]:
    """The at::Tag values of the wheel's release (None: of every supported release)."""
    return C10_TAGS if wheel is None else C10_TAGS_BY_RELEASE[wheel.facts_release]


# --- Schema defaults --------------------------------------------------------------------------

# The device types a `Device` default may name (c10's device-string parser, which torch's schema
# parser runs on the default): `"cpu"`, `"cuda:1"`. Backends renamed from privateuseone at run
# time are not known when a schema is parsed.
DEVICE_TYPE_NAMES = frozenset(
    """
    cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta hpu mtia
    privateuseone
    """.split()
)
# c10 reads a device index with std::stoi: a decimal int without sign or leading zero.
MAX_DEVICE_INDEX = 2**31 - 1

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
# functionalized program and have no functional variant to call (torchgen's
# MUTABLE_OPS_NOT_USING_FUNCTIONALIZATION less resize_ and resize_as_, which are
# HANDWRITTEN_FUNCTIONALIZE_GROUPS and a view group; checked against each release's torchgen by
# tests/test_releases.py).
_NOT_FUNCTIONALIZED_2_11 = frozenset(
    {
        "aten::_cummax_helper",
        "aten::_cummin_helper",
        "aten::_fill_mem_eff_dropout_mask_",
        "aten::_slow_conv2d_backward.grad_input",
        "aten::adaptive_avg_pool3d_backward.grad_input",
        "aten::polygamma_",  # its argument order differs from polygamma's
        "aten::record_stream",
    }
)
_NOT_FUNCTIONALIZED_2_12 = _NOT_FUNCTIONALIZED_2_11 | {
    "aten::_flash_attention_forward_no_dropout_inplace"
}
NOT_FUNCTIONALIZED_BY_RELEASE = {
    "2.11": _NOT_FUNCTIONALIZED_2_11,
    "2.12": _NOT_FUNCTIONALIZED_2_12,
    "2.13": _NOT_FUNCTIONALIZED_2_12,
    "2.14": _NOT_FUNCTIONALIZED_2_12,
    "2.15": _NOT_FUNCTIONALIZED_2_12 | {"aten::_cudnn_attention_forward_no_dropout_inplace"},
}
# Each op is in the op YAML of the releases that list it only, so the union serves them all.
NOT_FUNCTIONALIZED = frozenset().union(*NOT_FUNCTIONALIZED_BY_RELEASE.values())

# Names torch's codegen exempts from "an op with `rand` in its name needs the
# nondeterministic_seeded tag": 2.15's stateless `_philox_*` ops, which their key input
# determines. A rule of torch's own YAML; checked against each release's torchgen by
# tests/test_releases.py. (Only 2.15's YAML has such ops, so the union serves every release.)
RANDOM_NAME_EXEMPT_PARTS_BY_RELEASE = {
    "2.11": (),
    "2.12": (),
    "2.13": (),
    "2.14": (),
    "2.15": ("_philox_",),
}
RANDOM_NAME_EXEMPT_PARTS = tuple(sorted(set().union(*RANDOM_NAME_EXEMPT_PARTS_BY_RELEASE.values())))

# Schema types that only some releases' runtime schema parser (torch._C.parse_schema) knows, and
# those releases: `Dimname` (named tensors), which 2.13 dropped. torchgen knows them in every
# release, and torch's own ops of those releases use them; a custom operator's schema (which
# the generated library defines with m.def) may use one only when built for such a release.
# Checked against each wheel's parser by tests/test_torch_facts.py.
SCHEMA_TYPES_OF_RELEASES = {"Dimname": ("2.11", "2.12")}

# Releases whose structured kernel base classes (at::impl::MetaBase, TensorIteratorBase) declare
# set_output_strided/set_output_raw_strided with a trailing `DimnameList names` (named tensors,
# which 2.13 dropped): an override must take it, and propagate the names to its output.
SET_OUTPUT_NAMES_RELEASES = frozenset({"2.11", "2.12"})


def set_output_takes_names(wheel: WheelFacts | None) -> bool:
    """Whether the wheel's structured set_output methods take `DimnameList names` (without
    facts: the default release's, which do not)."""
    return wheel is not None and wheel.facts_release in SET_OUTPUT_NAMES_RELEASES


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

# --- Kernels the wheel cannot be linked against ----------------------------------------------

# at::native kernels that the op YAML names for a CPU-side key but libtorch_cpu does not export
# (CPU-less builds, kernels defined inline in a .cpp): a generated registration calling one would
# compile and then fail to load with an undefined symbol. Those (op, key) registrations are
# left out, so torch's own stays. Checked against `nm -DC --defined-only` and the whole op YAML
# by tests/test_torch_facts.py.
# Kept although the wheel tells it (torch_facts.json's native_kernels, which the rules always
# pass): it is what `atengen generate` leaves out when run by hand without --torch_facts, which
# reads nothing of the wheel but its YAML, and whose output the tests and goldens fix.
NATIVE_KERNELS_NOT_EXPORTED = frozenset(
    {"_grouped_mm", "is_vulkan_available", "rms_norm_composite", "rms_norm_symint"}
)

# In-place aten ops without a Meta kernel in the op YAML for which the wheel registers a Python
# meta kernel (torch/_meta_registrations.py) over its generated C++ no-op one: the Python kernel
# checks shapes (broadcasting into self), which functionalization relies on. A no-op Meta kernel
# in a library loaded later would replace it, so the generator leaves these out. One list for
# every supported release: a name a release's YAML lacks (_philox_normal_ and _philox_uniform_
# before 2.12, _philox_randint_ before 2.15) matches nothing there. Checked against the
# dispatcher of each release by tests/test_torch_facts.py.
INPLACE_OPS_WITH_PYTHON_META = frozenset(
    """
    __ilshift__.Scalar __ilshift__.Tensor __irshift__.Scalar __irshift__.Tensor _philox_normal_
    _philox_randint_ _philox_uniform_ addbmm_ bernoulli_.float cauchy_ exponential_
    floor_divide_.Tensor geometric_ hardswish_ hardtanh_ index_fill_.int_Scalar
    index_fill_.int_Tensor log_normal_ logit_ masked_fill_.Scalar masked_fill_.Tensor
    masked_scatter_ relu_ rrelu_with_noise_
    """.split()
)

# --- Structured kernels -----------------------------------------------------------------------

# The meta classes libtorch_cpu exports (`at::meta::structured_<name>`, named by the functional
# op: `add_Tensor` for add.Tensor): a backend may implement these ops by impl() alone and reuse
# torch's meta(). The @torch repository reads them from the wheel (WheelFacts); these are the
# fallback of a run without --torch_facts, checked against each wheel by
# tests/test_torch_facts.py and tests/test_releases.py. Kept although the wheel tells them: an
# `atengen backend` run by hand without --torch_facts reads nothing of the wheel but its YAML.
_STRUCTURED_META_CLASSES_2_13 = frozenset(
    """
    _addmm_activation _convert_indices_from_coo_to_csr _convert_indices_from_csr_to_coo
    _linalg_det _linalg_eigh _linalg_slogdet _linalg_solve_ex _linalg_svd _log_softmax
    _log_softmax_backward_data _softmax _softmax_backward_data _upsample_bicubic2d_aa
    _upsample_bicubic2d_aa_backward _upsample_bilinear2d_aa _upsample_bilinear2d_aa_backward
    _upsample_lanczos2d_aa _upsample_lanczos2d_aa_backward _upsample_nearest_exact1d
    _upsample_nearest_exact1d_backward _upsample_nearest_exact2d
    _upsample_nearest_exact2d_backward _upsample_nearest_exact3d
    _upsample_nearest_exact3d_backward acos acosh adaptive_max_pool2d
    adaptive_max_pool2d_backward adaptive_max_pool3d adaptive_max_pool3d_backward add_Tensor
    addcdiv addcmul addmm addmv all all_dim all_dims amax amin aminmax any any_dim any_dims
    argmax argmin asin asinh atan atan2 atanh avg_pool2d avg_pool2d_backward avg_pool3d
    avg_pool3d_backward baddbmm bitwise_and_Tensor bitwise_left_shift_Tensor bitwise_not
    bitwise_or_Tensor bitwise_right_shift_Tensor bitwise_xor_Tensor bmm cat ceil clamp
    clamp_Tensor clamp_max clamp_max_Tensor clamp_min clamp_min_Tensor copysign_Tensor cos cosh
    cumprod cumsum digamma div_Tensor div_Tensor_mode elu elu_backward eq_Scalar eq_Tensor erf
    erfc erfinv exp exp2 expm1 floor fmax fmin fmod_Tensor frac fractional_max_pool2d
    fractional_max_pool2d_backward fractional_max_pool3d gather gcd ge_Scalar ge_Tensor gelu
    gelu_backward glu gt_Scalar gt_Tensor hardshrink hardshrink_backward hardsigmoid
    hardsigmoid_backward hash_tensor heaviside hypot i0 igamma igammac index_Tensor index_add
    index_copy index_reduce isin_Scalar_Tensor isin_Tensor_Scalar isin_Tensor_Tensor isneginf
    isposinf lcm le_Scalar le_Tensor leaky_relu leaky_relu_backward lerp_Scalar lerp_Tensor
    lgamma linalg_cholesky_ex linalg_cross linalg_inv_ex linalg_ldl_factor_ex linalg_ldl_solve
    linalg_lu linalg_lu_factor_ex linalg_lu_solve linalg_qr linalg_vector_norm log log10 log1p
    log2 logaddexp logaddexp2 logit_backward lt_Scalar lt_Tensor lu_unpack max_dim
    max_pool2d_with_indices max_pool2d_with_indices_backward maximum mean_dim min_dim minimum
    mish mm mse_loss mul_Tensor ne_Scalar ne_Tensor neg nextafter nll_loss_backward
    nll_loss_forward norm_ScalarOpt_dim norm_ScalarOpt_dim_dtype polygamma pow_Scalar
    pow_Tensor_Scalar pow_Tensor_Tensor prod_dim_int reciprocal reflection_pad1d
    reflection_pad1d_backward reflection_pad3d reflection_pad3d_backward remainder_Tensor renorm
    replication_pad1d replication_pad1d_backward replication_pad2d replication_pad3d round
    round_decimals rsqrt scatter_add scatter_reduce scatter_reduce_two scatter_src scatter_value
    scatter_value_reduce sgn sigmoid sigmoid_backward sign signbit silu silu_backward sin sinc
    sinh slow_conv_transpose2d smooth_l1_loss softplus softplus_backward softshrink
    softshrink_backward sort_stable special_airy_ai special_bessel_j0 special_bessel_j1
    special_bessel_y0 special_bessel_y1 special_chebyshev_polynomial_t
    special_chebyshev_polynomial_u special_chebyshev_polynomial_v special_chebyshev_polynomial_w
    special_entr special_erfcx special_hermite_polynomial_h special_hermite_polynomial_he
    special_i0e special_i1 special_i1e special_laguerre_polynomial_l
    special_legendre_polynomial_p special_log_ndtr special_modified_bessel_i0
    special_modified_bessel_i1 special_modified_bessel_k0 special_modified_bessel_k1
    special_ndtri special_scaled_modified_bessel_k0 special_scaled_modified_bessel_k1
    special_shifted_chebyshev_polynomial_t special_shifted_chebyshev_polynomial_u
    special_shifted_chebyshev_polynomial_v special_shifted_chebyshev_polynomial_w
    special_spherical_bessel_j0 special_xlog1py special_zeta sqrt sub_Tensor sum_dim_IntList tan
    tanh tanh_backward threshold threshold_backward topk triangular_solve tril triu trunc
    upsample_bicubic2d upsample_bicubic2d_backward upsample_bilinear2d
    upsample_bilinear2d_backward upsample_linear1d upsample_linear1d_backward upsample_nearest1d
    upsample_nearest1d_backward upsample_nearest2d upsample_nearest2d_backward
    upsample_nearest3d upsample_nearest3d_backward upsample_trilinear3d
    upsample_trilinear3d_backward xlogy_Tensor
    """.split()
)
_STRUCTURED_META_CLASSES_2_14 = _STRUCTURED_META_CLASSES_2_13 | {
    "_scaled_grouped_mm_v2",
    "_scaled_mm_v2",
    "linalg_polar",
}
WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE = {
    "2.11": _STRUCTURED_META_CLASSES_2_13
    - {"_upsample_lanczos2d_aa", "_upsample_lanczos2d_aa_backward"},
    "2.12": _STRUCTURED_META_CLASSES_2_13,
    "2.13": _STRUCTURED_META_CLASSES_2_13,
    "2.14": _STRUCTURED_META_CLASSES_2_14,
    "2.15": _STRUCTURED_META_CLASSES_2_14 | {"_scaled_addmm"},
}
# A release's op YAML names only its own structured ops, so the union is safe for each.
WHEEL_STRUCTURED_META_CLASSES = frozenset().union(
    *WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE.values()
)

# --- Autograd formula helpers -----------------------------------------------------------------


@dataclass(frozen=True)
class AutogradHelpers:
    """The helpers of torch/csrc/autograd/FunctionsManual.h (namespace
    torch::autograd::generated::details) a generated formula may name, as one wheel has them.
    Read from the wheel (its libtorch_cpu's exports and the header, atengen.wheel_symbols): by
    the @torch repository into torch_facts.json, or by a run without it from the installed torch."""

    # What a formula may call (through a using-declaration): what libtorch_cpu exports, and what
    # the header defines inline (`wrap_opt_if`).
    callable_names: frozenset[str]
    # What the header declares (functions, and the one variable, kCudnnDoubleBackwardMsg) but
    # libtorch_cpu does not export: a formula using one would compile and then fail to link (or
    # to load), so the generator refuses it up front.
    unexported_names: frozenset[str]

    @classmethod
    def of(
        cls, exported: frozenset[str], declared: frozenset[str], defined: frozenset[str]
    ) -> AutogradHelpers:
        """From the names libtorch_cpu exports in that namespace, and those the header declares
        and defines."""
        usable = (exported | defined) & declared
        return cls(frozenset(usable), frozenset(declared - usable))

    @property
    def declared(self) -> frozenset[str]:
        return self.callable_names | self.unexported_names


# --- What the @torch repository read from the wheel -------------------------------------------

# The libraries whose exports decide whether a registration of a key can call its kernel: a
# CUDA key's kernel may live in libtorch_cpu (shared implementations) or libtorch_cuda.
_KERNEL_LIBRARIES = {False: ("libtorch_cpu",), True: ("libtorch_cpu", "libtorch_cuda")}


@dataclass(frozen=True)
class WheelFacts:
    """@torch//:torch_facts.json (tool/torch_probe.py): facts read from the installed wheel."""

    version: str  # "2.14.1+cu130"
    release: str  # "2.14"
    cuda: str  # "13.0", or "" for a CPU wheel
    arch_list: tuple[str, ...]
    # library name -> the at::native functions it exports; None: unknown (no `nm` at setup)
    native_kernels: dict[str, frozenset[str]] | None
    # the at::meta::structured_<name> classes libtorch_cpu exports; None: unknown
    structured_meta_classes: frozenset[str] | None = None
    # the FunctionsManual.h helpers formulas may call and may not; None: unknown
    autograd_helpers: AutogradHelpers | None = None
    # the release whose facts are used: `release`, or the newest known one for a newer release
    facts_release: str = TORCH_RELEASE
    # the one-line warning to print about that, or None
    warning: str | None = None

    def reusable_meta_classes(self) -> frozenset[str]:
        """The structured meta classes an external backend may reuse: the wheel's, or, where
        they were not read, the list kept for the supported releases."""
        if self.structured_meta_classes is None:
            return WHEEL_STRUCTURED_META_CLASSES
        return self.structured_meta_classes

    def unexported_kernel(self, kernel: str, cuda_key: bool) -> str | None:
        """Why a registration calling at::native::<kernel> would not load, or None."""
        if self.native_kernels is None:
            return None
        if cuda_key and "libtorch_cuda" not in self.native_kernels:
            return None  # a CPU wheel: CUDA registrations are compiled, never loaded
        libraries = [lib for lib in _KERNEL_LIBRARIES[cuda_key] if lib in self.native_kernels]
        if not libraries or any(kernel in self.native_kernels[lib] for lib in libraries):
            return None
        return f"torch {self.version} exports no at::native::{kernel} ({', '.join(libraries)})"


def parse_wheel_facts(text: str) -> WheelFacts:
    """WheelFacts from the JSON text; ValueError with one line when it is malformed or not for a
    supported release."""
    import json  # here: only a run given --torch_facts reads JSON (json costs ~3 ms to import)

    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("torch facts: JSON nested too deeply") from None
    except ValueError as e:
        raise ValueError(f"torch facts: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"torch facts: expected a JSON object, got {type(data).__name__}")
    release = _fact(data, "release", str, "unknown")
    version = _fact(data, "version", str, release)
    used, warning = facts_release(release, version)
    # The @torch repository names the release it warned about once (facts_release), so that
    # each action reading its facts does not warn again.
    if warning and _fact(data, "facts_release", str, "") == used:
        warning = None
    kernels = _fact(data, "native_kernels", dict, None)
    if kernels is not None:
        kernels = {
            lib: frozenset(_strings(names, f"native_kernels.{lib}"))
            for lib, names in kernels.items()
        }
    meta = _fact(data, "structured_meta_classes", list, None)
    helpers = {key: _fact(data, key, list, None) for key in AUTOGRAD_HELPER_FACTS}
    if any(v is not None for v in helpers.values()) and None in helpers.values():
        missing = sorted(key for key, v in helpers.items() if v is None)
        raise ValueError(
            f"torch facts: '{missing[0]}' missing beside the other autograd_helpers_ fields"
        )
    return WheelFacts(
        version=version,
        release=release,
        facts_release=used,
        warning=warning,
        cuda=_fact(data, "cuda", str, ""),
        arch_list=tuple(_strings(_fact(data, "arch_list", list, []), "arch_list")),
        native_kernels=kernels,
        structured_meta_classes=None
        if meta is None
        else frozenset(_strings(meta, "structured_meta_classes")),
        autograd_helpers=None
        if helpers["autograd_helpers_exported"] is None
        else AutogradHelpers.of(
            *(frozenset(_strings(helpers[key], key)) for key in AUTOGRAD_HELPER_FACTS)
        ),
    )


# The fields of torch_facts.json that tell the autograd helpers, in AutogradHelpers.of's order:
# the names libtorch_cpu exports in torch::autograd::generated::details, and those
# FunctionsManual.h declares and defines there (tool/torch_probe.py).
AUTOGRAD_HELPER_FACTS = (
    "autograd_helpers_exported",
    "autograd_helpers_declared",
    "autograd_helpers_defined",
)


_JSON_TYPE_NAMES: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}


def _fact(data: dict[str, object], key: str, kind: type[T], default: D) -> T | D:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise ValueError(f"torch facts: '{key}' must be {_JSON_TYPE_NAMES[kind]}")
    return value


def _strings(values: object, key: str) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"torch facts: '{key}' must be a list of strings")
    return values
