"""The full PyYAML path: YAML outside yaml_block's subset, and every malformed document.

Imported only when needed: PyYAML takes ~20 ms to import, more than parsing
torch's whole op YAML with yaml_block.
"""

from __future__ import annotations

import yaml

from atengen.errors import AtengenError, Location
from atengen.yaml.block import Unsupported
from atengen.yaml.values import YamlList, YamlMap

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


_STR_TAG = "tag:yaml.org,2002:str"
_PLAIN = (True, False)  # the implicit-tag flags PyYAML's parser passes for a plain scalar
_PLAIN_TYPES = frozenset("tag:yaml.org,2002:" + t for t in ("str", "bool", "int", "float", "null"))
_RESOLVER = yaml.resolver.Resolver()


def plain_scalar(value: str) -> object:
    """A plain scalar typed by PyYAML's YAML 1.1 rules; Unsupported for timestamps,
    merge keys and the other types only load() builds."""
    key = (value, _PLAIN)
    tag = _SCALAR_TAGS.get(key)
    if tag is None:
        tag = _SCALAR_TAGS[key] = _RESOLVER.resolve(yaml.ScalarNode, value, _PLAIN)
    if tag == _STR_TAG:
        return value
    if tag not in _PLAIN_TYPES:
        raise Unsupported
    return yaml.constructor.SafeConstructor().construct_object(yaml.ScalarNode(tag, value))


def load(text: str, path: str):
    """The document's value, converted from PyYAML's node graph."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        raise _yaml_error(e, path) from None
    except yaml.YAMLError as e:  # reader errors (bad characters) carry no mark object
        raise AtengenError(Location(path, 1), f"invalid YAML: {_one_line(str(e))}") from None
    if node is None:
        raise AtengenError(Location(path, 1), "empty YAML file")
    return _Converter(path).convert(node)


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
