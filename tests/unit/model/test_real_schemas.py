"""Real projects' schemas (tests/data/real_schemas, with its provenance), unchanged, in both
modes: what atengen accepts is registered exactly as torch parses the original, and what it
refuses is one of the few things a C++ kernel (or the stable ABI) cannot carry.

The whole corpus goes through conformance/real_schemas.py's checks; its latest figures are in
conformance/RESULTS.md.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

from atengen.cli.main import main as atengen_main
from tests.support.model_helpers import REPO

sys.path.insert(0, os.path.join(REPO, "conformance"))
import real_schemas  # noqa: E402

# Each refusal, names left out, and why a schema torch takes cannot be built as written.
JUSTIFIED_REFUSALS = {
    r"bad schema '…': duplicate argument name '…': .*": "C++ cannot declare the kernel",
    r"'…' in stable mode: type '…' \((argument|result) .*\): the stable ABI .*": "the stable "
    "ABI of the target release has no type for it",
    r"bad schema '…': unrecognized type '…': a kernel returning nothing is `-> \(\)`": "`-> None` "
    "is one NoneType result, which no C++ kernel returns",
    r"bad schema '…': unrecognized type '…'": "`Any`: no C++ kernel type",
    r"bad schema '…': malformed argument '…'": "tuple types `(Tensor, Tensor)?`",
    r"bad schema '…': positional argument '…' has no default but follows '…', .*": "C++ "
    "default arguments come last",
    r"argument '…' of '…' is a list of lists \('…'\), .*": "ABI-bound: the dispatcher hands a "
    "C++ kernel no list of lists (`str[][]`)",
    r"bad schema '…': argument '…': default value '…' is not .*": "a default torch registers "
    "as another value (`0x2FF` as 0) or that C++ cannot spell (`ScalarType x=39`)",
}
# The accepted counts measured when the corpus was collected: a ratchet, not a target.
ACCEPTED_AT_LEAST = {"bound": 1266, "stable": 1242}


def _justified(refusal: str) -> bool:
    if refusal.startswith("bad schema '"):  # the schema may hold quotes of its own
        refusal = "bad schema '…'" + refusal[refusal.index("': ") + 1 :]
    normalised = re.sub(r"'[^']*'", "'…'", refusal)
    return any(re.fullmatch(p, normalised) for p in JUSTIFIED_REFUSALS)


@pytest.mark.slow
def test_real_schemas_register_as_torch_parses_them():
    records = real_schemas.load_corpus()
    assert len(records) >= 1286 and len({r["project"] for r in records}) >= 15
    verdicts = real_schemas.corpus_verdicts(records, atengen_main)
    print("\n".join(real_schemas.summary(verdicts)))
    assert verdicts.mismatches == []
    for mode, at_least in ACCEPTED_AT_LEAST.items():
        assert verdicts.accepted(mode) >= at_least, mode
        unjustified = [
            r for r in verdicts.rows if r[mode] != "accepted" and not _justified(r[mode])
        ]
        assert unjustified == [], unjustified[:3]


def test_one_line_per_refusal_naming_the_schema(tmp_path):
    # A refusal is one line at the func: line of the YAML, naming what the author wrote.
    schema = "offload_tensor(Tensor a, int id, int id) -> Tensor"
    error, defined = real_schemas.run_mode(atengen_main, "bound", schema, "ds", tmp_path)
    assert defined == []
    assert error.startswith(f"bad schema 'ds::{schema}': duplicate argument name 'id'"), error
