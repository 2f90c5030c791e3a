"""A line-by-line parser for the plain block style that op, tags and backend YAMLs use.

PyYAML's C parser is fast, but it still hands Python one node object (with two
marks) per scalar, and turning those into YamlMap/YamlList costs as much again.
Nearly every YAML this tool reads is written in a small subset of YAML: block
mappings and sequences, one scalar per line (plain, quoted without escapes, or a
literal ``key: |`` block),
one-line flow lists of words (``tags: [core, pointwise]``), ``{}`` and comments. This
module parses exactly that subset, straight into YamlMap/YamlList with the same
line numbers PyYAML's marks give.

It never guesses: on anything outside the subset (tabs, anchors, tags, block or
multi-line scalars, flow mappings, unusual indentation, a key that is not a
string, a duplicate key, non-ASCII text) it raises Unsupported, and the caller
runs the full PyYAML path, which produces either the same values or the error
message. Plain scalars are typed by the caller's ``plain`` function, i.e. by
PyYAML's own YAML 1.1 resolver, so ``True``, ``1`` and ``~`` mean what they do
there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from atengen.yaml.values import YamlList, YamlMap


class Unsupported(Exception):  # noqa: N818 - a signal to fall back, not an error
    """The text uses YAML outside the subset; parse it with PyYAML instead."""


# Anything but printable ASCII and newlines (tabs, CR, BOM, Unicode) goes to PyYAML,
# whose reader has its own rules and messages for them. (Deleting the allowed
# bytes and looking at what is left is ~20x faster than a regex search.)
_SUBSET_BYTES = bytes(range(0x20, 0x7F)) + b"\n"
# `key:` or `key: value`; keys are names, or comma-separated names (`CPU, CUDA`).
_KEY_LINE = re.compile(r"([A-Za-z_][\w.]*(?:, *[A-Za-z_][\w.]*)*):(?: +(.*))?")
# Characters that cannot start a plain scalar (YAML indicators).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_PLAIN_DASH_START = re.compile(r"-[\w.]")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"\\]*)\"")
_FLOW_ITEM = r"[\w.][\w.\-]*|'[^']*'|\"[^\"\\]*\""
_FLOW_LIST = re.compile(rf"\[ *(?:(?:{_FLOW_ITEM})(?: *, *(?:{_FLOW_ITEM}))*)? *\]")
_FLOW_ITEMS = re.compile(_FLOW_ITEM)
_EMPTY_FLOW_MAP = re.compile(r"\{ *\}(?: +#.*)?")
_TRAILING_COMMENT = re.compile(r"(?: +#.*)?")


def parse_block_yaml(text: str, path: str, plain: Callable[[str], object]):
    """The document's value, or Unsupported. ``plain`` types one plain scalar."""
    if not text.isascii() or text.encode("ascii").translate(None, _SUBSET_BYTES):
        raise Unsupported
    return _Parser(text, path, plain).parse()


