"""The generated kernel of a full_codegen op: trace the call into an IR node.

A kernel finds the common lazy device, turns its tensor arguments into lazy
tensors (and Scalars into constant nodes), reuses a cached node built from the
same operands and attributes or builds one (inferring output shapes first), and
returns lazy tensors wrapping the node's outputs; out= and inplace ops redirect
their destination to the node instead.

Output shapes come from the op's meta kernel when it is structured, from its
CompositeExplicitAutogradNonFunctional kernel for view_copy ops (both run on
meta tensors), and otherwise from ``torch::lazy::compute_shape_<kernel>``,
which the backend declares in its shape-inference header.

Here: what the kernel of one op is made of, as a view-model (TracingKernel);
``templates/lazy_kernel.j2`` writes its C++.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.api.cpp_types import TypeOptions, cpp_arguments
from atengen.api.declarations import native_declaration
from atengen.errors import AtengenError, Location
from atengen.lazy.ir_types import LazyArg
from atengen.lazy.model import LazyBackend, LazyKernel
from atengen.model.schema import SchemaKind
from atengen.model.schema_types import ListType, OptionalType


@dataclass(frozen=True)
class KernelArg:
    """An argument of the op, as the kernel hands it to the node."""

    name: str
    # An operand the kernel makes a lazy value of first: "scalar" or "optional_scalar" (a
    # constant node), "tensor_list", "optional_tensor" or "tensor" (a lazy tensor); else "".
    lazy_value: str
    # What the node's constructor gets: the IR value of "symint", "optional_symint", "scalar",
    # "tensor_list", "optional_tensor" or "tensor"; an owning copy of a list ("symint_array",
    # "vector", "optional_vector"); or the argument "as_is".
    node_input: str
    vector_type: str = ""  # the owning vector ("vector") or its element ("optional_vector")


@dataclass(frozen=True)
class MetaArgument:
    name: str
    is_tensor: bool  # passed as a meta tensor


@dataclass(frozen=True)
class MetaShapes:
    """Shapes from running the op's meta (or view_copy composite) kernel on meta tensors."""

    namespace: str  # `meta` or `compositeexplicitautogradnonfunctional`
    function: str
    arguments: tuple[MetaArgument, ...]
    num_returns: int


@dataclass(frozen=True)
class TracingKernel:
    """What ``templates/lazy_kernel.j2`` needs to write the kernel of one full_codegen op."""

    declaration: str  # `at::Tensor LazyNativeFunctions::abs(const at::Tensor & self)`
    kernel: str  # names the shape function when there is no meta_shapes
    node_class: str
    num_outputs: int
    schema: str  # the op's schema, for symbolic shapes
    args: tuple[KernelArg, ...]  # the node's arguments, in schema order
    device_args: tuple[str, ...]  # where the common device comes from
    meta_shapes: MetaShapes | None  # None: torch::lazy::compute_shape_<kernel>
    in_place: bool  # an out= or inplace op: its destination tensor now holds the node
    destination: str

    @property
    def needs_meta(self) -> bool:
        """Uses the to_meta() helpers."""
        return self.meta_shapes is not None


def shape_declaration(k: LazyKernel) -> str:
    """The line the shape-inference header must contain for k (when it has no meta kernel)."""
    f = k.f
    opts = TypeOptions(
        symint=k.symint,
        const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
        ilistref_for_tensor_lists=f.part_of_structured_group,
    )
    args = ", ".join(a.decl() for a in cpp_arguments(f.func, opts))
    return f"TORCH_API std::vector<torch::lazy::Shape> compute_shape_{k.kernel}({args});"


def expected_shape_declarations(lazy: LazyBackend) -> list[str]:
    return [shape_declaration(k) for k in lazy.kernels if k.shape_source == "compute_shape"]


def check_shape_inference(lazy: LazyBackend, header_text: str, header_name: str) -> None:
    """Every compute_shape_* a generated kernel calls is declared, one per line, in the header."""
    lines = set(header_text.split("\n"))
    missing = [
        (k, d)
        for k in lazy.kernels
        if k.shape_source == "compute_shape" and (d := shape_declaration(k)) not in lines
    ]
    if missing:
        first: Location = missing[0][0].node.entry
        listing = " | ".join(d for _, d in missing)
        raise AtengenError(
            first,
            f"{len(missing)} full_codegen op(s) have no meta kernel and no shape function: "
            f"declare each of these lines in {header_name} (and define them): {listing}",
        )


def tracing_kernel(k: LazyKernel, class_name: str) -> TracingKernel:
    node = k.node
    values = [a for a in node.args if a.is_value]
    device_args = [a.name for a in values if not a.is_wrapped_scalar] + [
        a.name for a in node.args if not a.is_value and a.cpp_type == "::std::optional<at::Device>"
    ]
    return TracingKernel(
        declaration=native_declaration(k.f, f"{class_name}::{k.kernel}", symint=k.symint),
        kernel=k.kernel,
        node_class=node.class_name,
        num_outputs=node.num_outputs,
        schema=str(k.f.func),
        args=tuple(_kernel_arg(a, k.symint) for a in node.args),
        device_args=tuple(device_args),
        meta_shapes=None if k.shape_source == "compute_shape" else _meta_shapes(k),
        in_place=k.f.kind in (SchemaKind.inplace, SchemaKind.out),
        # the model allows in-place results only with one output and a tensor to update
        destination=next((a.name for a in values if not a.is_wrapped_scalar), ""),
    )


def _kernel_arg(a: LazyArg, symint: bool) -> KernelArg:
    return KernelArg(a.name, _lazy_value(a), *_node_input(a, symint))


def _lazy_value(a: LazyArg) -> str:
    if not a.is_value:
        return ""
    if a.is_wrapped_scalar:
        return "optional_scalar" if a.is_optional else "scalar"
    if a.is_symint_value:
        return ""  # the node takes the SymInt's own IR value
    if a.is_tensor_list:
        return "tensor_list"
    return "optional_tensor" if a.is_optional else "tensor"


def _node_input(a: LazyArg, symint: bool) -> tuple[str, str]:
    """(KernelArg.node_input, KernelArg.vector_type)."""
    t = a.schema_type
    if a.is_value:
        if a.is_symint_value:
            return ("optional_symint" if a.is_optional else "symint"), ""
        if a.is_wrapped_scalar:
            return "scalar", ""
        if a.is_tensor_list:
            return "tensor_list", ""
        return ("optional_tensor" if a.is_optional else "tensor"), ""
    if isinstance(t, ListType) and str(t.elem) == "SymInt":
        # a SymInt-aware kernel receives c10::SymIntArrayRef, which does not convert to ints
        return ("symint_array", "") if symint else ("vector", "std::vector<int64_t>")
    if a.cpp_type.startswith("::std::vector<"):
        return "vector", a.cpp_type
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType):
        elem = a.cpp_type.removeprefix("::std::optional<::std::vector<").removesuffix(">>")
        return "optional_vector", elem
    return "as_is", ""


def _meta_shapes(k: LazyKernel) -> MetaShapes:
    func = k.f.func
    return MetaShapes(
        namespace="meta" if k.shape_source == "meta" else "compositeexplicitautogradnonfunctional",
        function=str(k.f.name.name) + ("_symint" if func.has_symint() and k.symint else ""),
        arguments=tuple(
            MetaArgument(a.name, a.type.is_tensor_like()) for a in func.arguments.flat_all
        ),
        num_returns=len(func.returns),
    )
