"""yaml/block.py, the line reader for plain block YAML: whatever it accepts, it reads exactly as
PyYAML does (same values, types and lines; tests/support/yaml_reference.py is the oracle, with no atengen
code), and it leaves everything else to the full parser. It must take the real op and tags YAMLs
itself, or the time it saves is not saved."""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atengen.yaml import block
from tests.support.model_helpers import REPO, WHEEL_YAMLS
from tests.support.yaml_reference import loaded_tree, reference_tree

TORCH_ATEN = [p for p in WHEEL_YAMLS if p.endswith(("native_functions.yaml", "tags.yaml"))]
TEST_DATA = sorted(glob.glob(os.path.join(REPO, "tests", "data", "**", "*.yaml"), recursive=True))


def _agrees(text: str) -> bool:
    """True if block reads ``text`` as PyYAML does, False if it leaves it to the full parser."""
    value = block.load(text, "f.yaml")
    if value is None:
        return False
    try:
        expected = reference_tree(text)
    except (yaml.YAMLError, ValueError, OverflowError):
        pytest.fail(f"block reads what PyYAML rejects: {text!r}")
    assert loaded_tree(value) == expected, text
    return True


def test_torch_op_and_tags_yaml_take_the_block_path():
    assert {os.path.basename(p) for p in TORCH_ATEN} == {"native_functions.yaml", "tags.yaml"}
    for path in TORCH_ATEN:
        with open(path, encoding="utf-8") as f:
            assert _agrees(f.read()), path


def test_every_test_yaml_reads_as_pyyaml_reads_it_or_falls_back():
    taken = 0
    for path in TEST_DATA:
        with open(path, encoding="utf-8") as f:
            taken += _agrees(f.read())
    assert taken >= len(TEST_DATA) - 2  # the backend and op YAMLs here are all block YAML


def test_values_and_lines_written_out():
    text = (
        "# header\n"
        "- func: f(Tensor self) -> Tensor  # trailing\n"
        "  dispatch:\n"
        "    CPU, CUDA: f_kernel\n"
        "  tags: [core, 'pt2', \"x\"]\n"
        "  structured: True\n"
        "  precomputed:\n"
        "  - dim -> int dim\n"
        "  desc: |\n"
        "      two\n"
        "\n"
        "        lines # kept\n"
        "\n"
        "- func: g\n"
        "  dispatch: {}\n"
        "  self: -norm(grad) * 2\n"
        "  other: 3 * x\n"
    )
    doc = block.load(text, "f.yaml")
    assert doc == [
        {
            "func": "f(Tensor self) -> Tensor",
            "dispatch": {"CPU, CUDA": "f_kernel"},
            "tags": ["core", "pt2", "x"],
            "structured": True,
            "precomputed": ["dim -> int dim"],
            "desc": "two\n\n  lines # kept\n",
        },
        {"func": "g", "dispatch": {}, "self": "-norm(grad) * 2", "other": "3 * x"},
    ]
    assert (doc.line, doc.item_lines) == (2, [2, 14])
    first, second = doc
    assert first.key_lines == {
        "func": 2,
        "dispatch": 3,
        "tags": 5,
        "structured": 6,
        "precomputed": 7,
        "desc": 9,
    }
    assert first["dispatch"].line == 4 and first["tags"].item_lines == [5, 5, 5]
    assert first["precomputed"].line == 8 and second["dispatch"].line == 15


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n",  # numbers, dates and special scalars
        "a: .inf\n",
        "a: ~\n",
        "a: 2001-12-14\n",
        "a: -1\n",
        "a: b\na: c\n",  # duplicate key: the full parser's error
        "True: x\n",
        "a: &x b\n",  # anchors, aliases, tags
        "a: *x\n",
        "a: !!str b\n",
        "a: >\n  folded\n",  # folded and chomped block scalars
        "a: |-\n  x\n",
        "a: |\n\n  leading blank\n",
        "a: 'it''s'\n",  # escapes and multi-line scalars
        'a: "tab\\t"\n',
        "a: b\n  c\n",
        "a: 'b\n  c'\n",
        "a: {b: 1}\n",  # flow mappings, nested flow
        "a: [b, [c]]\n",
        "a: b: c\n",
        "a:\n",  # null
        "- a\n-\n",
        "a: b",  # no final newline
        "a: \tb\n",  # tabs, CR, non-ASCII
        "a: b\r\n",
        "a: caf\u00e9\n",
        "---\na: b\n",
        "".join(f"{' ' * i}k{i}:\n" for i in range(30)) + " " * 30 + "x: y\n",  # deep
        "",
        "# only a comment\n",
    ],
)
def test_left_to_the_full_parser(text):
    assert block.load(text, "f.yaml") is None