class _Parser:
    def __init__(self, text: str, path: str, plain: Callable[[str], object]):
        self.path = path
        self.plain = plain
        # (line number, indent, content without indent and trailing spaces,
        # (key, rest) if the content is `key:` or `key: rest`) for every line
        # that is not blank or a whole-line comment, and not inside a literal
        # block scalar.
        self.lines: list[tuple[int, int, str, tuple[str, str | None] | None]] = []
        self.string_keys: set[str] = set()  # keys `plain` has typed as strings
        self.literals: dict[int, str] = {}  # line of `key: |` -> the scalar's text
        raw_lines = text.split("\n")
        append = self.lines.append
        literal_end = 0  # the last line of the latest literal block scalar
        for number, raw in enumerate(raw_lines, 1):
            content = raw.lstrip(" ")
            if not content or content[0] == "#" or number <= literal_end:
                continue
            indent = len(raw) - len(content)
            content = content.rstrip(" ")
            # (A key starts with a letter or '_', so `- ...` lines need no match.)
            m = _KEY_LINE.fullmatch(content) if content[0] != "-" else None
            append((number, indent, content, m and m.groups()))
            if m is not None and m.group(2) == "|":
                self.literals[number], literal_end = _literal(raw_lines, number, indent)

    def parse(self):
        if not self.lines:
            raise Unsupported
        value, i = self.block(0, self.lines[0][1])
        if i != len(self.lines):
            raise Unsupported
        return value

    def block(self, i: int, indent: int):
        _, _, content, key_rest = self.lines[i]
        if content.startswith("- "):
            return self.sequence(i, indent)
        if key_rest is not None:
            return self.mapping(i, indent)
        raise Unsupported  # e.g. a scalar on the line below its key

    def sequence(self, i: int, indent: int) -> tuple[YamlList, int]:
        lines = self.lines
        items = []
        item_lines = []
        first_line = lines[i][0]
        while i < len(lines):
            number, ind, content, _ = lines[i]
            if ind != indent or not content.startswith("- "):
                break
            rest = content[2:].lstrip(" ")
            m = _KEY_LINE.fullmatch(rest)
            if m is not None:
                # `- func: ...`: a mapping whose keys line up with this first one.
                column = indent + len(content) - len(rest)
                lines[i] = (number, column, rest, m.groups())
                value, i = self.mapping(i, column)
            else:
                value = self.scalar(rest, number)
                i += 1
            items.append(value)
            item_lines.append(number)
        self.check_dedent(i, indent)
        out = YamlList(items)
        out.line = first_line
        out.item_lines = item_lines
        out.path = self.path
        return out, i

    def mapping(self, i: int, indent: int) -> tuple[YamlMap, int]:
        lines = self.lines
        out = YamlMap()
        out.line = lines[i][0]
        out.key_lines = key_lines = {}
        out.path = self.path
        end = len(lines)
        while i < end:
            number, ind, _, key_rest = lines[i]
            if ind != indent:
                break
            if key_rest is None:
                raise Unsupported
            key, rest = key_rest
            if key in out:
                raise Unsupported  # PyYAML's path reports duplicate keys
            if key not in self.string_keys:
                if type(self.plain(key)) is not str:
                    raise Unsupported  # and non-string ones
                self.string_keys.add(key)
            i += 1
            if rest and rest[0] != "#":
                value = self.scalar(rest, number)
            elif i < end and lines[i][1] > indent:
                value, i = self.block(i, lines[i][1])
            elif i < end and lines[i][1] == indent and lines[i][2].startswith("- "):
                value, i = self.sequence(i, indent)  # a sequence may sit at its key's indent
            else:
                value = None
            out[key] = value
            key_lines[key] = number
        self.check_dedent(i, indent)
        return out, i

    def check_dedent(self, i: int, indent: int) -> None:
        # A block ends at a line indented less; one indented more (a plain scalar
        # continued on the next line, say) is outside the subset.
        if i < len(self.lines) and self.lines[i][1] > indent:
            raise Unsupported

    def scalar(self, s: str, line: int):
        first = s[0]
        if s == "|" and line in self.literals:
            return self.literals[line]
        if first == "[":
            return self.flow_list(s, line)
        if first == "{":  # only the empty flow mapping, `dispatch: {}`
            if not _EMPTY_FLOW_MAP.fullmatch(s):
                raise Unsupported
            out = YamlMap()
            out.line = line
            out.key_lines = {}
            out.path = self.path
            return out
        if first in "'\"":
            m = _QUOTED.match(s)
            if m is None or not _TRAILING_COMMENT.fullmatch(s, m.end()):
                raise Unsupported
            return m.group(1) if first == "'" else m.group(2)
        cut = s.find(" #")
        if cut >= 0:
            s = s[:cut].rstrip(" ")
        if (first in _INDICATORS and not _PLAIN_DASH_START.match(s)) or ": " in s or s[-1] == ":":
            raise Unsupported
        return self.plain(s)

    def flow_list(self, s: str, line: int) -> YamlList:
        m = _FLOW_LIST.match(s)
        if m is None or not _TRAILING_COMMENT.fullmatch(s, m.end()):
            raise Unsupported
        items = [
            item[1:-1] if item[0] in "'\"" else self.plain(item)
            for item in _FLOW_ITEMS.findall(s, 1, m.end() - 1)
        ]
        out = YamlList(items)
        out.line = line
        out.item_lines = [line] * len(items)
        out.path = self.path
        return out


def _literal(raw_lines: list[str], start: int, key_indent: int) -> tuple[str, int]:
    """The text of a `key: |` block scalar whose lines start at index ``start``
    (the key's line number, as numbers count from 1), and the index of the first
    line after it, which is the number of its own last line.

    Literal style, "clip" chomping: the lines as written less their common
    indentation (set by the first line), ending in one line break.
    """
    if start >= len(raw_lines) or not raw_lines[start].strip(" "):
        raise Unsupported  # leading blank lines, or an empty scalar
    first = raw_lines[start]
    indent = len(first) - len(first.lstrip(" "))
    if indent <= key_indent:
        raise Unsupported
    body = []
    end = start
    while end < len(raw_lines):
        raw = raw_lines[end]
        if raw.strip(" "):
            if len(raw) - len(raw.lstrip(" ")) < indent:
                break
            body.append(raw[indent:])
        elif len(raw) > indent:
            raise Unsupported  # an all-space line longer than the indentation is text
        else:
            body.append("")
        end += 1
    if end == len(raw_lines) and raw_lines[-1]:
        raise Unsupported  # runs to the end of a file with no final line break
    while not body[-1]:
        body.pop()
    return "\n".join(body) + "\n", end
