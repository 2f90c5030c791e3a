"""Every (dispatch key, op) torchgen's own gen.py registers for the wheel's whole op YAML,
atengen registers too, and no other: conformance/aten_registrations.py, with the installed
torchgen run as the oracle."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.model_helpers import REPO

pytestmark = pytest.mark.slow  # torchgen's gen.py over the whole YAML: ~10 s


def test_registrations_equal_torchgens_for_every_key() -> None:
    proc = subprocess.run(
        [sys.executable, f"{REPO}/conformance/aten_registrations.py"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.stdout.rstrip().endswith("RESULT ok")
    rows = dict(re.findall(r"^\| (\w+) \| (\d+ \| \d+ \| \d+ \| \d+) \|$", proc.stdout, re.M))
    torchgen, ours, missing, extra = rows.pop("all").split(" | ")
    assert int(torchgen) == int(ours) > 7000 and missing == extra == "0"
    # Each served key: the same count on both sides, none missing, none extra.
    for key in ("CPU", "Meta", "CompositeExplicitAutograd", "Functionalize", "SparseCPU", "CUDA"):
        t, o, m, e = rows[key].split(" | ")
        assert int(t) == int(o) > 0 and m == "0" and e == "0", (key, rows[key])
