"""atengen's YAML loader against PyYAML itself: equal values and equal line numbers.

Every document PyYAML reads, the loader reads the same (same values and types, same
line for every mapping, list, key and item), unless it rejects it on purpose with a
``file:line`` error (explicit tags, merge keys, duplicate or non-string keys, deep
nesting, alias bombs: see yaml/full.py). Inputs: every YAML file in the installed
wheels and under tests/, hand-picked documents, and Hypothesis mutations of them.
"""

from __future__ import annotations

import glob
import os
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atengen.errors import AtengenError
from atengen.yaml import full
from atengen.yaml.loader import load_yaml_text
from tests.support.model_helpers import REPO, WHEEL_YAMLS
from tests.support.yaml_reference import loaded_tree, reference_tree

TEST_YAMLS = sorted(glob.glob(os.path.join(REPO, "tests", "**", "*.yaml"), recursive=True))

DOCUMENTS = [
    "- func: a(Tensor self) -> Tensor\n  variants: function, method\n",
    "# c\n\n- func: f(int[2] x=[0,0]) -> Tensor  # comment\n  dispatch:\n    CPU, CUDA: k\n",
    "- func: f\n  tags: [core, 'pt2', \"x\"]\n  cpp_no_default_args: ['dim']\n  dispatch: {}\n",
    "backend: XLA\nsupported:\n- add\n-   sub: 1\n    mul: 2\nautograd:\n  - max\nx: ~\ny: 1\n",
    "a:\n- b: 1\n  c: 2\nd: 3\ne:\n  f:\n    g: yes\n  h: -1.5\n",
    "k: 'it is # not a comment'\nl: \"q\"\nm: a#b\nn: [ ]\no: [1, 2.0, null]\np:\n",
    "- tag: t\n  desc: |\n      two\n\n        lines # not a comment\n\n- tag: u\n  desc: |\n    x\n",
    "a: &x 1\nb: *x\nc: &y [1, {d: 2}]\ne: *y\n",
    "a: {b: 1, c: [d, e]}\nf: >\n  folded\n  text\ng: 'it''s'\nh: \"tab\\t\"\n",
    "a: caf\u00e9\nb: 0x1f\nc: 1_000\nd: .inf\ne: 2001-12-14\nf: x-y\ng: ''\n",
    "- - a\n  - b\n-\n  c: 1\n- ? d\n  : e\n",
    "=: x\na: {=: 1}\n",  # YAML 1.1's value key: PyYAML reads it as the string "="
]
# Read by PyYAML, rejected by atengen on purpose (line, message fragment).
REJECTED = {
    "a: !!str 1\n": (1, "YAML tags (!!str)"),
    "a: !!binary aGk=\n": (1, "YAML tags (!!binary)"),
    "a: !custom x\n": (1, "YAML tags (!custom)"),
    "a: !!set {b: null}\n": (1, "YAML tags (!!set)"),
    "a: !foo [1]\n": (1, "YAML tags (!foo)"),
    "a: 1\na: 2\n": (2, "duplicate key 'a' (first defined on line 1)"),
    "True: 1\n": (1, "mapping key True is not a string"),
    "x: &a {b: 1}\n<<: *a\n": (2, "merge keys"),
    "[a]: 1\n": (1, "mapping keys must be plain scalars"),
    "a: 2001-13-45\n": (1, "invalid YAML value '2001-13-45'"),
    "a: &a [*a]\n": (1, "recursive YAML alias *a"),
    "[" * 150 + "]" * 150 + "\n": (1, "nested more than 100 levels deep"),
    "".join(f"{' ' * i}k{i}:\n" for i in range(150)): (101, "nested more than 100 levels deep"),
}


def _bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return "\n".join(lines) + "\n"


def _assert_agrees(text: str, path: str = "f.yaml") -> str:
    """Equal trees when both read ``text``; returns 'same', 'both reject' or 'atengen rejects'."""
    try:
        expected = reference_tree(text)
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError):
        expected = "rejected"
    try:
        got = loaded_tree(load_yaml_text(text.encode("utf-8", "surrogatepass"), path))
    except AtengenError as e:
        assert len(e.format_all().splitlines()) == 1, e.format_all()
        assert e.location is not None and e.location.path == path
        return "both reject" if expected == "rejected" else "atengen rejects"
    assert expected != "rejected", f"PyYAML rejects what atengen reads: {text!r}"
    if expected is None:
        pytest.fail("atengen read an empty document")
    assert got == expected, text
    return "same"


