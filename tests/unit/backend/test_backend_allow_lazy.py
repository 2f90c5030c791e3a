"""`atengen backend --allow_lazy`, what external_backend_codegen runs for every backend YAML: a
lazy-tensor YAML is generated as by `atengen lazy` (headers and sources in their own trees), a
plain one exactly as without the flag, and the missing-kernel check counts generated kernels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atengen.errors import MAX_SHOWN_ERRORS
from tests.support.model_helpers import REPO, run_cli
from tests.support.oracle.torchgen_lazy import wheel_shape_inference_header

TS_YAML = Path(REPO) / "tests" / "data" / "lazy" / "ts_native_functions_2_13.yaml"
PLAIN_YAML = Path(REPO) / "tests" / "data" / "backends" / "privateuse1_small.yaml"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _listed(section: str) -> list[str]:
    """The op names of one section of the TorchScript YAML, read off the file."""
    text = TS_YAML.read_text()
    body = re.search(rf"^{section}:\n((?:[ #].*\n|\n)*)", text, re.M).group(1)
    return re.findall(r"^  - (\S+)", body, re.M)


def test_lazy_yaml_splits_headers_and_sources(tmp_path: Path) -> None:
    result = run_cli(
        "backend", "--allow_lazy", f"--backend_yaml={TS_YAML}", f"--output_dir={tmp_path / 'srcs'}",
        f"--header_output_dir={tmp_path / 'include'}", "--include_prefix=my/pkg", "--shards=2",
        f"--shape_inference_file={wheel_shape_inference_header()}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    headers = sorted(_tree(tmp_path / "include"))
    assert headers == [
        f"my/pkg/{n}"
        for n in ("LazyIr.h", "LazyIrCommon.h", "LazyIr_b0.h", "LazyIr_b1.h",
                  "LazyNativeFunctions.h", "LazyNonNativeIr.h")
    ]  # fmt: skip
    sources = _tree(tmp_path / "srcs")
    assert sorted(sources) == [
        "LazyNativeFunctions_b0.cpp", "LazyNativeFunctions_b1.cpp",
        "RegisterAutogradLazy_b0.cpp", "RegisterAutogradLazy_b1.cpp",
        "RegisterLazy_b0.cpp", "RegisterLazy_b1.cpp",
    ]  # fmt: skip
    for name, text in sources.items():
        includes = re.findall(r'#include "([^"]+)"', text)
        generated = [i for i in includes if i.startswith("my/pkg/")]
        assert generated, name  # workspace-relative includes of the generated headers
        assert not [i for i in includes if i.startswith("/")], name
    kernels = sources["LazyNativeFunctions_b0.cpp"] + sources["LazyNativeFunctions_b1.cpp"]
    assert "force_eager_fallback" not in kernels  # the wheel does not export it
    # The same files as `atengen lazy` writes, split in two trees.
    lazy_out = tmp_path / "lazy"
    result = run_cli(
        "lazy", f"--backend_yaml={TS_YAML}", f"--output_dir={lazy_out}", "--include_prefix=my/pkg",
        "--shards=2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _tree(lazy_out) == {**_tree(tmp_path / "include"), **sources}


def test_plain_yaml_is_unchanged_by_allow_lazy(tmp_path: Path) -> None:
    outs = {}
    for flags in ((), ("--allow_lazy", "--node_base=Unused")):
        out = tmp_path / str(len(flags))
        result = run_cli(
            "backend", *flags, f"--backend_yaml={PLAIN_YAML}", f"--output_dir={out}", "--shards=2"
        )
        assert result.returncode == 0, result.stderr
        outs[flags] = _tree(out)
    first, second = outs.values()
    assert first and first == second


def test_lazy_yaml_without_allow_lazy_is_an_error(tmp_path: Path) -> None:
    result = run_cli("backend", f"--backend_yaml={TS_YAML}", f"--output_dir={tmp_path / 'o'}")
    assert result.returncode == 1
    assert "'full_codegen' makes this a lazy-tensor backend" in result.stderr
    assert "`atengen lazy`" in result.stderr and "--allow_lazy" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_kernel_check_wants_only_the_hand_written_kernels(tmp_path: Path) -> None:
    empty = tmp_path / "kernels.cpp"
    empty.write_text("// nothing yet\n")
    result = run_cli(
        "backend", "--allow_lazy", f"--backend_yaml={TS_YAML}", f"--impl_path={empty}",
        f"--check_stamp={tmp_path / 'stamp'}",
    )  # fmt: skip
    assert result.returncode == 1
    missing = set(re.findall(r"missing a kernel definition for (\w+)\.", result.stderr))
    symint = set(_listed("symint"))
    # Kernel names as torchgen's dispatcher names them: out= overloads end in _out, symint
    # ones in _symint.
    hand_written = {
        op.split(".")[0]
        + ("_out" if op.endswith(".out") else "")
        + ("_symint" if op in symint else "")
        for op in _listed("supported") + _listed("autograd")
    }
    # The first MAX_SHOWN_ERRORS are printed, then one line counts the rest.
    assert len(hand_written) > MAX_SHOWN_ERRORS
    assert missing <= hand_written and len(missing) == MAX_SHOWN_ERRORS
    more = len(hand_written) - MAX_SHOWN_ERRORS
    assert result.stderr.splitlines()[-1] == f"error: ... and {more} more errors"
    assert not (tmp_path / "stamp").exists()


@pytest.mark.parametrize("flag", ["--functional_backend"])
def test_lazy_yaml_cannot_be_functional(tmp_path: Path, flag: str) -> None:
    result = run_cli(
        "backend", "--allow_lazy", flag, f"--backend_yaml={TS_YAML}", f"--output_dir={tmp_path}/o"
    )
    assert result.returncode == 1
    assert "cannot be a functional backend" in result.stderr
