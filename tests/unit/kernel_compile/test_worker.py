"""`atengen compile-kernel` as Bazel runs it: a persistent worker answering WorkRequests on its
standard input (the test plays Bazel), and a one-shot compile from a parameter file."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atengen.kernel_compile.worker_protocol import encode_request, parse_response
from tests.support.bazel_helpers import REPO
from tests.support.compile_helpers import CXXFLAGS

SOURCE = "#include <vector>\nint count(const std::vector<int>& v) { return int(v.size()); }\n"
pytestmark = pytest.mark.slow  # g++ compiles and precompiles

ENV = {**os.environ, "PYTHONPATH": str(REPO / "tool")}


def arguments(source: str, output: str, *flags: str) -> tuple[str, ...]:
    return (
        f"--source={source}",
        f"--output={output}",
        "--",
        "g++",
        *flags,
        "-c",
        source,
        "-o",
        output,
    )


def read_response(stream: io.BufferedReader) -> tuple[int, int, str]:
    size = shift = 0
    while True:
        byte = stream.read(1)[0]
        size |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return parse_response(stream.read(size))


def start_worker(tmp_path: Path, source: str, stderr: int) -> tuple[Path, subprocess.Popen[bytes]]:
    """A persistent worker in an execroot of tmp_path's output base, which holds k.cpp."""
    execroot = tmp_path / "output_base" / "execroot" / "_main"
    execroot.mkdir(parents=True)
    (execroot / "k.cpp").write_text(source)
    worker = subprocess.Popen(
        [sys.executable, "-m", "atengen", "compile-kernel", "--persistent_worker"],
        cwd=execroot, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
    )  # fmt: skip
    assert worker.stdin and worker.stdout
    return execroot, worker


def test_the_worker_answers_each_request_and_keeps_a_header(tmp_path: Path) -> None:
    execroot, worker = start_worker(tmp_path, SOURCE, subprocess.PIPE)

    def ask(args: tuple[str, ...], inputs: tuple[tuple[str, bytes], ...] = ()) -> tuple[int, str]:
        assert worker.stdin and worker.stdout
        worker.stdin.write(encode_request(args, inputs))
        worker.stdin.flush()
        _, code, output = read_response(worker.stdout)  # type: ignore[arg-type]
        return code, output

    assert ask(arguments("k.cpp", "k1.o"), (("k.cpp", b"\x01"),)) == (0, "")
    assert (execroot / "k1.o").exists()
    code, output = ask(("--source=k.cpp",))
    assert code == 2 and "compile-kernel: expected --source=SOURCE" in output, output
    code, output = ask(arguments("missing.cpp", "m.o"))
    assert code == 1 and "missing.cpp" in output, output
    store = tmp_path / "output_base" / "rules_aten_kernel_pch"
    deadline = time.monotonic() + 120
    while not list(store.glob("*/ready.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ask(arguments("k.cpp", "k2.o"), (("k.cpp", b"\x02"),)) == (0, "")
    assert (execroot / "k2.o").read_bytes() == (execroot / "k1.o").read_bytes()
    worker.stdin.close()
    assert worker.wait(timeout=60) == 0
    log = worker.stderr.read().decode() if worker.stderr else ""
    lines = [line for line in log.splitlines() if line.startswith("compile-kernel: k.cpp:")]
    assert len(lines) == 2 and "plain, its precompile started" in lines[0], log
    assert lines[1].startswith(f"compile-kernel: k.cpp: with {store}/"), log


def test_one_compile_from_a_parameter_file(tmp_path: Path) -> None:
    (tmp_path / "k.cpp").write_text(SOURCE)
    params = tmp_path / "params"
    params.write_text("\n".join(arguments("k.cpp", "k.o")) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "atengen", "compile-kernel", f"@{params}"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and (tmp_path / "k.o").exists(), done.stderr
    # Nothing kept outside an execroot: the one compile is plain.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cpp", "k.o", "params"]
    (tmp_path / "k.cpp").write_text("int broken(\n")
    done = subprocess.run(
        [sys.executable, "-m", "atengen", "compile-kernel", f"@{params}"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1 and "k.cpp:1" in done.stderr, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "atengen", "compile-kernel", f"@{tmp_path / 'none'}"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "none: cannot read" in done.stderr


def test_a_precompile_dies_with_its_worker(tmp_path: Path) -> None:
    """No compile outlives a worker that Bazel stopped: GCC's driver and its cc1plus go with it."""
    source = "#include <ATen/core/Tensor.h>\nint f() { return 1; }\n"
    _, worker = start_worker(tmp_path, source, subprocess.DEVNULL)
    assert worker.stdin and worker.stdout
    flags = ("-std=c++20", *CXXFLAGS)
    worker.stdin.write(encode_request(arguments("k.cpp", "k.o", *flags), ()))
    worker.stdin.flush()
    assert read_response(worker.stdout)[1] == 0  # type: ignore[arg-type]
    store = str(tmp_path / "output_base" / "rules_aten_kernel_pch")

    def precompiles() -> list[str]:
        found = subprocess.run(["pgrep", "-f", store], capture_output=True, text=True)
        return found.stdout.split()

    assert precompiles()  # a precompile of ATen/core/Tensor.h takes seconds
    worker.kill()
    worker.wait()
    deadline = time.monotonic() + 10
    while precompiles() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert precompiles() == []
