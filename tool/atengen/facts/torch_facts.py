"""Facts about the torch releases the generator supports (RELEASES below), and nothing else.

Everything here is a property of torch, not of the YAML formats: its dispatch keys, its tags,
the operators its own codegen treats by hand. The module has two halves:

- Releases: each supported release is one block, TORCH_2_11 whole and every later one as what it
  changed from the release before (a ReleaseChange). The policy (SUPPORTED_RELEASES, which
  releases are refused or built with another's facts) and every per-release table the generator
  reads (`..._BY_RELEASE`, and the module-level value that is safe for every supported release:
  the union of what the generator must refuse or may use) are derived from the blocks. A torch
  upgrade is one new block at the end of RELEASES; tests/unit/facts/test_torch_facts.py checks the blocks
  and compares every fact with the installed wheel, and tests/slices/releases/test_releases.py each release's
  codegen facts with that release's torchgen.
- Facts that are the same in every supported release (dispatch keys, schema defaults, operators
  torch's codegen treats specially).

A release older than SUPPORTED_RELEASES[0] is refused; one newer than SUPPORTED_RELEASES[-1] is
built with the newest release's facts, with one warning (facts_release below). The @torch
repository rule applies the same policy through what tool/torch_probe.py, which imports this
module, writes (its `release_support` field).

What can be read from the wheel itself is not kept here: the @torch repository runs
tool/torch_probe.py and writes @torch//:torch_facts.json, which atengen/facts/wheel_facts.py reads.
NATIVE_KERNELS_NOT_EXPORTED and each release's structured_meta_classes below are only the
fallbacks of a generate or backend run without --torch_facts.

Standard library only: the probe runs this module on the user's interpreter.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, fields
from types import MappingProxyType

# ============================================================================================
# Releases
# ============================================================================================


@dataclass(frozen=True)
class ReleaseFacts:
    """What rules_aten keeps by hand about one torch release: the facts it cannot read off the
    wheel, or needs where it does not read the wheel (a run without --torch_facts)."""

    release: str  # "2.14"
    # The at::Tag values (torch generates that enum from its own tags.yaml). Tags that only a
    # custom tags YAML defines are model metadata and are not passed to m.def().
    c10_tags: frozenset[str]
    # Mutating aten ops that torch's functionalization leaves alone: helpers that never reach a
    # functionalized program and have no functional variant to call (torchgen's
    # MUTABLE_OPS_NOT_USING_FUNCTIONALIZATION less resize_ and resize_as_, which are
    # HANDWRITTEN_FUNCTIONALIZE_GROUPS and a view group; checked against each release's torchgen
    # by tests/slices/releases/test_releases.py).
    not_functionalized: frozenset[str]
    # Names torch's codegen exempts from "an op with `rand` in its name needs the
    # nondeterministic_seeded tag" (a rule of torch's own YAML; checked against each release's
    # torchgen by tests/slices/releases/test_releases.py).
    random_name_exempt_parts: frozenset[str]
    # Schema types that this release's runtime schema parser (torch._C.parse_schema) knows and
    # some other supported release's does not. torchgen knows them in every release, and torch's
    # own ops of this release use them; a custom operator's schema (which the generated library
    # defines with m.def) may use one only when built for a release that has it.
    release_only_schema_types: frozenset[str]
    # Whether the structured kernel base classes (at::impl::MetaBase, TensorIteratorBase)
    # declare set_output_strided/set_output_raw_strided with a trailing `DimnameList names`
    # (named tensors): an override must then take it, and propagate the names to its output.
    set_output_takes_names: bool
    # In-place aten ops without a Meta kernel in the op YAML for which the wheel registers a
    # Python meta kernel (torch/_meta_registrations.py) over its generated C++ no-op one: the
    # Python kernel checks shapes (broadcasting into self), which functionalization relies on. A
    # no-op Meta kernel in a library loaded later would replace it, so the generator leaves these
    # out. Checked against the dispatcher of each release by tests/unit/facts/test_torch_facts.py.
    inplace_ops_with_python_meta: frozenset[str]
    # The meta classes libtorch_cpu exports (`at::meta::structured_<name>`, named by the
    # functional op: `add_Tensor` for add.Tensor): a backend may implement these ops by impl()
    # alone and reuse torch's meta(). The @torch repository reads them from the wheel; these are
    # the fallback of an `atengen backend` run by hand without --torch_facts, which reads nothing
    # of the wheel but its YAML. Checked against each wheel by tests/unit/facts/test_torch_facts.py and
    # tests/slices/releases/test_releases.py.
    structured_meta_classes: frozenset[str]
    # The StableIValue conversions a stable-ABI library built for this release as its target may
    # use: the names of the specializations in torch/csrc/stable/stableivalue_conversions.h
    # gated on this release or older (see atengen/stable/releases.py; checked against each
    # installed wheel's header by tests/unit/stable/test_stable_releases.py).
    stable_conversions: frozenset[str]
    # The typed C shims (AOTInductor's fallback ops: torch/csrc/inductor/aoti_torch/generated/
    # c_shim_aten.h, c_shim_cpu.h, c_shim_cuda.h) with a `double` for a schema's Scalar that the
    # stable call API may call (atengen/stable/scalar_routes.py). Checked against each installed
    # wheel's headers, prototypes included, by tests/unit/stable/test_stable_scalar_routes.py.
    stable_scalar_shims: frozenset[str]

    def then(self, change: ReleaseChange) -> ReleaseFacts:
        """The facts of the release after this one, which `change` describes."""
        # Fact by fact: a fact added to ReleaseFacts and not here fails at import (an argument
        # missing), and mypy checks each one's type.
        return ReleaseFacts(
            release=change.release,
            c10_tags=_changed(self.c10_tags, change.c10_tags),
            not_functionalized=_changed(self.not_functionalized, change.not_functionalized),
            random_name_exempt_parts=_changed(
                self.random_name_exempt_parts, change.random_name_exempt_parts
            ),
            release_only_schema_types=_changed(
                self.release_only_schema_types, change.release_only_schema_types
            ),
            set_output_takes_names=self.set_output_takes_names
            if change.set_output_takes_names is None
            else change.set_output_takes_names,
            inplace_ops_with_python_meta=_changed(
                self.inplace_ops_with_python_meta, change.inplace_ops_with_python_meta
            ),
            structured_meta_classes=_changed(
                self.structured_meta_classes, change.structured_meta_classes
            ),
            stable_conversions=_changed(self.stable_conversions, change.stable_conversions),
            stable_scalar_shims=_changed(self.stable_scalar_shims, change.stable_scalar_shims),
        )


@dataclass(frozen=True, init=False)
class Change:
    """What a release changed in one set-valued fact."""

    added: frozenset[str]
    removed: frozenset[str]

    def __init__(
        self, added: AbstractSet[str] = frozenset(), removed: AbstractSet[str] = frozenset()
    ) -> None:
        # The blocks write set literals; a frozenset keeps a block immutable once written.
        object.__setattr__(self, "added", frozenset(added))
        object.__setattr__(self, "removed", frozenset(removed))


def _changed(facts: frozenset[str], change: Change | None) -> frozenset[str]:
    """One set-valued fact of the release after the one with `facts` (None: unchanged)."""
    return facts if change is None else (facts - change.removed) | change.added


@dataclass(frozen=True)
class ReleaseChange:
    """What one release changed from the release before it, fact by fact (the fields of
    ReleaseFacts); None keeps the fact as it was. A release that changed none of them says so
    with changes_nothing=True, so that a block left unfinished and a release that really changed
    nothing are told apart (tests/unit/facts/test_torch_facts.py)."""

    release: str
    c10_tags: Change | None = None
    not_functionalized: Change | None = None
    random_name_exempt_parts: Change | None = None
    release_only_schema_types: Change | None = None
    set_output_takes_names: bool | None = None
    inplace_ops_with_python_meta: Change | None = None
    structured_meta_classes: Change | None = None
    stable_conversions: Change | None = None
    stable_scalar_shims: Change | None = None
    changes_nothing: bool = False

    def changed_facts(self) -> tuple[str, ...]:
        """The facts this release changed (a Change that adds and removes nothing is none)."""
        return tuple(
            fact
            for fact in FACT_NAMES
            if (value := getattr(self, fact)) is not None
            and (not isinstance(value, Change) or value.added or value.removed)
        )


# The per-release facts, by name: what ReleaseChange may change and tests iterate over.
FACT_NAMES = tuple(f.name for f in fields(ReleaseFacts) if f.name != "release")


TORCH_2_11 = ReleaseFacts(
    release="2.11",
    c10_tags=frozenset(
        """
        core cudagraph_unsafe data_dependent_output dynamic_output_shape flexible_layout
        generated inplace_view maybe_aliasing_or_mutating needs_contiguous_strides
        needs_exact_strides needs_fixed_stride_order nondeterministic_bitwise
        nondeterministic_seeded out_variant pointwise pt2_compliant_tag reduction view_copy
        """.split()
    ),
    not_functionalized=frozenset(
        {
            "aten::_cummax_helper",
            "aten::_cummin_helper",
            "aten::_fill_mem_eff_dropout_mask_",
            "aten::_slow_conv2d_backward.grad_input",
            "aten::adaptive_avg_pool3d_backward.grad_input",
            "aten::polygamma_",  # its argument order differs from polygamma's
            "aten::record_stream",
        }
    ),
    random_name_exempt_parts=frozenset(),
    # Named tensors: 2.13 dropped them.
    release_only_schema_types=frozenset({"Dimname"}),
    set_output_takes_names=True,
    inplace_ops_with_python_meta=frozenset(
        """
        __ilshift__.Scalar __ilshift__.Tensor __irshift__.Scalar __irshift__.Tensor addbmm_
        bernoulli_.float cauchy_ exponential_ floor_divide_.Tensor geometric_ hardswish_
        hardtanh_ index_fill_.int_Scalar index_fill_.int_Tensor log_normal_ logit_
        masked_fill_.Scalar masked_fill_.Tensor masked_scatter_ relu_ rrelu_with_noise_
        """.split()
    ),
    structured_meta_classes=frozenset(
        """
        _addmm_activation _convert_indices_from_coo_to_csr _convert_indices_from_csr_to_coo
        _linalg_det _linalg_eigh _linalg_slogdet _linalg_solve_ex _linalg_svd _log_softmax
        _log_softmax_backward_data _softmax _softmax_backward_data _upsample_bicubic2d_aa
        _upsample_bicubic2d_aa_backward _upsample_bilinear2d_aa _upsample_bilinear2d_aa_backward
        _upsample_nearest_exact1d _upsample_nearest_exact1d_backward _upsample_nearest_exact2d
        _upsample_nearest_exact2d_backward _upsample_nearest_exact3d
        _upsample_nearest_exact3d_backward acos acosh adaptive_max_pool2d
        adaptive_max_pool2d_backward adaptive_max_pool3d adaptive_max_pool3d_backward add_Tensor
        addcdiv addcmul addmm addmv all all_dim all_dims amax amin aminmax any any_dim any_dims
        argmax argmin asin asinh atan atan2 atanh avg_pool2d avg_pool2d_backward avg_pool3d
        avg_pool3d_backward baddbmm bitwise_and_Tensor bitwise_left_shift_Tensor bitwise_not
        bitwise_or_Tensor bitwise_right_shift_Tensor bitwise_xor_Tensor bmm cat ceil clamp
        clamp_Tensor clamp_max clamp_max_Tensor clamp_min clamp_min_Tensor copysign_Tensor cos
        cosh cumprod cumsum digamma div_Tensor div_Tensor_mode elu elu_backward eq_Scalar
        eq_Tensor erf erfc erfinv exp exp2 expm1 floor fmax fmin fmod_Tensor frac
        fractional_max_pool2d fractional_max_pool2d_backward fractional_max_pool3d gather gcd
        ge_Scalar ge_Tensor gelu gelu_backward glu gt_Scalar gt_Tensor hardshrink
        hardshrink_backward hardsigmoid hardsigmoid_backward hash_tensor heaviside hypot i0
        igamma igammac index_Tensor index_add index_copy index_reduce isin_Scalar_Tensor
        isin_Tensor_Scalar isin_Tensor_Tensor isneginf isposinf lcm le_Scalar le_Tensor
        leaky_relu leaky_relu_backward lerp_Scalar lerp_Tensor lgamma linalg_cholesky_ex
        linalg_cross linalg_inv_ex linalg_ldl_factor_ex linalg_ldl_solve linalg_lu
        linalg_lu_factor_ex linalg_lu_solve linalg_qr linalg_vector_norm log log10 log1p log2
        logaddexp logaddexp2 logit_backward lt_Scalar lt_Tensor lu_unpack max_dim
        max_pool2d_with_indices max_pool2d_with_indices_backward maximum mean_dim min_dim
        minimum mish mm mse_loss mul_Tensor ne_Scalar ne_Tensor neg nextafter nll_loss_backward
        nll_loss_forward norm_ScalarOpt_dim norm_ScalarOpt_dim_dtype polygamma pow_Scalar
        pow_Tensor_Scalar pow_Tensor_Tensor prod_dim_int reciprocal reflection_pad1d
        reflection_pad1d_backward reflection_pad3d reflection_pad3d_backward remainder_Tensor
        renorm replication_pad1d replication_pad1d_backward replication_pad2d replication_pad3d
        round round_decimals rsqrt scatter_add scatter_reduce scatter_reduce_two scatter_src
        scatter_value scatter_value_reduce sgn sigmoid sigmoid_backward sign signbit silu
        silu_backward sin sinc sinh slow_conv_transpose2d smooth_l1_loss softplus
        softplus_backward softshrink softshrink_backward sort_stable special_airy_ai
        special_bessel_j0 special_bessel_j1 special_bessel_y0 special_bessel_y1
        special_chebyshev_polynomial_t special_chebyshev_polynomial_u
        special_chebyshev_polynomial_v special_chebyshev_polynomial_w special_entr special_erfcx
        special_hermite_polynomial_h special_hermite_polynomial_he special_i0e special_i1
        special_i1e special_laguerre_polynomial_l special_legendre_polynomial_p special_log_ndtr
        special_modified_bessel_i0 special_modified_bessel_i1 special_modified_bessel_k0
        special_modified_bessel_k1 special_ndtri special_scaled_modified_bessel_k0
        special_scaled_modified_bessel_k1 special_shifted_chebyshev_polynomial_t
        special_shifted_chebyshev_polynomial_u special_shifted_chebyshev_polynomial_v
        special_shifted_chebyshev_polynomial_w special_spherical_bessel_j0 special_xlog1py
        special_zeta sqrt sub_Tensor sum_dim_IntList tan tanh tanh_backward threshold
        threshold_backward topk triangular_solve tril triu trunc upsample_bicubic2d
        upsample_bicubic2d_backward upsample_bilinear2d upsample_bilinear2d_backward
        upsample_linear1d upsample_linear1d_backward upsample_nearest1d
        upsample_nearest1d_backward upsample_nearest2d upsample_nearest2d_backward
        upsample_nearest3d upsample_nearest3d_backward upsample_trilinear3d
        upsample_trilinear3d_backward xlogy_Tensor
        """.split()
    ),
    # Every conversion of the header gated on 2.10 or older.
    stable_conversions=frozenset(
        {
            "DeviceType",
            "Layout",
            "MemoryFormat",
            "ScalarType",
            "std::nullopt_t",
            "std::optional<T>",
            "std::string",
            "std::vector<T>",
            "torch::headeronly::HeaderOnlyArrayRef<T>",
            "torch::stable::Device",
            "torch::stable::Tensor",
        }
    ),
    # aoti_torch_aten_<name>: any device; aoti_torch_cpu_/cuda_<name>: one device each.
    stable_scalar_shims=frozenset(
        [f"aoti_torch_aten_{name}" for name in ("fill__Scalar", "subtract_Tensor")]
        + [
            f"aoti_torch_{device}_{name}"
            for device in ("cpu", "cuda")
            for name in """
            _addmm_activation _segment_reduce_backward add_Scalar add_Tensor addbmm addmm_out
            addmv baddbmm_out histc mul_Scalar pow_Scalar pow_Tensor_Scalar scatter_value_out
            searchsorted_Scalar segment_reduce
            """.split()
        ]
    ),
)

TORCH_2_12 = ReleaseChange(
    release="2.12",
    not_functionalized=Change(added={"aten::_flash_attention_forward_no_dropout_inplace"}),
    # New stateless random ops, with their Python meta kernels.
    inplace_ops_with_python_meta=Change(added={"_philox_normal_", "_philox_uniform_"}),
    structured_meta_classes=Change(
        added={"_upsample_lanczos2d_aa", "_upsample_lanczos2d_aa_backward"}
    ),
    stable_conversions=Change(added={"Tag"}),
)

TORCH_2_13 = ReleaseChange(
    release="2.13",
    c10_tags=Change(added={"inplace", "out"}),
    # Named tensors are gone: no Dimname in schemas, no names in set_output_*.
    release_only_schema_types=Change(removed={"Dimname"}),
    set_output_takes_names=False,
    stable_conversions=Change(added={"torch::stable::Generator"}),
)

TORCH_2_14 = ReleaseChange(
    release="2.14",
    structured_meta_classes=Change(
        added={"_scaled_grouped_mm_v2", "_scaled_mm_v2", "linalg_polar"}
    ),
)

TORCH_2_15 = ReleaseChange(
    release="2.15",
    not_functionalized=Change(added={"aten::_cudnn_attention_forward_no_dropout_inplace"}),
    # The stateless `_philox_*` ops, which their key input determines.
    random_name_exempt_parts=Change(added={"_philox_"}),
    inplace_ops_with_python_meta=Change(added={"_philox_randint_"}),
    structured_meta_classes=Change(added={"_scaled_addmm"}),
)

# Every supported release, oldest first: the base, then one change per release.
RELEASES: tuple[ReleaseFacts | ReleaseChange, ...] = (
    TORCH_2_11,
    TORCH_2_12,
    TORCH_2_13,
    TORCH_2_14,
    TORCH_2_15,
)


def _facts_by_release() -> Mapping[str, ReleaseFacts]:
    base, *changes = RELEASES
    assert isinstance(base, ReleaseFacts), "RELEASES starts with a whole release"
    facts = [base]
    for change in changes:
        assert isinstance(change, ReleaseChange), f"{change.release}: not a ReleaseChange"
        facts.append(facts[-1].then(change))
    return MappingProxyType({f.release: f for f in facts})


# Each supported release's facts, whole, oldest first.
FACTS_BY_RELEASE = _facts_by_release()

SUPPORTED_RELEASES = tuple(FACTS_BY_RELEASE)
OLDEST_RELEASE = SUPPORTED_RELEASES[0]
NEWEST_RELEASE = SUPPORTED_RELEASES[-1]

# The release of the default development venv (third_party/requirements_dev.lock): the facts of
# a run without --torch_facts where they must be one release's.
TORCH_RELEASE = "2.13"


def release_number(release: str) -> tuple[int, int] | None:
    """(major, minor) of "2.14", or None when it is not two numbers."""
    major, dot, minor = release.partition(".")
    # ASCII digits only: str.isdigit() also takes `²` and `١`, which int() refuses or reads.
    if not (dot and major.isascii() and major.isdigit() and minor.isascii() and minor.isdigit()):
        return None
    return int(major), int(minor)


def valid_release_number(release: str) -> tuple[int, int]:
    """release_number of a release known to be one ("2.14": one this module or its caller
    names, or has checked); ValueError when it is not."""
    number = release_number(release)
    if number is None:
        raise ValueError(f"not a torch release such as {OLDEST_RELEASE}: {release!r}")
    return number


# What release_support says of a release; tool/torch_probe.py writes it for the @torch rule.
RELEASE_SUPPORT = ("supported", "newer", "older", "unreadable")


def release_support(release: str) -> str:
    """How rules_aten treats torch `release` ("2.14"): "supported"; "newer" than the newest
    supported one (built with its facts, after one warning); "older" than the oldest (refused);
    or "unreadable" (not a release such as "2.14", or "2.013")."""
    number = release_number(release)
    if number is None:
        return "unreadable"
    if number < valid_release_number(OLDEST_RELEASE):
        return "older"
    if number > valid_release_number(NEWEST_RELEASE):
        return "newer"
    return "supported" if release in FACTS_BY_RELEASE else "unreadable"


def facts_release(release: str, version: str) -> tuple[str, str | None]:
    """The release whose facts apply to torch `version` (of `release`), and the one-line warning
    to print when that is another release (a release newer than the newest known one).
    ValueError with one line for a release older than the oldest supported one, or unreadable."""
    support = release_support(release)
    if support == "unreadable":
        raise ValueError(f"torch {version}: cannot read its release from '{release}'")
    if support == "older":
        raise ValueError(
            f"torch {version} is older than torch {OLDEST_RELEASE}, the oldest release "
            f"rules_aten supports; install torch {OLDEST_RELEASE} or newer"
        )
    if support == "newer":
        return NEWEST_RELEASE, (
            f"torch {version} is newer than the releases rules_aten knows "
            f"({OLDEST_RELEASE} to {NEWEST_RELEASE}): building it with the facts of torch "
            f"{NEWEST_RELEASE} (tool/atengen/facts/torch_facts.py)"
        )
    return release, None


# --- The per-release tables, derived from the blocks ----------------------------------------


def _by_release(fact: str) -> Mapping[str, frozenset[str]]:
    return MappingProxyType({r: getattr(f, fact) for r, f in FACTS_BY_RELEASE.items()})


def _in_any_release(table: Mapping[str, frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*table.values())


C10_TAGS_BY_RELEASE = _by_release("c10_tags")
# The tags every supported release's at::Tag has: what a run without --torch_facts passes.
C10_TAGS = frozenset.intersection(*C10_TAGS_BY_RELEASE.values())

NOT_FUNCTIONALIZED_BY_RELEASE = _by_release("not_functionalized")
# Each op is in the op YAML of the releases that list it only, so the union serves them all.
NOT_FUNCTIONALIZED = _in_any_release(NOT_FUNCTIONALIZED_BY_RELEASE)

RANDOM_NAME_EXEMPT_PARTS_BY_RELEASE = _by_release("random_name_exempt_parts")
# Only the releases that exempt a part have ops named so, so the union serves every release;
# sorted, so that the check runs the same in every process.
RANDOM_NAME_EXEMPT_PARTS = tuple(sorted(_in_any_release(RANDOM_NAME_EXEMPT_PARTS_BY_RELEASE)))

# Each release-only schema type, and the releases whose runtime parser knows it (oldest first).
SCHEMA_TYPES_OF_RELEASES = MappingProxyType(
    {
        name: tuple(r for r, f in FACTS_BY_RELEASE.items() if name in f.release_only_schema_types)
        for name in sorted(_in_any_release(_by_release("release_only_schema_types")))
    }
)

SET_OUTPUT_NAMES_RELEASES = frozenset(
    r for r, f in FACTS_BY_RELEASE.items() if f.set_output_takes_names
)

INPLACE_OPS_WITH_PYTHON_META_BY_RELEASE = _by_release("inplace_ops_with_python_meta")
# One list for every release: a name a release's YAML lacks matches nothing there.
INPLACE_OPS_WITH_PYTHON_META = _in_any_release(INPLACE_OPS_WITH_PYTHON_META_BY_RELEASE)

WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE = _by_release("structured_meta_classes")
# A release's op YAML names only its own structured ops, so the union is safe for each.
WHEEL_STRUCTURED_META_CLASSES = _in_any_release(WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE)

STABLE_CONVERSIONS_BY_RELEASE = _by_release("stable_conversions")
STABLE_SCALAR_SHIMS_BY_RELEASE = _by_release("stable_scalar_shims")

# ============================================================================================
# Facts that are the same in every supported release
# ============================================================================================

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
# Servable keys that c10::parseDispatchKey does not know by name, so torch's C shim, which takes
# a key's name (aoti_torch_library_init_impl), cannot register under them: their registration
# sources make their torch::Library through torch/library.h (ATENGEN_TYPED_LIBRARY_IMPL).
SHIM_UNNAMED_KEYS = frozenset({"QuantizedMeta"})
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
DTYPE_VIEW_REVERSES = MappingProxyType(
    {
        "view.dtype": (
            "view_copy",
            "dtype",
            "at::ScalarType",
            "atg_mutated, atg_base.scalar_type()",
        ),
        "view_as_real": ("view_as_complex_copy", "", "", "atg_mutated"),
        "view_as_complex": ("view_as_real_copy", "", "", "atg_mutated"),
    }
)

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
# by tests/unit/facts/test_torch_facts.py.
# Kept although the wheel tells it (torch_facts.json's native_kernels, which the rules always
# pass): it is what `atengen generate` leaves out when run by hand without --torch_facts, which
# reads nothing of the wheel but its YAML, and whose output the tests and goldens fix.
NATIVE_KERNELS_NOT_EXPORTED = frozenset(
    {"_grouped_mm", "is_vulkan_available", "rms_norm_composite", "rms_norm_symint"}
)
