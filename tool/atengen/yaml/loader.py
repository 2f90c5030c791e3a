"""Load YAML with line numbers, strict about what PyYAML lets slip through.

Every mapping and list remembers its line and every key's line; duplicate keys
(silently last-wins in PyYAML), explicit tags, merge keys, deep nesting and
alias bombs are errors. The document is read by yaml/block.py when it is plain block YAML,
else by PyYAML's C parser (yaml/full.py); the two give the same values and lines.
"""

from __future__ import annotations

from atengen.errors import AtengenError, Location
from atengen.input_files import read_input_bytes
from atengen.yaml import block
from atengen.yaml.values import YamlList, YamlMap

__all__ = ["YamlList", "YamlMap", "load_yaml", "load_yaml_text", "parse_yaml_text"]


def load_yaml(path: str, *, display_path: str | None = None) -> object:
    """Parse one YAML document from ``path``; mappings/lists carry line numbers.

    ``display_path`` is the name errors use (defaults to ``path``). Raises
    AtengenError with ``file:line`` for every kind of malformed input.
    """
    shown = display_path or path
    return load_yaml_text(read_input_bytes(path, "file", shown), shown)


def load_yaml_text(data: bytes, path: str) -> object:
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
    return parse_yaml_text(text, path)


def parse_yaml_text(
    text: str, path: str, first_line: int = 1, scalars: dict[str, object] | None = None
) -> object:
    """The value of a decoded document (see yaml/full.py's `load` for the arguments).

    Op, tags and backend YAMLs are plain block YAML, which yaml/block.py reads in a third of
    the time PyYAML's parser takes; anything else, errors included, goes to the full parser
    (and PyYAML, ~15 ms to import, is imported only then).
    """
    value = block.load(text, path, first_line, scalars)
    if value is not None:
        return value
    from atengen.yaml import full

    return full.load(text, path, first_line, scalars)
