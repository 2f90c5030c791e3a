"""YAML documents read by PyYAML's C parser into YamlMap/YamlList values with line numbers.

Values are built straight from the C parser's event stream, in one loop with an
explicit stack, not from ``yaml.compose``'s node graph: PyYAML's composer
recurses once per nesting level in C (a few hundred thousand ``[`` crash the
interpreter) and follows aliases without limit (a few hundred bytes of nested
aliases expand to billions of nodes). Here nesting depth and alias expansion
are bounded, explicit tags are rejected, and every error is ``file:line``.

Where the event stream leaves a choice, the values are PyYAML's (``yaml.safe_load``): an anchor
defined twice is an error, as in PyYAML's composer, and the YAML 1.1 value key ``=`` is the
string "=" as a mapping key (PyYAML's constructor turns it into one) and an error elsewhere.
"""

from __future__ import annotations

import yaml

from atengen.errors import AtengenError, Location
from atengen.yaml.values import YamlList, YamlMap

_BaseLoader: type[yaml.CSafeLoader | yaml.SafeLoader]
try:  # The C parser is ~10x faster; the pure-Python one gives identical events.
    _BaseLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseLoader = yaml.SafeLoader

# Op, tags and backend YAMLs nest four levels deep; anything near these limits
# is not one of them, and would otherwise cost unbounded time or memory.
MAX_DEPTH = 100
# Nodes that aliases may add by repeating their anchor's value (each alias adds
# its anchored value's node count).
MAX_ALIAS_EXPANSION = 100_000

_STR_TAG = "tag:yaml.org,2002:str"
_VALUE_TAG = "tag:yaml.org,2002:value"
_PLAIN = (True, False)  # the implicit-tag flags of a plain scalar
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _resolve_tag(value: str) -> str:
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, _PLAIN)
    return tag


def load(
    text: str, path: str, first_line: int = 1, scalars: dict[str, object] | None = None
) -> object:
    """The document's value, with the same values and lines ``yaml.compose`` would give.

    For pieces of a larger file: ``first_line`` is the line number of the text's first line,
    and ``scalars`` a dict the pieces share to cache plain scalars' values in.
    """
    try:
        builder = _Builder(path, first_line - 1, {} if scalars is None else scalars)
        return builder.build(_BaseLoader(text))
    except yaml.MarkedYAMLError as e:
        raise _yaml_error(e, path, first_line) from None
    except yaml.YAMLError as e:  # reader errors (bad characters) carry no mark object
        raise AtengenError(
            Location(path, first_line), f"invalid YAML: {_one_line(str(e))}"
        ) from None


class _Open:
    """A mapping or list being built: its value, anchor, node count and pending key."""

    __slots__ = ("value", "anchor", "size", "key", "key_line")

    def __init__(self, value: YamlMap | YamlList, anchor: str | None):
        self.value = value
        self.anchor = anchor
        self.size = 1
        self.key: str | None = None  # for a mapping: the key whose value comes next
        self.key_line = 0


