"""A schema's arguments and returns: parse, print and classify ``Tensor(a!) self``,
``int dim=0``, ``(Tensor values, Tensor indices)``.

Each list is checked to print back as it was spelled (NotCanonical otherwise), so that the
schema that holds it has exactly one spelling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atengen.cached import cached_property, interned
from atengen.errors import SchemaError
from atengen.model.schema_defaults import check_default
from atengen.model.schema_names import IDENT_RE, check_not_keyword
from atengen.model.schema_types import (
    PRECOMPUTED_ONLY_TYPES,
    TENSOR,
    Annotation,
    BaseType,
    ListType,
    OptionalType,
    Type,
    parse_annotation,
    parse_type,
)


class NotCanonical(SchemaError):  # noqa: N818 - a SchemaError, like its siblings
    """Text that parses, but is not spelled as it prints: ``parsed`` is what it parses to (for
    the message, which shows the canonical spelling)."""

    def __init__(self, parsed: Arguments | tuple[Return, ...]):
        super().__init__("not in canonical form")
        self.parsed = parsed


# Argument and Return cache their printed text (no slots, so cached_property
# works): the model prints every schema and two normalised signatures of it.
@dataclass(frozen=True)
class Argument:
    """One argument of a schema: ``Tensor(a!) self``, ``int dim=0``."""

    name: str
    type: Type
    default: str | None
    annotation: Annotation | None

    @cached_property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    @cached_property
    def precomputed_only(self) -> bool:
        return _precomputed_only(self.type)

    def __str__(self) -> str:
        return self.text

    @cached_property
    def text(self) -> str:
        mb_default = f"={self.default}" if self.default is not None else ""
        return f"{_type_with_annotation(self.type, self.annotation)} {self.name}{mb_default}"

    @cached_property
    def text_without_annotation_or_default(self) -> str:
        """``self.stripped(strip_default=True).text``: how a grouping key spells it."""
        return f"{self.type} {self.name}"

    @cached_property
    def text_without_annotation(self) -> str:
        """``self.stripped(strip_default=False).text``: how a view grouping key spells it."""
        return self._with_default.text

    def stripped(self, *, strip_default: bool) -> Argument:
        """Without annotation (and default): the form signature() uses."""
        return self._without_default if strip_default else self._with_default

    @cached_property
    def _with_default(self) -> Argument:
        return (
            self if self.annotation is None else Argument(self.name, self.type, self.default, None)
        )

    @cached_property
    def _without_default(self) -> Argument:
        if self.annotation is None and self.default is None:
            return self
        return Argument(self.name, self.type, None, None)


@dataclass(frozen=True)
class Return:
    """One return of a schema: its type, alias annotation and (rarely) name."""

    name: str | None
    type: Type
    annotation: Annotation | None

    @cached_property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    @cached_property
    def precomputed_only(self) -> bool:
        return _precomputed_only(self.type)

    @cached_property
    def returnable(self) -> bool:
        """Whether a C++ kernel can return it (what the emitters' return types cover)."""
        return _returnable(self.type, self.is_write)

    def __str__(self) -> str:
        return self.text

    @cached_property
    def text(self) -> str:
        t = _type_with_annotation(self.type, self.annotation)
        return t if self.name is None else f"{t} {self.name}"


def _precomputed_only(t: Type) -> bool:
    """A type of precomputed declarations only (DimVector), or a list or optional of it."""
    return str(t).rstrip("?[]0123456789") in PRECOMPUTED_ONLY_TYPES


@interned
def plain_return(t: Type) -> Return:
    return Return(None, t, None)


def _type_with_annotation(t: Type, annotation: Annotation | None) -> str:
    s = str(t)
    if annotation is None:
        return s
    # Only Tensor, Tensor?, Tensor[] (and Tensor[]?) carry annotations: `Tensor(a!)?`.
    return f"Tensor({annotation}){s[len('Tensor') :]}"


# `Tensor(a!)[]?` only outside aten, from torch's `Tensor[](a!)?` (torch_schema_text).
_ANNOTATED_TENSOR_RE = re.compile(r"Tensor\((.+)\)(\?|\[\]\??)?")


def _split_type_and_rest(s: str) -> tuple[Type, Annotation | None, str | None]:
    """``Tensor(a -> *)[] self=x`` -> (type, annotation, ``self=x``).

    The type ends at the first space outside parentheses (annotations such as
    ``a -> *`` contain spaces).
    """
    cut = s.find(" ")
    if "(" in s[:cut] or ")" in s[:cut]:  # an annotation: walk the parentheses
        depth = 0
        cut = -1
        for i, c in enumerate(s):
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == " " and depth == 0:
                cut = i
                break
    type_s, rest = (s, None) if cut < 0 else (s[:cut], s[cut + 1 :])
    if not type_s or rest == "" or (rest and rest[0] == " "):
        raise SchemaError(f"malformed argument '{s}': stray or missing space")
    if "(" in type_s:
        m = _ANNOTATED_TENSOR_RE.fullmatch(type_s)
        if m is None:
            raise SchemaError(f"unrecognized alias analysis form '{type_s}'")
        return parse_type("Tensor" + (m.group(2) or "")), parse_annotation(m.group(1)), rest
    return parse_type(type_s), None, rest


@interned  # results are immutable, and most argument strings repeat
def parse_argument(s: str) -> Argument:
    t, annotation, rest = _split_type_and_rest(s)
    if rest is None:
        raise SchemaError(f"argument '{s}' needs a type and a name")
    name, eq, default = rest.partition("=")
    if not IDENT_RE.fullmatch(name):
        raise SchemaError(f"illegal argument name in '{s}'")
    check_not_keyword(name, "an argument", s)
    if eq and not default:
        raise SchemaError(f"empty default value in argument '{s}'")
    if eq:
        try:
            check_default(t, default)
        except SchemaError as e:
            raise SchemaError(f"argument '{name}': {e}") from None
    return Argument(name, t, default if eq else None, annotation)


@interned
def parse_return(s: str) -> Return:
    t, annotation, name = _split_type_and_rest(s)
    if name is not None and not IDENT_RE.fullmatch(name):
        raise SchemaError(f"illegal return name in '{s}'")
    if name is not None:
        check_not_keyword(name, "a return", s)
    return Return(name, t, annotation)


@dataclass(frozen=True, slots=True)
class TensorOptionsArguments:
    """The four kwargs `dtype, layout, device, pin_memory` of factory functions."""

    dtype: Argument
    layout: Argument
    device: Argument
    pin_memory: Argument

    def all(self) -> tuple[Argument, ...]:
        return (self.dtype, self.layout, self.device, self.pin_memory)


_TENSOR_OPTIONS_PATTERN = (
    ("dtype", BaseType("ScalarType")),
    ("layout", BaseType("Layout")),
    ("device", BaseType("Device")),
    ("pin_memory", BaseType("bool")),
)


def _looks_like_tensor_option(a: Argument, name: str, t: Type) -> bool:
    return a.name == name and (a.type == t or a.type == OptionalType(t))


# No slots: the flat views are cached in the instance (interned, so one per argument list).
@dataclass(frozen=True)
class Arguments:
    """A schema's arguments, split the way the C++ signatures use them: positionals around
    ``self``, keyword-only ones around the TensorOptions four, then the out= arguments."""

    pre_self_positional: tuple[Argument, ...]
    self_arg: Argument | None
    post_self_positional: tuple[Argument, ...]
    pre_tensor_options_kwarg_only: tuple[Argument, ...]
    tensor_options: TensorOptionsArguments | None
    post_tensor_options_kwarg_only: tuple[Argument, ...]
    out: tuple[Argument, ...]

    @cached_property
    def flat_positional(self) -> tuple[Argument, ...]:
        self_part = (self.self_arg,) if self.self_arg is not None else ()
        return self.pre_self_positional + self_part + self.post_self_positional

    @cached_property
    def flat_kwarg_only(self) -> tuple[Argument, ...]:
        options = self.tensor_options.all() if self.tensor_options is not None else ()
        return self.pre_tensor_options_kwarg_only + options + self.post_tensor_options_kwarg_only

    @cached_property
    def flat_non_out(self) -> tuple[Argument, ...]:
        return self.flat_positional + self.flat_kwarg_only

    @cached_property
    def flat_all(self) -> tuple[Argument, ...]:
        return self.flat_positional + self.flat_kwarg_only + self.out

    @cached_property
    def precomputed_only_user(self) -> Argument | None:
        """The first argument whose type only precomputed declarations may use."""
        for a in self.flat_all:
            if a.precomputed_only:
                return a
        return None

    def __str__(self) -> str:
        parts = [a.text for a in self.flat_positional]
        kwargs = self.flat_kwarg_only
        if kwargs or self.out:
            parts.append("*")
            parts.extend([a.text for a in kwargs])
            parts.extend([a.text for a in self.out])
        return ", ".join(parts)

    def stripped(self, *, strip_default: bool = False) -> Arguments:
        """The overload-independent part: no annotations, no TensorOptions, no outs."""

        def strip(a: Argument) -> Argument:
            return a.stripped(strip_default=strip_default)

        return Arguments(
            pre_self_positional=tuple(map(strip, self.pre_self_positional)),
            self_arg=strip(self.self_arg) if self.self_arg is not None else None,
            post_self_positional=tuple(map(strip, self.post_self_positional)),
            # With TensorOptions gone, later kwargs simply follow the earlier ones.
            pre_tensor_options_kwarg_only=tuple(
                map(strip, self.pre_tensor_options_kwarg_only + self.post_tensor_options_kwarg_only)
            ),
            tensor_options=None,
            post_tensor_options_kwarg_only=(),
            out=(),
        )

    # (Both build the new lists directly: dataclasses.replace walks the fields each time.)
    def with_out_args(self, outs: list[Argument]) -> Arguments:
        return Arguments(
            self.pre_self_positional,
            self.self_arg,
            self.post_self_positional,
            self.pre_tensor_options_kwarg_only,
            self.tensor_options,
            self.post_tensor_options_kwarg_only,
            self.out + tuple(outs),
        )

    def without_self_annotation(self) -> Arguments:
        a = self.self_arg
        assert a is not None, "only for arguments with a self argument"
        return Arguments(
            self.pre_self_positional,
            Argument(a.name, a.type, a.default, None),
            self.post_self_positional,
            self.pre_tensor_options_kwarg_only,
            self.tensor_options,
            self.post_tensor_options_kwarg_only,
            self.out,
        )


def _split_top_level(s: str) -> list[str]:
    """Split on ', ' outside brackets, parentheses and quotes (defaults may hold lists)."""
    parts = s.split(", ")
    if all(_balanced(p) for p in parts):  # the common case, and much faster
        return parts
    parts = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0 and s.startswith(", ", i):
            parts.append(s[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(s[start:])
    return parts


@interned  # called for every argument of every schema; argument strings repeat
def _balanced(s: str) -> bool:
    return (
        s.count("(") == s.count(")")
        and s.count("[") == s.count("]")
        and s.count('"') % 2 == 0
        and "'" not in s
    )


# Arguments are immutable, and half of torch's schemas share their argument list
# with another overload (the out= and inplace variants of one op, say).
@interned
def parse_arguments(s: str) -> Arguments:
    """Raises NotCanonical where the arguments are spelled otherwise than they print."""
    positional: list[Argument] = []
    kwarg_only: list[Argument] = []
    out: list[Argument] = []
    section = positional
    seen_star = False
    if s:
        for piece in _split_top_level(s):
            if piece == "*":
                if seen_star:
                    raise SchemaError("kwarg-only marker '*' may appear only once")
                seen_star = True
                section = kwarg_only
                continue
            a = parse_argument(piece)
            # Mutable kwarg-only arguments are the out= arguments; they come last.
            if a.is_write and section is kwarg_only:
                section = out
            elif not a.is_write and section is out:
                raise SchemaError(
                    f"argument '{a.name}' follows the out arguments; out arguments must come last"
                )
            if section is positional and a.default is None and positional:
                if positional[-1].default is not None:
                    raise SchemaError(
                        f"positional argument '{a.name}' has no default but follows "
                        f"'{positional[-1].name}', which has one; move it before, or after '*'"
                    )
            section.append(a)
    names = [a.name for a in positional + kwarg_only + out]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SchemaError(
            f"duplicate argument name '{dup}': torch keeps both, but a C++ kernel cannot have "
            "two parameters of one name; rename one (callers pass it by position)"
        )

    positional_names = names[: len(positional)]
    if "self" in positional_names:
        self_ix = positional_names.index("self")
        pre_self, self_arg, post_self = (
            positional[:self_ix],
            positional[self_ix],
            positional[self_ix + 1 :],
        )
        if any(a.is_write for a in pre_self):
            raise SchemaError("mutable arguments before self are not supported")
    else:
        pre_self, self_arg, post_self = [], None, positional

    # TensorOptions: `dtype, layout, device, pin_memory` in a row among the keyword-only
    # arguments (names are unique, so there is at most one such run, starting at `dtype`).
    pre_to, tensor_options, post_to = kwarg_only, None, []
    kwarg_only_names = names[len(positional) : len(positional) + len(kwarg_only)]
    if "dtype" in kwarg_only_names:
        at = kwarg_only_names.index("dtype")
        window = kwarg_only[at : at + len(_TENSOR_OPTIONS_PATTERN)]
        if len(window) == len(_TENSOR_OPTIONS_PATTERN) and all(
            _looks_like_tensor_option(a, n, t)
            for a, (n, t) in zip(window, _TENSOR_OPTIONS_PATTERN, strict=True)
        ):
            tensor_options = TensorOptionsArguments(*window)
            pre_to, post_to = kwarg_only[:at], kwarg_only[at + len(window) :]
    parsed = Arguments(
        tuple(pre_self),
        self_arg,
        tuple(post_self),
        tuple(pre_to),
        tensor_options,
        tuple(post_to),
        tuple(out),
    )
    if str(parsed) != s:
        raise NotCanonical(parsed)
    return parsed


@interned  # ~100 distinct return lists among torch's ~2,600 schemas
def parse_returns(s: str) -> tuple[Return, ...]:
    """Raises NotCanonical where the returns are spelled otherwise than they print."""
    if s == "()":
        return ()
    inner = s[1:-1] if s.startswith("(") and s.endswith(")") else s
    parsed = tuple(parse_return(r) for r in _split_top_level(inner))
    if print_returns(parsed) != s:
        raise NotCanonical(parsed)
    return parsed


def print_returns(returns: tuple[Return, ...]) -> str:
    if len(returns) == 1:
        return str(returns[0])
    return "(" + ", ".join(map(str, returns)) + ")"


def _value_type(t: Type) -> bool:
    """Passed by value in C++ (int64_t, ::std::optional<double>, ::std::array<bool,N>, ...)."""
    if isinstance(t, BaseType):
        return t.name not in ("Tensor", "Scalar")
    if isinstance(t, OptionalType):
        return _value_type(t.elem)
    return isinstance(t, ListType) and t.size is not None and str(t.elem) == "bool"


def _returnable(t: Type, mutable: bool) -> bool:
    """Whether a C++ kernel can return ``t`` (what the emitters' return types cover)."""
    if _value_type(t) or t in (TENSOR, BaseType("Scalar")):
        return True
    if isinstance(t, OptionalType):
        return t.elem == TENSOR
    if isinstance(t, ListType):
        return t.size is None and not mutable and _returnable(t.elem, False)
    return False
