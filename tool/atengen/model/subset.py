"""The operator model of only the op YAML entries a backend names, without parsing the rest.

An external or lazy-tensor backend names a few hundred of the ~2,600 entries of torch's
native_functions.yaml, yet parsing and modeling the whole file was most of its codegen's time.
Every relation the model draws between entries stays inside one *family*: the entries whose
base name, with a view_copy's `_copy` removed, is the same (add.Tensor, add_.Tensor and add.out
are grouped; view and view_copy form a view group; a structured_delegate or autogen name points
into the family, and when it does not, its family is read too). So modeling the families of the
named ops gives exactly the functions, groups and view groups the whole model has for them.

The file is cut into its top-level `- ` items by text. Whatever could make the cut or the
families differ from a real parse gives up (returns None) so that the caller models the whole
file: a column-0 line that is not an item, a comment or blank; an item that does not parse
alone as one entry; any error at all, which the whole file then reports with its full context;
a word (a backend's dispatch key) that a check over the whole model would look for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from atengen.cached import interned
from atengen.errors import AtengenError, SchemaError
from atengen.input_files import read_input_bytes
from atengen.model.native_function import NativeFunction, parse_tags_yaml
from atengen.model.operator_model import OperatorModel, build_model, gc_paused
from atengen.model.schema import parse_base_name, view_base_name
from atengen.yaml.loader import YamlList, load_yaml, parse_yaml_text

# An item's start; its op name when it starts the common way, `- func: name.overload(...`.
_ITEM_START = re.compile(r"^-(?: +func: +([A-Za-z0-9_.]+)\(| |$)", re.M)
# A column-0 line that is none of: indented, a comment, blank, an item start.
_UNSAFE_LINE = re.compile(r"^(?![ #]|- |-$|$)", re.M)


def family_of(op_name: str) -> str | None:
    """`add_.Tensor` -> `add`, `view_copy.dtype` -> `view`; None if it is no op name."""
    return _family_of_base(op_name.partition(".")[0])


@interned
def _family_of_base(base_name: str) -> str | None:
    try:
        return view_base_name(parse_base_name(base_name).base)
    except SchemaError:
        return None


def load_model_subset(
    op_yaml: str,
    tags_yaml: str,
    op_names: Iterable[str],
    absent_words: Iterable[str] = (),
    *,
    freeze_heap: bool = False,
) -> OperatorModel | None:
    """The model of the families of ``op_names``, or None where only the whole file will do.

    ``absent_words``: words (e.g. dispatch keys) that must not appear in the file outside
    whole-line comments.
    """
    try:
        text = read_input_bytes(op_yaml, "file").decode("utf-8")
    except (AtengenError, UnicodeDecodeError):
        return None  # the whole-file load reports it
    if "\x00" in text:
        return None
    if _named_outside_comments(text, absent_words):
        return None
    items = _items(text)
    if items is None:
        return None
    families = {fam for name in op_names if (fam := family_of(name)) is not None}
    try:
        with gc_paused(freeze_heap):
            valid_tags = parse_tags_yaml(load_yaml(tags_yaml), tags_yaml)
            return _build(text, items, families, op_yaml, valid_tags)
    except AtengenError:
        return None


def _named_outside_comments(text: str, words: Iterable[str]) -> bool:
    """Does a word appear, as a whole word, on a line that is not a whole-line comment?
    (Torch's own op YAML mentions XLA in a comment.)"""
    for word in set(words):
        pos = text.find(word)
        while pos >= 0:
            end = pos + len(word)
            whole = not _is_word_char(text, pos - 1) and not _is_word_char(text, end)
            line_start = text.rfind("\n", 0, pos) + 1
            if whole and not text[line_start:pos].lstrip(" ").startswith("#"):
                return True
            pos = text.find(word, end)
    return False


def _is_word_char(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


class _Item:
    __slots__ = ("start", "end", "line", "family", "entry", "entry_line", "read")

    def __init__(self, start: int, line: int, family: str | None):
        self.start = start
        self.end = 0  # set once the next item is found
        self.line = line
        self.family = family  # None: not recognized from its first line, always read
        self.entry: object = None  # the parsed entry, once read
        self.entry_line = 0
        self.read = False


def _items(text: str) -> list[_Item] | None:
    """The file's top-level items, or None if it is not a plain column-0 block list."""
    if _UNSAFE_LINE.search(text):
        return None
    items: list[_Item] = []
    line, previous = 1, 0
    for m in _ITEM_START.finditer(text):
        start = m.start()
        line += text.count("\n", previous, start)
        previous = start
        name = m.group(1)
        if items:
            items[-1].end = start
        items.append(_Item(start, line, family_of(name) if name else None))
    if not items:
        return None
    items[-1].end = len(text)
    return items


def _build(
    text: str, items: list[_Item], families: set[str], path: str, valid_tags: frozenset[str]
) -> OperatorModel | None:
    scalars: dict[str, object] = {}
    # Items not named by their first line are read to learn their family.
    unnamed = [it for it in items if it.family is None]
    if not _read(text, unnamed, path, scalars):
        return None
    for it in unnamed:
        func = it.entry.get("func") if isinstance(it.entry, dict) else None
        if isinstance(func, str):
            it.family = family_of(func.partition("(")[0].strip())
    while True:
        # An item whose family is still unknown has no usable `func`: building reports it.
        selected = [it for it in items if it.family is None or it.family in families]
        if not _read(text, [it for it in selected if not it.read], path, scalars):
            return None
        missing = _families_referenced([it.entry for it in selected]) - families
        if not missing:
            break
        families |= missing
    doc = YamlList(it.entry for it in selected)
    doc.line = 1
    doc.path = path
    doc.item_lines = [it.entry_line for it in selected]
    model = build_model(doc, path, valid_tags)
    if _families_referenced_by(model.functions) - families:
        return None
    return model


def _read(text: str, items: list[_Item], path: str, scalars: dict[str, object]) -> bool:
    """Parses ``items`` (in file order) in one go: their texts at their own lines, blank lines
    between, so that every line number is the file's. False unless that gives exactly one entry
    per item, starting inside the item (an item cut out of a bigger construct would not)."""
    if not items:
        return True
    parts: list[str] = []
    spans: list[tuple[int, int]] = []  # each item's first line and the line after it
    line = 1
    for it in items:
        parts.append("\n" * (it.line - line))
        piece = text[it.start : it.end]
        if not piece.endswith("\n"):
            piece += "\n"
        parts.append(piece)
        line = it.line + piece.count("\n")
        spans.append((it.line, line))
    doc = parse_yaml_text("".join(parts), path, scalars=scalars)
    if not isinstance(doc, YamlList) or len(doc) != len(items):
        return False
    if not all(
        first <= at < after for at, (first, after) in zip(doc.item_lines, spans, strict=True)
    ):
        return False
    for it, entry, at in zip(items, doc, doc.item_lines, strict=True):
        it.entry, it.entry_line, it.read = entry, at, True
    return True


def _families_referenced(entries: list[object]) -> set[str]:
    """Families that the raw entries' structured_delegate and autogen names point to."""
    names: list[str] = []
    for e in entries:
        if not isinstance(e, dict):
            continue
        for key in ("structured_delegate", "autogen"):
            value = e.get(key)
            if isinstance(value, str):
                names.extend(n.strip() for n in value.split(","))
    return {fam for n in names if (fam := family_of(n)) is not None}


def _families_referenced_by(functions: tuple[NativeFunction, ...]) -> set[str]:
    """The same, from the model, and the families of every function: a last check that the raw
    reading missed nothing."""
    names = [str(f.structured_delegate) for f in functions if f.structured_delegate is not None]
    names += [str(n) for f in functions for n in f.autogen]
    names += [str(f.func.name) for f in functions]
    return {fam for n in names if (fam := family_of(n)) is not None}
