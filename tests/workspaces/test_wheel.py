"""aten_wheel: examples/stable_ops packaged as a wheel (abi = "stable") and the README quickstart's
library as one bound to the build's torch release, built once in one workspace (a copy of the
example with the quickstart in `bound/`, its own output base), then installed with pip into
fresh venvs (tests/support/wheel_helpers.py) and used from a directory with no Bazel output.

- the stable wheel in venvs of torch 2.11.0 and 2.15.0 (`./dev test-releases`' release venvs;
  skipped, saying so, without them, failed with one line where the release slice is required)
  and of .venv's 2.13: `import stableops`, demo.py's values and every torch.library.opcheck;
- the bound wheel in a venv of its own release works; pip's resolver, with no index that has
  torch 2.13 (`--no-index`), refuses it in one of 2.15.0 (with one, it would replace torch:
  docs/shipping.md); forced there with --no-deps, `import` fails with the release guard's line;
- Requires-Dist, tags, the RECORD, no RUNPATH, `auditwheel show` naming the file name's tag,
  the same bytes when the action runs again, and mypy --strict over a script using the stubs;
- `library = ":myops"` (aten_codegen's own name) fails the analysis with one line naming
  `:libmyops.so`;
- @local_cuda's line about the toolkit, noise for a CPU torch, printed only with
  RULES_ATEN_VERBOSE=1;
- aten_kernel_hub of the same two libraries: `kernels.get_local_kernel` (Hugging Face's
  `kernels`, tests/support/hub_tools.py) loads the stable kernel in torch 2.11.0, 2.15.0 and .venv's 2.13
  and its operators compute; the bound one in its own release, and finds no variant for 2.15.0;
  the same bytes when built again; torch-abi-audit and kernel-abi-check over the stable library.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from tests.support import hub_tools, slices
from tests.support.bazel_helpers import REPO, VENV_PYTHON, bazel, one_fail_message, own_output_base
from tests.support.quickstart_helpers import readme_blocks
from tests.support.release_guard_helpers import GUARD_LINE, needed_and_runpath
from tests.support.release_venvs import VENVS_DIR, installed_venv
from tests.support.wheel_helpers import pip_install, venv_over

pytestmark = pytest.mark.bazel

_KEY = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
BASE = Path(tempfile.gettempdir()) / f"rules_aten_wheel_{_KEY}"
BOUND_BUILD = """load("@rules_aten//rules:defs.bzl", "aten_codegen", "aten_kernel_hub", "aten_wheel")

aten_codegen(
    name = "myops",
    srcs = ["kernels.cpp"],
    op_yaml = "ops.yaml",
    tags_yaml = "@torch//:tags.yaml",
)

aten_wheel(
    name = "myops_wheel",
    distribution = "myops-bound",
    library = ":libmyops.so",
    version = "0.1",
)

aten_kernel_hub(
    name = "myops_hub",
    kernel_name = "myops-bound",
    library = ":libmyops.so",
    license = "Apache-2.0",
    version = 2,
)
"""
TARGETS = ("//:stableops_wheel", "//bound:myops_wheel", "//:stableops_hub", "//bound:myops_hub")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RULES_ATEN_PYTHON"}
    return {**env, "RULES_ATEN_PYTHON": str(VENV_PYTHON), "RULES_ATEN_CUDA_DIR": "none"}


def _bazel(workspace: Path, *args: str, check: bool = True, env: dict[str, str] | None = None):
    startup = own_output_base(BASE / "output_base")
    return bazel(*args, cwd=workspace, startup=startup, env=env or _env(), check=check)


def _the_wheel(directory: Path) -> Path:
    wheels = sorted(directory.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def workspace(summary: list[str]) -> Path:
    root = BASE / "workspace"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(
        REPO / "examples" / "stable_ops", root, ignore=shutil.ignore_patterns("bazel-*")
    )
    text = (root / "WORKSPACE").read_text()
    (root / "WORKSPACE").write_text(text.replace('path = "../.."', f'path = "{REPO}"'))
    blocks = readme_blocks()
    (root / "bound").mkdir()
    for name in ("ops.yaml", "kernels.cpp"):
        (root / "bound" / name).write_text(blocks[name])
    (root / "bound" / "BUILD.bazel").write_text(BOUND_BUILD)
    yield root
    _bazel(root, "shutdown", check=False)


@pytest.fixture(scope="module")
def wheels(workspace: Path, summary: list[str], tmp_path_factory) -> dict[str, Path]:
    """Both wheels, built once and copied out of Bazel's tree."""
    _bazel(workspace, "build", "--jobs=2", "--symlink_prefix=/", *TARGETS)
    bin_dir = Path(_bazel(workspace, "info", "bazel-bin").stdout.strip())
    out = tmp_path_factory.mktemp("wheels")
    copies = {}
    for name, directory in (("stable", "stableops_wheel"), ("bound", "bound/myops_wheel")):
        built = _the_wheel(bin_dir / directory)
        copies[name] = Path(shutil.copyfile(built, out / built.name))
    return copies


