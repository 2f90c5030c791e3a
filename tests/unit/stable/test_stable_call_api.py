"""CI's slice of conformance/stable_call_api.py: `--tiny` on the dev venv's torch. A stable-ABI
library of `stablecall::` ops, each forwarding to a generated `atengen::stable::` call function,
is built with g++ and loaded; every OpInfo sample that reaches one must give torch's own result
(bit for bit or close), and errors of the same type. An overload with a Scalar argument is
checked with the Scalar as a float on both sides (what the call API carries)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.model_helpers import REPO

pytestmark = pytest.mark.slow


def test_the_call_api_gives_torchs_results_on_opinfo_samples(tmp_path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            f"{REPO}/conformance/stable_call_api.py",
            "--tiny",
            f"--workdir={tmp_path / 'work'}",
            f"--json={report}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.stdout.rstrip().endswith("RESULT ok")
    counts = json.loads(report.read_text())
    assert counts["mismatch_list"] == []
    # Every op of the tiny selection reached, through more than one overload of some.
    assert counts["roots_checked"] >= 8
    assert counts["overloads_checked"] > counts["roots_checked"]
    assert counts["samples_checked"] >= 50
    assert counts["verdicts"].get("equal", 0) >= 50
    # Overloads with a Scalar: through a typed C shim (add.Tensor's alpha, a double) and a fill
    # (full_like, exact), their integer Scalars given to both sides as floats.
    assert {"add.Tensor", "full_like"} <= set(counts["scalar_overloads_checked"])
    assert counts["samples_with_scalars_as_floats"] > 0