# --- generated documents ------------------------------------------------------------------------

_GOOD_KEYS = ["func", "dispatch", "CPU, CUDA", "CPU,CUDA", "k_1", "_x", "tags", "desc"]
_KEYS = [*_GOOD_KEYS, "a b", "yes", "Null", "on", "func"]  # with a duplicate
_SCALARS = [
    "add(Tensor self) -> Tensor", "True", "false", "NO", "null", "word", "a:b", "a: b", "a #b",
    "a#b", "x:", "'q'", "'q # r'", "'it''s'", '"d"', '"e\\n"', "'open", "[a, 'b', \"c\"]", "[]",
    "[ ]", "[a,]", "[a, [b]]", "{}", "{a: b}", "|", "|-", ">", "&a x", "*a", "!t x", "-x",
    "-2.0 / y", "- z", "-", "1", "3 * y", "0x1f", "1_000", "1e5", ".5", ".inf", "~", "=", "<<",
    "2001-12-14", "12:30", "+1", "+x", "%x", "@x", "`x", "?x", "? x", "a  # c", "b   ",
]  # fmt: skip
# Scalars the block reader takes, drawn more often than the near misses above.
_GOOD_SCALARS = [
    "add(Tensor self) -> Tensor", "True", "false", "null", "word", "a:b", "a#b", "'q # r'", '"d"',
    "[a, 'b', \"c\"]", "[]", "{}", "-x", "-2.0 / y", "3 * y", "a  # c", "b   ",
]  # fmt: skip
_BODY = ["text", "# not a comment", "", "   ", "  more", "x: y", "- z"]


def _scalar(draw) -> str:
    return draw(st.sampled_from(_GOOD_SCALARS if draw(st.integers(0, 9)) < 8 else _SCALARS))


@st.composite
def _documents(draw) -> str:
    """Block YAML built as a tree (mostly within the subset, with near-miss scalars, keys,
    indentation, comments and blank lines), sometimes with one character changed."""
    lines: list[str] = []

    def extras(indent: int) -> None:
        for _ in range(draw(st.integers(0, 1))):
            pad = " " * draw(st.sampled_from([0, indent, indent + 1]))
            lines.append(pad + draw(st.sampled_from(["# c", "", "  "])))

    def value(indent: int, depth: int, prefix: str) -> None:
        """A value whose line starts with ``prefix`` (`key:` or `- `)."""
        form = draw(st.sampled_from(["scalar"] * 4 + ["block", "nested", "same"]))
        if form == "scalar" or depth > 2:
            lines.append(f"{prefix} {_scalar(draw)}")
        elif form == "block":
            lines.append(f"{prefix} |")
            pad = " " * (indent + draw(st.sampled_from([1, 2, 4])))
            for _ in range(draw(st.integers(1, 3))):
                lines.append(pad + draw(st.sampled_from(_BODY)))
        elif form == "same" and prefix.endswith(":"):
            lines.append(prefix)
            sequence(indent, depth + 1)  # a sequence at its key's indentation
        else:
            lines.append(prefix.rstrip())
            node(indent + draw(st.sampled_from([2, 2, 4, 1])), depth + 1)

    def mapping(indent: int, depth: int, first_prefix: str = "") -> None:
        if draw(st.integers(0, 4)) == 0:
            keys = draw(st.lists(st.sampled_from(_KEYS), min_size=1, max_size=4))
        else:
            keys = draw(st.lists(st.sampled_from(_GOOD_KEYS), min_size=1, max_size=4, unique=True))
        for n, key in enumerate(keys):
            extras(indent)
            lead = first_prefix if n == 0 and first_prefix else " " * indent
            value(indent, depth, f"{lead}{key}:")

    def sequence(indent: int, depth: int) -> None:
        for _ in range(draw(st.integers(1, 3))):
            extras(indent)
            if draw(st.booleans()):
                mapping(indent + 2, depth + 1, first_prefix=" " * indent + "- ")
            else:
                value(indent, depth, " " * indent + "-")

    def node(indent: int, depth: int) -> None:
        if draw(st.booleans()):
            sequence(indent, depth)
        else:
            mapping(indent, depth)

    node(0, 0)
    text = "\n".join(lines) + draw(st.sampled_from(["\n", "\n", "\n\n", ""]))
    if draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from([" ", "", "-", ":", "#", "\n"])) + text[i + 1 :]
    return text


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents())
def test_generated_documents_read_as_pyyaml_reads_them(text):
    _agrees(text)


