"""atengen's schema parser against torch's runtime parser (torch._C.parse_schema).

A schema atengen accepts is registered with torch when the generated library loads, so
torch must accept it too, and read it the same way: same name and overload, same
arguments (name, kwarg-only, mutable, has a default) and returns, and printing our
schema back through torch gives what torch prints for the original.

Where atengen rejects a schema torch accepts, the reason must be one of
JUSTIFIED_REJECTIONS: rules of the codegen (torchgen's, or ours) that torch's runtime
parser does not know about.
"""

from __future__ import annotations

import os
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from tests.fuzz import harness, strategies

# Our rejection message (names and values replaced by '…') -> why torch's acceptance is not
# enough.
JUSTIFIED_REJECTIONS = {
    r"argument '…': default value .* is not .*": "torch parses defaults without checking them "
    "against the type (bool a=1, int a=1.5, Tensor a=1.5 are accepted); the C++ and Python "
    "bindings then disagree about the value",
    r"duplicate argument name '…': .*": "torch keeps both; C++ cannot declare two parameters of one name",
    r"illegal operator name '…'|illegal overload name in '…'": "names must be C++ identifiers "
    "(torchgen's rule); torch's parser takes any identifier-ish text",
    r"inplace op '…' .*|mutable return '…' .*|mutable positional argument '…' .*"
    r"|returns must be all mutable .*|out argument '…' must alias .*|an out= op must .*"
    r"|out= ops whose out arguments .*|mutable arguments before self .*"
    r"|TensorOptions arguments .*|overload name '…' contains '…'.*"
    r"|argument '…' follows the out arguments.*": "torchgen's schema rules (model.py): "
    "aliasing and out= conventions the codegen relies on, which the runtime does not check",
    r"return type '…' has no C\+\+ return type.*": "torchgen has no C++ return type for it "
    "(fixed-size lists, optional non-Tensor values other than value types)",
    r"schema is not in canonical form.*|malformed argument '…': stray or missing space"
    r"|schema has unbalanced .*|illegal argument name in '…'|illegal return name in '…'"
    r"|argument '…' needs a type and a name|empty default value in argument '…'": "one spelling per schema (the YAML is diffed and "
    "grouped by its text); torch tolerates extra spaces",
    r"unrecognized alias annotation '…'|unrecognized alias analysis form '…'": "alias sets "
    "are single letters (torchgen's rule)",
    r"positional argument '…' has no default but follows '…'.*": "Python signatures forbid "
    "it; torch asserts on it for scalar defaults but lets `int[] y=[], int[] z` through",
    r"unrecognized type '…'": "torch's parser reads an unknown name (`aTensor`, `Tensor!`) "
    "as some type instead of failing; torchgen knows only its own types",
    r"dunder name '…' is not a known inplace augmented assignment": "torchgen's rule for "
    "`__i<op>__` names; torch takes any identifier",
    r"kwarg-only marker '…' may appear only once": "torch accepts a second '*' silently",
    r"list size in '…' is larger than 2147483647": "torch reads a list size as 64 bits but "
    "keeps it in 32: it registers int[2147483648] as int[-2147483648]",
}


def _normalised(message: str) -> str:
    return re.sub(r"'[^']*'", "'…'", message)


def _justified(message: str) -> bool:
    return any(re.fullmatch(p, _normalised(message)) for p in JUSTIFIED_REJECTIONS)


def _real_schemas() -> list[str]:
    from atengen.cli.common import installed_torch_yaml_dir  # noqa: PLC0415

    path = os.path.join(installed_torch_yaml_dir(), "native_functions.yaml")
    with open(path) as f:
        return [e["func"] for e in yaml.load(f, Loader=yaml.CSafeLoader)]


def test_every_real_schema_is_read_alike():
    schemas = _real_schemas()
    assert len(schemas) == 2584
    verdicts = [(s, harness.schema_verdict(s)) for s in schemas]
    disagreements = [(s, v) for s, v in verdicts if v != ("accept", "accept", "")]
    assert disagreements == []


@pytest.mark.slow
@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(strategies.schema())
def test_fuzzed_schemas_accepted_by_atengen_are_read_alike_by_torch(text):
    ours, theirs, detail = harness.schema_verdict(text)
    if ours == "accept":
        assert (theirs, detail) == ("accept", ""), text
    elif theirs == "accept":
        assert _justified(detail), f"unjustified rejection of {text!r}: {detail}"


