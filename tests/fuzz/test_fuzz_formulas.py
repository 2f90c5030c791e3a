"""The formula translator of stable mode (atengen/pymodule/translate.py) under Hypothesis: for any
text, a Python expression that compiles, or a TranslationError of one line; never another
exception (a traceback), whatever the nesting, the characters or the tokens' order."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atengen.pymodule.translate import AtenNames, Scope, TranslationError, Variable, translate

SCOPE = Scope(
    namespace="ns",
    own_ops=frozenset({"op", "op_symint"}),
    variables={
        "grad": Variable("grad", 0, "grad"),
        "grads": Variable("grad", -1, "grads"),
        "self": Variable("input", 0, "self", tensor=True),
        "other": Variable("input", 1, "other", tensor=True),
        "alpha": Variable("input", 2, "alpha"),
        "lambda": Variable("input", 3, "lambda_"),
        "result": Variable("output", 0, "result", tensor=True),
    },
    aten=AtenNames(
        frozenset({"where", "mul"}), frozenset({"threshold_backward"}), frozenset({"sum"})
    ),
)
TOKENS = (
    "grad grads self other alpha lambda result op ns:: at:: std:: where mul sum sym_size "
    "sym_sizes scalar_type defined toDouble threshold_backward true false nullopt M_PI "
    "0 1 2.5 .5 1e3 3f 07 0x1 ( ) [ ] { } , . -> ? : :: + - * / % < > <= >= == != && || ! ~ "
    '& | ^ << >> ; = " "x" \\ @ # \' auto return static_cast double'
).split()
SLICE = settings(
    max_examples=200,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _check(formula: str) -> None:
    try:
        translation = translate(formula, SCOPE)
    except TranslationError as e:
        assert "\n" not in str(e) and str(e), repr(formula)
        return
    compile(translation.text, "<formula>", "eval")
    for saved in translation.properties.values():
        compile(saved.expr, "<saved>", "eval")


@SLICE
@given(st.lists(st.sampled_from(TOKENS), max_size=30).map(" ".join))
def test_token_soup(formula: str) -> None:
    _check(formula)


@SLICE
@given(st.text(max_size=60))
def test_any_text(formula: str) -> None:
    _check(formula)


@settings(SLICE, max_examples=40)
@given(st.integers(min_value=0, max_value=3000), st.sampled_from(["(", "-", "!", "{", "a."]))
def test_deep_nesting(depth: int, opener: str) -> None:
    closer = {"(": ")", "{": "}"}.get(opener, "")
    _check(opener * depth + "grad" + closer * depth)
