"""The CUDA slice, on a CUDA build of torch (the CUDA venv's: `./dev test-cuda`, which runs it with
the second venv's interpreter): @torch on a CUDA wheel, //:libaten_generated.so holding the CUDA
keys' registrations, linked with -Wl,--no-undefined against libtorch_cuda and loaded, CUDA
kernels the wheel does not export left out at generation time, examples/cuda_ops (a custom op
with a `.cu` kernel compiled by nvcc), and the bad inputs: an unsupported torch release, a
toolkit of another CUDA major version, a CUDA wheel without a toolkit.

On the default (CPU) torch every test here is skipped, and so are the tests that need a toolkit
without one (of torch's CUDA major version); where the CUDA slice is required (tests/support/slices.py:
`./dev test-cuda`, `.ci/run`) either fails instead, with one line. Running a CUDA kernel needs a
GPU; without one that test is skipped and says so.

Builds use their own output bases in the temporary directory (keyed by this checkout's path), so
that a second run finds them up to date, and the interpreter running the tests as
RULES_ATEN_PYTHON.
"""

from __future__ import annotations

import email
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
import torch

from tests.support import slices
from tests.support.bazel_helpers import REPO, VENV_PYTHON, bazel, own_output_base, run_demo
from tests.support.release_guard_helpers import needed_and_runpath
from tests.support.wheel_helpers import pip_install, venv_over

if not torch.version.cuda:
    slices.missing(
        "cuda",
        f"needs a CUDA build of torch (torch {torch.__version__} is a CPU build): "
        "run ./dev test-cuda",
    )

pytestmark = pytest.mark.bazel

TOOLKIT = Path(
    os.environ.get("RULES_ATEN_CUDA_DIR") or os.environ.get("CUDA_HOME") or "/usr/local/cuda"
)
EXAMPLE = REPO / "examples" / "cuda_ops"
NO_GPU = "no GPU here: torch.cuda.is_available() is False, so no CUDA kernel was run"
_KEY = hashlib.sha256(f"{REPO}:{sys.executable}".encode()).hexdigest()[:12]
ENV = {**os.environ, "RULES_ATEN_PYTHON": sys.executable}
ENV.pop("RULES_ATEN_CUDA_DIR", None)
ENV.pop("RULES_ATEN_TORCH_DIR", None)


def _output_base(name: str) -> Path:
    return Path(tempfile.gettempdir()) / f"rules_aten_{name}_{_KEY}"


def _bazel(cwd: Path, name: str, *args: str, env: dict | None = None, check: bool = True):
    return bazel(
        *args,
        cwd=cwd,
        startup=own_output_base(_output_base(name), 300),
        env=env or ENV,
        check=check,
    )


