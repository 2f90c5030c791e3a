"""One IR node class, as the view-model ``templates/lazy_node.j2`` spells in C++.

A node stores its operands in the base class (``OpList``) and its attributes
as members; its hash covers the attributes (the base class hashes operands).
With TorchScript lowerings, ``CanBeReused`` compares both so that tracing the
same op twice reuses the node, and ``Lower`` emits the aten builtin call.
Here: which arguments, in which order, and which methods a node class gets
(defined, only declared, or not at all); the template writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.lazy.ir_types import LazyArg
from atengen.lazy.model import IrNode
from atengen.lazy.options import LazyOptions

_OPTIONAL_STRING = "::std::optional<c10::string_view>"

# How a node gets a method: written out, declared only (the backend defines it), or not at all.
DEFINITION, DECLARATION, NONE = "definition", "declaration", ""


@dataclass(frozen=True)
class NodeArg:
    """An argument of the node's constructor: an operand (value) or an attribute (member)."""

    name: str
    cpp_type: str  # as the constructor takes it (by const reference)
    member_type: str  # an attribute's member: strings are owned
    is_value: bool
    is_optional: bool
    is_generator: bool  # ToString prints a placeholder: a Generator has no operator<<
    owns_string: bool  # an optional string view, copied into the member


@dataclass(frozen=True)
class NodeClass:
    name: str
    base: str
    opkind: str  # C++ expression of the OpKind
    op_name: str  # names the shape function: compute_shape_<op_name>
    aten_name: str  # the TorchScript builtin Lower() calls
    num_outputs: int
    args: tuple[NodeArg, ...]  # schema order: the constructor's parameters
    # The base class's shapes: "precompute" (a constructor parameter), "compute" (computed in
    # the constructor) or "cache" (computed on first use).
    shapes: str
    create_fn: str  # DEFINITION, DECLARATION or NONE
    can_be_reused: str  # the same, or "never" (no TorchScript lowerings: never reused)
    lower: str  # DEFINITION, DECLARATION or NONE
    compared: tuple[NodeArg, ...]  # what CanBeReused compares, in operand-storing order
    lowered_positional: tuple[NodeArg, ...]  # Lower()'s arguments
    lowered_keyword: tuple[NodeArg, ...]  # Lower()'s kwarguments: operands, then attributes

    @property
    def values(self) -> tuple[NodeArg, ...]:
        return tuple(a for a in self.args if a.is_value)

    @property
    def attributes(self) -> tuple[NodeArg, ...]:
        return tuple(a for a in self.args if not a.is_value)

    @property
    def optional_values(self) -> tuple[NodeArg, ...]:
        """Optional operands: the node remembers whether each was given (`has_<name>`)."""
        return tuple(a for a in self.values if a.is_optional)


def node_class(node: IrNode, opts: LazyOptions) -> NodeClass:
    p = node.properties
    ts = opts.ts_lowerings
    args = {a.name: _node_arg(a) for a in node.args}
    positional = [args[a.name] for a in node.args if not a.keyword]
    keyword = [args[a.name] for a in node.args if a.keyword and a.is_value] + [
        args[a.name] for a in node.args if a.keyword and not a.is_value
    ]
    compared = [args[a.name] for a in _by_kind(node, values=True) + _by_kind(node, values=False)]
    return NodeClass(
        name=node.class_name,
        base=opts.node_base,
        opkind=node.opkind,
        op_name=node.op_name,
        aten_name=node.aten_name,
        num_outputs=node.num_outputs,
        args=tuple(args.values()),
        shapes=_shapes(node),
        # Create(), CanBeReused() and Lower() belong to TorchScript lowerings.
        create_fn=_method(p.CreateFn, p.CreateFnDeclOnly) if ts else NONE,
        can_be_reused=_method(p.CanBeReused, p.CanBeReusedDeclOnly) if ts else "never",
        lower=_method(p.Lower, p.LowerDeclOnly) if ts else NONE,
        compared=tuple(compared),
        lowered_positional=tuple(positional),
        lowered_keyword=tuple(keyword),
    )


def _shapes(node: IrNode) -> str:
    p = node.properties
    for kind, chosen in (
        ("precompute", p.ShapePrecompute),
        ("compute", p.ShapeCompute),
        ("cache", p.ShapeCache),
    ):
        if chosen:
            return kind
    return ""


def _node_arg(a: LazyArg) -> NodeArg:
    return NodeArg(
        name=a.name,
        cpp_type=a.cpp_type,
        member_type=a.member_type,
        is_value=a.is_value,
        is_optional=a.is_optional,
        is_generator=a.is_generator,
        owns_string=a.cpp_type == _OPTIONAL_STRING,
    )


def _method(defined: bool, declared_only: bool) -> str:
    return DECLARATION if declared_only else DEFINITION if defined else NONE


def _by_kind(node: IrNode, *, values: bool) -> list[LazyArg]:
    """Positional ones, then keyword ones (the order operands were stored in)."""
    chosen = [a for a in node.args if a.is_value == values]
    return [a for a in chosen if not a.keyword] + [a for a in chosen if a.keyword]
