"""The GPU run kit's checks that need neither Bazel nor a CUDA torch (`./dev gpu-bundle`,
devtools/gpu_bundle/): the 64 MiB limit on what travels to a GPU machine, the manifest's sha256s, and
the bad inputs of the bundler and of the bundled script, each one line and a non-zero exit.

The bundle built and its script run with torch 2.11.0+cu130: tests/workspaces/test_gpu_bundle_build.py.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[3]
BUNDLER = REPO / "devtools" / "gpu_bundle" / "make_gpu_bundle.py"
RUN_SCRIPT = REPO / "devtools" / "gpu_bundle" / "run_gpu.py"
MIB = 1024 * 1024


def bundler(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUNDLER), *args], capture_output=True, text=True, timeout=300
    )


def one_error(result: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The one error line of a failed run (stderr holds nothing else)."""
    assert result.returncode != 0, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), result.stderr
    return lines[0]


def sparse_file(path: Path, size: int) -> str:
    """A file of `size` zero bytes that takes no disk space; its sha256."""
    with path.open("wb") as f:
        f.truncate(size)
    digest = hashlib.sha256()
    chunk = bytes(MIB)
    for start in range(0, size, MIB):
        digest.update(chunk[: min(MIB, size - start)])
    return digest.hexdigest()


def fake_bundle(directory: Path, big: int) -> Path:
    """A bundle whose manifest and one file of `big` bytes are the whole listing."""
    directory.mkdir()
    digest = sparse_file(directory / "big.so", big)
    manifest = {"torch": "2.11.0+cu130", "ops": ["abs"], "files": {}}
    manifest["files"]["big.so"] = {"sha256": digest, "bytes": big}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def test_a_listing_over_64_mib_is_refused_with_one_line(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path / "b", 64 * MIB + 1)
    line = one_error(bundler("--verify", str(bundle)), "gpu-bundle: error: the bundle is ")
    assert "over the 64 MiB that can travel to a GPU machine" in line
    assert "largest: big.so, 64.0 MiB" in line and "--ops" in line


def test_a_listing_of_exactly_64_mib_passes(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path / "b", 64 * MIB)
    manifest_bytes = (bundle / "manifest.json").stat().st_size
    shutil.rmtree(bundle)
    # The same manifest (the size has as many digits), with big.so taking the rest.
    bundle = fake_bundle(tmp_path / "b", 64 * MIB - manifest_bytes)
    assert (bundle / "manifest.json").stat().st_size == manifest_bytes
    result = bundler("--verify", str(bundle))
    assert result.returncode == 0, result.stderr
    assert "1 files as the manifest lists them" in result.stderr


def test_verify_refuses_a_changed_file_an_extra_file_and_a_directory_without_manifest(
    tmp_path: Path,
) -> None:
    bundle = fake_bundle(tmp_path / "b", 1000)
    (bundle / "big.so").write_bytes(b"x" * 1000)
    line = one_error(bundler("--verify", str(bundle)), "gpu-bundle: error: ")
    assert line.endswith("big.so: size or sha256 differs from the manifest's")

    bundle = fake_bundle(tmp_path / "c", 1000)
    (bundle / "stray.txt").write_text("")
    line = one_error(bundler("--verify", str(bundle)), "gpu-bundle: error: ")
    assert line.endswith("files the manifest does not list: stray.txt")

    line = one_error(bundler("--verify", str(tmp_path)), "gpu-bundle: error: ")
    assert "not a GPU bundle (manifest.json: " in line


def test_the_bundler_refuses_to_replace_a_directory_that_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    line = one_error(bundler("--out", str(tmp_path)), "gpu-bundle: error: --out ")
    assert line.endswith("not empty and not a GPU bundle; refusing to replace it")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_bundler_names_a_missing_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "venv" / "bin" / "python"
    line = one_error(
        bundler("--out", str(tmp_path / "out"), "--python", str(missing)),
        "gpu-bundle: error: no interpreter at ",
    )
    assert "./dev setup-torches" in line and "--python" in line


# (slow: each of these imports torch in a child process, 5 to 10 s on 2 busy cores)
@pytest.mark.slow
@pytest.mark.skipif(bool(torch.version.cuda), reason="needs a CPU build of torch (./dev test)")
def test_the_bundler_refuses_a_cpu_torch(tmp_path: Path) -> None:
    line = one_error(
        bundler("--out", str(tmp_path / "out"), "--python", sys.executable),
        "gpu-bundle: error: selecting the ops with ",
    )
    assert f"torch {torch.__version__} at " in line and "is a CPU build" in line
    assert not (tmp_path / "out").exists()


def script_bundle(directory: Path, torch_version: str) -> Path:
    """run_gpu.py beside a manifest listing one library file."""
    directory.mkdir()
    shutil.copy(RUN_SCRIPT, directory / "run_gpu.py")
    shutil.copy(RUN_SCRIPT.with_name("opinfo_records.py"), directory / "opinfo_records.py")
    (directory / "lib.so").write_bytes(b"library")
    files = {"lib.so": {"sha256": hashlib.sha256(b"library").hexdigest(), "bytes": 7}}
    (directory / "manifest.json").write_text(json.dumps({"torch": torch_version, "files": files}))
    return directory / "run_gpu.py"


def run_script(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )


def test_the_script_refuses_a_bundle_file_changed_since_the_manifest(tmp_path: Path) -> None:
    script = script_bundle(tmp_path / "b", torch.__version__)
    (script.parent / "lib.so").write_bytes(b"changed")
    result = run_script(script, "--json", str(tmp_path / "s.json"))
    line = one_error(result, "run_gpu: error: ")
    assert result.returncode == 2 and line.endswith("lib.so: sha256 differs from the manifest's")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.slow
