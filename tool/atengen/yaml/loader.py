"""Load YAML with line numbers, strict about what PyYAML lets slip through.

Every mapping and list remembers its line and every key's line, and duplicate
keys (silently last-wins in PyYAML) are errors. Documents in the plain block
style all our YAMLs use are read by yaml_block's line parser; anything else, and
every malformed document, goes to yaml_full, PyYAML's C parser, whose node graph
is turned into the same values.
"""

from __future__ import annotations

from atengen.errors import AtengenError, Location
from atengen.yaml.block import Unsupported, parse_block_yaml
from atengen.yaml.values import YamlList, YamlMap

__all__ = ["YamlList", "YamlMap", "load_yaml", "load_yaml_text"]

# Typing a plain scalar without importing PyYAML. YAML 1.1 (as PyYAML resolves it)
# makes a plain scalar something other than a string only by its first character:
# digits, signs and '.' (numbers, timestamps), '<' (merge), '=' (value), '~'
# (null), the first letters of the bool and null words below, and '!&*' (which
# no plain scalar starts with). Every other scalar is a string.
# tests/test_yaml_block.py checks all of this against PyYAML.
_MAYBE_NOT_STRING = frozenset("0123456789+-.<=~yYnNtTfFoO!&*")
_WORDS: dict[str, object] = {
    spelling: value
    for word, value in (
        ("true", True),
        ("yes", True),
        ("on", True),
        ("false", False),
        ("no", False),
        ("off", False),
        ("null", None),
    )
    for spelling in (word, word.capitalize(), word.upper())
}
_WORDS["~"] = None
# Other casings of these words (`tRUE`), and `y`/`n`, which YAML 1.1 lists as
# bools but PyYAML does not: PyYAML decides.
_LOWER_WORDS = frozenset({"true", "yes", "on", "false", "no", "off", "null", "y", "n"})
_PLAIN_VALUES: dict[str, object] = {}


def _plain_scalar(value: str) -> object:
    """A plain scalar typed as PyYAML would type it (the block parser's ``plain``)."""
    if value[0] not in _MAYBE_NOT_STRING:
        return value
    if value in _WORDS:
        return _WORDS[value]
    if value[0].isalpha() and value.lower() not in _LOWER_WORDS:
        return value
    if value in _PLAIN_VALUES:
        return _PLAIN_VALUES[value]
    from atengen.yaml import (
        full as yaml_full,  # numbers and odd spellings: rare, and PyYAML is slow to import
    )

    result = _PLAIN_VALUES[value] = yaml_full.plain_scalar(value)  # may raise Unsupported
    return result


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
    from atengen.yaml import full as yaml_full

    return yaml_full.load(text, path)
