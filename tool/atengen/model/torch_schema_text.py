"""Schemas in torch's own spelling, as custom-op authors register them, read into the op
YAML's canonical spelling.

torch's schema parser is a tokenizer: whitespace between tokens (line breaks included) means
nothing, ``->`` and ``,`` need no spaces, and ``Tensor!`` is a tensor written in place in an
alias set of its own. The op YAML's parser (``schema.parse_schema``) takes one spelling per
schema, so that aten's YAML stays byte-comparable with torchgen's. Outside ``aten`` the YAML
takes what torch takes: this module respells such a schema canonically, and keeps the text torch
itself should register (``registered``), so that the library defines exactly what its authors'
``TORCH_LIBRARY`` did.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from atengen.errors import SchemaError

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# One argument or return, its whitespace already collapsed to single spaces: a type (a name,
# maybe dotted for a custom class), an alias annotation in parentheses or the `!` shorthand, any
# `?` and `[N]` suffixes (an annotation may also follow a list's brackets), then maybe a name
# and a default.
_ITEM_RE = re.compile(
    rf"""
    (?P<base>{_IDENT}(?:\ ?\.\ ?{_IDENT})*)\ ?
    (?:\(\ ?(?P<annotation>[^()]*?)\ ?\)\ ?)?
    (?P<bang>!)?\ ?
    (?P<suffixes>(?:(?:\?|\[\ ?[0-9]*\ ?\])\ ?)*)
    (?:\(\ ?(?P<list_annotation>[^()]*?)\ ?\)\ ?)?
    (?P<late_suffixes>(?:\?\ ?)*)
    (?P<name>{_IDENT})?\ ?
    (?:=\ ?(?P<default>.*?))?
    """,
    re.VERBOSE,
)
_NAME_RE = re.compile(rf"(?P<base>{_IDENT}) ?(?:\. ?(?P<overload>{_IDENT}))?")
_ALIAS_NAME_RE = re.compile(_IDENT)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# The whitespace torch's tokenizer skips: ASCII only (a no-break space is an error to it).
_WHITESPACE = " \t\n\r\f\v"


@dataclass(frozen=True)
class TorchSchemaText:
    """A schema of torch's language: ``canonical``, the op YAML's spelling of it, and
    ``registered``, the author's text with its whitespace runs made single spaces (what the
    library defines: torch parses it as it parses the author's text)."""

    canonical: str
    registered: str


def read_torch_schema(text: str) -> TorchSchemaText:
    """``text`` (``name(args) -> returns``, no namespace) respelled canonically.

    Alias sets are renamed to single letters, in order of first use, and each ``!`` shorthand
    gets a letter of its own; alias annotations never reach C++, and torch registers the
    author's text, so the renaming is seen only by the model. Raises SchemaError where the text
    is not a schema of this shape; what the parts mean is checked by ``parse_schema`` after.
    """
    registered = _collapse_whitespace(text)
    open_ix = registered.find("(")
    if open_ix <= 0:
        raise SchemaError("schema has no argument list")
    close_ix = _matching_paren(registered, open_ix)
    if close_ix < 0:
        raise SchemaError("schema has unbalanced parentheses")
    arrow = registered[close_ix + 1 :].lstrip(" ")
    if not arrow.startswith("->"):
        raise SchemaError("schema has no '->' after the arguments")
    name_m = _NAME_RE.fullmatch(registered[:open_ix].strip(" "))
    if name_m is None:
        raise SchemaError(f"illegal operator name '{registered[:open_ix].strip(' ')}'")
    name = name_m["base"] + (f".{name_m['overload']}" if name_m["overload"] else "")
    letters = _AliasLetters()
    arguments = [
        "*" if piece == "*" else _respell(piece, letters, "argument")
        for piece in _split_top_level(registered[open_ix + 1 : close_ix])
    ]
    returns_text = arrow[2:].strip(" ")
    if not returns_text:
        raise SchemaError("schema has nothing after '->'; a schema returning nothing ends '-> ()'")
    if returns_text.startswith("(") and _matching_paren(returns_text, 0) == len(returns_text) - 1:
        pieces = _split_top_level(returns_text[1:-1])
    else:
        pieces = [returns_text] if returns_text else []
    returns = [_respell(piece, letters, "return") for piece in pieces]
    printed_returns = returns[0] if len(returns) == 1 else f"({', '.join(returns)})"
    canonical = f"{name}({', '.join(arguments)}) -> {printed_returns}"
    return TorchSchemaText(canonical, registered)


