"""Every supported torch release against its own torchgen: the model equals that release's
torchgen (every NativeFunction, field by field), the registrations equal its gen.py for every key
(0 missing; each one left out listed with its reason), and each fact tool/atengen/facts/torch_facts.py
keeps by hand for the release is the release's (its torchgen's lists and rules, its tags YAML, its
libtorch_cpu's exports).

The releases are torch package directories, from $RULES_ATEN_RELEASES (colon-separated), which
`./dev test-releases` sets: the wheels of 2.11.0, 2.12.1 and 2.15.0 unpacked under
~/.cache/rules_aten/releases/, the default venv's 2.13.0 and the CUDA venv's 2.14.1. torchgen is
pure Python and never imports torch, so each release's runs in a subprocess with its directory
first on PYTHONPATH; no torch of those releases is imported. Without $RULES_ATEN_RELEASES, or
with an entry that is not a torch package directory, these tests are skipped, saying so (`./dev
test` on the default venv; CI runs `./dev test-releases`); where the release slice is required
(tests/support/slices.py) that fails instead, with one line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from atengen.facts import torch_facts as tf
from atengen.facts.wheel_facts import parse_wheel_facts
from tests.support import slices
from tests.support.model_helpers import REPO as _REPO

REPO = Path(_REPO)

RELEASES_ENV = "RULES_ATEN_RELEASES"


def _release_dirs() -> dict[str, Path]:
    """{version: torch package directory} of $RULES_ATEN_RELEASES."""
    found = {}
    for entry in filter(None, os.environ.get(RELEASES_ENV, "").split(":")):
        torch_dir = Path(entry)
        if not (torch_dir / "version.py").is_file():
            slices.missing(
                "releases",
                f"${RELEASES_ENV} names {torch_dir}, which is not a torch package directory (no "
                "version.py): `./dev setup-torches` unpacks the releases",
            )
        text = (torch_dir / "version.py").read_text()
        version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", text, re.M).group(1)
        found[version] = torch_dir
    return found


RELEASE_DIRS = _release_dirs()
if not RELEASE_DIRS:
    slices.missing(
        "releases", f"${RELEASES_ENV} is not set: `./dev test-releases` runs these (CI does)"
    )
pytestmark = pytest.mark.slow
VERSIONS = sorted(RELEASE_DIRS, key=lambda v: tuple(int(p) for p in v.split("+")[0].split(".")))


def _release(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def _native(version: str) -> Path:
    return RELEASE_DIRS[version].parent / "torchgen" / "packaged" / "ATen" / "native"


def _under_torchgen(version: str, *args: str) -> subprocess.CompletedProcess:
    """`python *args` with the release's torchgen (and this repository) first on the path."""
    env = dict(os.environ, PYTHONPATH=f"{RELEASE_DIRS[version].parent}:{REPO}")
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=900
    )


def test_every_supported_release_is_checked():
    assert sorted({_release(v) for v in VERSIONS}) == sorted(tf.SUPPORTED_RELEASES)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_model_equals_the_releases_torchgen(version):
    native = _native(version)
    yamls = (f"--op_yaml={native}/native_functions.yaml", f"--tags_yaml={native}/tags.yaml")
    oracle = _under_torchgen(version, "-m", "tests.support.oracle.torchgen_model", *yamls)
    assert oracle.returncode == 0, oracle.stderr[-3000:]
    where = _under_torchgen(version, "-c", "import torchgen; print(torchgen.__file__)")
    assert where.stdout.startswith(str(RELEASE_DIRS[version].parent)), where.stdout
    ours = subprocess.run(
        [sys.executable, "-m", "atengen", "dump", *yamls],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "tool")),
        timeout=900,
    )
    assert ours.returncode == 0, ours.stderr[-3000:]
    theirs = {r["name"]: r for r in map(json.loads, oracle.stdout.splitlines())}
    mine = {r["name"]: r for r in map(json.loads, ours.stdout.splitlines())}
    assert len(theirs) > 3000
    assert sorted(mine) == sorted(theirs)
    differing = [
        (name, sorted(f for f in theirs[name] if mine[name].get(f) != theirs[name][f]))
        for name in sorted(theirs)
        if mine[name] != theirs[name]
    ]
    assert differing == [], f"{len(differing)} records differ; first: {differing[:10]}"


