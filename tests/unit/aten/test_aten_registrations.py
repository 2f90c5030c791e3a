"""Every (dispatch key, op) torchgen's own gen.py registers for the wheel's whole op YAML,
atengen registers too, and no other: conformance/aten_registrations.py, with the installed
torchgen run as the oracle."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from atengen.facts import torch_facts as tf
from tests.support.model_helpers import REPO

pytestmark = pytest.mark.slow  # torchgen's gen.py over the whole YAML: ~10 s


def test_registrations_equal_torchgens_for_every_key(installed_model) -> None:
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
    assert int(torchgen) > int(ours) > 7000 and missing == extra == "0"
    # Each served key: none missing, none extra; the same count where nothing is left out.
    for key in ("CPU", "Functionalize", "BackendSelect", "SparseCPU", "CUDA", "ZeroTensor"):
        t, o, m, e = rows[key].split(" | ")
        assert int(t) == int(o) > 0 and m == "0" and e == "0", (key, rows[key])
    # Left out, each with its reason: the kernels the wheel does not export (one op each), ...
    left_out = re.findall(
        r"^- left out (\w+): (\S+) \(.* exports no at::native::(\w+) ", proc.stdout, re.M
    )
    assert sorted(k for _, _, k in left_out) == sorted(tf.NATIVE_KERNELS_NOT_EXPORTED)
    # ... the no-op Meta kernels torch's Python meta kernels would lose to, ...
    python_meta = re.findall(
        r"^- left out Meta: (\S+) \(torch serves it a Python meta", proc.stdout, re.M
    )
    # (the list is every release's: the names of the installed YAML)
    names = {str(f.name) for f in installed_model.functions if f.namespace == "aten"}
    assert sorted(python_meta) == sorted(tf.INPLACE_OPS_WITH_PYTHON_META & names)
    # ... and the key a CPU torch cannot serve.
    assert "| NestedTensorHPU | 88 | 0 | left out: needs a torch built" in proc.stdout
