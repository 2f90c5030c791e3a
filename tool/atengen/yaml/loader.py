"""Load YAML with line numbers, strict about what PyYAML lets slip through.

Every mapping and list remembers its line and every key's line; duplicate keys
(silently last-wins in PyYAML), explicit tags, merge keys, deep nesting and
alias bombs are errors. The document is read by PyYAML's C parser (yaml/full.py).
"""

from __future__ import annotations

from atengen.errors import AtengenError, Location
from atengen.yaml.values import YamlList, YamlMap

__all__ = ["YamlList", "YamlMap", "load_yaml", "load_yaml_text"]


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
    from atengen.yaml import full  # PyYAML takes ~20 ms to import: only when a YAML is read

    return full.load(text, path)
