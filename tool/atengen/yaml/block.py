"""A line-by-line reader for the plain block YAML that op, tags and backend YAMLs are written in,
giving exactly what yaml/full.py gives for them, in about half the time (torch's op YAML: ~20 ms
against ~40 ms) and without importing PyYAML.

It reads a strict subset of YAML, and returns None for anything outside it; the caller then reads
the document with the full parser (yaml/full.py), which also reports every error. So this module
never decides that a document is invalid, and it needs to be right only about what it accepts:
tests/unit/yaml/test_yaml_block.py compares the two on real files and on generated documents.

The subset:
- block mappings (`key: value`) and block sequences (`- item`, also as a mapping value at the
  key's own indentation), nested by indentation; a sequence item may be a mapping that starts
  on its `- ` line;
- keys: names, or comma-separated names (`CPU, CUDA`), that resolve to strings;
- values: plain one-line scalars; one-line single- or double-quoted scalars with no escapes;
  flow sequences of those on one line (`[a, 'b']`); literal block scalars (`|`, clip chomping);
- whole-line comments anywhere outside block scalars, and ` #` comments after a plain scalar.
Anything else (tabs, control characters, non-ASCII text, anchors, aliases, tags, folded or
chomping-indicator block scalars, multi-line plain or quoted scalars, flow mappings, document
markers, duplicate keys, a file without a final newline) is left to the full parser.
"""

from __future__ import annotations

import re

from atengen.yaml.values import YamlList, YamlMap

# A plain scalar cannot start with a YAML indicator.
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# A flow sequence's items: plain names, or quoted strings without quotes or escapes inside.
_FLOW_ITEM = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*|'[^'\\]*'|\"[^\"\\]*\"")

