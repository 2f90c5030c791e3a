"""Two libraries of schemas at the edges of what aten_codegen reads, which used to build green and
then crash, now build, load and compute. tests/data/edge_ops/BUILD.bazel builds them with Bazel:

- edge_ops (the default ABI, bound to the build's torch release; ops.yaml, kernels.cpp):
  `edgeops::maybe_scale(Tensor x, Tensor(a!)? key) -> Tensor`, an optional tensor written in
  place beside a returned one, and `edgeops::opt_count(Tensor self, int?? n) -> int`;
- edge_ops_stable (abi = "stable"; stable_ops.yaml, stable_kernels.cpp):
  `edgestable::f(Tensor self, int?? x) -> int` and `edgestable::g(Tensor self, int[]?? sizes)
  -> int`, whose boxed calls died with SIGSEGV.

Each library is loaded into a fresh interpreter (tests/scripts/check_edge_ops.py) that checks
every registered schema equals torch._C.parse_schema("<namespace>::" + its ops.yaml text), and
every op's values with its optional argument given and None (maybe_scale's key tripled in place).
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

EDGE_OPS = REPO / "tests" / "data" / "edge_ops"
# Each library: its target, its op YAML, its namespace, and the value checks the script runs.
LIBRARIES = {
    "release": (
        "//tests/data/edge_ops:libedge_ops.so",
        "ops.yaml",
        "edgeops",
        (
            "maybe_scale",
            "opt_count_5",
            "opt_count_none",
            "count_keys",
            "count_keys_none",
            "maybe_self",
        ),
    ),
    "stable": (
        "//tests/data/edge_ops:libedge_ops_stable.so",
        "stable_ops.yaml",
        "edgestable",
        ("f_5", "f_none", "g_3", "g_empty", "g_none"),
    ),
}
SCHEMAS = {
    "edgeops": {
        "maybe_scale": "maybe_scale(Tensor x, Tensor(a!)? key) -> Tensor",
        "opt_count": "opt_count(Tensor self, int?? n) -> int",
        "count_keys": "count_keys(Tensor self, str[] keys, str[]? more) -> int",
        "maybe_self": "maybe_self(Tensor(a!) self, bool give) -> Tensor(a!)?",
    },
    "edgestable": {
        "f": "f(Tensor self, int?? x) -> int",
        "g": "g(Tensor self, int[]?? sizes) -> int",
    },
}


def op_yaml_schemas(name: str, namespace: str) -> dict[str, str]:
    """An op YAML's schemas, by op name, without the namespace."""
    schemas = {}
    for entry in yaml.safe_load((EDGE_OPS / name).read_text()):
        qualified, rest = entry["func"].split("(", 1)
        ns, op = qualified.split("::")
        assert ns == namespace, entry["func"]
        schemas[op] = f"{op}({rest}"
    return schemas


@pytest.mark.parametrize("abi", sorted(LIBRARIES))
def test_op_yamls_hold_the_edge_schemas(abi: str) -> None:
    _, op_yaml, namespace, _ = LIBRARIES[abi]
    assert op_yaml_schemas(op_yaml, namespace) == SCHEMAS[namespace]


@pytest.mark.parametrize("abi", sorted(LIBRARIES))
def test_edge_libraries_build_load_and_compute(abi: str, summary: list[str]) -> None:
    target, op_yaml, namespace, value_checks = LIBRARIES[abi]
    start = time.monotonic()
    library = build_library(target)
    built = time.monotonic() - start
    assert library.is_file(), library
    start = time.monotonic()
    schemas = op_yaml_schemas(op_yaml, namespace)
    run = run_script("check_edge_ops.py", str(library), namespace, json.dumps(schemas))
    ran = time.monotonic() - start
    # A crash (the SIGSEGV these libraries died of) leaves no report and a negative status.
    assert run.returncode >= 0, (run.returncode, run.stderr[-6000:])
    lines = run.stdout.strip().splitlines()
    assert lines, run.stderr[-6000:]
    report = json.loads(lines[-1])
    failed = sorted(name for name, ok in report["checks"].items() if not ok)
    assert failed == [], (failed, report["details"], run.stderr[-4000:])
    assert run.returncode == 0, run.stderr[-4000:]
    checks = report["checks"]
    assert sorted(checks) == sorted(
        [f"schema_{name}" for name in schemas] + [f"values_{name}" for name in value_checks]
    )
    if abi == "stable":
        # The auditors users run agree that it uses the stable ABI only, and nothing newer
        # than its target, 2.11.
        oldest = hub_tools.assert_stable(library, hub_tools.stable_wheel_policy(library))
        assert Version(oldest) <= Version("2.11.0"), oldest
    summary.append(
        f"edge-schema ops ({abi}, {namespace}): build {built:.0f} s, {len(checks)} checks "
        f"in {ran:.0f} s"
    )
