"""Generated Autograd kernels for aten itself, loaded over torch's own and checked on PyTorch's
OpInfo samples: CI's slice of conformance/aten_autograd.py (the first 60 ops an OpInfo names,
two samples per OpInfo). The full run, over every op the generator takes, is the script's; its
results are in conformance/RESULTS.md."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.model_helpers import REPO

pytestmark = pytest.mark.slow  # g++ over torch's headers, then OpInfo samples twice


def test_generated_aten_autograd_equals_torchs_on_opinfo_samples(tmp_path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            f"{REPO}/conformance/aten_autograd.py",
            "--limit=60",
            "--max_samples=2",
            "--shards=2",
            f"--workdir={tmp_path / 'build'}",
            f"--json={report}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.stdout.rstrip().endswith("RESULT ok"), proc.stdout[-2000:]
    counts = json.loads(report.read_text())
    assert counts["mismatch_list"] == []
    # Every op built is served by the generated file (the dispatcher says so), ...
    assert counts["built_linked_loaded"] == 60
    # ... at least 50 distinct aten ops' generated nodes were in the samples' graphs, ...
    assert counts["generated_nodes_reached"] >= 50, counts
    reached = counts["samples_reaching_generated_kernels"]
    assert reached >= 90, counts
    # ... and on every such sample the outputs and gradients are bit-for-bit torch's.
    assert counts["outputs_equal"] == counts["gradients_equal"] == reached, counts
    checked = counts["gradcheck_both_pass"] + counts["gradcheck_both_fail"]
    assert checked + counts["gradcheck_skipped_large"] == reached, counts
    assert counts["gradcheck_both_pass"] >= 80, counts
