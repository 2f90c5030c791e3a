"""Function schemas: parse, print, classify and normalise.

The grammar is the one ``native_functions.yaml`` uses, e.g.
``add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)``.
Printing is canonical: ``str(parse_schema(s)) == s`` for every schema in the real
YAML, and parsing rejects strings that would not print back identically, so a
schema has exactly one spelling.

The parts live below this module, each re-exported here: types and alias annotations in
``schema_types``, operator names in ``schema_names``, arguments and returns in
``schema_arguments``.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass

from atengen.cached import cached_property
from atengen.errors import SchemaError
from atengen.model.frozen import frozen_instance
from atengen.model.schema_arguments import (
    Argument,
    Arguments,
    NotCanonical,
    Return,
    TensorOptionsArguments,
    parse_argument,
    parse_arguments,
    parse_return,
    parse_returns,
    plain_return,
    print_returns,
)
from atengen.model.schema_names import (
    BaseOperatorName,
    OperatorName,
    parse_base_name,
    parse_custom_operator_name,
    parse_operator_name,
)
from atengen.model.schema_types import (
    BASE_TYPE_NAMES,
    PRECOMPUTED_ONLY_TYPES,
    TENSOR,
    Annotation,
    BaseType,
    CustomClassType,
    ListType,
    OptionalType,
    Type,
    parse_annotation,
    parse_type,
)

# The parts' names, re-exported, and this module's own.
__all__ = [
    "Annotation",
    "Argument",
    "Arguments",
    "BASE_TYPE_NAMES",
    "BaseOperatorName",
    "BaseType",
    "CustomClassType",
    "FunctionSchema",
    "ListType",
    "NotCanonical",
    "OperatorName",
    "OptionalType",
    "PRECOMPUTED_ONLY_TYPES",
    "Return",
    "SchemaKind",
    "TENSOR",
    "TensorOptionsArguments",
    "Type",
    "check_schema",
    "parse_annotation",
    "parse_argument",
    "parse_arguments",
    "parse_base_name",
    "parse_operator_name",
    "parse_return",
    "parse_returns",
    "parse_schema",
    "parse_type",
    "plain_return",
    "print_returns",
    "view_base_name",
]

# ---------------------------------------------------------------------------
# Function schemas


class SchemaKind(enum.Enum):
    functional = "functional"
    inplace = "inplace"
    out = "out"
    mutable = "mutable"
    scratch = "scratch"

    # Kinds key the grouping's buckets, ~17,000 lookups for torch's YAML. Enum's own __hash__
    # is Python code (it hashes the name); members are singletons compared by identity, so
    # the identity hash is the builtin one, and as good. (Nothing iterates a set of kinds.)
    __hash__ = object.__hash__


_TEXT_WITHOUT_DEFAULT = operator.attrgetter("text_without_annotation_or_default")
_TEXT_WITH_DEFAULT = operator.attrgetter("text_without_annotation")


@dataclass(frozen=True)
class FunctionSchema:
    """A parsed ``name(arguments) -> returns`` schema; prints as its canonical text."""

    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...]

    @classmethod
    def with_text(
        cls, name: OperatorName, arguments: Arguments, returns: tuple[Return, ...], text: str
    ) -> FunctionSchema:
        """The schema whose canonical spelling the caller knows (it parsed it): built without
        printing, and without the frozen __init__'s one object.__setattr__ per field."""
        attributes = {"name": name, "arguments": arguments, "returns": returns, "text": text}
        return frozen_instance(cls, attributes)

    def __str__(self) -> str:
        return self.text

    @cached_property
    def text(self) -> str:
        """The canonical spelling, printed once and cached."""
        return f"{self.name}({self.arguments}) -> {print_returns(self.returns)}"

    @cached_property
    def grouping_key(self) -> str:
        """Variants of one op share this key: the default-free signature().

        Defaults are stripped: two overloads cannot differ only in defaults, and
        hand-written variants sometimes disagree on them (``bernoulli.p`` spells
        ``float p`` while ``bernoulli_.float`` spells ``float p=0.5``). A string
        because it is hashed many times and strings cache their hash.
        """
        return self._signature_text(strip_default=True, strip_view_copy_name=False)

    @cached_property
    def view_grouping_key(self) -> str:
        """Views, their inplace forms and their `_copy` ops share this key."""
        return self._signature_text(strip_default=False, strip_view_copy_name=True)

    def _signature_text(self, *, strip_default: bool, strip_view_copy_name: bool) -> str:
        """``self.signature(...).text``, printed straight from this schema's parts.

        Every function needs its grouping keys, and building a whole signature
        schema for each only to print it was a fifth of the model's time.
        """
        name = self.name.name
        base = view_base_name(name.base) if strip_view_copy_name else name.base
        if name.dunder_method:
            base = f"__{base}__"
        args = self.arguments
        kwargs = args.pre_tensor_options_kwarg_only + args.post_tensor_options_kwarg_only
        text_of = _TEXT_WITHOUT_DEFAULT if strip_default else _TEXT_WITH_DEFAULT
        parts = [text_of(a) for a in args.flat_positional]
        if kwargs:
            parts.append("*")
            parts.extend(text_of(a) for a in kwargs)
        returns = [str(r.type) for r in self.returns]
        return_annotations = {r.annotation for r in self.returns}
        self_part = (args.self_arg,) if args.self_arg is not None else ()
        returns.extend(
            str(a.type)
            for a in self_part + args.out + args.post_self_positional
            if a.is_write and a.annotation not in return_annotations
        )
        printed = returns[0] if len(returns) == 1 else f"({', '.join(returns)})"
        return f"{base}({', '.join(parts)}) -> {printed}"

    @cached_property
    def kind(self) -> SchemaKind:
        # Precedence: inplace > scratch > out > mutable > functional. Inplace and
        # out ops may also mutate positional args and still keep their kind.
        if self.name.name.inplace:
            return SchemaKind.inplace
        out = self.arguments.out
        if out:
            if any(a.name.startswith("_scratch_") for a in out):
                return SchemaKind.scratch
            return SchemaKind.out
        for a in self.arguments.post_self_positional:
            if a.is_write:
                return SchemaKind.mutable
        return SchemaKind.functional

    def is_out_fn(self) -> bool:
        return bool(self.arguments.out)

    def has_symint(self) -> bool:
        return any(a.type.is_symint_like() for a in self.arguments.flat_all)

    def is_tensor_returning(self) -> bool:
        return any(r.type.is_tensor_like() for r in self.returns)

    def signature(
        self,
        *,
        strip_default: bool = False,
        strip_view_copy_name: bool = False,
        keep_return_names: bool = False,
    ) -> FunctionSchema:
        """The schema shared by the functional/inplace/out/mutable variants of one op.

        Overload name, inplace `_`, out args, annotations and TensorOptions are
        dropped; mutated inputs that are not returned become extra returns (self,
        then outs, then post-self positionals), named ``<arg>_out`` when
        ``keep_return_names`` is set. ``strip_view_copy_name`` maps ``x_copy`` to
        ``x`` and ``x_scatter`` to ``x_inverse`` so views pair with their copies.
        """
        base = self.name.name.base
        if strip_view_copy_name:
            base = view_base_name(base)
        self_part = (self.arguments.self_arg,) if self.arguments.self_arg is not None else ()
        return_annotations = {r.annotation for r in self.returns}
        mutated_inputs = tuple(
            Return(f"{a.name}_out", a.type, None) if keep_return_names else plain_return(a.type)
            for a in self_part + self.arguments.out + self.arguments.post_self_positional
            if a.is_write and a.annotation not in return_annotations
        )
        kept_returns = tuple(
            Return(r.name, r.type, None) if keep_return_names else plain_return(r.type)
            for r in self.returns
        )
        return FunctionSchema(
            OperatorName(BaseOperatorName(base, False, self.name.name.dunder_method), ""),
            self.arguments.stripped(strip_default=strip_default),
            kept_returns + mutated_inputs,
        )