# How YAML 1.1 (PyYAML's resolver) reads plain scalars that start with a letter: these words
# are booleans or null, every other such scalar is a string.
_WORD_VALUES: dict[str, object] = {
    **{w: True for w in ("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{w: False for w in ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{w: None for w in ("null", "Null", "NULL")},
}
# Plain scalars starting with one of these may be numbers, dates or special values (`.inf`,
# `~`, `<<`, `=`): the full parser reads the ones that match _IMPLICIT_PATTERN.
_NUMERIC_START = frozenset("0123456789-+.<~=")
# Plain scalars starting with these are strings, or one of _WORD_VALUES.
_WORD_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
# YAML 1.1's implicit types of the plain scalars that start with one of _NUMERIC_START: the
# patterns of PyYAML's resolver (yaml/resolver.py) for float, int, timestamp, merge (`<<`),
# value (`=`) and null (`~`), copied as they are. A scalar no pattern matches is a string to
# PyYAML; one that matches is left to the full parser, which types it (or rejects it), so this
# module never converts a number itself. tests/unit/yaml/test_yaml_block.py generates every form of
# PyYAML's own patterns and checks that such scalars are left or read as PyYAML reads them.
# Compiled on first use, through re's own cache: the op YAML has no such scalar, and
# compiling it costs ~0.5 ms of every load.
_IMPLICIT_PATTERN = r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
     (?:[Tt]|[ \t]+)[0-9][0-9]?
     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
    |<<|=|~)$"""


MAX_DEPTH = 20


class _Outside(Exception):
    """The document leaves the subset: the full parser reads it."""


def load(
    text: str, path: str, first_line: int = 1, scalars: dict[str, object] | None = None
) -> YamlMap | YamlList | None:
    """The document's value (as yaml/full.py's `load` gives it), or None when the document is
    outside the subset this module reads."""
    if not text.endswith("\n") or not text.isascii():
        return None
    lines = text.split("\n")
    # Only printable ASCII and newlines: no tab, CR or control character to reason about.
    # (Twice as fast as a regular expression over the text.)
    if not "".join(lines).isprintable():
        return None
    try:
        return _Reader(lines, path, first_line, {} if scalars is None else scalars).document()
    except _Outside:
        return None


class _Reader:
    def __init__(
        self, lines: list[str], path: str, first_line: int, plain_values: dict[str, object]
    ):
        self.lines = lines
        self.texts = texts = [line.lstrip(" ") for line in lines]
        self.indents = [len(line) - len(t) for line, t in zip(lines, texts, strict=True)]
        # next_content_at[i]: the first line at or after i that is neither blank nor a comment
        # (len(lines) for none), so that finding the next line to read costs nothing.
        following = len(lines)
        self.next_content_at = at = [following] * (len(lines) + 1)
        for i in range(len(lines) - 1, -1, -1):
            t = texts[i]
            if t and t[0] != "#":
                following = i
            at[i] = following
        self.path = path
        self.line_offset = first_line  # lines[i] is line i + first_line
        self.plain_values = plain_values
        self.i = 0  # the next line to read
        self.depth = 0  # block collections open

    # --- lines -------------------------------------------------------------------------------

    def next_content(self) -> tuple[int, str] | None:
        """(indent, text) of the next line that is neither blank nor a comment, skipping to
        it; None at the end."""
        i = self.i = self.next_content_at[self.i]
        if i == len(self.lines):
            return None
        return self.indents[i], self.texts[i]

    def line_number(self) -> int:
        return self.i + self.line_offset

    # --- nodes -------------------------------------------------------------------------------

    def document(self) -> YamlMap | YamlList:
        first = self.next_content()
        if first is None:
            raise _Outside  # empty: the full parser says so
        value = self.node(*first)
        if self.next_content() is not None:
            raise _Outside  # something left over, less indented than the root
        return value

    def enter(self) -> None:
        """Counts one more open collection: real files nest three deep, and deeper nesting is
        left to the full parser, which limits it without recursing."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Outside

    def node(self, indent: int, text: str) -> YamlMap | YamlList:
        """The block collection whose first line (the current one, ``text`` at ``indent``)."""
        if text.startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent, text)

    def sequence(self, indent: int, indentless: bool = False) -> YamlList:
        """A block sequence at ``indent``; ``indentless``: a mapping value at its key's
        indentation, which ends at the next key."""
        self.enter()
        out = YamlList()
        out.line = self.line_number()
        out.path = self.path
        out.item_lines = []
        while (content := self.next_content()) is not None:
            at, text = content
            if at < indent or (indentless and at == indent and not text.startswith("- ")):
                break
            if at > indent or not text.startswith("- "):
                raise _Outside  # what follows an item is the next item or a shallower line
            item = text[2:].lstrip(" ")
            out.item_lines.append(self.i + self.line_offset)
            if not item or item[0] == "#":
                raise _Outside  # the item's value on the next lines
            column = indent + len(text) - len(item)
            if _is_key_line(item):
                out.append(self.mapping(column, item))
            else:
                out.append(self.inline_value(item, column))
        self.depth -= 1
        return out

    def mapping(self, indent: int, first_text: str) -> YamlMap:
        """A block mapping at ``indent``; ``first_text`` is its first line from the first key
        on (for a mapping that starts on a sequence item's `- ` line)."""
        # Most lines of a file are `key: word...` lines of some mapping, so this loop reads
        # them with local names and no calls; other values go through inline_value.
        self.enter()
        out = YamlMap()
        out.line = self.i + self.line_offset
        out.path = self.path
        key_lines = out.key_lines = {}
        texts, indents, next_content_at = self.texts, self.indents, self.next_content_at
        end = len(self.lines)
        plain_values = self.plain_values
        key_line_match = _KEY_LINE.fullmatch
        text = first_text
        i = self.i
        while True:
            # `name: rest`, the common case, without the regular expression (the text is
            # ASCII, so isidentifier() is the YAML name grammar); else `A, B: rest`.
            colon = text.find(":")
            key = text[:colon]
            if colon > 0 and key.isidentifier():
                rest = text[colon + 1 :]
                if rest:
                    if rest[0] != " ":
                        raise _Outside  # `a:b` is a scalar, not a key
                    rest = rest.lstrip(" ")
            else:
                m = key_line_match(text)
                if m is None:
                    raise _Outside
                key, rest = m.group(1, 2)
            if key in out or key in _WORD_VALUES:
                raise _Outside  # a duplicate, or a key that is not a string: an error there
            key_lines[key] = i + self.line_offset
            if not rest or rest[0] == "#":
                j = next_content_at[i + 1]
                if j < end and indents[j] > indent and not texts[j].startswith("- "):
                    # A block mapping below the key (an entry's `dispatch:`): what
                    # nested_value would find, without its two calls.
                    self.i = j
                    out[key] = self.mapping(indents[j], texts[j])
                else:
                    self.i = i + 1
                    out[key] = self.nested_value(indent)
                i = self.i
            elif (
                rest[0] in _WORD_START
                and rest[-1] not in ": "
                and "#" not in rest
                and (": " not in rest)
            ):
                value = plain_values.get(rest, _MISSING)
                if value is _MISSING:
                    value = plain_values[rest] = _WORD_VALUES.get(rest, rest)
                out[key] = value
                i += 1
            else:
                self.i = i
                out[key] = self.inline_value(rest, indent)
                i = self.i
            i = self.i = next_content_at[i]
            if i == end or indents[i] < indent:
                self.depth -= 1
                return out
            if indents[i] > indent:
                raise _Outside  # a multi-line scalar, or a misplaced line
            text = texts[i]

    def nested_value(self, indent: int) -> YamlMap | YamlList:
        """The value of a key with nothing after its colon: the lines below it."""
        content = self.next_content()
        if content is None:
            raise _Outside  # null
        at, text = content
        if at > indent:
            return self.node(at, text)
        if at == indent and text.startswith("- "):
            return self.sequence(indent, indentless=True)
        raise _Outside  # null

    def inline_value(self, text: str, indent: int) -> object:
        """The scalar, flow sequence or block scalar that starts in ``text`` (the rest of the
        current line); ``indent`` is the indentation of the collection it is a value in. Leaves
        the current line after the value."""
        first = text[0]
        if first == "[":
            return self.flow_sequence(text)
        if text == "{}":  # `dispatch: {}`
            out = YamlMap()
            out.line = self.line_number()
            out.path = self.path
            out.key_lines = {}
            self.i += 1
            return out
        if first == "|":
            if text != "|":
                raise _Outside  # chomping or indentation indicators, or a comment
            return self.literal_block(indent)
        if first in ("'", '"'):
            end = text.find(first, 1)
            rest = text[end + 1 :].lstrip(" ") if end > 0 else "#"
            if end < 0 or "\\" in text[:end] or (rest and not rest.startswith("#")):
                raise _Outside  # escapes, quotes inside, multi-line, or text after it
            if rest and text[end + 1] != " ":
                raise _Outside
            self.i += 1
            return text[1:end]
        if first in _INDICATORS and not (first == "-" and len(text) > 1 and text[1] != " "):
            raise _Outside  # (`-x` is a plain scalar; `- x` would be a sequence)
        comment = text.find(" #")
        if comment >= 0:
            text = text[:comment]
        text = text.rstrip(" ")
        if ": " in text or text.endswith(":"):
            raise _Outside  # a mapping where a scalar was expected: an error there
        self.i += 1
        return self.plain(text)

    def plain(self, text: str) -> object:
        value = self.plain_values.get(text, _MISSING)
        if value is _MISSING:
            if text[0] in _NUMERIC_START and re.match(_IMPLICIT_PATTERN, text, re.X):
                raise _Outside
            value = _WORD_VALUES.get(text, text)
            self.plain_values[text] = value
        return value

    def flow_sequence(self, text: str) -> YamlList:
        if "#" in text or not text.endswith("]") or text.count("[") != 1:
            raise _Outside
        out = YamlList()
        out.line = self.line_number()
        out.path = self.path
        out.item_lines = []
        inner = text[1:-1].strip(" ")
        for piece in inner.split(",") if inner else ():
            item = piece.strip(" ")
            if not _FLOW_ITEM.fullmatch(item):
                raise _Outside
            out.append(item[1:-1] if item[0] in ("'", '"') else self.plain(item))
            out.item_lines.append(out.line)
        self.i += 1
        return out

    def literal_block(self, parent_indent: int) -> str:
        """A `|` block scalar whose header is the current line; leaves the current line after
        it."""
        lines = self.lines
        start = self.i + 1
        if start >= len(lines) or not lines[start].strip(" "):
            raise _Outside  # empty, or leading blank lines: their spaces count
        indent = len(lines[start]) - len(lines[start].lstrip(" "))
        if indent <= parent_indent:
            raise _Outside  # an empty block scalar
        body: list[str] = []
        i = start
        while i < len(lines):
            line = lines[i]
            if not line.strip(" "):
                if len(line) > indent:
                    raise _Outside  # spaces past the indentation are content
                body.append("")
            elif len(line) - len(line.lstrip(" ")) >= indent:
                body.append(line[indent:])
            else:
                break
            i += 1
        # The last line of the text is the empty string after its final newline.
        while body and not body[-1]:
            body.pop()
        self.i = i
        return "\n".join(body) + "\n"


_MISSING = object()


# `key:` or `key: value`; not `a:b`, which is a scalar.
_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:, ?[A-Za-z_][A-Za-z0-9_]*)*):(?: +(.*))?")


def _is_key_line(text: str) -> bool:
    """Whether ``text`` is a `key:` or `key: value` line (not `a:b`, which is a scalar)."""
    colon = text.find(":")
    if colon > 0 and text[:colon].isidentifier():  # `name: ...`, without the expression
        return colon + 1 == len(text) or text[colon + 1] == " "
    return _KEY_LINE.fullmatch(text) is not None
