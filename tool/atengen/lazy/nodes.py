"""The C++ of one IR node class, as plain data for ``templates/lazy_ir.h.j2``.

A node stores its operands in the base class (``OpList``) and its attributes
as members; its hash covers the attributes (the base class hashes operands).
With TorchScript lowerings, ``CanBeReused`` compares both so that tracing the
same op twice reuses the node, and ``Lower`` emits the aten builtin call.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.lazy.ir_types import LazyArg
from atengen.lazy.model import IrNode
from atengen.lazy.options import LazyOptions

_OPTIONAL_STRING = "::std::optional<c10::string_view>"


@dataclass(frozen=True)
class NodeClass:
    name: str
    base: str
    opkind: str
    ctor_params: str  # the constructor's parameters
    base_ctor_args: tuple[str, ...]
    initializers: tuple[str, ...]  # members
    has_flags: tuple[str, ...]  # optional operands: remember whether they were given
    to_string: tuple[str, ...]  # statements
    create_fn: str
    can_be_reused: str
    lower: str
    members: tuple[str, ...]


def node_class(node: IrNode, opts: LazyOptions) -> NodeClass:
    params = [f"const {a.cpp_type}& {a.name}" for a in node.args]
    reuse_params = ", ".join(params)
    if node.properties.ShapePrecompute:
        params.append("std::vector<torch::lazy::Shape>&& shapes")
    attrs = node.attributes
    return NodeClass(
        name=node.class_name,
        base=opts.node_base,
        opkind=node.opkind,
        ctor_params=", ".join(params),
        base_ctor_args=_base_ctor_args(node),
        initializers=tuple(_initializer(a) for a in attrs),
        has_flags=tuple(a.name for a in node.values if a.is_optional),
        to_string=tuple(_to_string(a) for a in attrs),
        create_fn=_create_fn(node, reuse_params) if opts.ts_lowerings else "",
        can_be_reused=_can_be_reused(node, reuse_params, opts.ts_lowerings),
        lower=_lower(node) if opts.ts_lowerings else "",
        members=tuple(f"{a.member_type} {a.name};" for a in attrs),
    )


def _base_ctor_args(node: IrNode) -> tuple[str, ...]:
    operands = ", ".join(
        f"{a.name}.value_or(kNullValue)" if a.is_optional else a.name for a in node.values
    )
    attrs = [a.name for a in node.attributes]
    p = node.properties
    if p.ShapePrecompute:
        shape = ["std::move(shapes)"]
    elif p.ShapeCompute:
        args = ", ".join([a.name for a in node.values] + attrs)
        shape = [f"compute_shape_{node.op_name}({args})"]
    elif p.ShapeCache:
        args = ", ".join([f"operand({i})" for i in range(len(node.values))] + attrs)
        shape = [f"[&](){{ return compute_shape_{node.op_name}({args})[0]; }}"]
    else:
        shape = []
    return (
        f"{node.class_name}::ClassOpKind()",
        f"OpList{{{operands}}}",
        *shape,
        f"/* num_outputs */ {node.num_outputs}",
        f"torch::lazy::MHash({', '.join(attrs)})",
    )


def _initializer(a: LazyArg) -> str:
    if a.cpp_type == _OPTIONAL_STRING:  # own the characters: the view dies with the call
        return f"{a.name}({a.name}.has_value() ? ::std::make_optional(std::string(*{a.name})) : ::std::nullopt)"
    return f"{a.name}({a.name})"


def _to_string(a: LazyArg) -> str:
    if not a.is_optional:
        return f'ss << ", {a.name}=" << {a.name};'
    value = '"torch.Generator()"' if a.is_generator else f"{a.name}.value()"
    return (
        f'if ({a.name}.has_value()) {{ ss << ", {a.name}=" << {value}; }} '
        f'else {{ ss << ", {a.name}=null"; }}'
    )


def _create_fn(node: IrNode, params: str) -> str:
    signature = f"static torch::lazy::NodePtr Create({params})"
    if node.properties.CreateFnDeclOnly:
        return f"{signature};"
    if not node.properties.CreateFn:
        return ""
    names = ", ".join(a.name for a in node.args)
    return f"{signature} {{ return torch::lazy::ReuseOrMakeNode<{node.class_name}>({names}); }}"


def _can_be_reused(node: IrNode, params: str, ts: bool) -> str:
    signature = f"bool CanBeReused({params}) const"
    if not ts:
        return f"{signature} {{ return false; }}"
    if node.properties.CanBeReusedDeclOnly:
        return f"{signature};"
    if not node.properties.CanBeReused:
        return ""
    checks = [
        f"nullable_operand(i++) == {a.name}.value_or(kNullValue)"
        if a.is_optional
        else f"operand(i++) == {a.name}"
        for a in _by_kind(node, values=True)
    ] + [
        f"((!this->{a.name} && !{a.name}) || (this->{a.name} && {a.name} && "
        f"*(this->{a.name}) == *{a.name}))"
        if a.is_optional
        else f"this->{a.name} == {a.name}"
        for a in _by_kind(node, values=False)
    ]
    body = " &&\n        ".join(checks) or "true"
    return f"{signature} {{\n    size_t i = 0;\n    return ({body});\n  }}"


def _by_kind(node: IrNode, *, values: bool) -> list[LazyArg]:
    """Positional ones, then keyword ones (the order operands were stored in)."""
    chosen = [a for a in node.args if a.is_value == values]
    return [a for a in chosen if not a.keyword] + [a for a in chosen if a.keyword]


def _lower(node: IrNode) -> str:
    signature = (
        "torch::lazy::TSOpVector Lower(std::shared_ptr<torch::jit::GraphFunction> function,\n"
        "                               torch::lazy::TSLoweringContext* loctx) const override"
    )
    if node.properties.LowerDeclOnly:
        return f"{signature};"
    if not node.properties.Lower:
        return ""

    def value(a: LazyArg) -> str:
        get = "loctx->GetOutputOp(operand(i++))"
        return f"has_{a.name} ? {get} : nullptr" if a.is_optional else get

    positional = [
        value(a) if a.is_value else f'"{a.name}", {a.name}' for a in node.args if not a.keyword
    ]
    keyword = [f'"{a.name}", {value(a)}' for a in node.args if a.keyword and a.is_value] + [
        f'"{a.name}", {a.name}' for a in node.args if a.keyword and not a.is_value
    ]
    lines = [
        "std::vector<torch::jit::NamedValue> arguments;",
        "std::vector<torch::jit::NamedValue> kwarguments;",
        f"arguments.reserve({len(positional)});",
        f"kwarguments.reserve({len(keyword)});",
        "size_t i = 0;",
        *(f"arguments.emplace_back({x});" for x in positional),
        *(f"kwarguments.emplace_back({x});" for x in keyword),
        f"torch::lazy::TSOpVector {node.aten_name}_out = "
        "torch::lazy::LowerTSBuiltin(function, op().op, arguments, kwarguments);",
        f"TORCH_CHECK_EQ({node.aten_name}_out.size(), {node.num_outputs});",
        f"return {node.aten_name}_out;",
    ]
    body = "\n    ".join(lines)
    return f"{signature} {{\n    {body}\n  }}"