def test_the_script_refuses_another_torch_release(tmp_path: Path) -> None:
    script = script_bundle(tmp_path / "b", "2.11.0+cu130")
    result = run_script(script, "--json", str(tmp_path / "s.json"))
    line = one_error(result, "run_gpu: error: the bundle was built against torch 2.11.0+cu130, ")
    assert result.returncode == 2 and f"this is torch {torch.__version__} " in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--json PATH is required: where to write the summary"),
        (("--json", "s.json", "--max-samples", "0"), "--max-samples must be at least 1"),
        pytest.param(
            ("--json", "s.json", "--dtypes", "float32,float99"),
            "--dtypes: not a torch dtype: float99",
            marks=pytest.mark.slow,
        ),
        (("--json", "s.json", "--frobnicate"), "unrecognized arguments: --frobnicate"),
    ],
)
def test_the_scripts_bad_arguments_are_one_line(tmp_path: Path, args, message: str) -> None:
    script = script_bundle(tmp_path / "b", "2.11.0+cu130")
    result = run_script(script, *args)
    assert result.returncode == 2
    assert one_error(result, "run_gpu: error: ") == f"run_gpu: error: {message}"


def test_the_bundlers_bad_arguments_are_one_line() -> None:
    line = one_error(bundler("--frobnicate"), "gpu-bundle: error: ")
    assert line == "gpu-bundle: error: unrecognized arguments: --frobnicate"


def load_run_gpu():
    """devtools/gpu_bundle/run_gpu.py as a module (it is a standalone script, not a package)."""
    spec = importlib.util.spec_from_file_location("run_gpu_under_test", RUN_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tensor_record(values, dtype=torch.float32):
    t = torch.tensor(values, dtype=dtype)
    return ("tensor", (str(dtype), tuple(t.shape), "torch.strided", tuple(t.stride())), t)


def test_records_compare_bitwise_close_or_mismatching() -> None:
    run_gpu = load_run_gpu()
    one_ulp = torch.nextafter(torch.tensor(1.0), torch.tensor(2.0)).item()
    reference = {
        "records": {
            "same|f": tensor_record([1.0, float("nan")]),
            "ulp|f": tensor_record([1.0, 2.0]),
            "far|f": tensor_record([1.0, 2.0]),
            "dtype|f": tensor_record([1, 2], torch.int64),
            "error|f": ("error", "RuntimeError", "boom"),
            "gone|f": ("value", "3"),
            "inplace|inplace": (tensor_record([1.0]), True),
        }
    }
    generated = {
        "records": {
            "same|f": tensor_record([1.0, float("nan")]),
            "ulp|f": tensor_record([one_ulp, 2.0]),
            "far|f": tensor_record([1.0, 2.5]),
            "dtype|f": tensor_record([1, 2], torch.int32),
            "error|f": tensor_record([1.0]),
            "inplace|inplace": (tensor_record([1.0]), False),
        }
    }
    result = run_gpu.compare(reference, generated)
    assert (result["records"], result["bitwise_equal"], result["close"]) == (7, 1, 1)
    wrong = sorted(line.split(":")[0] for line in result["mismatch_list"])
    assert wrong == ["dtype|f", "error|f", "far|f", "gone|f", "inplace|inplace"]
    assert result["mismatches"] == 5
    assert result["by_kind"] == {"f": 6, "inplace": 1}


@pytest.mark.slow
def test_op_db_imports_with_a_stand_in_when_expecttest_is_missing(tmp_path: Path) -> None:
    """The GPU machines' torch has no expecttest, which torch's test helpers import; the script
    installs a stand-in and op_db loads."""
    (tmp_path / "expecttest.py").write_text("raise ImportError('no expecttest here')\n")
    script = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('r', {str(RUN_SCRIPT)!r})\n"
        "r = importlib.util.module_from_spec(spec); spec.loader.exec_module(r)\n"
        "op_db, stubbed = r.import_op_db()\n"
        "print(stubbed, len([op for op in op_db if op.name == 'abs']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split() == ["True", "1"]


def test_leaves_torch_leaves_unwritten_are_compared_as_equal_and_listed() -> None:
    """The recheck's verdict: the leaves that differ between torch's two runs on poisoned memory
    are left out of the comparison, the record's other leaves still count."""
    run_gpu = load_run_gpu()

    def result(state: list[int], out: list[float]):
        return ("seq", (tensor_record(out), tensor_record(state, torch.int64)))

    # torch alone, twice: the state differs, the output does not.
    unwritten = run_gpu.differing_leaves(result([1, 2], [0.5]), result([9, 9], [0.5]))
    assert unwritten == [(1, 1, 2)]
    reference = {"records": {"rng|f": result([3, 4], [0.5]), "wrong|f": result([3, 4], [0.5])}}
    generated = {"records": {"rng|f": result([5, 6], [0.5]), "wrong|f": result([5, 6], [0.7])}}
    assert run_gpu.compare(reference, generated)["mismatches"] == 2
    verdict = run_gpu.compare(reference, generated, {"rng|f": unwritten, "wrong|f": unwritten})
    assert (verdict["bitwise_equal"], verdict["mismatches"]) == (1, 1), verdict
    assert verdict["mismatch_list"][0].startswith("wrong|f: ")
    assert verdict["unwritten_by_torch"] == {"rng|f": [[1, 1, 2]], "wrong|f": [[1, 1, 2]]}
