"""The mapping and list types every loaded YAML value is built from."""

from __future__ import annotations

from atengen.errors import Location


class YamlMap(dict[str, object]):
    """A dict that knows its own line and the line of each key (keys are always strings: the
    loaders refuse any other)."""

    __slots__ = ("line", "key_lines", "path")
    line: int
    key_lines: dict[str, int]
    path: str

    def key_location(self, key: str) -> Location:
        return Location(self.path, self.key_lines.get(key, self.line))

    @property
    def location(self) -> Location:
        return Location(self.path, self.line)


class YamlList(list[object]):
    """A list that knows its own line and the line of each item."""

    __slots__ = ("line", "item_lines", "path")
    line: int
    item_lines: list[int]
    path: str

    def item_location(self, index: int) -> Location:
        return Location(self.path, self.item_lines[index])

    @property
    def location(self) -> Location:
        return Location(self.path, self.line)
