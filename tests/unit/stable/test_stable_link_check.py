"""The stable-ABI link check's parts, without Bazel: the undefined-symbol reader of
atengen/facts/wheel_symbols.py against `nm`, the grouping of atengen/linkcheck/stable.py, and
`atengen stable --cuda_output_dir` / `--ops_file`, which aten_codegen(abi = "stable") passes
(tests/workspaces/test_stable_example.py builds and checks a real library)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from atengen.facts.wheel_symbols import UndefinedSymbol, undefined_dynamic_symbols
from atengen.linkcheck.stable import messages, offenses
from tests.support.model_helpers import TAGS_YAML, run_cli

TORCH_LIB = Path(__import__("torch").__file__).parent / "lib"


def _nm_undefined(path: Path) -> list[tuple[str, str | None]]:
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", str(path)], capture_output=True, text=True, check=True
    ).stdout
    found = []
    for line in out.splitlines():
        name, _, version = line.split()[-1].partition("@")
        found.append((name, version or None))
    return found


@pytest.mark.parametrize("name", ["libtorch_python.so", "libc10.so"])
def test_reader_agrees_with_nm(name: str) -> None:
    path = TORCH_LIB / name
    mine = undefined_dynamic_symbols(str(path))
    nm = _nm_undefined(path)
    assert sorted(s.name for s in mine) == sorted(n for n, _ in nm)
    # A versioned symbol names its library; nm prints the version (GLIBC_2.2.5, GLIBCXX_3.4...).
    versioned = {n for n, v in nm if v}
    assert {s.name for s in mine if s.library} == versioned
    assert {s.library for s in mine if s.library} >= {"libc.so.6", "libstdc++.so.6"}


def test_torch_python_needs_unstable_symbols() -> None:
    """libtorch_python.so, a real user of torch's C++ API, fails the check: one line per group."""
    symbols = undefined_dynamic_symbols(str(TORCH_LIB / "libtorch_python.so"))
    groups = [o.group for o in offenses(symbols)]
    assert {"at::", "c10::", "torch::"} <= set(groups), groups
    lines = messages("//:libx.so", symbols)
    assert len(lines) == len(groups)
    c10 = next(line for line in lines if " c10:: " in line)
    assert c10.startswith('rules_aten: //:libx.so (abi = "stable") needs c10:: symbols, ')
    assert "torch's unstable C++ API" in c10 and "_ZN3c10" in c10 and "more" in c10


def test_what_passes() -> None:
    ok = [
        UndefinedSymbol("aoti_torch_get_numel", False, None),
        UndefinedSymbol("torch_call_dispatcher", False, None),
        UndefinedSymbol("memcpy", False, "libc.so.6"),
        UndefinedSymbol("_ZSt9terminatev", False, "libstdc++.so.6"),
        UndefinedSymbol("_Unwind_Resume", False, "libgcc_s.so.1"),
        UndefinedSymbol("cudaLaunchKernel", False, "libcudart.so.13"),
        UndefinedSymbol("__gmon_start__", True, None),
        # GCC 15's assertion handler, bound by the linker to libtorch_cpu's copy.
        UndefinedSymbol("_ZSt21__glibcxx_assert_failPKciS0_S0_", False, None),
    ]
    assert offenses(ok) == []
    bad = [
        UndefinedSymbol("_ZNK2at10TensorBase4sizeEl", False, None),
        UndefinedSymbol("_ZTVN5torch8autograd4NodeE", False, None),
        UndefinedSymbol("_ZN9stableops3fooEv", False, None),  # a kernel not defined
        UndefinedSymbol("some_c_function", False, None),
        UndefinedSymbol("cudaMalloc", False, "libcudart_weird.so"),
    ]
    assert [o.group for o in offenses(bad)] == [
        "at::",
        "torch::",
        "stableops::",
        "some_c_function",
        "cudaMalloc",
    ]


