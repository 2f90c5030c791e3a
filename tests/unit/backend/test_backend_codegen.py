"""`atengen backend` on good input: the kernel class header and the registration shards.

torchgen's gen_backend_stubs (in the venv) is the oracle: on the same backend YAML both must
declare the same kernels and register the same operators for each key.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.compile_helpers import CXXFLAGS
from tests.support.model_helpers import run_cli, run_cli_process

REPO = Path(__file__).resolve().parents[3]
XLA_SHAPED = REPO / "tests" / "data" / "backends" / "xla_shaped.yaml"
IMPL = re.compile(r'm\.impl\("([^"]+)"')
HEAD = "backend: PrivateUse1\ncpp_namespace: my_backend\n"


def generate(tmp_path: Path, yaml_text: str, *flags: str, name: str = "out") -> Path:
    backend = tmp_path / f"{name}.yaml"
    backend.write_text(yaml_text)
    out = tmp_path / name
    r = run_cli("backend", f"--backend_yaml={backend}", f"--output_dir={out}", *flags)
    assert r.returncode == 0, r.stderr
    return out


def registered(out: Path, key: str) -> list[str]:
    names = []
    for path in sorted(out.glob(f"Register{key}_*.cpp")):
        names += IMPL.findall(path.read_text())
    return sorted(names)


def declarations(header: Path) -> list[str]:
    return [line.strip() for line in header.read_text().splitlines() if "static " in line]


def without_lazy_keys(text: str) -> str:
    return re.sub(r"^(full_codegen|ir_gen):\n(  - .*\n)*", "", text, flags=re.M)


def torchgen_stubs(tmp_path: Path, yaml_text: str) -> Path:
    backend = tmp_path / "torchgen.yaml"
    backend.write_text(yaml_text)
    out = tmp_path / "torchgen"
    out.mkdir()
    subprocess.run(
        [sys.executable, "-m", "torchgen.gen_backend_stubs", f"--source-yaml={backend}",
         f"--output-dir={out}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def test_xla_shaped_yaml_rejects_the_lazy_tensor_keys() -> None:
    r = run_cli("backend", f"--backend_yaml={XLA_SHAPED}", "--output_dir=/nonexistent/out")
    assert r.returncode == 1
    assert r.stderr.strip() == (
        f"{XLA_SHAPED}:6: error: 'full_codegen' makes this a lazy-tensor backend: generate it "
        "with `atengen lazy`, or `atengen backend --allow_lazy` (what external_backend_codegen() "
        "runs); or list these ops under 'supported' with hand-written kernels"
    )


@pytest.mark.slow
def test_xla_shaped_yaml_matches_torchgen(tmp_path: Path, summary: list[str]) -> None:
    """~300 supported ops, autograd and symint: the same kernels and registrations as
    gen_backend_stubs, in sharded files."""
    text = without_lazy_keys(XLA_SHAPED.read_text())
    ours = generate(tmp_path, text)
    theirs = torchgen_stubs(tmp_path, text)
    assert declarations(ours / "XLANativeFunctions.h") == declarations(
        theirs / "XLANativeFunctions.h"
    )
    for key in ("XLA", "AutogradXLA"):
        expected = sorted(IMPL.findall((theirs / f"Register{key}.cpp").read_text()))
        assert registered(ours, key) == expected, key
    n_supported = text.split("supported:\n", 1)[1].split("autograd:", 1)[0].count("  - ")
    n_files = len(list(ours.glob("Register*.cpp")))
    summary.append(
        f"xla-shaped backend YAML: {n_supported} supported ops, "
        f"{len(registered(ours, 'XLA'))} XLA registrations in {n_files} files, same as torchgen"
    )
    assert n_supported >= 300


@pytest.mark.slow  # g++ over torch's headers: about 5 s
def test_header_compiles(tmp_path: Path) -> None:
    out = generate(tmp_path, without_lazy_keys(XLA_SHAPED.read_text()))
    (tmp_path / "use.cpp").write_text('#include "XLANativeFunctions.h"\n')
    r = subprocess.run(
        ["g++", *CXXFLAGS, "-fsyntax-only", f"-I{out}", str(tmp_path / "use.cpp")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-4000:]


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_output_is_deterministic(tmp_path: Path, seed: str) -> None:
    text = without_lazy_keys(XLA_SHAPED.read_text())
    first = generate(tmp_path, text, "--shards=3", name="a")
    backend = tmp_path / "a.yaml"
    second = tmp_path / "b"
    r = run_cli_process(
        "backend", f"--backend_yaml={backend}", f"--output_dir={second}", "--shards=3",
        env={"PYTHONHASHSEED": seed},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in first.iterdir())
    assert files == sorted(p.name for p in second.iterdir())
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_copy_back_wrappers_and_use_out_as_primary(tmp_path: Path) -> None:
    ops = "supported:\n- add.Tensor\n- abs\n- abs.out\n- empty.memory_format\n"
    out = generate(tmp_path, HEAD + ops, name="functional_primary")
    regs = registered(out, "PrivateUse1")
    # add_/add.out come from add's functional kernel; abs.out has its own kernel; abs_ from abs.
    assert regs == ["abs", "abs.out", "abs_", "add.Tensor", "add.out", "add_.Tensor",
                    "empty.memory_format", "empty.out"]  # fmt: skip
    text = (out / "RegisterPrivateUse1_add.cpp").read_text()
    assert "at::_copy_from_and_resize(atg_result, out);" in text
    assert "at::_copy_from(atg_result, self);" in text
    assert "my_backend::PrivateUse1NativeFunctions::add(self, other, alpha)" in text
    # use_out_as_primary: the backend's out= kernels are primary; nothing is derived.
    out = generate(tmp_path, HEAD + "use_out_as_primary: True\n" + ops, name="out_primary")
    assert registered(out, "PrivateUse1") == ["abs", "abs.out", "add.Tensor", "empty.memory_format"]


def test_functional_backend_registers_no_mutable_variants(tmp_path: Path) -> None:
    ops = "supported:\n- add.Tensor\n- view_copy\n- empty.memory_format\n- _copy_from\n"
    out = generate(tmp_path, HEAD + ops, "--functional_backend")
    assert registered(out, "PrivateUse1") == [
        "_copy_from", "add.Tensor", "empty.memory_format", "view_copy",
    ]  # fmt: skip


def test_device_guard_symint_extra_headers_and_prefix(tmp_path: Path) -> None:
    yaml_text = (
        HEAD + "class_name: MyKernels\ndevice_guard: True\nextra_headers:\n- my/backend.h\n"
        "- <vector>\nsupported:\n- view\n- add.Tensor\n- empty_strided\nsymint:\n- view\n"
    )
    out = generate(tmp_path, yaml_text, "--include_prefix=my/pkg/", "--shards=2")
    assert (out / "my" / "pkg" / "PrivateUse1NativeFunctions.h").is_file()
    header = (out / "my" / "pkg" / "PrivateUse1NativeFunctions.h").read_text()
    assert "struct MyKernels {" in header
    assert "static at::Tensor view_symint(const at::Tensor & self, c10::SymIntArrayRef size);" in (
        header
    )
    sources = {p.name: p.read_text() for p in out.glob("*.cpp")}
    assert set(sources) <= {"RegisterPrivateUse1_b0.cpp", "RegisterPrivateUse1_b1.cpp"}
    text = "".join(sources.values())
    assert text.count('#include "my/pkg/PrivateUse1NativeFunctions.h"') == len(sources)
    assert '#include "my/backend.h"' in text and "#include <vector>" in text
    assert "const c10::DeviceGuard atg_device_guard(device_or_default(device));" in text
    assert "const c10::OptionalDeviceGuard atg_device_guard(device_of(self));" in text
    assert "CUDA" not in text
    # view's kernel takes SymInts; add.out's wrapper converts nothing (no SymInt arguments).
    assert "MyKernels::view_symint(self, size)" in text


def test_one_file_per_operator_by_default(tmp_path: Path) -> None:
    out = generate(tmp_path, HEAD + "supported:\n- abs\n- add.Tensor\nautograd:\n- relu\n")
    assert sorted(p.name for p in out.iterdir()) == [
        "PrivateUse1NativeFunctions.h",
        "RegisterAutogradPrivateUse1_relu.cpp",
        "RegisterPrivateUse1_abs.cpp",
        "RegisterPrivateUse1_add.cpp",
    ]


def test_a_copy_op_the_generated_wrappers_need_is_a_warning_until_listed(tmp_path: Path) -> None:
    # abs.out and abs_ get wrappers over the functional abs kernel that copy its result back with
    # at::_copy_from_and_resize and at::_copy_from, which run on the backend's tensors.
    yaml = tmp_path / "b.yaml"
    yaml.write_text(HEAD + "supported:\n- abs\n- add.Tensor\n")
    r = run_cli("backend", f"--backend_yaml={yaml}", f"--output_dir={tmp_path / 'o'}")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 2, r.stderr
    inplace, out = lines  # one line per copy op, in the ops' order
    assert inplace.startswith(f"{yaml}:4: warning: the generated wrapper of 'abs_' (and "), inplace
    assert inplace.endswith(
        " calls at::_copy_from on PrivateUse1 tensors, which b.yaml does not list: list "
        "'_copy_from' under supported (unless another library registers it for PrivateUse1), "
        "or those wrappers fail when called"
    ), inplace
    assert out.startswith(f"{yaml}:4: warning: the generated wrapper of 'abs.out' (and "), out
    assert " calls at::_copy_from_and_resize on PrivateUse1 tensors" in out, out
    assert (tmp_path / "o").is_dir()  # a warning, not an error
    yaml.write_text(
        HEAD + "supported:\n- abs\n- add.Tensor\n- _copy_from\n- _copy_from_and_resize\n"
    )
    r = run_cli("backend", f"--backend_yaml={yaml}", f"--output_dir={tmp_path / 'o'}")
    assert r.returncode == 0 and r.stderr == "", r.stderr