def view_base_name(base: str) -> str:
    """`x_copy` -> `x` and `x_scatter` -> `x_inverse`: the view a copy op belongs to.

    Like torch, this replaces every `_copy` in the name, not only the suffix.
    """
    if base.endswith("_copy"):
        return base.replace("_copy", "")
    if base.endswith("_scatter"):
        return base.replace("scatter", "inverse")
    return base


def parse_schema(s: str, *, custom: bool = False) -> FunctionSchema:
    """Parse and check the structural restrictions every native function obeys.

    ``custom``: a schema of a namespace other than aten, already respelled by
    ``torch_schema_text.read_torch_schema``. It keeps only the rules C++ needs (see
    ``check_custom_schema``): aten's conventions (one spelling, out= and in-place shapes, the
    reserved ``_out`` suffix) serve torchgen's products for aten, not what torch registers.
    """
    if custom:
        return _parse_custom_schema(s)
    if " -> " not in s:
        if "->" in s:  # torch takes `f(Tensor x)->Tensor`; the YAML has one spelling
            raise SchemaError(
                "schema is not in canonical form: write ' -> ', with one space on each side, "
                "between the arguments and the returns"
            )
        raise SchemaError("schema has no return type; expected '<name>(<args>) -> <returns>'")
    # The argument list is the first top-level parenthesised group; annotations
    # like `Tensor(a -> *)` contain ' -> ', so find the closing paren by depth.
    open_ix = s.find("(")
    if open_ix <= 0:
        raise SchemaError("schema has no argument list")
    # Visit only the ')'s (a walk over every character costs more than the rest
    # of the parse): the list closes at the first one with as many '(' before it. The '('s
    # are counted between one ')' and the next, so that deep nesting stays linear.
    close_ix = s.find(")", open_ix)
    opens, closes = s.count("(", open_ix, max(close_ix, open_ix)), 1
    while close_ix >= 0 and opens != closes:
        next_ix = s.find(")", close_ix + 1)
        opens += s.count("(", close_ix + 1, next_ix) if next_ix >= 0 else 0
        closes += 1
        close_ix = next_ix
    if close_ix < 0 or not s.startswith(" -> ", close_ix + 1):
        raise SchemaError("schema has unbalanced parentheses or no ' -> ' after the arguments")
    name_s, arguments_s, returns_s = s[:open_ix], s[open_ix + 1 : close_ix], s[close_ix + 5 :]
    name = parse_operator_name(name_s)
    # The schema prints as s exactly when each part prints as its own slice: the name does
    # (parse_operator_name), and the argument and return lists are checked as they are
    # parsed, once per distinct string, which is cheaper than printing the schema.
    canonical = True
    try:
        arguments = parse_arguments(arguments_s)
    except NotCanonical as e:
        assert isinstance(e.parsed, Arguments)  # what parse_arguments parsed
        arguments, canonical = e.parsed, False
    try:
        returns = parse_returns(returns_s)
    except NotCanonical as e:
        assert isinstance(e.parsed, tuple)  # what parse_returns parsed
        returns, canonical = e.parsed, False
    if not canonical:
        raise SchemaError(
            f"schema is not in canonical form; expected '{FunctionSchema(name, arguments, returns)}'"
        )
    r = FunctionSchema.with_text(name, arguments, returns, s)
    # The rules look only at these (the kind follows from the arguments and
    # inplace); overloads often share them, so each passing combination is checked once.
    rules_key = (arguments_s, returns_s, r.name.name.inplace, "functional" in r.name.overload_name)
    if rules_key not in _PASSED_SCHEMA_RULES:
        check_schema(r)
        _PASSED_SCHEMA_RULES.add(rules_key)
    return r


