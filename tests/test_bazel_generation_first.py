"""A mistake in the op YAML is reported before any compile starts, and a regeneration rebuilds no
precompiled header (rules/private/pch.bzl).

The README quickstart's workspace, plus `myops_tuned`: the same op YAML in a library with copts of
its own, which therefore has precompiled headers of its own; they wait for its generator (pch.bzl's
`after`: the generator's `generated` stamp, a file of fixed bytes). `myops` has none: it uses the
shared ones of rules_aten's package, which do not depend on any op YAML.

With a misspelt type in ops.yaml, built with a fresh output base: the build fails with the
generator's `ops.yaml:1: error:` line, and the execution log shows that no source compiled and no
precompiled header of `myops_tuned` was built (a shared one may have been, or have come from the
disk cache: it waits for nothing, and Bazel stops it when the generator fails). With the YAML
fixed, the stamp's fixed bytes keep the precompiled headers from being rebuilt by a regeneration.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest

from tests.bazel_helpers import REPO, bazel, own_output_base, read_execution_log
from tests.quickstart_helpers import write_workspace

pytestmark = pytest.mark.bazel
# Bazel only with output bases of its own: pytest-xdist may run it beside the checkout's builds
# (tests/bazel_helpers.py).
BAZEL_OWN_OUTPUT_BASES = True

_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_generation_first_{_KEY}"


# A library with copts: its precompiled headers are its own (`myops_tuned_pch_<kind>`).
TUNED_LIBRARY = """
aten_codegen(
    name = "myops_tuned",
    copts = ["-DMYOPS_TUNED"],
    op_yaml = "ops.yaml",
    tags_yaml = "@torch//:tags.yaml",
)
"""


@pytest.fixture(scope="module")
def workspace() -> Path:
    root = write_workspace(BASE / "workspace", REPO / ".venv")
    build = root / "BUILD.bazel"
    build.write_text(build.read_text() + TUNED_LIBRARY)
    yield root
    bazel("shutdown", cwd=root, startup=own_output_base(BASE / "output_base"), check=False)


def _build(workspace: Path, log: Path, check: bool, *targets: str):
    return bazel(
        "build",
        f"--execution_log_json_file={log}",
        "//:libmyops.so",
        *targets,
        cwd=workspace,
        startup=own_output_base(BASE / "output_base"),
        check=check,
    )


def test_a_yaml_mistake_fails_before_any_compile(workspace: Path, tmp_path: Path) -> None:
    output_base = BASE / "output_base"
    if output_base.exists():
        bazel("clean", "--expunge", cwd=workspace, startup=own_output_base(output_base))
    ops = workspace / "ops.yaml"
    ops.write_text(ops.read_text().replace("float factor", "flaot factor"))
    log = tmp_path / "exec.json"
    result = _build(workspace, log, False, "//:libmyops_tuned.so")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if "ops.yaml:1: error:" in line]
    assert errors and "flaot" in errors[0], result.stderr[-4000:]
    spawns = read_execution_log(log)
    mnemonics = sorted({s.get("mnemonic", "?") for s in spawns})
    assert "AtenCodegen" in mnemonics and "CppCompile" not in mnemonics, mnemonics
    pch_outputs = [o for s in spawns if s.get("mnemonic") == "AtenPch" for o in s["listedOutputs"]]
    assert all("/rules/pch/atengen_pch_" in o for o in pch_outputs), pch_outputs


def test_a_regeneration_keeps_the_precompiled_headers(workspace: Path, tmp_path: Path) -> None:
    ops = workspace / "ops.yaml"
    ops.write_text(ops.read_text().replace("flaot factor", "float factor"))
    # myops_tuned's light precompiled header alone of its targets: it needs the generator's
    # stamp, so the generator runs, and it is the cheapest of its three.
    tuned = "//:myops_tuned_pch_light"
    first = tmp_path / "first.json"
    _build(workspace, first, True, tuned)
    built = [o for s in read_execution_log(first) for o in s["listedOutputs"]]
    assert any(o.endswith("/myops_tuned_pch_light.h.gch") for o in built), built
    # An edit of the YAML (a comment): the generators run again, the stamps are remade with the
    # same bytes, and nothing that waits for them runs again.
    ops.write_text(ops.read_text() + "# scale: x * factor\n")
    log = tmp_path / "second.json"
    _build(workspace, log, True, tuned)
    mnemonics = [s.get("mnemonic", "?") for s in read_execution_log(log)]
    assert mnemonics.count("AtenCodegen") == 2 and "AtenPch" not in mnemonics, sorted(mnemonics)
