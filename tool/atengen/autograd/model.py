"""The autograd model: what a derivatives YAML says about each operator.

A derivatives YAML lists, per operator schema, one backward formula per group
of differentiable inputs and optionally forward-mode (tangent) formulas per
output. Loading it against an operator model gives one DifferentiabilityInfo
per entry (per autograd dispatch key), and matching gives every NativeFunction
(in-place, out= and generated variants included) the info it differentiates by.
Nothing here is tied to one operator namespace.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.errors import Location
from atengen.facts.wheel_facts import AutogradHelpers
from atengen.model.native_function import NativeFunction
from atengen.model.schema import Argument
from atengen.model.schema_types import Type

DEFAULT_KEY = "Default"


@dataclass(frozen=True, slots=True)
class SavedAttribute:
    """A value a backward node keeps: an input or output, or a property of one.

    Formulas that only need ``other.scalar_type()`` save that (as
    ``other_scalar_type``) instead of the whole tensor.
    """

    name: str  # the member's name, e.g. `other_scalar_type`
    cpp_type: str  # its C++ type, e.g. `at::ScalarType`
    expr: str  # what is evaluated when the node is built, e.g. `other.scalar_type()`


@dataclass(frozen=True, slots=True)
class Derivative:
    """One backward formula, giving the gradient of one or more inputs."""

    formula: str  # after saved-attribute substitution
    original_formula: str  # as written in the YAML
    var_names: tuple[str, ...]  # the inputs it differentiates
    saved_inputs: tuple[SavedAttribute, ...]
    saved_outputs: tuple[SavedAttribute, ...]
    named_gradients: frozenset[str]  # `grad_<return name>` it reads


@dataclass(frozen=True, slots=True)
class ForwardDerivative:
    """One forward-mode formula, giving the tangent of one or more outputs."""

    formula: str  # `auto_element_wise` / `auto_linear` already expanded
    var_names: tuple[str, ...]  # the outputs it computes tangents of
    var_types: tuple[Type, ...]
    required_inputs_fw_grad: tuple[str, ...] | None  # inputs whose tangent it reads
    required_inputs_primal: tuple[str, ...] | None  # inputs whose primal (`x_p`) it reads
    # In-place variants reusing an out-of-place formula that reads the input's
    # old value need a copy of it taken before the kernel runs.
    required_original_self_value: bool = False
    is_reusing_outplace_formula: bool = False
    # An in-place variant's formula that computes self's new tangent out of place and copies it
    # into the tangent self has: autograd refuses to replace that tensor.
    copies_into_self_t: bool = False


@dataclass(frozen=True, slots=True)
class DiffArgument:
    """An argument of the C++ API, as the formulas name it."""

    name: str
    cpp_type: str  # e.g. `const at::Tensor &`; `at::TensorOptions` for `options`
    argument: Argument | None  # None for the packed `options` of factory functions


@dataclass(frozen=True, eq=False)
class DifferentiabilityInfo:
    """One derivatives YAML entry, for one autograd dispatch key."""

    name: str  # the entry's base name, e.g. `add` or `add_`
    func: NativeFunction  # the function the formulas are written against
    op: str | None  # backward node class, e.g. `AddBackward0`; None without derivatives
    derivatives: tuple[Derivative, ...]
    forward_derivatives: tuple[ForwardDerivative, ...]
    all_saved_inputs: tuple[SavedAttribute, ...]
    all_saved_outputs: tuple[SavedAttribute, ...]
    available_named_gradients: tuple[str, ...]  # in the order of the grads vector
    used_named_gradients: frozenset[str]
    args_with_derivatives: tuple[DiffArgument, ...]  # in argument order
    non_differentiable_arg_names: tuple[str, ...]
    output_differentiability: tuple[bool, ...] | None
    output_differentiability_conditions: tuple[str, ...] | None
    loc: Location

    @property
    def has_derivatives(self) -> bool:
        return bool(self.args_with_derivatives)

    @property
    def node(self) -> str:
        """``op`` of an info with derivatives (which always names its backward node)."""
        assert self.op is not None, "an info without derivatives has no backward node"
        return self.op


@dataclass(frozen=True, eq=False)
class FunctionDerivatives:
    """What one NativeFunction differentiates by, per autograd dispatch key."""

    func: NativeFunction
    infos: dict[str, DifferentiabilityInfo] | None
    # The forward formulas as this function uses them: for in-place variants,
    # the out-of-place formulas rewritten to update `self`'s tangent in place.
    forward_derivatives: dict[str, tuple[ForwardDerivative, ...]] | None
    is_exact_match: bool  # the entry names this very function


@dataclass(frozen=True, eq=False)
class DerivativesModel:
    """Every entry of a derivatives YAML, and every function matched to one."""

    # (namespace, schema text) of the entry's function -> key -> info, YAML order;
    # generated `{view}_copy` entries follow their views.
    infos: dict[tuple[str, str], dict[str, DifferentiabilityInfo]]
    functions: tuple[FunctionDerivatives, ...]  # the operator model's order
    used_dispatch_keys: frozenset[str]
    # The FunctionsManual.h helpers the formulas were checked against: which the wheel exports
    # decides whose kernels can be written.
    helpers: AutogradHelpers

    def counts(self) -> dict[str, int]:
        matched = [f for f in self.functions if f.infos]
        return {
            "entries": sum(1 for v in self.infos.values() for i in v.values()),
            "with_derivatives": sum(
                1 for v in self.infos.values() for i in v.values() if i.has_derivatives
            ),
            "functions_matched": len(matched),
            "exact_matches": sum(f.is_exact_match for f in matched),
        }
