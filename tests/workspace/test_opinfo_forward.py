"""PyTorch's OpInfo samples against //:libaten_generated.so (the default op selection): CI's
slice of conformance/opinfo_forward.py. Every sample's results (values, dtype, shape, strides,
in-place and out= aliasing), its meta-device shapes and every error input's error must be the
same with the generated library loaded as with torch's own kernels."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.model_helpers import REPO


def test_opinfo_samples_equal_with_the_generated_library(aten_generated, tmp_path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            f"{REPO}/conformance/opinfo_forward.py",
            f"--library={aten_generated.library}",
            f"--ops_file={REPO}/aten_ops.txt",
            "--max_samples=2",
            f"--json={report}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.stdout.rstrip().endswith("RESULT ok")
    counts = json.loads(report.read_text())
    assert counts["mismatch_list"] == []
    # The OpInfos of the selection's ops, most of them served by generated kernels ...
    assert counts["opinfos"] >= 60
    assert counts["opinfos_served_by_library"] >= 60
    # ... through every variant, on meta, and through their error inputs.
    kinds = counts["by_kind"]
    assert kinds["function"] >= 1000 and kinds["meta"] == kinds["function"]
    assert kinds["inplace"] >= 300 and kinds["out"] >= 600
    assert kinds["error_input"] >= 50 and counts["error_inputs_raising_equal"] >= 50
    # Functionalization through the generated Functionalize kernels: the same graphs as torch's
    # own; any mutation left or replay that differs is torch's own too.
    fn = counts["functionalization"]
    assert fn["graphs"] >= 100 and fn["graphs_equal_to_torchs"] == fn["graphs"]
    assert all(g["torch_too"] for g in fn["graphs_with_mutating_ops"].values())
    assert fn["graphs_replaying_unequal"] == {}
