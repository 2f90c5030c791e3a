"""The mapping and list types every loaded YAML value is built from."""

from __future__ import annotations

from atengen.errors import Location


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
