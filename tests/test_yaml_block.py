"""yaml_block's line parser either gives exactly PyYAML's values and lines, or hands over;
yaml_loader types plain scalars exactly as PyYAML does without importing it."""

from __future__ import annotations

import itertools

import pytest
import yaml

from atengen.errors import AtengenError
from atengen.yaml import full as yaml_full
from atengen.yaml import loader as yaml_loader
from atengen.yaml.block import Unsupported, parse_block_yaml
from atengen.yaml.values import YamlList, YamlMap


def _pyyaml(text: str):
    node = yaml.compose(text, Loader=yaml_full._Loader)
    return yaml_full._Converter("f.yaml").convert(node)


def _assert_same(a, b, where="doc"):
    assert type(a) is type(b), where
    if isinstance(a, YamlMap):
        assert (list(a), a.line, a.key_lines) == (list(b), b.line, b.key_lines), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, YamlList):
        assert (len(a), a.line, a.item_lines) == (len(b), b.line, b.item_lines), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


SUBSET = [
    "- func: a(Tensor self) -> Tensor\n  variants: function, method\n",
    "# c\n\n- func: f(int[2] x=[0,0]) -> Tensor  # comment\n  dispatch:\n    CPU, CUDA: k\n",
    "- func: f\n  tags: [core, 'pt2', \"x\"]\n  cpp_no_default_args: ['dim']\n  dispatch: {}\n",
    "- func: f\n  precomputed:\n  - dim -> int dim\n  - int x\n  structured: True\n",
    "backend: XLA\nsupported:\n- add\n-   sub: 1\n    mul: 2\nautograd:\n  - max\nx: ~\ny: 1\n",
    "a:\n- b: 1\n  c: 2\nd: 3\ne:\n  f:\n    g: yes\n  h: -1.5\n",
    "k: 'it is # not a comment'\nl: \"q\"\nm: a#b\nn: [ ]\no: [1, 2.0, null]\np:\n",
    "- a:\n- b\n- c: [x]   # trailing\n",
    "- tag: t\n  desc: |\n      two\n\n        lines # not a comment\n\n- tag: u\n  desc: |\n    x\n",
    "a: |\n  x\n",
]


@pytest.mark.parametrize("text", SUBSET)
def test_subset_matches_pyyaml(text):
    fast = parse_block_yaml(text, "f.yaml", yaml_loader._plain_scalar)
    _assert_same(fast, _pyyaml(text))


HANDED_OVER = [
    "",
    "# only a comment\n",
    "a: b\n  continued\n",
    "a:\n  plain on its own line\n",
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: 1\na: 2\n",
    "True: 1\n",
    "<<: {}\n",
    "a: {b: 1}\n",
    "a: [b, [c]]\n",
    "a: 'it''s'\n",
    'a: "tab\\t"\n',
    "a:\tb\n",
    "a: b\r\n",
    "a: caf\u00e9\n",
    "- - a\n",
    "-\n  a: 1\n",
    "a: b: c\n",
    "a: x:\n",
    "a: 2001-12-14\n",
    "---\na: 1\n",
    "a:\n  b: 1\n c: 2\n",
    "- a: 1\n   b: 2\n",
    "a: 1\n- b\n",
    "just a scalar\n",
    "a: |\n\n  leading blank\n",
    "a: |\n  x\n     \n",
    "a: |\n  no final newline",
    "a: |-\n  x\n",
    "- |\n  x\n",
]


@pytest.mark.parametrize("text", HANDED_OVER)
def test_outside_subset_is_handed_over(text):
    with pytest.raises(Unsupported):
        parse_block_yaml(text, "f.yaml", yaml_loader._plain_scalar)


def test_load_yaml_text_falls_back_for_errors():
    with pytest.raises(AtengenError, match=r"^f.yaml:2: error: duplicate key 'a'"):
        yaml_loader.load_yaml_text(b"a: 1\na: 2\n", "f.yaml")


def _casings(word: str) -> list[str]:
    return ["".join(c) for c in itertools.product(*((ch.lower(), ch.upper()) for ch in word))]


@pytest.mark.parametrize(
    "word", ["true", "yes", "on", "false", "no", "off", "null", "y", "n", "~", "nope", "Tr"]
)
def test_plain_scalars_typed_as_pyyaml_types_them(word):
    for spelling in _casings(word):
        expected = yaml.safe_load(f"x: {spelling}")["x"]
        got = yaml_loader._plain_scalar(spelling)
        assert (type(got), got) == (type(expected), expected), spelling


@pytest.mark.parametrize(
    "value",
    ["func", "CPU", "NoCheck", "1", "-1", "0x1f", "1.5", ".inf", "1_000", "a(b) -> c", "_x"],
)
def test_plain_scalar_samples(value):
    expected = yaml.safe_load(f"x: {value}")["x"]
    got = yaml_loader._plain_scalar(value)
    assert (type(got), got) == (type(expected), expected)


def test_only_the_first_characters_pyyaml_resolves_can_make_a_non_string():
    resolvers = yaml.resolver.Resolver.yaml_implicit_resolvers
    assert set(resolvers) - {""} <= yaml_loader._MAYBE_NOT_STRING
