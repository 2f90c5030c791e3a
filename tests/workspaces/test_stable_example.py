"""examples/stable_ops: aten_codegen(abi = "stable", torch_target = "2.11") built once against
.venv's torch, and the same `.so` loaded into every torch given, and the bad inputs of stable mode.

The library is built from the example's own workspace (its `local_repository(path = "../..")`),
with the CUDA toolkit when one is found (kernels.cu through nvcc, the static CUDA runtime), and
copied to a temporary directory; each interpreter of `$RULES_ATEN_STABLE_PYTHONS` (colon-separated;
`./dev test-releases` names the 2.11.0, 2.15.0 and CUDA venvs) and always .venv's runs the
example's demo.py on that copy and on the generated Python module (//:stableops_python: the
autograd formulas of derivatives.yaml, derived fake kernels): values against Python,
torch.autograd.gradcheck and gradgradcheck, torch.library.opcheck on every op, the in-place op
under torch.compile(fullgraph=True). Without the variable the .venv part still runs,
except where the release slice is required (tests/support/slices.py): there it fails with one line.

The bad inputs build a copy of the example (with its own output base, and no CUDA toolkit) after
one edit each: a torch_target out of range or malformed, a formula stable mode cannot translate,
<ATen/ATen.h> in a kernel, a kernel calling into c10. Each is one line and a failed build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.support import hub_tools, slices
from tests.support.bazel_helpers import REPO, VENV_PYTHON, bazel, one_fail_message, own_output_base

pytestmark = pytest.mark.bazel

EXAMPLE = REPO / "examples" / "stable_ops"
_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_stable_example_{_KEY}"
PYTHONS_ENV = "RULES_ATEN_STABLE_PYTHONS"
MODULE = "stableops_registrations.py"
UNSTABLE = re.compile(r"_ZN?K?(2at|3c10|5torch)")


def _pythons() -> list:
    named = [p for p in os.environ.get(PYTHONS_ENV, "").split(":") if p]
    if not named:
        slices.fail_if_required("releases", f"${PYTHONS_ENV} names no interpreter of another torch")
    pythons = [str(VENV_PYTHON)] + [p for p in named if Path(p) != VENV_PYTHON]
    return [pytest.param(p, id=Path(p).parent.parent.name) for p in pythons]


def _env(**settings: str) -> dict[str, str]:
    # The build's torch is .venv's; the CUDA toolkit is whatever the machine has, unless set.
    env = {k: v for k, v in os.environ.items() if k != "RULES_ATEN_PYTHON"}
    env["RULES_ATEN_PYTHON"] = str(VENV_PYTHON)
    env.update(settings)
    return env


@pytest.fixture(scope="module")
def library(summary: list[str], tmp_path_factory) -> Path:
    """The library, and beside it stableops_registrations.py, its generated Python module."""
    output_base = BASE / "output_base"
    start = time.monotonic()
    args = ("build", "--jobs=2", "--symlink_prefix=/", "//:libstableops.so", "//:stableops_python")
    bazel(*args, cwd=EXAMPLE, startup=own_output_base(output_base), env=_env())
    summary.append(
        f"stable example: bazel build //:libstableops.so {time.monotonic() - start:.0f} s"
    )
    info = bazel("info", "bazel-bin", cwd=EXAMPLE, startup=own_output_base(output_base), env=_env())
    built = Path(info.stdout.strip()) / "libstableops.so"
    # The same file for every interpreter, away from Bazel's tree (no RUNPATH leads back to it).
    copy = tmp_path_factory.mktemp("stable") / "libstableops.so"
    shutil.copyfile(built, copy)
    module = built.parent / "stableops_codegen" / "stableops_registrations.py"
    shutil.copyfile(module, copy.parent / module.name)
    yield copy
    bazel("shutdown", cwd=EXAMPLE, startup=own_output_base(output_base), check=False)


def _has_toolkit() -> bool:
    # What @local_cuda looks for (rules/private/repositories/local_cuda.bzl), for a CPU wheel: any toolkit.
    named = os.environ.get("RULES_ATEN_CUDA_DIR", "").strip()
    if named == "none":
        return False
    candidates = [named] if named else [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    return any(c and (Path(c) / "include" / "cuda_runtime.h").exists() for c in candidates)


def test_only_the_c_shim_of_torch(library: Path) -> None:
    undefined = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    assert not [line for line in undefined.splitlines() if UNSTABLE.search(line)], undefined
    assert "aoti_torch_" in undefined and "torch_call_dispatcher" in undefined
    dynamic = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    assert "RUNPATH" not in dynamic and "RPATH" not in dynamic, dynamic
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)
    assert "libtorch_cpu.so" in needed, needed
    # Neither torch's CUDA libraries nor c10, nor a CUDA runtime to find at load time.
    assert not [n for n in needed if re.match(r"lib(c10|torch_cuda|c10_cuda|cudart)\b", n)]


def test_the_project_reader_agrees_with_nm(library: Path) -> None:
    """The link check reads the symbols itself (atengen/facts/wheel_symbols.py), not with nm."""
    from atengen.facts.wheel_symbols import undefined_dynamic_symbols
    from atengen.linkcheck.stable import offenses

    symbols = undefined_dynamic_symbols(str(library))
    nm = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    assert sorted(s.name for s in symbols) == sorted(
        line.split()[-1].split("@")[0] for line in nm.splitlines() if line.strip()
    )
    assert offenses(symbols) == []


def test_abi_auditors_agree(library: Path) -> None:
    """torch-abi-audit: STABLE from torch_target on; kernel-abi-check: no symbol past the
    manylinux policy of the wheel's tag (atengen/shipping), no CPython symbol."""
    policy = hub_tools.stable_wheel_policy(library)
    assert hub_tools.assert_stable(library, policy) == "2.11.0"