_PASSED_SCHEMA_RULES: set[tuple[str, str, bool, bool]] = set()


def _parse_custom_schema(s: str) -> FunctionSchema:
    open_ix = s.find("(")
    close_ix = s.rfind(") -> ")
    if open_ix <= 0 or close_ix < open_ix:
        raise SchemaError("schema has no argument list or no ' -> ' after it")
    name_s, arguments_s, returns_s = s[:open_ix], s[open_ix + 1 : close_ix], s[close_ix + 5 :]
    try:
        arguments = parse_arguments(arguments_s)
    except NotCanonical as e:  # (keyword-only arguments before positionals, say)
        assert isinstance(e.parsed, Arguments)
        arguments = e.parsed
    try:
        returns = parse_returns(returns_s)
    except NotCanonical as e:
        assert isinstance(e.parsed, tuple)
        returns = e.parsed
    name = parse_custom_operator_name(name_s, inplace=_is_inplace_shaped(arguments, returns))
    r = FunctionSchema(name, arguments, returns)
    check_custom_schema(r)
    return r


def _is_inplace_shaped(args: Arguments, rets: tuple[Return, ...]) -> bool:
    """Whether a name with a trailing ``_`` is an in-place op as aten means it: it writes to
    self and returns self (or nothing, for a non-Tensor self), with no out arguments. Other
    ops keep the ``_`` as part of their name (vLLM's ``apply_repetition_penalties_`` writes
    to ``logits``)."""
    self_arg = args.self_arg
    if self_arg is None or not self_arg.is_write or args.out:
        return False
    if self_arg.type == TENSOR:
        return len(rets) == 1 and rets[0].annotation == self_arg.annotation
    return not rets