def _collapse_whitespace(text: str) -> str:
    """Every run of whitespace outside quotes becomes one space; ends are stripped.

    Like Python's, torch's tokenizer ends a line at a line break outside brackets: there it is
    an error, not a space."""
    out: list[str] = []
    quote = ""
    pending_space = pending_break = False
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in _WHITESPACE or (c == "\\" and text[i + 1 : i + 2] == "\n"):
            pending_space = bool(out)
            pending_break = pending_break or (c in "\n\r" and depth == 0 and bool(out))
        else:
            if pending_break:
                raise SchemaError(
                    "line break outside the parentheses: torch's parser takes line breaks "
                    "only inside (...) and [...]"
                )
            if pending_space:
                out.append(" ")
                pending_space = False
            if c in "\"'":
                quote = c
            elif c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            out.append(c)
        i += 1
    if quote:
        raise SchemaError("schema has an unterminated string literal")
    return "".join(out)


def _outside_quotes(s: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth after it) of each character of ``s`` from ``start`` on
    that is outside string literals (defaults like `"a, (b"` hold commas and parentheses)."""
    depth = 0
    quote = ""
    escaped = False
    for i in range(start, len(s)):
        c = s[i]
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = ""
            continue
        if c in "\"'":
            quote = c
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        yield i, c, depth


def _matching_paren(s: str, open_ix: int) -> int:
    """The index of the `)` that closes the `(` at ``open_ix``; -1 when none does."""
    for i, c, depth in _outside_quotes(s, open_ix):
        if c == ")" and depth == 0:
            return i
    return -1


def _split_top_level(s: str) -> list[str]:
    """Split on commas outside brackets, parentheses and quotes; each piece stripped."""
    if not s.strip(" "):
        return []
    parts: list[str] = []
    start = 0
    for i, c, depth in _outside_quotes(s):
        if c == "," and depth == 0:
            parts.append(s[start:i].strip(" "))
            start = i + 1
    parts.append(s[start:].strip(" "))
    if "" in parts:
        raise SchemaError("schema has an empty argument or return between commas")
    return parts


class _AliasLetters:
    """The single letters the canonical spelling gives alias sets: one per set the author
    named (in order of first use), one per ``!``."""

    def __init__(self) -> None:
        self._named: dict[str, str] = {}
        self._next = 0

    def fresh(self) -> str:
        if self._next >= len(_LETTERS):
            raise SchemaError(f"schema uses more than {len(_LETTERS)} alias sets")
        letter = _LETTERS[self._next]
        self._next += 1
        return letter

    def of(self, name: str) -> str:
        if name == "*":
            return name
        if not _ALIAS_NAME_RE.fullmatch(name):
            raise SchemaError(f"illegal alias set name '{name}'")
        if name not in self._named:
            self._named[name] = self.fresh()
        return self._named[name]


def _respell_annotation(text: str, letters: _AliasLetters) -> str:
    """``a!``, ``a|b``, ``a -> *``, ``a! -> a|b`` (any spacing), its sets renamed."""
    before, arrow, after = text.replace(" ", "").partition("->")
    write = before.endswith("!")
    sets = "|".join(letters.of(n) for n in before.removesuffix("!").split("|"))
    s = sets + ("!" if write else "")
    if arrow:
        s += " -> " + "|".join(letters.of(n) for n in after.split("|"))
    return s


def _respell(piece: str, letters: _AliasLetters, what: str) -> str:
    m = _ITEM_RE.fullmatch(piece)
    if m is None or (what == "argument" and m["name"] is None) or (m["default"] == ""):
        raise SchemaError(f"malformed {what} '{piece}'")
    if what == "return" and m["default"] is not None:
        raise SchemaError(f"a return cannot have a default: '{piece}'")
    annotation = m["annotation"] if m["annotation"] is not None else m["list_annotation"]
    if annotation is not None and m["bang"]:
        raise SchemaError(f"'{piece}' has both an alias annotation and '!'")
    if m["annotation"] is not None and m["list_annotation"] is not None:
        raise SchemaError(f"'{piece}' has two alias annotations")
    base = m["base"].replace(" ", "")
    # torch folds an optional of an optional: `int??` is registered as `int?`.
    suffixes = re.sub(r"\?+", "?", (m["suffixes"] + m["late_suffixes"]).replace(" ", ""))
    if m["bang"]:
        annotation_text: str | None = letters.fresh() + "!"
    elif annotation is not None:
        annotation_text = _respell_annotation(annotation, letters)
    else:
        annotation_text = None
    type_text = base if annotation_text is None else f"{base}({annotation_text})"
    type_text += suffixes
    if m["name"] is None:
        return type_text
    text = f"{type_text} {m['name']}"
    if m["default"] is not None:
        text += "=" + _respell_default(m["default"])
    return text


def _respell_default(default: str) -> str:
    """A list default's spaces dropped (``[0, 0]`` is ``[0,0]``); strings kept as written."""
    if default.startswith(("'", '"')):
        return default
    return default.replace(" ", "")