def test_cuda_kernel_compiled_when_a_toolkit_is_found(library: Path) -> None:
    # The whole symbol table: the kernels are local (their stable types are hidden, and so are
    # functions taking them), which also keeps them out of other libraries' way.
    symbols = subprocess.run(
        ["nm", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    kernel = re.search(r" [tT] _ZN9stableops15scaled_add_cuda", symbols)
    assert (kernel is not None) == _has_toolkit()


@pytest.mark.parametrize("python", _pythons())
def test_loads_and_runs(library: Path, python: str) -> None:
    """demo.py in a fresh interpreter of that torch: every check passes; the CUDA
    registration loads (and runs when the torch has a GPU)."""
    assert Path(python).exists(), f"{PYTHONS_ENV} names {python}, which does not exist"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [python, str(EXAMPLE / "demo.py"), str(library), str(library.parent / MODULE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.stdout.strip(), result.stderr[-6000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    failed = sorted(k for k, ok in report["checks"].items() if not ok)
    assert failed == [], (failed, report["details"], result.stderr[-4000:])
    assert result.returncode == 0
    assert len(report["checks"]) >= 20
    for name in ("scaled_add_gradgradcheck", "mulcat_gradgradcheck_1", "opcheck_mulcat_grad"):
        assert report["checks"][name], name
    expected_cuda = {"registered", "ran"} if _has_toolkit() else {"absent"}
    assert report["details"]["cuda"] in expected_cuda, report["details"]


# --- bad input ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace() -> Path:
    """A copy of the example, rules_aten by absolute path; each test edits it, then restores it."""
    root = BASE / "bad_input"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("bazel-*"))
    text = (root / "WORKSPACE").read_text()
    (root / "WORKSPACE").write_text(text.replace('path = "../.."', f'path = "{REPO}"'))
    yield root
    bazel("shutdown", cwd=root, startup=own_output_base(BASE / "output_base_bad"), check=False)


def _build(
    workspace: Path, *args: str, target: str = "//:libstableops.so"
) -> subprocess.CompletedProcess:
    return bazel(
        "build",
        "--jobs=2",
        "--symlink_prefix=/",
        *args,
        target,
        cwd=workspace,
        startup=own_output_base(BASE / "output_base_bad"),
        env=_env(RULES_ATEN_CUDA_DIR="none"),
        check=False,
    )


def _edited(workspace: Path, name: str, old: str, new: str) -> None:
    path = workspace / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.fixture
def restore(workspace: Path):
    yield workspace
    for name in ("BUILD.bazel", "kernels.cpp", "derivatives.yaml"):
        shutil.copyfile(EXAMPLE / name, workspace / name)


@pytest.mark.parametrize(
    ("value", "start"),
    [
        ('"2.10"', 'rules_aten: torch_target = "2.10" is not a torch release from 2.11 to'),
        ('"abc"', 'rules_aten: torch_target = "abc" is not a torch release from 2.11 to'),
        ('"2.11.0"', 'rules_aten: torch_target = "2.11.0" is not a torch release from 2.11'),
        ('"2.99"', 'rules_aten: torch_target = "2.99" is newer than the build\'s torch'),
    ],
)
def test_bad_torch_target(restore: Path, value: str, start: str) -> None:
    _edited(restore, "BUILD.bazel", 'torch_target = "2.11"', f"torch_target = {value}")
    message = one_fail_message(_build(restore, "--nobuild"), start)
    assert "2.11" in message and "2.13" in message  # the allowed range


def test_formula_outside_the_subset(restore: Path) -> None:
    """A formula stable mode cannot turn into Python (a C++ library call): one
    `derivatives.yaml:LINE: error:` line naming the call, and no module."""
    _edited(restore, "derivatives.yaml", "other: grad * alpha", "other: grad * std::pow(alpha, 2)")
    result = _build(restore, target="//:stableops_python")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stderr[-6000:]
    line = (
        (restore / "derivatives.yaml")
        .read_text()
        .splitlines()
        .index("  other: grad * std::pow(alpha, 2)")
    )
    assert f"derivatives.yaml:{line + 1}: error: " in errors[0], errors[0]
    assert "'std::pow(...)'" in errors[0] and 'abi = "release"' in errors[0], errors[0]


def test_unknown_abi_refused(restore: Path) -> None:
    _edited(restore, "BUILD.bazel", 'abi = "stable",', 'abi = "stabel",')
    one_fail_message(_build(restore, "--nobuild"), 'rules_aten: abi = "stabel" is not "release"')


def test_aten_header_is_one_error(restore: Path) -> None:
    """<ATen/ATen.h> in a stable kernel: torch's own #error, one line, and no library."""
    _edited(
        restore,
        "kernels.cpp",
        "#include <algorithm>\n",
        "#include <algorithm>\n#include <ATen/ATen.h>\n",
    )
    result = _build(restore)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, result.stderr[-6000:]
    assert "ATen/ATen.h:" in errors[0] and errors[0].endswith(
        'error: #error "This file should not be included when either TORCH_STABLE_ONLY or '
        'TORCH_TARGET_VERSION is defined."'
    ), errors[0]
    assert "kernels.cpp" in result.stderr  # the include chain names the kernel


def test_unstable_symbol_fails_the_link_check(restore: Path) -> None:
    """A kernel that reaches c10's C++ functions (here declared by hand, as an unstable header
    would): the link check fails the build with one line for the c10:: group, naming a symbol."""
    _edited(
        restore,
        "kernels.cpp",
        "namespace stableops {\n\nnamespace {\n",
        "namespace c10 {\nvoid warn_once(const char* what);\n}  // namespace c10\n\n"
        "namespace stableops {\n\nnamespace {\n",
    )
    _edited(
        restore,
        "kernels.cpp",
        "  check_float_tensors(self, other);\n",
        '  check_float_tensors(self, other);\n  c10::warn_once("scaled_add");\n',
    )
    result = _build(restore)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("rules_aten: ")]
    assert len(lines) == 1, result.stderr[-6000:]
    assert lines[0].startswith(
        'rules_aten: //:libstableops.so (abi = "stable") needs c10:: symbols'
    )
    assert "_ZN3c109warn_onceEPKc" in lines[0]


def test_mistyped_kernel_is_named_at_its_declaration(restore: Path) -> None:
    """A kernel defined with other parameters than its generated declaration (`float alpha` for
    `double`): one `header:line: error:` line naming the kernel and both signatures, as the
    ABI-bound check gives, and no ABI-violation line for the library's own namespace."""
    _edited(
        restore,
        "kernels.cpp",
        "const torch::stable::Tensor& other, double alpha) {",
        "const torch::stable::Tensor& other, float alpha) {",
    )
    result = _build(restore)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stderr[-6000:]
    assert re.search(
        r"stableops/ops/scaled_add_native\.h:\d+: error: //:libstableops\.so: kernel "
        r"stableops::scaled_add_cpu\(torch::stable::Tensor const&, torch::stable::Tensor const&, "
        r"double\) is defined neither by the library nor by torch; defined as "
        r"stableops::scaled_add_cpu\(torch::stable::Tensor const&, torch::stable::Tensor const&, "
        r"float\) instead: make its parameters match this declaration",
        errors[0],
    ), errors[0]
    assert "needs stableops:: symbols" not in result.stderr
