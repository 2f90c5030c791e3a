"""Function schemas: parse, print, classify and normalise.

The grammar is the one ``native_functions.yaml`` uses, e.g.
``add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)``.
Printing is canonical: ``str(parse_schema(s)) == s`` for every schema in the real
YAML, and parsing rejects strings that would not print back identically, so a
schema has exactly one spelling.
"""

from __future__ import annotations

import enum
import operator
import re
from dataclasses import dataclass

from atengen.cached import cached_property, interned
from atengen.errors import SchemaError
from atengen.model.schema_defaults import check_default
from atengen.model.schema_types import (  # noqa: F401  (re-exported)
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


class NotCanonical(SchemaError):  # noqa: N818 - a SchemaError, like its siblings
    """Text that parses, but is not spelled as it prints: ``parsed`` is what it parses to (for
    the message, which shows the canonical spelling)."""

    def __init__(self, parsed: object):
        super().__init__("not in canonical form")
        self.parsed = parsed


_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words torch's schema lexer reads as constants, never as names: it rejects them as operator,
# overload, argument and return names ("expected ident but found 'True'").
_CONSTANT_WORDS = frozenset({"True", "False", "None"})


def _check_not_constant(name: str, what: str, s: str) -> None:
    if name in _CONSTANT_WORDS:
        raise SchemaError(
            f"'{name}' cannot be {what} name (in '{s}'): torch's schema parser reads it as a "
            "constant"
        )


# ---------------------------------------------------------------------------
# Arguments and returns


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


_TEXT_WITHOUT_DEFAULT = operator.attrgetter("text_without_annotation_or_default")
_TEXT_WITH_DEFAULT = operator.attrgetter("text_without_annotation")


def _precomputed_only(t: Type) -> bool:
    """A type of precomputed declarations only (DimVector), or a list or optional of it."""
    return str(t).rstrip("?[]0123456789") in PRECOMPUTED_ONLY_TYPES


@interned
def _plain_return(t: Type) -> Return:
    return Return(None, t, None)


def _type_with_annotation(t: Type, annotation: Annotation | None) -> str:
    s = str(t)
    if annotation is None:
        return s
    # Only Tensor, Tensor? and Tensor[] carry annotations: `Tensor(a!)?`.
    return f"Tensor({annotation}){s[len('Tensor') :]}"


_ANNOTATED_TENSOR_RE = re.compile(r"Tensor\((.+)\)(\?|\[\])?")


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
    if not _IDENT_RE.fullmatch(name):
        raise SchemaError(f"illegal argument name in '{s}'")
    _check_not_constant(name, "an argument", s)
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
    if name is not None and not _IDENT_RE.fullmatch(name):
        raise SchemaError(f"illegal return name in '{s}'")
    if name is not None:
        _check_not_constant(name, "a return", s)
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
        raise SchemaError(f"duplicate argument name '{dup}'")

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
    if _print_returns(parsed) != s:
        raise NotCanonical(parsed)
    return parsed


def _print_returns(returns: tuple[Return, ...]) -> str:
    if len(returns) == 1:
        return str(returns[0])
    return "(" + ", ".join(map(str, returns)) + ")"


# ---------------------------------------------------------------------------
# Operator names

# Python's augmented assignments; `__iadd__` is the inplace form of `__add__`.
_AUGMENTED_ASSIGNMENT_NAMES = frozenset(
    {"add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or"}
)
_DUNDER_RE = re.compile(r"__([^_]+)__")
_OVERLOAD_RE = re.compile(r"[A-Za-z0-9_]+")
_FUNCTIONAL_SUFFIX = "_functional"


@dataclass(frozen=True, slots=True)
class BaseOperatorName:
    """An operator's name without its overload: ``add``, ``add_``, ``__iadd__``."""

    base: str
    inplace: bool = False
    dunder_method: bool = False
    # `foo_functional`: the functional variant generated from a mutable `foo`,
    # renamed so that it cannot clash with foo's existing overloads.
    functional_overload: bool = False

    def __str__(self) -> str:
        if self.dunder_method:
            return f"__{'i' if self.inplace else ''}{self.base}__"
        suffix = "_" if self.inplace else _FUNCTIONAL_SUFFIX if self.functional_overload else ""
        return self.base + suffix


@interned  # the overloads of one op share it
def parse_base_name(s: str) -> BaseOperatorName:
    if not s:
        raise SchemaError("empty operator name")
    if s.endswith("_out"):
        raise SchemaError(
            f"operator name '{s}' ends in '_out', which is reserved; "
            "use an 'out' overload name instead"
        )
    m = _DUNDER_RE.fullmatch(s)
    if m:
        base = m.group(1)
        inplace = base[0] == "i" and base[1:] in _AUGMENTED_ASSIGNMENT_NAMES
        if inplace:
            base = base[1:]
        elif base[0] == "i":
            raise SchemaError(f"dunder name '{s}' is not a known inplace augmented assignment")
        r = BaseOperatorName(base, inplace, True)
    else:
        inplace = s.endswith("_")
        base = s[:-1] if inplace else s
        functional = base.endswith(_FUNCTIONAL_SUFFIX)
        if functional:
            if inplace:
                raise SchemaError(f"'{s}': a _functional operator cannot be inplace")
            base = base[: -len(_FUNCTIONAL_SUFFIX)]
        r = BaseOperatorName(base, inplace, False, functional)
    if not _IDENT_RE.fullmatch(r.base) or str(r) != s:
        raise SchemaError(f"illegal operator name '{s}'")
    return r


@dataclass(frozen=True, slots=True)
class OperatorName:
    """An operator's name with its overload: ``add.Tensor``; the overload may be empty."""

    name: BaseOperatorName
    overload_name: str

    def __str__(self) -> str:
        return f"{self.name}.{self.overload_name}" if self.overload_name else str(self.name)

    def unambiguous_name(self) -> str:
        """``name_overload``: unique across overloads, usable as a C++ identifier."""
        return f"{self.name}_{self.overload_name}" if self.overload_name else str(self.name)


def parse_operator_name(s: str) -> OperatorName:
    """The name ``s`` spells; it prints back as ``s`` (parse_base_name checks the base, and an
    overload is one word after the only dot)."""
    base, dot, overload = s.partition(".")
    if dot and not _OVERLOAD_RE.fullmatch(overload):
        raise SchemaError(f"illegal overload name in '{s}'")
    if overload == "default":  # torch names an op's unnamed overload `default`
        raise SchemaError(f"'default' is not a legal overload name (in '{s}')")
    if base in _CONSTANT_WORDS or overload in _CONSTANT_WORDS:
        _check_not_constant(base, "an operator", s)
        _check_not_constant(overload, "an overload", s)
    return OperatorName(parse_base_name(base), overload)


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
        r = object.__new__(cls)
        attributes = {"name": name, "arguments": arguments, "returns": returns, "text": text}
        object.__setattr__(r, "__dict__", attributes)
        return r

    def __str__(self) -> str:
        return self.text

    @cached_property
    def text(self) -> str:
        """The canonical spelling, printed once and cached."""
        return f"{self.name}({self.arguments}) -> {_print_returns(self.returns)}"

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
            Return(f"{a.name}_out", a.type, None) if keep_return_names else _plain_return(a.type)
            for a in self_part + self.arguments.out + self.arguments.post_self_positional
            if a.is_write and a.annotation not in return_annotations
        )
        kept_returns = tuple(
            Return(r.name, r.type, None) if keep_return_names else _plain_return(r.type)
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


def parse_schema(s: str) -> FunctionSchema:
    """Parse and check the structural restrictions every native function obeys."""
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
    # of the parse): the list closes at the first one with as many '(' before it.
    close_ix = s.find(")", open_ix)
    while close_ix >= 0 and s.count("(", open_ix, close_ix) != s.count(")", open_ix, close_ix + 1):
        close_ix = s.find(")", close_ix + 1)
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
        arguments, canonical = e.parsed, False
    try:
        returns = parse_returns(returns_s)
    except NotCanonical as e:
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
                raise SchemaError(
                    f"mutable positional argument '{a.name}' must not be returned; "
                    "return only out arguments or self"
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
    x = args.precomputed_only_user or next((r for r in rets if r.precomputed_only), None)
    if x is not None:
        raise SchemaError(
            f"type '{x.type}' is for precomputed declarations only; torch's schema parser "
            "does not know it"
        )
    for r in rets:
        if not r.returnable:
            raise SchemaError(
                f"return type '{r.type}' has no C++ return type; return Tensor, Tensor?, "
                "Scalar, a value type (int, float, bool, ..., or their optionals) or an "
                "unsized list of those"
            )