@pytest.mark.slow
def test_generated_documents_often_take_the_block_path():
    """The property above is worth something only if the block reader takes many of them."""
    taken = 0

    @settings(max_examples=400, deadline=None, database=None)
    @given(_documents())
    def count(text):
        nonlocal taken
        taken += _agrees(text)

    count()
    assert taken >= 60, taken


# --- YAML 1.1's implicit types ------------------------------------------------------------------
# Every form PyYAML's resolver gives a type other than str, generated from PyYAML's own patterns
# (yaml.resolver.Resolver), one alternative at a time so that each is drawn: the block reader
# must read each scalar, and its near misses, as PyYAML does, or leave the document.


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a resolver pattern `^(?:a|b|...)$`."""
    assert pattern.startswith("^(?:") and pattern.endswith(")$"), pattern
    body = pattern[4:-2]
    out, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
        i += 1
    return [*out, body[start:]]


def _implicit_forms() -> list[tuple[str, int, re.Pattern[str]]]:
    """(tag, alternative number, compiled alternative) for every resolver of PyYAML's."""
    seen, forms = set(), []
    for resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.values():
        for tag, regexp in resolvers:
            if (tag, regexp.pattern) in seen:
                continue
            seen.add((tag, regexp.pattern))
            for n, alternative in enumerate(_alternatives(regexp.pattern)):
                compiled = re.compile(alternative, regexp.flags)
                forms.append((tag.rsplit(":", 1)[1], n, compiled))
    return forms


IMPLICIT_FORMS = _implicit_forms()


def test_the_implicit_forms_are_all_there():
    """The split found each type's alternatives (PyYAML 6: 18 bool words, 5 float forms, ...)."""
    tags = {}
    for tag, _, _ in IMPLICIT_FORMS:
        tags[tag] = tags.get(tag, 0) + 1
    assert tags == {
        "bool": 18,
        "float": 5,
        "int": 5,
        "merge": 1,
        "null": 5,
        "timestamp": 2,
        "value": 1,
        "yaml": 3,
    }


def _contexts(scalar: str) -> list[str]:
    return [
        f"a: {scalar}\n",
        f"- {scalar}\n",
        f"a: [{scalar}, b]\n",
        f"- x: {scalar}\n  y: z\n",
        f"{scalar}: x\n",
    ]


@pytest.mark.parametrize("form", IMPLICIT_FORMS, ids=[f"{tag}{n}" for tag, n, _ in IMPLICIT_FORMS])
def test_every_implicit_form_reads_as_pyyaml_reads_it(form):
    _, _, pattern = form

    @settings(max_examples=60, derandomize=True, deadline=None, database=None)
    @given(st.from_regex(pattern, fullmatch=True), st.sampled_from(["", "x", "_", "0", ".", "-"]))
    def check(scalar, extra):
        scalar = scalar.rstrip("\n")  # `$` also matches before a final newline
        # The form itself, and near misses: one character more or less at either end.
        for s in {scalar, scalar + extra, extra + scalar, scalar[1:], scalar[:-1]}:
            for text in _contexts(s):
                _agrees(text)

    check()


@pytest.mark.parametrize(
    "scalar, value",
    [
        ("-.inf", float("-inf")),
        ("+.Inf", float("inf")),
        ("-.INF", float("-inf")),
        ("+1_000", 1000),
        ("-0x_1f", -31),
        ("+0b1_0", 2),
        ("-1:30", -90),
        ("-1:30.5", -90.5),
        ("-1.5e+3", -1500.0),
    ],
)
def test_signed_numbers_are_numbers(scalar, value):
    """What the block reader once read as strings: the loader now gives PyYAML's number."""
    from atengen.yaml.loader import parse_yaml_text

    assert yaml.safe_load(f"a: {scalar}\n") == {"a": value}  # the oracle agrees with the table
    assert block.load(f"a: {scalar}\n", "f.yaml") is None
    assert parse_yaml_text(f"a: {scalar}\n", "f.yaml") == {"a": value}