def _needed(library: Path) -> list[str]:
    out = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def _toolkit_major() -> str | None:
    header = TOOLKIT / "include" / "cuda_runtime_api.h"
    if not header.exists():
        return None
    m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", header.read_text())
    return str(int(m.group(1)) // 1000) if m else None


@pytest.fixture(scope="module")
def toolkit() -> Path:
    major = _toolkit_major()
    if major is None:
        slices.missing(
            "cuda", f"no CUDA toolkit at {TOOLKIT} (set RULES_ATEN_CUDA_DIR or CUDA_HOME)"
        )
    if major != torch.version.cuda.split(".")[0]:
        slices.missing(
            "cuda", f"the toolkit at {TOOLKIT} is CUDA {major}, torch's is {torch.version.cuda}"
        )
    return TOOLKIT


@pytest.fixture(scope="module")
def library(toolkit: Path, summary: list[str]) -> Path:
    """//:libaten_generated.so (the default selection) built against the CUDA wheel."""
    _bazel(REPO, "cuda_main", "build", "--symlink_prefix=/", "//:libaten_generated.so")
    bin_dir = Path(_bazel(REPO, "cuda_main", "info", "bazel-bin").stdout.strip())
    summary.append(f"CUDA slice: //:libaten_generated.so on torch {torch.__version__}")
    yield bin_dir / "libaten_generated.so"
    _bazel(REPO, "cuda_main", "shutdown", check=False)


def _registrations(tree: Path) -> set[tuple[str, str]]:
    """(key, op) of every m.impl in a generated tree."""
    found = set()
    for path in tree.glob("Register*.cpp"):
        text = path.read_text()
        blocks = list(
            re.finditer(r"ATENGEN(?:_TYPED)?_LIBRARY_IMPL\(\s*aten\s*,\s*(\w+)\s*,\s*m\s*\)", text)
        )
        for i, block in enumerate(blocks):
            end = blocks[i + 1].start() if i + 1 < len(blocks) else len(text)
            for op in re.findall(r'm\.impl\(\s*"([^"]+)"', text[block.end() : end]):
                found.add((block.group(1), op))
    return found


def test_torch_repository_exposes_the_cuda_libraries(toolkit: Path) -> None:
    _bazel(REPO, "cuda_main", "build", "--nobuild", "@torch//:torch_cuda")
    output_base = _output_base("cuda_main")
    repo = output_base / "external" / "torch"
    defs = (repo / "defs.bzl").read_text()
    assert f'TORCH_CUDA = "{torch.version.cuda}"' in defs
    assert f"CUDA_ARCH_LIST = {json.dumps(torch.cuda.get_arch_list())}" in defs
    build = (repo / "BUILD.bazel").read_text()
    for target in ("libtorch_cuda", "libc10_cuda", "libcudart", "cuda_package_headers"):
        assert f'name = "{target}"' in build, target
    # cusparse.h, which the wheel's ATen/cuda headers include, is in the nvidia-* wheels only.
    assert list(repo.glob("nvidia/*/include/cusparse.h")), sorted(repo.glob("nvidia/*"))
    facts = json.loads((repo / "torch_facts.json").read_text())
    assert facts["version"] == torch.__version__ and "/" not in json.dumps(facts["release"])
    assert str(REPO) not in (repo / "torch_facts.json").read_text()


def test_library_links_the_cuda_keys_with_no_undefined(library: Path) -> None:
    needed = _needed(library)
    # The CUDA registrations call libtorch_cuda's kernels; the CUDA libraries are linked as
    # needed, so which others it names depends on the selection.
    assert {"libtorch_cuda.so", "libtorch_cpu.so"} <= set(needed), needed
    actions = _bazel(
        REPO,
        "cuda_main",
        "aquery",
        'mnemonic("CppLink", //:_aten_generated_linked/libaten_generated.so)',
    ).stdout
    assert "-Wl,--no-undefined" in actions
    assert "libaten_generated_cuda_objects" in actions


def test_library_loads_and_serves_every_cuda_registration(library: Path) -> None:
    """Loaded into torch, every (op, CUDA key) the library registers is served by it."""
    tree = library.parent / "aten_generated_codegen" / "cuda.cc"
    ours = sorted(_registrations(tree))
    assert ours and {key for key, _ in ours} >= {"CUDA"}, ours
    script = f"""
import json, sys, torch
torch.ops.load_library({str(library)!r})
pairs = json.loads(sys.argv[1])
served, not_served = 0, []
for key, op in pairs:
    line = [l for l in torch._C._dispatch_dump("aten::" + op).splitlines() if l.startswith(key + ":")]
    if line and "/aten_generated_codegen/cuda.cc/" in line[0]:
        served += 1
    else:
        not_served.append([key, op, line])
print(json.dumps({{"served": served, "not_served": not_served}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(ours)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["not_served"] == [] and report["served"] == len(ours), report


def test_cuda_kernels_the_wheel_does_not_export_are_left_out_with_their_reason() -> None:
    """The whole op YAML: exactly the CUDA-key kernels neither libtorch_cpu nor libtorch_cuda
    exports are left out, each with its reason."""
    from atengen.cli.common import installed_torch_yaml_dir
    from atengen.facts import torch_facts as tf
    from atengen.facts.wheel_facts import parse_wheel_facts
    from atengen.model.operator_model import load_model
    from atengen.pipelines.aten import AtenOptions, aten_outputs
    from atengen.pipelines.inputs import YamlInputs
    from atengen.render.shards import ShardSetting

    probe = subprocess.run(
        [sys.executable, str(REPO / "tool" / "torch_probe.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    wheel = parse_wheel_facts(probe)
    yaml_dir = installed_torch_yaml_dir()
    op_yaml, tags_yaml = f"{yaml_dir}/native_functions.yaml", f"{yaml_dir}/tags.yaml"
    outputs = aten_outputs(
        AtenOptions(
            inputs=YamlInputs(op_yaml, tags_yaml),
            ops="all",
            keys=tuple(sorted(tf.CUDA_KEYS)),
            shards=ShardSetting.parse("auto"),
            functionalize=False,
            output_dir="cpu",
            cuda_output_dir="cuda",
            header_output_dir="include",
            wheel=wheel,
        )
    )
    left_out = {
        (m.group(2), m.group(1))
        for m in re.finditer(r"^left out: aten::(\S+) (\w+): .*exports no", outputs.report, re.M)
    }
    exported = wheel.native_kernels["libtorch_cpu"] | wheel.native_kernels["libtorch_cuda"]
    model = load_model(op_yaml, tags_yaml)
    expected = {
        (key, str(f.name))
        for f in model.functions
        if f.namespace == "aten" and not f.generated
        for key, kernel in f.dispatch.items()
        if key in tf.CUDA_KEYS and not kernel.structured and kernel.kernel not in exported
    }
    assert expected and left_out == expected, (sorted(left_out), sorted(expected))


def _example_archs() -> str:
    """What nvcc compiles the example's kernels for here: this GPU's architecture, or without a
    GPU the GPU machines' (9.0). One architecture, not the wheel's six (sm_75 to sm_120, an nvcc
    run each: 133 s of CPU on the 2-core machine, for kernels that nothing here runs); the wheel's
    list, the default, is what test_without_a_setting_nvcc_targets_the_wheels_list_and_says_so
    checks."""
    if torch.cuda.is_available():
        return "{}.{}".format(*torch.cuda.get_device_capability())
    return "9.0"


@pytest.fixture(scope="module")
def example(toolkit: Path, summary: list[str]) -> tuple[Path, dict]:
    """examples/cuda_ops' //:libcudaops.so, built, and demo.py's report on it (every check passed)."""
    flags = ("--symlink_prefix=/", f"--@rules_aten//:cuda_archs={_example_archs()}")
    _bazel(EXAMPLE, "cuda_example", "build", *flags, "//:libcudaops.so")
    bin_dir = Path(_bazel(EXAMPLE, "cuda_example", "info", *flags, "bazel-bin").stdout.strip())
    report = run_demo(EXAMPLE / "demo.py", bin_dir / "libcudaops.so")
    summary.append(f"CUDA example: cuda kernels {report['details']['cuda']}")
    return bin_dir, report


def test_example_builds_loads_and_runs_where_it_can(example: tuple[Path, dict]) -> None:
    bin_dir, report = example
    library = bin_dir / "libcudaops.so"
    # Linked as needed: the kernel launches through the CUDA runtime, its guard is c10_cuda's.
    assert {"libc10_cuda.so", "libcudart.so.13"} <= set(_needed(library)), _needed(library)
    assert list((bin_dir / "_objs" / "cudaops_cuda_kernels").glob("kernels.pic.o"))
    expected = "ran" if torch.cuda.is_available() else "registered"
    assert report["details"]["cuda"] == expected, report


def test_without_a_setting_nvcc_targets_the_wheels_list_and_says_so(toolkit: Path) -> None:
    """No TORCH_CUDA_ARCH_LIST, no --@rules_aten//:cuda_archs: the wheel's architectures (an
    sm_ each, PTX of the newest), and one line naming them and how to narrow them."""
    env = {k: v for k, v in ENV.items() if k != "TORCH_CUDA_ARCH_LIST"}
    result = _bazel(
        EXAMPLE, "cuda_example", "aquery", "mnemonic(AtenNvcc, //:cudaops_cuda_kernels)", env=env
    )
    arch_list = torch.cuda.get_arch_list()
    sms = [a.removeprefix("sm_") for a in arch_list if a.startswith("sm_")]
    expected = {f"-gencode=arch=compute_{n},code=sm_{n}" for n in sms}
    expected.add(f"-gencode=arch=compute_{sms[-1]},code=compute_{sms[-1]}")
    assert set(re.findall(r"-gencode=arch=compute_\w+,code=\w+", result.stdout)) == expected
    notes = [line for line in result.stderr.splitlines() if "for every architecture of" in line]
    assert len(notes) == 1, result.stderr[-4000:]
    assert " ".join(arch_list) in notes[0] and "TORCH_CUDA_ARCH_LIST" in notes[0], notes[0]
    assert "--@rules_aten//:cuda_archs" in notes[0], notes[0]


# What demo.py checks on the GPU (examples/cuda_ops/demo.py): kernels.cu against the CPU kernel,
# in float64 and float32, and under gradcheck.
GPU_CHECKS = ("cuda_forward", "cuda_float32", "cuda_gradcheck")


# In a venv of the wheel's own torch, from a directory with nothing of the build: the op's value
# on CPU, and the dispatch table's CUDA entry from the wheel's library (run where there is no GPU
# too: registering a CUDA kernel needs none).
WHEEL_CHECK = """
import json, torch, cudaops
x = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
y = torch.full((2, 3), 2.0, dtype=torch.float64)
value = cudaops.ops.mul_add_scalar(x, y, 0.5)
table = torch._C._dispatch_dump("cudaops::mul_add_scalar")
cuda = [line for line in table.splitlines() if line.startswith("CUDA: ")]
print(json.dumps({"value": value.tolist(), "cuda": cuda, "file": cudaops.__file__}))
"""


def test_cuda_library_as_a_wheel(example: tuple[Path, dict], tmp_path: Path) -> None:
    """examples/cuda_ops' //:cudaops_wheel: bound to this torch release and its CUDA major
    version, pip-installed into a fresh venv of this torch, used there; refused with one line by
    a CPU build of torch."""
    flags = ("--symlink_prefix=/", f"--@rules_aten//:cuda_archs={_example_archs()}")
    _bazel(EXAMPLE, "cuda_example", "build", *flags, "//:cudaops_wheel")
    bin_dir = Path(_bazel(EXAMPLE, "cuda_example", "info", *flags, "bazel-bin").stdout.strip())
    (wheel,) = (bin_dir / "cudaops_wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata_file = next(n for n in names if n.endswith(".dist-info/METADATA"))
        # (Core metadata's field names are case-insensitive: email's parser reads them so.)
        metadata = email.message_from_bytes(archive.read(metadata_file))
        (library_name,) = [n for n in names if n.endswith(".so")]
        library = tmp_path / "libcudaops.so"
        library.write_bytes(archive.read(library_name))
    release = ".".join(torch.__version__.split(".")[:2])
    assert metadata.get_all("Requires-Dist") == [f"torch=={release}.*"], str(metadata)
    major = torch.version.cuda.split(".")[0]
    assert f"Environment :: GPU :: NVIDIA CUDA :: {major}" in metadata.get_all("Classifier")
    needed, runpath = needed_and_runpath(library)
    assert {"libtorch_cuda.so", "libc10_cuda.so"} & set(needed) and not runpath, (needed, runpath)

    python = venv_over(Path(sys.executable), tmp_path / "venv")
    installed = pip_install(python, wheel)
    assert installed.returncode == 0, installed.stderr[-4000:]
    away = tmp_path / "elsewhere"
    away.mkdir()
    result = subprocess.run(
        [str(python), "-c", WHEEL_CHECK], capture_output=True, text=True, cwd=away, timeout=300
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["value"] == [[0.5, 2.5, 4.5], [6.5, 8.5, 10.5]], report
    assert "site-packages" in report["file"], report
    (cuda_entry,) = report["cuda"]
    assert "registered at" in cuda_entry and "fallthrough" not in cuda_entry, report

    # The default venv's torch is a CPU build (of another release, too): the CUDA check speaks
    # first, before anything is loaded.
    cpu = venv_over(VENV_PYTHON, tmp_path / "cpu_venv")
    forced = pip_install(cpu, wheel, "--no-deps")
    assert forced.returncode == 0, forced.stderr[-4000:]
    refused = subprocess.run(
        [str(cpu), "-c", "import cudaops"], capture_output=True, text=True, cwd=away, timeout=300
    )
    assert refused.returncode != 0
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: cudaops: libcudaops.so was built for a CUDA ") and (
        "is a CPU build" in last
    ), refused.stderr[-4000:]


def test_cuda_kernels_run_on_a_gpu(request: pytest.FixtureRequest) -> None:
    if not torch.cuda.is_available():
        pytest.skip(NO_GPU)  # before the example is built: nothing here would run its kernels
    _, report = request.getfixturevalue("example")
    assert report["details"]["cuda"] == "ran", report
    # Each GPU check was made, and passed (run_demo already failed on a check that did not).
    assert {name: report["checks"].get(name) for name in GPU_CHECKS} == dict.fromkeys(
        GPU_CHECKS, True
    ), report


def _one_error_line(result: subprocess.CompletedProcess, pattern: str) -> str:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if re.search(pattern, line)]
    assert len(lines) == 1, result.stderr[-4000:]  # printed once
    return lines[0]


def test_a_toolkit_of_another_cuda_major_version_is_one_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "cuda-12.4"
    (fake / "include").mkdir(parents=True)
    (fake / "include" / "cuda_runtime.h").write_text("")
    (fake / "include" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION 12040\n")
    env = {**ENV, "RULES_ATEN_CUDA_DIR": str(fake)}
    result = _bazel(
        EXAMPLE, "cuda_example", "build", "--nobuild", "//:cudaops", env=env, check=False
    )
    line = _one_error_line(result, r"Error in fail: rules_aten: the CUDA toolkit at")
    assert (
        f"is CUDA 12.4, but torch {torch.__version__} is built with CUDA {torch.version.cuda}"
        in line
    )


def test_a_cuda_wheel_without_a_toolkit_gives_a_cpu_only_library_and_a_warning() -> None:
    env = {**ENV, "RULES_ATEN_CUDA_DIR": "none"}
    result = _bazel(
        EXAMPLE, "cuda_example", "build", "--symlink_prefix=/", "//:libcudaops.so", env=env
    )
    warnings = [line for line in result.stderr.splitlines() if "no CUDA toolkit was found" in line]
    assert len(warnings) == 1, result.stderr[-4000:]
    assert "has the CPU-side registrations only" in warnings[0]
    bin_dir = Path(_bazel(EXAMPLE, "cuda_example", "info", "bazel-bin", env=env).stdout.strip())
    assert "libtorch_cuda.so" not in _needed(bin_dir / "libcudaops.so")


def test_an_unsupported_torch_release_is_one_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "site-packages" / "torch"
    for sub in ("include", "lib"):
        (fake / sub).mkdir(parents=True)
    (fake / "version.py").write_text("__version__ = '2.10.0+cpu'\ncuda = None\n")
    env = {**ENV, "RULES_ATEN_TORCH_DIR": str(fake), "RULES_ATEN_CUDA_DIR": "none"}
    result = _bazel(
        EXAMPLE, "cuda_example", "build", "--nobuild", "//:cudaops", env=env, check=False
    )
    line = _one_error_line(result, r"Error in fail: rules_aten: torch 2\.10\.0\+cpu at ")
    assert "is older than torch 2.11, the oldest release rules_aten supports" in line
    _bazel(EXAMPLE, "cuda_example", "shutdown", check=False)