@pytest.fixture(scope="module")
def hubs(workspace: Path, wheels: dict[str, Path], tmp_path_factory) -> dict[str, Path]:
    """Both kernel hub trees and the stable library, built with the wheels, copied out."""
    bin_dir = Path(_bazel(workspace, "info", "bazel-bin").stdout.strip())
    out = tmp_path_factory.mktemp("hubs")
    copies = {}
    for name, directory in (("stable", "stableops_hub"), ("bound", "bound/myops_hub")):
        copies[name] = Path(shutil.copytree(bin_dir / directory, out / name))
    library = out / "libstableops.so"
    copies["stable_library"] = Path(shutil.copyfile(bin_dir / "libstableops.so", library))
    return copies


def test_library_given_aten_codegens_own_name(workspace: Path) -> None:
    """`library = ":myops"`, the name given to aten_codegen (its archive), fails the analysis
    with one line naming the target to give; nothing is compiled."""
    # In the package of the aten_codegen, whose targets are private to it; removed after.
    build = workspace / "bound" / "BUILD.bazel"
    build.write_text(
        BOUND_BUILD + '\naten_wheel(name = "w", distribution = "named", library = ":myops", '
        'version = "1.0")\n'
    )
    try:
        result = _bazel(workspace, "build", "--nobuild", "//bound:w", check=False)
    finally:
        build.write_text(BOUND_BUILD)
    one_fail_message(
        result,
        "rules_aten: //bound:w: library = //bound:myops is not a lib<name>.so: give library = "
        '"//bound:libmyops.so", the shared library of aten_codegen(name = "myops")',
    )


def test_cuda_choice_printed_only_when_asked_for_a_cpu_torch(workspace: Path) -> None:
    """@local_cuda's line (here `no CUDA toolkit (...=none)`) is noise for a CPU torch: printed
    only with RULES_ATEN_VERBOSE=1. Each step changes the variable, which fetches @local_cuda
    again (its `environ`), so that each prints what a first fetch would."""
    import torch

    if torch.version.cuda:
        pytest.skip(f"torch {torch.__version__} is a CUDA build, for which the line is printed")
    line = "rules_aten: no CUDA toolkit ($RULES_ATEN_CUDA_DIR=none), for torch "
    for verbose, printed in (("0", False), ("1", True), (None, False)):
        env = _env() | ({"RULES_ATEN_VERBOSE": verbose} if verbose is not None else {})
        env = {k: v for k, v in env.items() if verbose is not None or k != "RULES_ATEN_VERBOSE"}
        result = _bazel(workspace, "build", "--nobuild", "@local_cuda//:check", env=env)
        assert (result.stderr.count(line) == 1) == printed, (verbose, result.stderr[-4000:])


