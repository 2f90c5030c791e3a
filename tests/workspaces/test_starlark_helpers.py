"""The pure Starlark helpers of rules/private, unit-tested by real Bazel (tests/starlark): the
TORCH_CUDA_ARCH_LIST parser and the wheel's -gencode flags (cuda_archs.bzl), the release parser and
the stable ABI's torch_target check (releases.bzl), the distribution names of @rules_aten_pip
(pip.bzl's normalize_name), the library names the macros accept (generator_attrs.bzl's
target_name_error), and aten_wheel's line for a library that is not a lib<name>.so (wheel.bzl's
wheel_library_error).

skylib's unittest runs the assertions at analysis and writes a script that exits 1 with the
failed ones. It needs its toolchains registered, which this checkout's WORKSPACE does not do, so
the tests run from a workspace of their own in the temporary directory, with this checkout as
@rules_aten and nothing else but Debian's rule sets: no torch, no toolkit, no generator. That
workspace also holds a test with one wrong expectation, which must fail, naming the call: a
harness that passes whatever the helpers return would pass it.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO, bazel, own_output_base

pytestmark = pytest.mark.bazel

_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_starlark_helpers_{_KEY}"
OUTPUT_BASE = BASE / "output_base"
WORKSPACE = BASE / "workspace"
SUITE = "@rules_aten//tests/starlark:helpers_test"

WORKSPACE_FILE = f"""\
workspace(name = "starlark_helpers")

local_repository(name = "rules_aten", path = "{REPO}")

load("@rules_aten//rules:repositories.bzl", "rules_aten_debian_dependencies")

rules_aten_debian_dependencies()

load("@bazel_skylib//lib:unittest.bzl", "register_unittest_toolchains")

register_unittest_toolchains()
"""

# One expectation that is wrong: 9.0 is sm_90, not sm_80.
WRONG_TEST = """\
load("@bazel_skylib//lib:unittest.bzl", "asserts", "unittest")
load("@rules_aten//rules/private:common/cuda_archs.bzl", "parse_arch_list")

def _impl(ctx):
    env = unittest.begin(ctx)
    asserts.equals(env, (["-gencode=arch=compute_80,code=sm_80"], None), parse_arch_list("9.0", "X"))
    return unittest.end(env)

wrong_test = unittest.make(_impl)
"""


def _bazel(*args: str, check: bool = True):
    return bazel(*args, cwd=WORKSPACE, startup=own_output_base(OUTPUT_BASE), check=check)


@pytest.fixture(scope="module", autouse=True)
def _workspace():
    shutil.rmtree(WORKSPACE, ignore_errors=True)
    (WORKSPACE / "wrong").mkdir(parents=True)
    (WORKSPACE / "WORKSPACE").write_text(WORKSPACE_FILE)
    (WORKSPACE / "BUILD.bazel").write_text("")
    (WORKSPACE / "wrong" / "wrong.bzl").write_text(WRONG_TEST)
    (WORKSPACE / "wrong" / "BUILD.bazel").write_text(
        'load(":wrong.bzl", "wrong_test")\n\nwrong_test(name = "wrong_test")\n'
    )
    yield
    _bazel("shutdown", check=False)


def test_the_helpers_return_what_their_tests_expect() -> None:
    result = _bazel("test", "--test_output=errors", SUITE, check=False)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    # Every test of the suite ran (a suite that lost its tests would pass too).
    passed = [line for line in result.stdout.splitlines() if "PASSED" in line]
    assert len(passed) == 6, result.stdout


def test_a_wrong_result_fails_the_test_and_names_the_call() -> None:
    result = _bazel("test", "--test_output=errors", "//wrong:wrong_test", check=False)
    assert result.returncode == 3, result.stderr[-6000:]  # 3: built, and a test failed
    output = result.stdout + result.stderr
    assert "FAILED" in output, output[-6000:]
    assert "compute_90,code=sm_90" in output and "compute_80,code=sm_80" in output, output[-6000:]
