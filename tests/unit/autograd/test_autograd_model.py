"""Differential test of the autograd model against upstream torchgen.

Both load the torch wheel's own derivatives.yaml (with its native_functions.yaml
and tags.yaml). Every entry must agree on the op class name, the formulas after
substitution, the saved inputs and outputs, the arguments with derivatives, the
non-differentiable arguments, output_differentiability and the forward formulas;
and every NativeFunction must be matched to the same info, with the same forward
formulas (in-place rewrites included). torchgen is the oracle: when it cannot be
imported this test fails.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support.oracle.torchgen_autograd import (
    forward_record,
    info_record,
    packaged_derivatives_yaml,
    torchgen_derivative_records,
)
from tests.support.oracle.torchgen_model import packaged_yaml

# Loads torchgen's derivatives model as the oracle, about 5 s: the full suite, not the fast tier.
pytestmark = pytest.mark.slow

MAX_SHOWN = 8


def our_saved(attrs) -> list[list[str]]:
    return [[a.name, a.cpp_type, a.expr] for a in attrs]


@pytest.fixture(scope="module")
def both():
    from atengen.autograd.load import load_derivatives
    from atengen.cli.common import autograd_helpers
    from atengen.model.operator_model import load_model

    op_yaml, tags_yaml = packaged_yaml()
    deriv_yaml = packaged_derivatives_yaml()
    theirs = torchgen_derivative_records(deriv_yaml, op_yaml, tags_yaml)
    model = load_derivatives(
        str(deriv_yaml), load_model(str(op_yaml), str(tags_yaml)), autograd_helpers(None, None)
    )
    entries = {
        f"{schema}|{key}": info_record(info, our_saved)
        for (_, schema), per_key in model.infos.items()
        for key, info in per_key.items()
    }
    functions = {
        str(fd.func.func): {
            "infos": {key: info_record(info, our_saved) for key, info in fd.infos.items()},
            "forward": {
                key: [forward_record(x) for x in fds]
                for key, fds in (fd.forward_derivatives or {}).items()
            },
        }
        for fd in model.functions
        if fd.infos
    }
    return (entries, functions), theirs, model


def _field_mismatches(ours: dict[str, dict], theirs: dict[str, dict]) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    for key in sorted(ours.keys() & theirs.keys()):
        for field, want in theirs[key].items():
            if ours[key].get(field) != want:
                bad.setdefault(field, []).append(
                    f"{key}\n    ours:   {ours[key].get(field)!r}\n    theirs: {want!r}"
                )
    return bad


def _assert_same(ours: dict[str, dict], theirs: dict[str, dict], what: str) -> None:
    assert ours.keys() == theirs.keys(), (
        f"{what} only ours: {sorted(ours.keys() - theirs.keys())[:MAX_SHOWN]}; "
        f"only torchgen's: {sorted(theirs.keys() - ours.keys())[:MAX_SHOWN]}"
    )
    bad = _field_mismatches(ours, theirs)
    assert not bad, _report(bad)


def _report(bad: dict[str, list[str]]) -> str:
    return "\n".join(
        f"{field}: {len(items)} mismatch(es)\n  " + "\n  ".join(items[:MAX_SHOWN])
        for field, items in bad.items()
    )


def test_every_entry_equals_torchgen(both, summary: list[str]) -> None:
    (ours, _), (theirs, _), model = both
    assert len(theirs) >= 687, "the wheel's derivatives.yaml has 687 entries"
    _assert_same(ours, theirs, "entries")
    counts = model.counts()
    fields = Counter(f for r in theirs.values() for f, v in r.items() if v)
    summary.append(
        f"autograd model: {len(theirs)} derivatives.yaml infos equal torchgen's field by field "
        f"({counts['with_derivatives']} with a backward node, "
        f"{fields['forward_derivatives']} with forward formulas, "
        f"{fields['output_differentiability']} with output_differentiability)"
    )


def test_every_function_matches_the_same_info(both, summary: list[str]) -> None:
    (_, ours), (_, theirs), model = both
    _assert_same(ours, theirs, "matched functions")
    exact = sum(1 for f in model.functions if f.infos and f.is_exact_match)
    inplace_rewrites = sum(
        1
        for r in theirs.values()
        for fds in r["forward"].values()
        for fd in fds
        if fd["is_reusing_outplace_formula"]
    )
    summary.append(
        f"autograd model: {len(theirs)} of {len(model.functions)} NativeFunctions matched to the "
        f"same info as torchgen ({exact} exact, {len(theirs) - exact} by variant or derived; "
        f"{inplace_rewrites} in-place forward formulas rewritten identically)"
    )