def test_every_wheel_and_test_yaml_reads_as_pyyaml_reads_it():
    assert any(p.endswith("native_functions.yaml") for p in WHEEL_YAMLS)
    assert len(TEST_YAMLS) >= 3
    for path in WHEEL_YAMLS + TEST_YAMLS:
        with open(path, encoding="utf-8") as f:
            assert _assert_agrees(f.read(), path) == "same", path


@pytest.mark.parametrize("text", DOCUMENTS)
def test_documents_read_as_pyyaml_reads_them(text):
    assert _assert_agrees(text) == "same"


@pytest.mark.parametrize("text", sorted(REJECTED))
def test_rejected_on_purpose_with_file_line(text):
    line, fragment = REJECTED[text]
    with pytest.raises(AtengenError) as info:
        load_yaml_text(text.encode(), "f.yaml")
    assert info.value.location.line == line
    assert fragment in info.value.message


@pytest.mark.parametrize(
    "text, line, first",
    [
        ("a: &x 1\nb: &x 2\nc: *x\n", 2, 1),
        ("a: &x [1]\nb: &x [2]\nc: *x\n", 2, 1),
        ("- &x a\n- &x b\n- *x\n", 2, 1),
        ("a: &x\n  b: &x 1\n", 2, 1),  # inside the collection it names
        ("a: &x 1\nb: &x\n  c: 2\n", 2, 1),
    ],
)
def test_an_anchor_defined_again_is_rejected_as_pyyaml_rejects_it(text, line, first):
    assert _assert_agrees(text) == "both reject"
    with pytest.raises(AtengenError) as info:
        load_yaml_text(text.encode(), "f.yaml")
    assert info.value.format_all() == (
        f"f.yaml:{line}: error: invalid YAML: anchor &x defined again (first on line {first})"
    )


def test_the_value_key_is_a_string_key_and_no_value():
    assert load_yaml_text(b"=: x\n", "f.yaml") == {"=": "x"}
    with pytest.raises(AtengenError, match=r"^f.yaml:2: error: invalid YAML value '='"):
        load_yaml_text(b"=: x\na: =\n", "f.yaml")


def test_alias_bomb_is_cut_short():
    # 9**9 "lol"s if expanded; PyYAML's composer shares the nodes, a naive walk would not.
    text = _bomb()
    assert len(text) < 500
    with pytest.raises(AtengenError, match=r"^f.yaml:\d+: error: YAML aliases expand to more than"):
        load_yaml_text(text.encode(), "f.yaml")


def test_deep_flow_nesting_does_not_crash_the_interpreter():
    # PyYAML's C composer recurses once per level and overflows the C stack on this.
    text = "[" * 200_000 + "]" * 200_000 + "\n"
    with pytest.raises(AtengenError, match="nested more than 100 levels deep"):
        load_yaml_text(text.encode(), "f.yaml")


def test_limits_are_what_the_docs_say():
    assert (full.MAX_DEPTH, full.MAX_ALIAS_EXPANSION) == (100, 100_000)


# Mutations: edit a known document (delete, duplicate or insert characters drawn
# mostly from YAML's indicators) and require agreement on whatever comes out.
_ALPHABET = st.sampled_from(list(" \n-:#[]{},&*!|>'\"?%@`~\t.0123456789aTyNx\u00e9"))


@st.composite
def _mutated(draw) -> str:
    text = draw(st.sampled_from(DOCUMENTS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "repeat"]))
        if op == "insert":
            text = text[:i] + draw(st.text(_ALPHABET, min_size=1, max_size=3)) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 4)) :]
        else:
            text = text[:i] + text[i : i + 8] * 2 + text[i + 8 :]
    return text


@pytest.mark.slow
@settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_mutated())
def test_mutated_documents_read_as_pyyaml_reads_them(text):
    _assert_agrees(text)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
