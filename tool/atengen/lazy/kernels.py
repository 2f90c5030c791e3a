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
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.api.cpp_types import TypeOptions, cpp_arguments
from atengen.api.declarations import native_declaration
from atengen.errors import AtengenError, Location
from atengen.lazy.ir_types import LazyArg
from atengen.lazy.model import LazyBackend, LazyKernel
from atengen.lazy.options import LazyOptions
from atengen.model.schema import SchemaKind
from atengen.model.schema_types import ListType, OptionalType


@dataclass(frozen=True)
class KernelBody:
    declaration: str  # `at::Tensor LazyNativeFunctions::abs(const at::Tensor & self)`
    statements: tuple[str, ...]
    needs_meta: bool  # uses the to_meta() helpers


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


def kernel_body(k: LazyKernel, class_name: str, opts: LazyOptions) -> KernelBody:
    node = k.node
    values = [a for a in node.args if a.is_value]
    device_args = [a.name for a in values if not a.is_wrapped_scalar] + [
        a.name for a in node.args if not a.is_value and a.cpp_type == "::std::optional<at::Device>"
    ]
    inputs = ", ".join(_ctor_input(a, k.symint) for a in node.args)
    shape_lines, needs_meta = _shapes(k)
    statements = [
        f"{opts.metrics_counter};",
        f"auto common_device = {opts.get_device_fn}({', '.join(device_args)});",
        "TORCH_INTERNAL_ASSERT(common_device);",
        *(s for a in values if (s := _lazy_tensor_decl(a, opts))),
        f"torch::lazy::NodePtr node = torch::lazy::ReuseNode<{node.class_name}>({inputs});",
        "if (!node) {",
        *(f"  {s}" for s in shape_lines),
        f"  TORCH_INTERNAL_ASSERT(shapes.size() == {node.num_outputs});",
        "  if (torch::lazy::symbolicShapeEnabled()) {",
        f"    std::vector<torch::jit::IValue> inputs = {{{', '.join(a.name for a in node.args)}}};",
        f'    const char* schema_str = "aten::{k.f.func}";',
        "    applySymbolicShapesOnLT(schema_str, inputs, shapes);",
        "  }",
        f"  node = torch::lazy::MakeNode<{node.class_name}>({inputs}, std::move(shapes));",
        "  torch::lazy::CacheNode(node);",
        "}",
        *_result(k, values, opts),
    ]
    decl = native_declaration(k.f, f"{class_name}::{k.kernel}", symint=k.symint)
    return KernelBody(decl, tuple(statements), needs_meta)


def _ctor_input(a: LazyArg, symint: bool) -> str:
    n, t = a.name, a.schema_type
    if a.is_value:
        if a.is_symint_value:
            if a.is_optional:
                return (
                    f"{n} ? std::make_optional(torch::lazy::GetSymIntValue(*{n})) : ::std::nullopt"
                )
            return f"torch::lazy::GetSymIntValue({n})"
        if a.is_wrapped_scalar:
            return f"node_{n}"
        if a.is_tensor_list:
            return f"lazy_{n}_tensorlist"
        if a.is_optional:
            return f"lazy_{n} ? std::make_optional(lazy_{n}->GetIrValue()) : ::std::nullopt"
        return f"lazy_{n}->GetIrValue()"
    if isinstance(t, ListType) and str(t.elem) == "SymInt":
        # a SymInt-aware kernel receives c10::SymIntArrayRef, which does not convert to ints
        if symint:
            return f"torch::lazy::GetSymIntArrayRefValue({n})"
        return f"std::vector<int64_t>({n}.begin(), {n}.end())"
    if a.cpp_type.startswith("::std::vector<"):
        return f"{a.cpp_type}({n}.begin(), {n}.end())"
    if isinstance(t, OptionalType) and isinstance(t.elem, ListType):
        elem = a.cpp_type.removeprefix("::std::optional<::std::vector<").removesuffix(">>")
        return f"torch::lazy::ToOptionalVector<{elem}>({n})"
    return n


def _lazy_tensor_decl(a: LazyArg, opts: LazyOptions) -> str:
    n = a.name
    if a.is_wrapped_scalar:
        scalar = "torch::lazy::LazyGraphExecutor::Get()->GetIrValueForScalarFromCodegen"
        if a.is_optional:
            return (
                f"auto node_{n} = {n} ? std::make_optional({scalar}(*{n}, *common_device)) "
                ": ::std::nullopt;"
            )
        return f"auto node_{n} = {scalar}({n}, *common_device);"
    if a.is_symint_value:
        return ""
    ns = opts.backend_namespace
    if a.is_tensor_list:
        return f"auto lazy_{n}_tensorlist = {ns}::GetTensorList({n});"
    if a.is_optional:
        return f"{opts.tensor_ptr} lazy_{n} = {ns}::TryGetLtcTensor({n}.value_or(at::Tensor()));"
    return f"{opts.tensor_ptr} lazy_{n} = {ns}::GetLtcTensorOrCreateForWrappedNumber({n}, *common_device);"


def _shapes(k: LazyKernel) -> tuple[list[str], bool]:
    func = k.f.func
    if k.shape_source == "compute_shape":
        args = ", ".join(a.name for a in k.node.args)
        return [f"auto shapes = torch::lazy::compute_shape_{k.kernel}({args});"], False
    lines = []
    call_args = []
    for a in func.arguments.flat_all:
        if a.type.is_tensor_like():
            lines.append(f"auto {a.name}_meta = to_meta({a.name});")
            call_args.append(f"{a.name}_meta")
        else:
            call_args.append(a.name)
    ns = "meta" if k.shape_source == "meta" else "compositeexplicitautogradnonfunctional"
    name = str(k.f.name.name) + ("_symint" if func.has_symint() and k.symint else "")
    lines.append(f"auto out_meta = at::{ns}::{name}({', '.join(call_args)});")
    n = len(func.returns)
    outs = ["out_meta"] if n == 1 else [f"std::get<{i}>(out_meta)" for i in range(n)]
    shapes = ", ".join(f"torch::lazy::Shape({o}.scalar_type(), {o}.sizes().vec())" for o in outs)
    lines.append(f"std::vector<torch::lazy::Shape> shapes{{{shapes}}};")
    return lines, True


def _result(k: LazyKernel, values: list[LazyArg], opts: LazyOptions) -> list[str]:
    tensors = [a.name for a in values if not a.is_wrapped_scalar]
    n = k.node.num_outputs
    if k.f.kind in (SchemaKind.inplace, SchemaKind.out):
        # the model allows these only with one output, and they have a tensor to update
        dest = tensors[0]
        return [
            f"lazy_{dest}->SetInPlaceIrValue(node);",
            f"auto& result = {dest};",
            "return result;",
        ]
    if n == 1:
        return [
            f"auto result = {opts.create_aten_from_tensor}(",
            f"    {opts.create_tensor}(std::move(node), *common_device));",
            "return result;",
        ]
    return [
        f"std::vector<{opts.tensor_ptr}> lazy_tensors;",
        f"for (int i = 0; i < {n}; i++) {{",
        f"  lazy_tensors.push_back({opts.create_tensor}({opts.lazy_value_class}(node, i), *common_device));",
        "}",
        f"auto result = {opts.tuple_aten_from_tensors}<{n}>(lazy_tensors);",
        "return result;",
    ]
