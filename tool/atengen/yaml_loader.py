"""Load YAML with line numbers, strict about what PyYAML lets slip through.

PyYAML's C parser builds the node graph quickly; we then turn nodes into plain
Python values ourselves so that every mapping and list remembers its line and
every key's line, and so that duplicate keys (silently last-wins in PyYAML) are
errors.
"""

from __future__ import annotations

import yaml

from atengen.errors import AtengenError, Location

try:  # The C loader is ~10x faster; the pure-Python one gives identical nodes.
    _BaseLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseLoader = yaml.SafeLoader

# Even the C parser asks Python to resolve each plain scalar's implicit tag,
# trying regexes one by one; the answer depends only on the text, and op
# YAMLs repeat the same few words (func, dispatch, CPU, True) thousands of times.
_SCALAR_TAGS: dict[tuple[str, tuple[bool, bool]], str] = {}


class _Loader(_BaseLoader):
    def resolve(self, kind, value, implicit):
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = _SCALAR_TAGS.get(key)
        if tag is None:
            tag = _SCALAR_TAGS[key] = super().resolve(kind, value, implicit)
        return tag


_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"


class YamlMap(dict):
    """A dict that knows its own line and the line of each key."""

    __slots__ = ("line", "key_lines", "path")

    def key_location(self, key: str) -> Location:
        return Location(self.path, self.key_lines.get(key, self.line))

    @property
    def location(self) -> Location:
        return Location(self.path, self.line)


class YamlList(list):
    """A list that knows its own line and the line of each item."""

    __slots__ = ("line", "item_lines", "path")

    def item_location(self, index: int) -> Location:
        return Location(self.path, self.item_lines[index])

    @property
    def location(self) -> Location:
        return Location(self.path, self.line)


class _Converter:
    def __init__(self, path: str):
        self.path = path
        # Scalars other than strings (bools, ints, null) use PyYAML's own
        # YAML 1.1 resolution, so `True`, `yes` and `~` mean what they do there.
        self.constructor = yaml.constructor.SafeConstructor()

    def convert(self, node: yaml.Node):
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _STR_TAG:
                return node.value
            return self.constructor.construct_object(node)
        if isinstance(node, yaml.SequenceNode):
            out = YamlList(self.convert(item) for item in node.value)
            out.line = node.start_mark.line + 1
            out.item_lines = [item.start_mark.line + 1 for item in node.value]
            out.path = self.path
            return out
        if isinstance(node, yaml.MappingNode):
            return self._convert_map(node)
        raise AtengenError(self._loc(node), f"unsupported YAML node {node.tag}")

    def _convert_map(self, node: yaml.MappingNode) -> YamlMap:
        out = YamlMap()
        out.line = node.start_mark.line + 1
        out.key_lines = {}
        out.path = self.path
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise AtengenError(self._loc(key_node), "YAML merge keys (<<) are not supported")
            if not isinstance(key_node, yaml.ScalarNode):
                raise AtengenError(self._loc(key_node), "mapping keys must be plain scalars")
            key = self.convert(key_node)
            if not isinstance(key, str):
                # `True: x` or `1: x` are almost always typos; keys are names here.
                raise AtengenError(self._loc(key_node), f"mapping key {key!r} is not a string")
            if key in out:
                first = out.key_lines[key]
                raise AtengenError(
                    self._loc(key_node),
                    f"duplicate key '{key}' (first defined on line {first})",
                )
            out[key] = self.convert(value_node)
            out.key_lines[key] = key_node.start_mark.line + 1
        return out

    def _loc(self, node: yaml.Node) -> Location:
        return Location(self.path, node.start_mark.line + 1)


def load_yaml(path: str, *, display_path: str | None = None):
    """Parse one YAML document from ``path``; mappings/lists carry line numbers.

    ``display_path`` is the name errors use (defaults to ``path``). Raises
    AtengenError with ``file:line`` for every kind of malformed input.
    """
    shown = display_path or path
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AtengenError(Location(shown, 1), f"cannot read file: {e.strerror}") from None
    return load_yaml_text(data, shown)


def load_yaml_text(data: bytes, path: str):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise AtengenError(
            Location(path, line),
            f"not UTF-8 text (byte 0x{data[e.start]:02x}); is this a binary file?",
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise AtengenError(Location(path, line), "NUL byte in file; is this a binary file?")
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        raise _yaml_error(e, path) from None
    except yaml.YAMLError as e:  # reader errors (bad characters) carry no mark object
        raise AtengenError(Location(path, 1), f"invalid YAML: {_one_line(str(e))}") from None
    if node is None:
        raise AtengenError(Location(path, 1), "empty YAML file")
    return _Converter(path).convert(node)


def _yaml_error(e: yaml.MarkedYAMLError, path: str) -> AtengenError:
    mark = e.problem_mark or e.context_mark
    line = mark.line + 1 if mark is not None else 1
    problem = e.problem or "syntax error"
    if "'\\t'" in problem or "\t" in problem:
        problem = "tab character; YAML indentation must use spaces"
    elif e.context:
        problem = f"{e.context}: {problem}"
    return AtengenError(Location(path, line), f"invalid YAML: {problem}")


def _one_line(s: str) -> str:
    return " ".join(s.split())