class _Builder:
    def __init__(self, path: str, line_offset: int, plain_values: dict[str, object]):
        self.path = path
        self.line_offset = line_offset
        # anchor -> (value, line, node count); a collection's anchor is set when it ends.
        self.anchors: dict[str, tuple[object, int, int]] = {}
        self.open_anchors: dict[str, int] = {}  # anchor -> line, of collections not ended yet
        self.expanded = 0  # nodes added by aliases so far
        # plain scalar -> its value: op YAMLs repeat a few words (CPU, True) thousands of times
        self.plain_values = plain_values

    def error(self, event: yaml.Event, message: str) -> AtengenError:
        # The parser marks every event it gives.
        line = event.start_mark.line if event.start_mark is not None else 0
        return AtengenError(Location(self.path, line + 1 + self.line_offset), message)

    def build(self, parser: yaml.CSafeLoader | yaml.SafeLoader) -> object:
        parser.get_event()  # StreamStart
        if parser.check_event(yaml.StreamEndEvent):
            raise AtengenError(Location(self.path, 1), "empty YAML file")
        parser.get_event()  # DocumentStart
        value = self.node(parser)
        parser.get_event()  # DocumentEnd
        event = parser.get_event()
        if not isinstance(event, yaml.StreamEndEvent):
            assert event is not None  # the parser gives events up to StreamEnd
            raise self.error(
                event, "invalid YAML: expected a single document in the stream, but found another"
            )
        return value

    def node(self, parser: yaml.CSafeLoader | yaml.SafeLoader) -> object:
        """The value of the node that starts at the parser's next event."""
        stack: list[_Open] = []
        line_offset = self.line_offset
        while True:
            event = parser.get_event()
            # Inside a document the parser gives an event, with its mark, or raises.
            assert event is not None and event.start_mark is not None
            line = event.start_mark.line + 1 + line_offset
            value: object
            if isinstance(event, yaml.ScalarEvent):
                is_key = bool(stack) and stack[-1].key is None and type(stack[-1].value) is YamlMap
                value, size = self.scalar(event, is_key), 1
                if event.anchor is not None:
                    self.define_anchor(event, event.anchor, line)
                    self.anchors[event.anchor] = (value, line, 1)
            elif isinstance(event, yaml.AliasEvent):
                value, line, size = self.alias(event)
            elif isinstance(event, yaml.CollectionStartEvent):  # a sequence or a mapping
                if len(stack) >= MAX_DEPTH:
                    raise self.error(event, f"YAML nested more than {MAX_DEPTH} levels deep")
                self.check_no_tag(event)
                if stack and stack[-1].key is None and isinstance(stack[-1].value, YamlMap):
                    raise self.error(event, "mapping keys must be plain scalars")
                out: YamlList | YamlMap
                if isinstance(event, yaml.SequenceStartEvent):
                    out = YamlList()
                    out.item_lines = []
                else:
                    out = YamlMap()
                    out.key_lines = {}
                out.line = line
                out.path = self.path
                if event.anchor is not None:
                    self.define_anchor(event, event.anchor, line)
                    self.open_anchors[event.anchor] = line
                stack.append(_Open(out, event.anchor))
                continue
            else:  # SequenceEnd or MappingEnd
                done = stack.pop()
                value, line, size = done.value, done.value.line, done.size
                if done.anchor is not None:
                    del self.open_anchors[done.anchor]
                    self.anchors[done.anchor] = (value, line, size)
            if not stack:
                return value
            self.add(stack[-1], event, value, line, size)

    def add(self, parent: _Open, event: yaml.Event, value: object, line: int, size: int) -> None:
        parent.size += size
        out = parent.value
        if isinstance(out, YamlList):
            out.append(value)
            out.item_lines.append(line)
        elif parent.key is None:  # a key
            if type(event) is not yaml.ScalarEvent:
                raise self.error(event, "mapping keys must be plain scalars")
            if not isinstance(value, str):
                # `True: x` or `1: x` are almost always typos; keys are names here.
                raise self.error(event, f"mapping key {value!r} is not a string")
            if value in out:
                raise self.error(
                    event, f"duplicate key '{value}' (first defined on line {out.key_lines[value]})"
                )
            parent.key = value
            parent.key_line = line
        else:
            out[parent.key] = value
            out.key_lines[parent.key] = parent.key_line
            parent.key = None

    def define_anchor(self, event: yaml.Event, anchor: str, line: int) -> None:
        """PyYAML's composer rejects an anchor defined twice in a document (YAML 1.2 would let
        the second replace the first); so does this loader, so that no document reads
        differently here and in PyYAML."""
        first = self.open_anchors.get(anchor)
        if first is None and anchor in self.anchors:
            first = self.anchors[anchor][1]
        if first is not None:
            raise self.error(
                event, f"invalid YAML: anchor &{anchor} defined again (first on line {first})"
            )

    def scalar(self, event: yaml.ScalarEvent, is_key: bool = False) -> object:
        self.check_no_tag(event)
        text = event.value
        if not event.implicit[0] or event.style:  # quoted or block: always a string
            return text
        if text in self.plain_values:
            return self.plain_values[text]
        tag = _resolve_tag(text)
        if tag == _VALUE_TAG and is_key:
            # YAML 1.1's "value" key `=`: PyYAML's SafeConstructor reads it as the string "="
            # (flatten_mapping), and has no constructor for it anywhere else. Not cached: as a
            # value it is an error.
            return text
        if tag == _STR_TAG:
            value = text
        elif tag == "tag:yaml.org,2002:merge":
            raise self.error(event, "YAML merge keys (<<) are not supported")
        else:
            try:
                value = _CONSTRUCTOR.construct_object(yaml.ScalarNode(tag, text))
            except (ValueError, OverflowError, yaml.YAMLError) as e:  # `2001-13-45` is no date
                raise self.error(
                    event, f"invalid YAML value '{text}': {_one_line(str(e))}"
                ) from None
        self.plain_values[text] = value
        return value

    def alias(self, event: yaml.AliasEvent) -> tuple[object, int, int]:
        anchor = event.anchor
        if anchor in self.open_anchors:
            raise self.error(event, f"recursive YAML alias *{anchor} (inside its own anchor)")
        if anchor not in self.anchors:
            raise self.error(event, f"invalid YAML: found undefined alias *{anchor}")
        value, line, size = self.anchors[anchor]
        self.expanded += size
        if self.expanded > MAX_ALIAS_EXPANSION:
            raise self.error(
                event,
                f"YAML aliases expand to more than {MAX_ALIAS_EXPANSION} nodes; "
                "write the values out instead",
            )
        return value, line, size

    def check_no_tag(self, event: yaml.ScalarEvent | yaml.CollectionStartEvent) -> None:
        # Explicit tags (`!!int x`, `!!binary`, `!!set`, `!custom`) build values
        # this tool's YAMLs never hold, or nothing at all; none is needed here.
        if event.tag is not None:
            tag = event.tag.replace("tag:yaml.org,2002:", "!!")
            raise self.error(event, f"YAML tags ({tag}) are not supported here")


def _yaml_error(e: yaml.MarkedYAMLError, path: str, first_line: int) -> AtengenError:
    mark = e.problem_mark or e.context_mark
    line = mark.line + first_line if mark is not None else first_line
    problem = e.problem or "syntax error"
    if "'\\t'" in problem or "\t" in problem:
        problem = "tab character; YAML indentation must use spaces"
    elif e.context:
        problem = f"{e.context}: {problem}"
    return AtengenError(Location(path, line), f"invalid YAML: {problem}")


def _one_line(s: str) -> str:
    return " ".join(s.split())