def test_justifications_cover_real_messages():
    # Each pattern matches at least the message it was written for.
    samples = {
        "f(Tensor self, bool a=1) -> Tensor": "default value",
        "f(Tensor self, int x, int x) -> Tensor": "duplicate argument name",
        "f(Tensor self) -> int[1]?": "no C++ return type",
        "f(Tensor self,  int x) -> Tensor": "stray or missing space",
        "f(Tensor self)->Tensor": "with one space on each side",
    }
    for text, fragment in samples.items():
        ours, theirs, detail = harness.schema_verdict(text)
        assert (ours, theirs) == ("reject", "accept"), text
        assert fragment in detail and _justified(detail), detail


@pytest.mark.parametrize(
    "text",
    [
        # Found by the long campaign: torch parses a Device default with c10's device-string
        # parser, and repeats only a plain number for a sized int list.
        'f.out(*, Device out="x") -> Tensor',
        'g.Tensor(Tensor self, Device from="x") -> Scalar',
        'f(Device d="CPU") -> ()',
        'f(Device d="cuda:01") -> ()',
        'f(Device d="cuda:") -> ()',
        'f(Device d="cuda:2147483648") -> ()',
        'f(Device d="cuda:-1") -> ()',
        "f(Tensor self, int[2] z=Mean) -> (Tensor, Tensor)",
        # ... and their accepted neighbours.
        'f(Device d="cuda:2147483647") -> ()',
        "f(Device d='privateuseone:3') -> ()",
        'f(Device? d="meta") -> ()',
        "f(int[2] z=[Mean, 1]) -> ()",
        "f(int z=Mean) -> ()",
    ],
)
def test_campaign_findings_are_read_alike(text):
    ours, theirs, detail = harness.schema_verdict(text)
    assert ours == theirs, (text, detail)
    assert detail == "" or ours == "reject", detail


def test_optional_device_defaults_are_held_to_device_strings():
    # torch keeps any string as a `Device?` default (and prints it unquoted); we take only what
    # its device parser reads, a justified rejection.
    for text in ('f(Device? d="x") -> ()', 'f(Device? d="cuda:-1") -> ()'):
        ours, theirs, detail = harness.schema_verdict(text)
        assert (ours, theirs) == ("reject", "accept"), text
        assert _justified(detail), detail


@pytest.mark.parametrize(
    "text, verdict",
    [
        # torch's lexer reads True, False and None as constants, never as names.
        ("True(Tensor self) -> Tensor", "reject"),
        ("False(Tensor self) -> Tensor", "reject"),
        ("None(Tensor self) -> Tensor", "reject"),
        ("f.False(Tensor self) -> Tensor", "reject"),
        ("f(Tensor True) -> Tensor", "reject"),
        ("f(Tensor self) -> (Tensor None, Tensor b)", "reject"),
        ("True_(Tensor(a!) self) -> Tensor(a!)", "accept"),
        ("f.Nonesuch(Tensor self, int Falsey) -> (Tensor Truer, Tensor b)", "accept"),
        # It reads numbers with std::stoll (64 bits) and std::stod (a double, no underflow).
        ("f(int[99999999999999999999] x) -> ()", "reject"),
        ("f(int[9223372036854775808] x) -> ()", "reject"),
        ("f(int[2147483647] x) -> ()", "accept"),
        ("f(int x=9223372036854775808) -> ()", "reject"),
        ("f(int x=-9223372036854775809) -> ()", "reject"),
        ("f(int x=9223372036854775807, int y=-9223372036854775808) -> ()", "accept"),
        ("f(SymInt[2] x=[1,9223372036854775808]) -> ()", "reject"),
        ("f(int[2] x=9223372036854775808) -> ()", "reject"),
        ("f(Scalar x=9223372036854775808) -> ()", "reject"),
        ("f(Scalar x=9223372036854775808.0) -> ()", "accept"),
        ("f(float x=1.7976931348623159e308) -> ()", "reject"),
        ("f(float x=1.7976931348623157e308) -> ()", "accept"),
        ("f(float x=1e-400) -> ()", "reject"),
        ("f(float x=5e-324) -> ()", "reject"),
        ("f(float x=2.2250738585072014e-308) -> ()", "accept"),
        ("f(float x=0e-400) -> ()", "accept"),
        ("f(float[2] x=[1.0,1e400]) -> ()", "reject"),
    ],
)
def test_names_and_numbers_torch_rejects_are_rejected(text, verdict):
    ours, theirs, detail = harness.schema_verdict(text)
    assert (ours, theirs, detail if verdict == "accept" else "") == (verdict, verdict, ""), detail


def test_list_sizes_torch_wraps_are_rejected():
    # Between 2**31 and 2**63 torch accepts the size but registers another one.
    ours, theirs, detail = harness.schema_verdict("f(int[2147483648] x) -> ()")
    assert (ours, theirs) == ("reject", "accept")
    assert _justified(detail), detail
