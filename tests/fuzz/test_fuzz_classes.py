"""The hostile-input classes (classes.py) in a short, fixed-seed mode: a few cases of each, and
a few rounds of concurrent writers. campaign.py runs them long (``--entry classes``)."""

from __future__ import annotations

import pytest

from tests.fuzz import campaign, classes

# Cases per class: the whole slice takes about 30 s on 2 cores.
SHORT_RUNS = {
    "real_entries": 40,
    "backend_mutation": 20,
    "encodings": 40,
    "special_files": 40,
    "deep_nesting": 30,
    "overlap": 40,
    "concurrency": 10,
}


def test_every_class_has_a_short_run():
    assert set(SHORT_RUNS) == set(campaign.CLASS_ENTRIES)
    assert set(classes.CLASSES) | {"concurrency"} == set(SHORT_RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHORT_RUNS))
def test_class_keeps_the_invariants(name):
    result = campaign.run_class(name, SHORT_RUNS[name], seed_value=20261126, budget_s=float("inf"))
    counts = result["counts"]
    assert counts["inputs"] == SHORT_RUNS[name], counts
    found = {kind: counts[kind] for kind in (*campaign.JUDGED, "failed writer") if counts[kind]}
    assert found == {}, dict(result["examples"])
