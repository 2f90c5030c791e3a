"""Load YAML with line numbers, strict about what PyYAML lets slip through.

Every mapping and list remembers its line and every key's line, and duplicate
keys (silently last-wins in PyYAML) are errors. Documents in the plain block
style all our YAMLs use are read by yaml_block's line parser; anything else, and
every malformed document, goes through PyYAML's C parser, whose node graph we
turn into the same values here.
"""

from __future__ import annotations

import yaml

from atengen.errors import AtengenError, Location
from atengen.yaml_block import Unsupported, parse_block_yaml
from atengen.yaml_values import YamlList, YamlMap

__all__ = ["YamlList", "YamlMap", "load_yaml", "load_yaml_text"]

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


# The implicit-tag flags PyYAML's parser passes for a plain scalar.
_PLAIN = (True, False)
_PLAIN_TYPES = frozenset("tag:yaml.org,2002:" + t for t in ("str", "bool", "int", "float", "null"))
_RESOLVER = yaml.resolver.Resolver()
_PLAIN_VALUES: dict[str, object] = {}


def _plain_scalar(value: str) -> object:
    """A plain scalar typed as PyYAML would type it (the block parser's ``plain``)."""
    try:
        return _PLAIN_VALUES[value]
    except KeyError:
        pass
    key = (value, _PLAIN)
    tag = _SCALAR_TAGS.get(key)
    if tag is None:
        tag = _SCALAR_TAGS[key] = _RESOLVER.resolve(yaml.ScalarNode, value, _PLAIN)
    if tag == _STR_TAG:
        result = value
    elif tag in _PLAIN_TYPES:  # immutable values, so one object can serve every use
        node = yaml.ScalarNode(tag, value)
        result = yaml.constructor.SafeConstructor().construct_object(node)
    else:  # timestamps, merge keys, `=`: leave them to the full PyYAML path
        raise Unsupported
    _PLAIN_VALUES[value] = result
    return result


_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"


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
        return parse_block_yaml(text, path, _plain_scalar)
    except Unsupported:
        pass
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