def test_cli_keeps_cuda_registrations_apart(tmp_path: Path) -> None:
    (tmp_path / "ops.yaml").write_text(
        "- func: myops::twice(Tensor self) -> Tensor\n"
        "  dispatch:\n    CPU: twice_cpu\n    CUDA: twice_cuda\n"
        "- func: myops::thrice(Tensor self) -> Tensor\n"
        "  dispatch:\n    CPU: thrice_cpu\n"
    )
    (tmp_path / "ops.txt").write_text("myops::twice  # the one with a CUDA kernel\n")
    tags = tmp_path / "tags.yaml"
    tags.write_text(TAGS_YAML)
    r = run_cli(
        "stable",
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tags}",
        f"--ops_file={tmp_path / 'ops.txt'}",
        f"--output_dir={tmp_path / 'cpu'}",
        f"--cuda_output_dir={tmp_path / 'cuda'}",
        f"--header_output_dir={tmp_path / 'inc'}",
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "cuda").iterdir()) == [
        "RegisterStableCUDA_myops_b0.cpp"
    ]
    cpu = sorted(p.name for p in (tmp_path / "cpu").iterdir())
    assert cpu == ["RegisterStableCPU_myops_b0.cpp", "StableSchema_myops_b0.cpp"]
    assert "thrice" not in (tmp_path / "cpu" / "StableSchema_myops_b0.cpp").read_text()
    r = run_cli(
        "stable",
        f"--op_yaml={tmp_path / 'ops.yaml'}",
        f"--tags_yaml={tags}",
        f"--call_api_dir={tmp_path / 'api'}",
        f"--cuda_output_dir={tmp_path / 'c'}",
    )
    assert r.returncode != 0 and "--cuda_output_dir holds registrations" in r.stderr


def test_the_check_program(tmp_path: Path) -> None:
    """`atengen stable-link-check`: copies a passing library, refuses a failing one."""
    env_path = str(Path(__file__).resolve().parents[3] / "tool")
    command = [sys.executable, "-m", "atengen", "stable-link-check", "--label=//:x"]
    bad = subprocess.run(
        [*command, f"--linked={TORCH_LIB / 'libtorch_python.so'}", f"--output={tmp_path / 'o'}"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path},
    )
    assert bad.returncode == 1 and not (tmp_path / "o").exists()
    assert all(line.startswith("rules_aten: //:x ") for line in bad.stderr.splitlines())
    libc10 = TORCH_LIB / "libc10.so"  # needs the runtimes and nothing of the shim: passes
    good = subprocess.run(
        [*command, f"--linked={libc10}", f"--output={tmp_path / 'o'}"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path},
    )
    assert good.returncode == 0, good.stderr
    assert (tmp_path / "o").read_bytes() == libc10.read_bytes()


def test_a_kernel_defined_with_other_parameters_is_named_at_its_declaration(tmp_path: Path) -> None:
    """A stable kernel whose parameters differ from the generated declaration (`float` for
    `double`) leaves the declared one undefined: the line points at the declaration and names
    both signatures, as the ABI-bound check does, not an ABI violation."""
    headers = tmp_path / "inc" / "myllm" / "ops"
    headers.mkdir(parents=True)
    (headers / "rms_norm_native.h").write_text(
        "// @generated\n#pragma once\nnamespace myllm {\nvoid rms_norm(int result, double epsilon);\n}\n"
    )
    source = tmp_path / "kernels.cpp"
    source.write_text(
        '#include "myllm/ops/rms_norm_native.h"\n'
        "namespace myllm {\nvoid rms_norm(int result, float epsilon) {}\n}\n"
        "void registration() { myllm::rms_norm(1, 1e-6); }\n"
    )
    library = tmp_path / "liblinked.so"
    subprocess.run(
        ["g++", "-shared", "-fPIC", f"-I{tmp_path / 'inc'}", str(source), "-o", str(library)],
        check=True,
    )
    tool = Path(__file__).resolve().parents[3] / "tool"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "atengen",
            "stable-link-check",
            f"--kernel_headers={tmp_path / 'inc'}",
            "--label=//:myllm",
            f"--linked={library}",
            f"--output={tmp_path / 'o'}",
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tool), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 1 and not (tmp_path / "o").exists()
    lines = run.stderr.splitlines()
    assert lines[0] == (
        f"{headers / 'rms_norm_native.h'}:4: error: //:myllm: kernel myllm::rms_norm(int, double) "
        "is defined neither by the library nor by torch; defined as myllm::rms_norm(int, float) "
        "instead: make its parameters match this declaration"
    )
    # (This toy library, linked without Bazel's flags, has its own runtime lines after it.)
    assert not any("myllm::" in line for line in lines[1:]), lines
