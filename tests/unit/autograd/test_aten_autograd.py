"""Generated Autograd kernels for aten itself, loaded over torch's own and checked on PyTorch's
OpInfo samples: CI's slice of conformance/aten_autograd.py (the first 60 functional ops an OpInfo
names, 8 in-place ops whose OpInfos have an in-place variant, 6 view ops, three ops that save a
Tensor?[], the in-place view op t_, functional and in-place `_foreach_` ops, and chunk, whose
several views tests/scripts/check_chunk_views.py checks), two samples per OpInfo, each through
its function variant, its in-place variant on a non-leaf clone, and a write through the view with
view replay. The full run, over every op the generator takes and every sample, is the script's;
its results are in conformance/RESULTS.md."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.model_helpers import REPO

pytestmark = pytest.mark.slow  # g++ over torch's headers, then OpInfo samples twice


FOREACH = (
    "_foreach_exp",
    "_foreach_exp_",
    "_foreach_lerp.List",
    "_foreach_lerp_.List",
    "_foreach_lerp.Scalar",
    "_foreach_lerp_.Scalar",
    "_foreach_sin_",
)
# chunk, several views; an entry with formulas for AutogradNestedTensor only.
BEYOND_OPINFO = ("chunk", "_test_autograd_multiple_dispatch.ntonly")


def test_generated_aten_autograd_equals_torchs_on_opinfo_samples(tmp_path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            f"{REPO}/conformance/aten_autograd.py",
            "--limit=60",
            "--limit_inplace=8",
            "--limit_view=6",
            # Ops saving a Tensor?[] (their indices), an in-place view op, foreach ops
            # (functional and in place, over one and three lists), and the two kernels no
            # OpInfo sample reaches (see below).
            "--also=index_put,index_put_,_unsafe_masked_index,t_,"
            + ",".join(FOREACH + BEYOND_OPINFO),
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
    built = [counts[f"built_{v}"] for v in ("functional", "in-place", "view")]
    assert counts["built_linked_loaded"] == sum(built), counts
    assert built[0] >= 60 and built[1] >= 8 and built[2] == 6, counts  # chunk among the views
    # ... at least 50 distinct aten ops' generated nodes were in the samples' graphs, ...
    assert counts["generated_nodes_reached"] >= 50, counts
    assert {
        "aten::IndexPutBackward0",
        "aten::UnsafeMaskedIndexBackward0",
        "aten::TBackward1",
        # A functional foreach op's node; the in-place ones record the per-tensor op's nodes.
        "aten::ForeachExpBackward0",
        "aten::ForeachLerpBackward1List",
        "aten::ExpBackward0",
        "aten::SinBackward0",
    } <= set(counts["nodes_reached"]), counts["nodes_reached"]
    # The foreach ops passed gradcheck with forward AD through their function and in-place
    # variants (their OpInfos do not support forward-over-reverse).
    assert {
        "_foreach_exp",
        "_foreach_exp(inplace)",
        "_foreach_lerp",
        "_foreach_lerp(inplace)",
        "_foreach_sin(inplace)",
    } <= set(counts["forward_ad_opinfos"]), counts["forward_ad_opinfos"]
    reached = counts["samples_reaching_generated_kernels"]
    assert reached >= 90, counts
    # ... the in-place and view variants reached generated kernels too, ...
    by_variant = counts["by_variant"]
    assert by_variant["inplace"]["samples_reaching_generated_kernels"] >= 8, by_variant
    assert by_variant["view"]["samples_reaching_generated_kernels"] >= 6, by_variant
    # ... and on every such sample the outputs and gradients are bit-for-bit torch's, and
    # gradcheck and gradgradcheck agree with torch's verdicts.
    assert counts["outputs_equal"] == counts["gradients_equal"] == reached, counts
    for check in ("gradcheck", "gradgradcheck"):
        verdicts = [f"{check}_both_pass", f"{check}_both_fail", f"{check}_skipped_large"]
        if check == "gradgradcheck":
            verdicts.append("gradgradcheck_not_supported")
        assert sum(counts[k] for k in verdicts) == reached, (check, counts)
    assert counts["gradcheck_both_pass"] >= 80, counts
    assert counts["gradcheck_both_pass_with_forward_ad"] >= 60, counts
    assert counts["gradgradcheck_both_pass"] >= 60, counts

    # No OpInfo sample reaches these kernels: chunk's (a dense tensor takes its
    # CompositeImplicitAutograd kernel; the script gives it a CPU kernel), and ntonly's (an
    # AutogradNestedTensor kernel: the script runs it on nested tensors). The script runs them
    # through torch's kernels, then through the generated ones.
    proc = subprocess.run(
        [
            sys.executable,
            f"{REPO}/tests/scripts/check_kernels_beyond_opinfo.py",
            str(tmp_path / "build" / "libaten_autograd.so"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    seen = json.loads(proc.stdout)
    theirs, ours = seen["torch"]["chunk"], seen["generated"]["chunk"]
    assert ours["generated"] and not theirs["generated"], seen
    assert ours["views"] and ours["nodes"] == ["ChunkBackward0"], ours
    # The error of an in-place write through one of several views names the node.
    ours["inplace_error"] = ours["inplace_error"].replace("aten::Chunk", "Chunk")
    assert "returns multiple views" in ours["inplace_error"], ours
    assert ours["forward_error"].startswith(theirs["forward_error"].rstrip(".")), seen
    for key in ("values", "nodes", "views", "next", "inplace_error", "backward_error"):
        assert ours[key] == theirs[key], (key, seen)
    theirs, ours = seen["torch"]["ntonly"], seen["generated"]["ntonly"]
    assert ours["generated"] and not theirs["generated"], seen
    for key in ("values", "node", "grad"):
        assert ours[key] == theirs[key], (key, seen)
