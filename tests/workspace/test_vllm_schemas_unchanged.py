"""vLLM's operators with vLLM's own schema text, unchanged: tests/data/vllm_ops/ops.yaml takes six
schemas exactly as vLLM's csrc/torch_bindings.cpp hands them to torch (`Tensor!`, `Tensor!?`, an
op named apply_repetition_penalties_ whose written argument is not self, `-> ()` ops, a schema
over several lines with runs of spaces, "scale,Tensor? azp" without a space), in namespace
myllm. Both aten_codegen targets of tests/data/vllm_ops/BUILD.bazel are built with Bazel, one
per ABI (abi = "release": kernels.cpp, at:: operators; abi = "stable": stable_kernels.cpp,
torch::stable types), and each library is loaded into a fresh interpreter
(tests/scripts/check_vllm_ops.py) that checks: every registered schema equals
torch._C.parse_schema("myllm::" + vLLM's text), its text and which arguments it writes; values
against plain-torch references (float32, float64 for some ops, strided tensors, rotary_embedding
with key=None); torch.library.opcheck of every op; and one torch.compile(fullgraph=True,
backend="inductor") function calling every op, against eager.
"""

from __future__ import annotations

import json
import time

import pytest
import yaml
from packaging.version import Version

from tests.support import hub_tools
from tests.support.bazel_helpers import REPO, build_library
from tests.support.script_helpers import run_script

pytestmark = pytest.mark.bazel

VLLM_OPS = REPO / "tests" / "data" / "vllm_ops"
# github.com/vllm-project/vllm, csrc/torch_bindings.cpp, the commit ops.yaml's header names.
VLLM_COMMIT = "b77c410c4ca0e22516f09d40473b772fb44253e1"
# Each op's ops.def() argument: its C++ string literals, copied one by one from that file; the
# schema torch reads is their concatenation.
VLLM_LITERALS: dict[str, tuple[str, ...]] = {
    "rms_norm": (
        "rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ",
        "()",
    ),
    "fused_add_rms_norm": (
        "fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, ",
        "float epsilon) -> ()",
    ),
    "rotary_embedding": (
        "rotary_embedding(Tensor positions, Tensor! query,",
        "                 Tensor!? key, int head_size,",
        "                 Tensor cos_sin_cache, bool is_neox) -> ()",
    ),
    "silu_and_mul": ("silu_and_mul(Tensor! result, Tensor input) -> ()",),
    "apply_repetition_penalties_": (
        "apply_repetition_penalties_(Tensor! logits, Tensor prompt_mask, ",
        "Tensor output_mask, Tensor repetition_penalties) -> ()",
    ),
    "static_scaled_int8_quant": (
        "static_scaled_int8_quant(Tensor! result, Tensor input, Tensor scale,",
        "Tensor? azp) -> ()",
    ),
}
VLLM_SCHEMAS = {name: "".join(pieces) for name, pieces in VLLM_LITERALS.items()}
TARGETS = {
    "release": "//tests/data/vllm_ops:libvllm_ops.so",
    "stable": "//tests/data/vllm_ops:libvllm_ops_stable.so",
}
# torch.compile's backend in the script: inductor compiles the one graph in about 25 s here.
BACKEND = "inductor"


def test_ops_yaml_holds_vllms_text() -> None:
    """ops.yaml's schemas are vLLM's, character for character (rotary_embedding's line breaks
    fall between the C++ literals), in vLLM's order, and its header names the commit."""
    text = (VLLM_OPS / "ops.yaml").read_text()
    assert VLLM_COMMIT in text
    entries = yaml.safe_load(text)
    funcs = [entry["func"] for entry in entries]
    assert [f.split("(", 1)[0] for f in funcs] == [f"myllm::{n}" for n in VLLM_SCHEMAS]
    for func, (name, pieces) in zip(funcs, VLLM_LITERALS.items(), strict=True):
        assert "".join(func.splitlines()) == "myllm::" + VLLM_SCHEMAS[name], name
        if "\n" in func:
            assert func.splitlines()[1:] == list(pieces[1:]), name
    assert "\n" in funcs[list(VLLM_SCHEMAS).index("rotary_embedding")]


@pytest.mark.parametrize("abi", sorted(TARGETS))
def test_vllm_ops_keep_their_schemas_and_run(abi: str, summary: list[str]) -> None:
    start = time.monotonic()
    library = build_library(TARGETS[abi])
    built = time.monotonic() - start
    assert library.is_file(), library
    start = time.monotonic()
    run = run_script("check_vllm_ops.py", str(library), json.dumps(VLLM_SCHEMAS), BACKEND)
    ran = time.monotonic() - start
    lines = run.stdout.strip().splitlines()
    assert lines, run.stderr[-6000:]
    report = json.loads(lines[-1])
    failed = sorted(name for name, ok in report["checks"].items() if not ok)
    assert failed == [], (failed, report["details"], run.stderr[-4000:])
    assert run.returncode == 0, run.stderr[-4000:]
    checks = report["checks"]
    # Every op was checked for each kind of check.
    for name in VLLM_SCHEMAS:
        assert f"schema_{name}" in checks, name
        assert any(k.startswith(f"values_{name.removesuffix('_')}") for k in checks), name
        assert f"opcheck_{name}" in checks, name
    assert f"compile_{BACKEND}_outputs" in checks
    assert "values_rotary_embedding_neox_rot16_nokey_qkv_slices_float32" in checks
    if abi == "stable":
        # The auditors users run agree that it uses the stable ABI only, and nothing newer
        # than its target, 2.11.
        oldest = hub_tools.assert_stable(library, hub_tools.stable_wheel_policy(library))
        assert Version(oldest) <= Version("2.11.0"), oldest
    summary.append(
        f"vLLM ops ({abi}): build {built:.0f} s, {len(checks)} checks in {ran:.0f} s "
        f"(torch.compile {BACKEND}: {report['details'].get('compile_seconds')} s)"
    )


def test_schemas_are_vllms_own_spelling() -> None:
    """What the schemas above exercise, so that an edit of them keeps it: torch's `Tensor!`
    shorthand, `Tensor!?`, `-> ()`, a `,` without a space, and runs of spaces."""
    joined = "".join(VLLM_SCHEMAS.values())
    assert "Tensor! " in joined and "Tensor!? key" in joined
    assert "scale,Tensor? azp" in VLLM_SCHEMAS["static_scaled_int8_quant"]
    assert "query,                 Tensor!?" in VLLM_SCHEMAS["rotary_embedding"]
    assert all(s.endswith("-> ()") for s in VLLM_SCHEMAS.values())
    assert "(a!)" not in joined