@pytest.mark.parametrize("version", VERSIONS)
def test_registrations_equal_the_releases_gen_py_for_every_key(version):
    script = REPO / "conformance" / "aten_registrations.py"
    proc = subprocess.run(
        [sys.executable, str(script), f"--torch_dir={RELEASE_DIRS[version]}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.stdout.startswith(f"torch {version} (facts of {_release(version)})")
    assert proc.stdout.rstrip().endswith("RESULT ok")
    rows = dict(re.findall(r"^\| (\w+) \| (\d+ \| \d+ \| \d+ \| \d+) \|$", proc.stdout, re.M))
    torchgen, ours, missing, extra = rows.pop("all").split(" | ")
    assert int(torchgen) > int(ours) > 7000 and missing == extra == "0"
    # Each registration left out says why: a kernel the wheel does not export, or a Python meta
    # kernel torch serves; every other one torchgen makes atengen makes too.
    left_out = re.findall(r"^- left out (\w+): (\S+) \((.*)\)$", proc.stdout, re.M)
    assert left_out and all(
        "exports no at::native::" in why or "Python meta kernel" in why for _, _, why in left_out
    )
    for key, row in rows.items():
        t, o, m, e = (int(n) for n in row.split(" | "))
        assert (m, e) == (0, 0) and t == o + sum(k == key for k, _, _ in left_out), (key, row)
    for key in ("CPU", "CUDA", "Functionalize", "BackendSelect", "SparseCPU", "ZeroTensor"):
        assert int(rows[key].split(" | ")[1]) > 0, (key, rows[key])
    assert "| NestedTensorHPU | 88 | 0 | left out: needs a torch built" in proc.stdout


_TORCHGEN_LISTS = """
import json
import torchgen.gen_functionalization_type as g
import torchgen.native_function_generation as n
print(json.dumps({
    "not_functionalized": g.MUTABLE_OPS_NOT_USING_FUNCTIONALIZATION,
    "lone_out": n.OUT_OPS_THAT_DONT_GET_GROUPED_PROPERLY,
    "mutable_without_out": n.MUTABLE_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT,
}))
"""

# A rule of torchgen's model.py, tried on a one-op YAML: an op with `rand` in its name and no
# nondeterministic_seeded tag is refused, unless its name holds an exempt part.
_RANDOM_NAME_RULE = """
import sys, tempfile, os
from torchgen.gen import parse_native_yaml
tags = sys.argv[1]
for name in ("_philox_rand_x", "rand_x"):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(f"- func: {name}(Tensor key) -> Tensor\\n  dispatch:\\n    CPU: k\\n")
    try:
        parse_native_yaml(f.name, tags)
        print(name, "accepted")
    except (AssertionError, Exception) as e:
        print(name, "refused")
    os.unlink(f.name)
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_the_codegen_facts_kept_by_hand_are_the_releases_torchgens(version):
    release = _release(version)
    proc = _under_torchgen(version, "-c", _TORCHGEN_LISTS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lists = json.loads(proc.stdout)
    # torchgen lists resize_ and resize_as_, which functionalization writes by hand (the
    # HANDWRITTEN_FUNCTIONALIZE_GROUPS and a view group).
    assert tf.NOT_FUNCTIONALIZED_BY_RELEASE[release] == {
        f"aten::{n}" for n in lists["not_functionalized"] if n not in ("resize_", "resize_as_")
    }
    assert tf.LONE_OUT_OPS_ALLOWED == set(lists["lone_out"])
    assert tf.MUTABLE_OPS_WITHOUT_OUT_VARIANT == set(lists["mutable_without_out"])
    # The ops the release's YAML has, and those of the union that it lacks, are each release's.
    names = {
        e["func"].split("(")[0]
        for e in yaml.load(
            _native(version).joinpath("native_functions.yaml").read_text(), Loader=yaml.CSafeLoader
        )
    }
    assert {q.removeprefix("aten::") for q in tf.NOT_FUNCTIONALIZED_BY_RELEASE[release]} <= names
    proc = _under_torchgen(version, "-c", _RANDOM_NAME_RULE, str(_native(version) / "tags.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    exempt = "_philox_" in tf.RANDOM_NAME_EXEMPT_PARTS_BY_RELEASE[release]
    assert proc.stdout.split() == [
        "_philox_rand_x",
        "accepted" if exempt else "refused",
        "rand_x",
        "refused",
    ]
    # at::Tag is generated from the release's own tags YAML.
    tags = yaml.load((_native(version) / "tags.yaml").read_text(), Loader=yaml.CSafeLoader)
    assert tf.C10_TAGS_BY_RELEASE[release] == {t["tag"] for t in tags}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_wheel_facts_kept_for_a_run_without_them_are_the_releases(version):
    """The lists kept for a run without --torch_facts against what the release's libtorch_cpu
    exports (as tests/unit/facts/test_torch_facts.py on the installed one)."""
    from tests.support.wheel_oracle import nm_names

    release = _release(version)
    native, meta, _ = nm_names(RELEASE_DIRS[version] / "lib" / "libtorch_cpu.so")
    assert tf.WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE[release] == meta
    assert tf.NATIVE_KERNELS_NOT_EXPORTED.isdisjoint(native)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_probe_reads_the_releases_exports_as_nm_and_its_header_as_a_scan(version):
    """What tool/torch_probe.py reads of the release (its own symbol-table reader, no nm) is
    what `nm -DC --defined-only` shows of each library, and the FunctionsManual.h helpers are
    split as the header and libtorch_cpu say."""
    from tests.support.wheel_oracle import header_names, nm_names

    root = RELEASE_DIRS[version]
    probe = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    facts = json.loads(probe.stdout)
    assert facts["version"] == version
    libraries = {"libtorch_cpu"} | ({"libtorch_cuda"} if "+cu" in version else set())
    assert set(facts["native_kernels"]) == libraries
    for lib in sorted(libraries):
        native, meta, names = nm_names(root / "lib" / f"{lib}.so")
        assert set(facts["native_kernels"][lib]) == native, (lib, native)
        if lib == "libtorch_cpu":
            assert set(facts["structured_meta_classes"]) == meta
            assert set(facts["autograd_helpers_exported"]) == names
            details = names
    declared, inline = header_names(root)
    assert set(facts["autograd_helpers_declared"]) == declared
    assert set(facts["autograd_helpers_defined"]) == inline == {"wrap_opt_if"}
    helpers = parse_wheel_facts(probe.stdout).autograd_helpers
    assert helpers.callable_names == (details | inline) & declared
    assert helpers.unexported_names == declared - details - inline


@pytest.mark.parametrize("version", VERSIONS)
def test_set_output_takes_names_exactly_on_the_releases_whose_headers_declare_it(version):
    """torch_facts.SET_OUTPUT_NAMES_RELEASES against the release's own ATen/TensorMeta.h: its
    MetaBase's set_output_raw_strided ends in `DimnameList names` there and only there."""
    header = RELEASE_DIRS[version] / "include" / "ATen" / "TensorMeta.h"
    declaration = re.search(
        r"virtual void set_output_raw_strided\((.*?)\)", header.read_text(), re.S
    )
    assert declaration is not None, header
    takes_names = "DimnameList names" in declaration.group(1)
    assert takes_names == (_release(version) in tf.SET_OUTPUT_NAMES_RELEASES), declaration.group(1)