def _run_demo(python: Path, where: Path) -> dict:
    # From a directory holding demo.py alone: nothing of the build, nor registrations.py.
    shutil.copyfile(REPO / "examples" / "stable_ops" / "demo.py", where / "demo.py")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    result = subprocess.run(
        [str(python), "demo.py", "--package", "stableops"],
        capture_output=True,
        text=True,
        cwd=where,
        env=env,
        timeout=600,
    )
    assert result.stdout.strip(), result.stderr[-6000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _release_venv(version: str) -> Path:
    venv = installed_venv(version)
    if venv is None:
        slices.missing("releases", f"no venv of torch {version} under {VENVS_DIR}")
    return venv / "bin" / "python"


@pytest.mark.parametrize("version", ["2.11.0", "2.15.0", "dev"])
def test_stable_wheel_installs_and_runs(wheels: dict[str, Path], version: str, tmp_path: Path):
    torch_python = VENV_PYTHON if version == "dev" else _release_venv(version)
    python = venv_over(torch_python, tmp_path / "venv")
    installed = pip_install(python, wheels["stable"])
    assert installed.returncode == 0, installed.stderr
    run = tmp_path / "run"
    run.mkdir()
    report = _run_demo(python, run)
    failed = sorted(k for k, ok in report["checks"].items() if not ok)
    assert failed == [], (failed, report["details"])
    assert report["details"]["package"].startswith(str(tmp_path / "venv")), report["details"]
    assert {f"opcheck_{op}" for op in ("scaled_add", "mulcat", "clamp_abs_inplace")} <= set(
        report["checks"]
    )


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return z.read(name).decode()


def test_requirements_and_tags(wheels: dict[str, Path]) -> None:
    from packaging.utils import parse_wheel_filename
    from wheel.wheelfile import WheelFile

    assert "requires-dist: torch>=2.11\n" in _metadata(wheels["stable"]).lower()
    import torch

    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    assert f"requires-dist: torch=={release}.*\n" in _metadata(wheels["bound"]).lower()
    for wheel in wheels.values():
        _, _, _, tags = parse_wheel_filename(wheel.name)
        (tag,) = tags
        assert (tag.interpreter, tag.abi) == ("py3", "none"), wheel.name
        assert tag.platform.startswith("manylinux_2_") and tag.platform.endswith("_x86_64")
        with WheelFile(str(wheel)) as z:  # reading checks every file against RECORD
            for name in z.namelist():
                z.read(name)
            names = set(z.namelist())
        package = "stableops" if wheel is wheels["stable"] else "myops_bound"
        assert {f"{package}/{f}" for f in ("__init__.py", "ops.py", "ops.pyi", "py.typed")} <= names


def test_library_has_no_runpath(wheels: dict[str, Path], tmp_path: Path) -> None:
    for wheel in wheels.values():
        with zipfile.ZipFile(wheel) as z:
            (name,) = [n for n in z.namelist() if n.endswith(".so")]
            library = Path(z.extract(name, tmp_path))
        _, runpath = needed_and_runpath(library)
        assert runpath == [], (wheel.name, runpath)


def test_auditwheel_agrees_with_the_file_name(wheels: dict[str, Path]) -> None:
    """`auditwheel show`'s tag from the symbol versions is the file name's. Its overall tag is
    linux_: the library needs torch's libtorch_cpu.so, which the wheel does not (and must not)
    bundle, as `auditwheel repair --exclude libtorch_cpu.so` would leave it."""
    auditwheel = Path(sys.executable).parent / "auditwheel"
    for wheel in wheels.values():
        result = subprocess.run(
            [str(auditwheel), "show", "--json", str(wheel)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        shown = json.loads(result.stdout)
        assert wheel.name.endswith(f"-{shown['sym_tag']}.whl"), (wheel.name, shown["sym_tag"])
        assert set(shown["external_libs"]) <= {"libtorch_cpu.so", "libc10.so", "libtorch.so"}


def _built_again(workspace: Path, name: str, mnemonic: str) -> Path:
    """The output of //:<name>, its action run again (its output removed, no cache)."""
    bin_dir = Path(_bazel(workspace, "info", "bazel-bin").stdout.strip())
    shutil.rmtree(bin_dir / name)
    flag = f"--modify_execution_info={mnemonic}=+no-cache"
    _bazel(workspace, "build", "--symlink_prefix=/", flag, f"//:{name}")
    return bin_dir / name


def test_same_bytes_when_built_again(workspace: Path, wheels: dict[str, Path]) -> None:
    """The wheel action run again (its output removed, no cache): the same bytes."""
    again = _the_wheel(_built_again(workspace, "stableops_wheel", "AtenWheel"))
    assert again.read_bytes() == wheels["stable"].read_bytes()


def test_bound_wheel_in_its_release_and_refused_in_another(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    wheel = wheels["bound"]
    own = venv_over(VENV_PYTHON, tmp_path / "own")
    installed = pip_install(own, wheel)
    assert installed.returncode == 0, installed.stderr
    code = (
        "import torch, myops_bound; print(myops_bound.ops.scale(torch.arange(3.0), 2.0).tolist())"
    )
    ran = subprocess.run([str(own), "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert ran.stdout.strip() == "[0.0, 2.0, 4.0]", ran.stderr[-4000:]

    other = venv_over(_release_venv("2.15.0"), tmp_path / "other")
    refused = pip_install(other, wheel)
    assert refused.returncode != 0
    assert "torch==2.13.*" in refused.stderr, refused.stderr
    forced = pip_install(other, wheel, "--no-deps")
    assert forced.returncode == 0, forced.stderr
    failed = subprocess.run(
        [str(other), "-c", "import myops_bound"], capture_output=True, text=True, cwd=tmp_path
    )
    assert failed.returncode != 0
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: rules_aten: "), failed.stderr[-4000:]
    match = GUARD_LINE.match(last.removeprefix("ImportError: "))
    assert match and (match["built"], match["running"]) == ("2.13", "2.15"), last


def test_mypy_strict_over_the_stubs(wheels: dict[str, Path], tmp_path: Path) -> None:
    """A script calling the ops right passes mypy --strict; a wrong argument type is reported.
    torch itself is not followed (as mypy.ini does for tool/): its annotations cost a minute."""
    python = venv_over(VENV_PYTHON, tmp_path / "venv")
    assert pip_install(python, wheels["stable"]).returncode == 0
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-torch.*]\nfollow_imports = skip\n")
    good = tmp_path / "good.py"
    good.write_text(
        "import torch\nfrom stableops import ops\n\n\n"
        "def f(x: torch.Tensor) -> None:\n"
        "    ops.scaled_add(x, x, 0.5)\n"
        "    ops.mulcat(x, x, dim=1)\n"
        "    ops.clamp_abs_inplace(x, 1.0)\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        good.read_text().replace("ops.scaled_add(x, x, 0.5)", 'ops.scaled_add(x, x, "half")')
    )
    mypy = [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini"]
    mypy += ["--python-executable", str(python), "--cache-dir", str(tmp_path / "cache")]
    passed = subprocess.run([*mypy, "good.py"], capture_output=True, text=True, cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout
    reported = subprocess.run([*mypy, "bad.py"], capture_output=True, text=True, cwd=tmp_path)
    assert reported.returncode == 1, reported.stdout
    assert 'Argument 3 to "scaled_add" has incompatible type "str"; expected "float"' in (
        reported.stdout
    ), reported.stdout


# --- aten_kernel_hub ---------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("version", ["2.11.0", "2.15.0", "dev"])
def test_stable_kernel_hub_loads_with_kernels(hubs: dict[str, Path], version: str) -> None:
    """get_local_kernel picks torch-stable-abi211-cpu-x86_64-linux in every torch from 2.11 on
    (by name on a CUDA torch: backend="cpu"), imports its package with registrations.py, and the
    operators compute."""
    python = VENV_PYTHON if version == "dev" else _release_venv(version)
    report = hub_tools.load_kernel(python, hubs["stable"], "stableops")
    assert "refused" not in report, report
    details = report["details"]
    assert details["variant"] == "torch-stable-abi211-cpu-x86_64-linux", details
    assert (details["name"], details["version"], details["license"]) == (
        "stableops",
        1,
        "Apache-2.0",
    )
    assert details["module"].startswith("_stableops_cpu_"), details
    if version != "dev":
        assert details["torch"].startswith(version), details
    failed = sorted(k for k, ok in report["checks"].items() if not ok)
    assert failed == [] and len(report["checks"]) == 6, (failed, report)


def test_bound_kernel_hub_in_its_release_and_no_variant_in_another(
    hubs: dict[str, Path],
) -> None:
    import torch

    release = "".join(torch.__version__.split("+")[0].split(".")[:2])
    variants = [p.name for p in (hubs["bound"] / "build").iterdir()]
    assert variants == [f"torch{release}-cxx11-cpu-x86_64-linux"], variants
    report = hub_tools.load_kernel(VENV_PYTHON, hubs["bound"], "myops")
    assert report["details"]["version"] == 2, report
    assert report["checks"] == {"scale": True, "ops": True}, report
    other = hub_tools.load_kernel(_release_venv("2.15.0"), hubs["bound"], "myops")
    assert other["refused"].startswith("Cannot find a build variant for this system"), other
    assert (
        "Torch version (2.13) does not match environment Torch version (2.15)" in (other["message"])
    ), other


def test_kernel_hub_same_bytes_when_built_again(workspace: Path, hubs: dict[str, Path]) -> None:
    again = _built_again(workspace, "stableops_hub", "AtenKernelHub")
    assert _tree(again) == _tree(hubs["stable"])


def test_stable_library_passes_the_abi_auditors(
    wheels: dict[str, Path], hubs: dict[str, Path]
) -> None:
    """torch-abi-audit: STABLE from 2.11; kernel-abi-check: no symbol past the wheel's manylinux
    tag, no CPython symbol. The bound library: UNSTABLE."""
    platform = wheels["stable"].name.removesuffix(".whl").rsplit("-", 1)[1]
    policy = platform.removesuffix("_x86_64")
    assert hub_tools.assert_stable(hubs["stable_library"], policy) == "2.11.0"  # torch_target
    # The bound library, which calls torch's C++ API: the audit tells the two apart.
    (bound,) = (hubs["bound"] / "build").glob("*/myops_bound/libmyops.so")
    report = hub_tools.audit(bound, policy)
    assert report["audit_rc"] == 1 and "Torch ABI:   UNSTABLE" in report["audit"], report