def check_custom_schema(f: FunctionSchema) -> None:
    """The rules a custom namespace's schema keeps: those without which the generated C++
    would not compile or would not match what torch registers."""
    _check_types_carried(f)


def check_schema(f: FunctionSchema) -> None:
    """The schema restrictions of the op YAML format; each failure names the rule broken."""
    args, rets = f.arguments, f.returns
    for a, r in zip(args.out, rets, strict=False):
        if a.annotation != r.annotation:
            raise SchemaError(
                f"out argument '{a.name}' must alias the return in the same position; "
                "the i-th out argument corresponds to the i-th return"
            )
    # (Sets of annotations are built only where there is something written: most schemas
    # write nothing, and an Annotation hashes in Python.)
    written_positionals = [a for a in args.post_self_positional if a.is_write]
    if written_positionals:
        return_annotations = {r.annotation for r in rets}
        for a in written_positionals:
            if a.annotation in return_annotations:
                # torchgen knows the argument an in-place op mutates and returns by its name
                # alone, so the fix of the usual mistake (an in-place op whose first argument
                # has its own name) is a rename, which the message says.
                first = args.self_arg is None and a is args.post_self_positional[0]
                fix = (
                    f"rename it 'self', as torchgen requires of the argument an op mutates and "
                    f"returns: {f.name}({a.type}({a.annotation}) self, ...)"
                    if first
                    else "return only out arguments or self (keyword-only out arguments after `*`)"
                )
                raise SchemaError(
                    f"mutable positional argument '{a.name}' must not be returned; {fix}"
                )
    mutable_returns = [r for r in rets if r.is_write]
    if mutable_returns:
        if len(mutable_returns) != len(rets):
            raise SchemaError(
                "returns must be all mutable or all immutable, not a mix like (Tensor(a!), Tensor)"
            )
        out_and_self = {a.annotation for a in args.out}
        if args.self_arg is not None:
            out_and_self.add(args.self_arg.annotation)
        for r in mutable_returns:
            if r.annotation not in out_and_self:
                raise SchemaError(
                    f"mutable return '{r}' must alias an out argument or self; "
                    "did you forget to make an out argument keyword-only?"
                )
    if args.out:
        if any(a.type != TENSOR for a in args.out):
            if rets:
                raise SchemaError(
                    "out= ops whose out arguments are not plain Tensors (e.g. Tensor(a!)[]) "
                    "must return ()"
                )
        elif len([a for a in args.out if not a.name.startswith("_scratch_")]) != len(rets):
            raise SchemaError("an out= op must return as many values as it has out arguments")
    if f.name.name.inplace:
        self_arg = args.self_arg
        if self_arg is None or not self_arg.is_write:
            raise SchemaError(
                f"inplace op '{f.name}' needs a mutable self argument, e.g. Tensor(a!)"
            )
        if self_arg.type == TENSOR:
            if len(rets) != 1 or rets[0].annotation != self_arg.annotation:
                raise SchemaError(f"inplace op '{f.name}' must return self, e.g. -> Tensor(a!)")
        elif rets:
            raise SchemaError(f"inplace op '{f.name}' with a non-Tensor self must return ()")
        if args.out:
            raise SchemaError(f"inplace op '{f.name}' cannot also have out arguments")
    if args.tensor_options is not None and f.kind is not SchemaKind.functional:
        raise SchemaError(
            "TensorOptions arguments (dtype, layout, device, pin_memory) are only allowed "
            f"on functional ops, but this op is {f.kind.value}"
        )
    if "functional" in f.name.overload_name and f.kind is not SchemaKind.functional:
        raise SchemaError(
            f"overload name '{f.name.overload_name}' contains 'functional', "
            f"which is reserved for functional ops, but this op is {f.kind.value}"
        )
    _check_types_carried(f)


def _check_types_carried(f: FunctionSchema) -> None:
    """Every type is one torch's parser knows and C++ can carry."""
    x = f.arguments.precomputed_only_user or next(
        (r for r in f.returns if r.precomputed_only), None
    )
    if x is not None:
        raise SchemaError(
            f"type '{x.type}' is for precomputed declarations only; torch's schema parser "
            "does not know it"
        )
    for r in f.returns:
        if not r.returnable:
            raise SchemaError(
                f"return type '{r.type}' has no C++ return type; return Tensor, Tensor?, "
                "Scalar, a value type (int, float, bool, ..., or their optionals) or an "
                "unsized list of those"
            )
