"""Shared bits of the benchmark scripts (run as `python benchmarks/<script>.py`)."""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"
sys.path.insert(0, str(REPO / "tool"))
from torch_probe import cuda_packages, probe, version_file  # noqa: E402

from atengen.facts.torch_facts import CUDA_KEYS  # noqa: E402, F401  (for the scripts)


def run_bazel(
    root: Path, startup: tuple[str, ...], env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """`bazel <startup> <args>` in the workspace `root`; exits the benchmark if it fails."""
    result = subprocess.run(
        ["bazel", *startup, *args], cwd=root, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"bazel {' '.join(args)} failed:\n{result.stderr[-4000:]}")
    return result


def user_env(**overrides: str) -> dict[str, str]:
    """The environment of a user's shell for the Bazel builds a benchmark times: without this
    project's RULES_ATEN_ variables (a test session's), with ``overrides``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    return {**env, **overrides}


def child_env(python: str = sys.executable, **overrides: str) -> dict[str, str]:
    """The environment of the processes a benchmark times, after compiling the generator's
    bytecode with ``python``: torchgen's ships compiled in the wheel, and a build's generator
    is compiled once, so no side should compile its source in a timed run (with
    PYTHONDONTWRITEBYTECODE set, as shells and CI often have it, every run would)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [python, "-m", "compileall", "-q", str(REPO / "tool" / "atengen")],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return {**env, **overrides}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the architecture where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_dir(name: str) -> Path:
    """Directory of an installed package (torch, torchgen), found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{name} is not installed in this Python ({name} is needed here)")
    return Path(spec.origin).parent


def interpreter() -> str:
    """The running interpreter as a command line names it: `.venv/bin/python` for the
    checkout's venv, the path (with `~` for the home directory) for another (the CUDA venv)."""
    path = Path(sys.executable)
    if path.is_relative_to(REPO):
        return str(path.relative_to(REPO))
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def torch_version() -> str:
    """The installed torch's version ("2.14.1+cu130"), read without importing it."""
    return version_file(str(package_dir("torch"))).get("version", "unknown")


def wheel_facts_file(tmp: Path, torch_dir: str = "") -> Path:
    """What the @torch repository writes to torch_facts.json (tool/torch_probe.py), for the
    running interpreter's wheel (or the torch package directory `torch_dir`, probed in a
    subprocess, which does not import it into this one): `atengen generate --torch_facts` then
    leaves out what that wheel does not export, as under Bazel."""
    path = tmp / "torch_facts.json"
    if torch_dir:
        script = Path(__file__).resolve().parent.parent / "tool" / "torch_probe.py"
        out = subprocess.run(
            [sys.executable, str(script), torch_dir], capture_output=True, text=True, check=True
        ).stdout
        path.write_text(out.strip().splitlines()[-1])
    else:
        path.write_text(json.dumps(probe(""), sort_keys=True))
    return path


# What CMake writes into c10/cuda/impl/cuda_cmake_macros.h for the CUDA wheels, which the CPU
# wheel lacks (the @local_cuda repository's stub, rules/private/repositories/local_cuda.bzl).
_CUDA_CMAKE_MACROS = "#define C10_CUDA_BUILD_SHARED_LIBS\n"


def cuda_include_flags(tmp: Path, toolkit: str) -> list[str]:
    """The include path a CUDA-key source compiles with, as @local_cuda and @torch give it: the
    toolkit's include/, the stub c10/cuda/impl/cuda_cmake_macros.h where the wheel lacks it, and
    the nvidia-* wheels' include directories beside a CUDA wheel (cusparse.h, cublas_v2.h)."""
    torch_dir = package_dir("torch")
    if not Path(toolkit, "include", "cuda_runtime.h").exists():
        raise SystemExit(f"no CUDA toolkit at {toolkit} (its include/cuda_runtime.h is missing)")
    flags = [f"-I{toolkit}/include"]
    if not (torch_dir / "include" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").exists():
        stub = tmp / "stub_include" / "c10" / "cuda" / "impl"
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "cuda_cmake_macros.h").write_text(_CUDA_CMAKE_MACROS)
        flags.append(f"-I{tmp}/stub_include")
    includes, _ = cuda_packages(str(torch_dir.parent))
    return flags + [f"-I{d}" for d in includes]


# The g++ line both sides of the compile benchmarks use.
COMPILE_NOTE = "g++ -std=c++20 -fPIC (no -O), both sides against torchgen's regenerated headers"


def checkout_commit() -> str:
    """The checkout's commit, with `+changes` when the tree differs from it."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def append_results(title: str, script: str, table: list[str], note: str = COMPILE_NOTE) -> None:
    """Appends a dated section with the command line, the commit the run started on and a
    Markdown table to RESULTS.md."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = " ".join(sys.argv[1:])
    with open(RESULTS, "a") as f:
        f.write(
            f"\n### {title}, {stamp}\n\n- Command: `{interpreter()} benchmarks/{script} {cmd}`\n"
            f"- Machine: nproc={os.cpu_count()}, {cpu_model()}; commit {STARTED_AT_COMMIT}; "
            f"torch {torch_version()}; {note}\n\n" + "\n".join(table) + "\n"
        )


def report_table(
    rows: list[str], failed: tuple[list[str], list[str]], title: str, script: str, write: bool
) -> None:
    """Prints the torchgen-vs-atengen table (plus failed compiles), and appends it when `write`."""
    if failed[0] or failed[1]:
        rows = [*rows, f"| failed compiles | {failed[0]} | {failed[1]} | |"]
    table = ["| measurement | torchgen | atengen | ratio |", "|---|---|---|---|", *rows]
    print("\n".join(table))
    if write:
        append_results(title, script, table)


TINY_HELP = "one repetition, no warm-up, a small input; never writes RESULTS.md (what CI runs)"


def reject_tiny_write(parser, args) -> None:
    """`--tiny` numbers are a smoke test, not a measurement: they never go into RESULTS.md."""
    if args.tiny and args.write:
        parser.error("--tiny never writes RESULTS.md; drop --write (or --tiny for a real run)")


def print_ratio(name: str, value: float) -> None:
    """The one machine-readable line per target that benchmarks/run_all.py collects."""
    print(f"RATIO {name} {value:.4f}", flush=True)


def tiny_aten(dst: Path, roots: list[str], extra: str = "") -> Path:
    """A copy of torchgen's packaged ATen (templates, tags) whose native_functions.yaml keeps
    only the entries of the op roots `roots` (every overload, in-place `x_` included: torchgen's
    per-operator header of `x` declares them all), plus `extra` YAML text.

    Both sides of a tiny run read this one file, so the comparison stays like for like; torchgen
    itself has no op selection, hence a smaller input instead of a filter."""
    shutil.copytree(package_dir("torchgen") / "packaged" / "ATen", dst)
    path = dst / "native" / "native_functions.yaml"
    entries = re.split(r"\n(?=- func: )", path.read_text())
    head = re.compile(r"- func: (\w+)[.(]")
    keep = [e for e in entries if (m := head.match(e)) and m.group(1).rstrip("_") in roots]
    missing = set(roots) - {head.match(e).group(1).rstrip("_") for e in keep}
    if missing:
        raise SystemExit(f"no entries in torch's native_functions.yaml for {sorted(missing)}")
    # A comment first, as in torch's file: every entry then starts with "\n- func: ".
    header = f"# torch's native_functions.yaml cut down to {', '.join(roots)}\n\n"
    path.write_text(header + "\n".join(e.rstrip("\n") + "\n" for e in keep) + extra)
    return dst


# With per-operator headers, generated sources include the ATen/ops/ headers they use instead of
# the umbrella Operators.h/NativeFunctions.h, which a tiny run must take from the wheel.
TINY_DEFINES = ["-DAT_PER_OPERATOR_HEADERS"]


def ops_include_root(tg_aten: Path, root: Path, names: tuple[str, ...] = ("ops",)) -> Path:
    """An include root holding only torchgen's regenerated ATen/ops/ headers (and `names`).

    With a reduced op YAML, torchgen's regenerated umbrella and core headers (TensorBody.h,
    Functions.h) lack every other op and break the wheel's own headers, so a tiny run takes
    the per-operator headers from torchgen and everything else from the wheel."""
    for name in names:
        link = root / "ATen" / name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(tg_aten / name)
    return root


# What the generated sources start with: aten_codegen precompiles each kind once (pch.bzl).
PCH_INCLUDES = {
    "full": ("<ATen/core/Tensor.h>", "<torch/library.h>", '"atengen/runtime.h"'),
    "light": ("<ATen/core/Tensor.h>", '"atengen/runtime.h"'),
}


class PrecompiledHeaders:
    """Compile flags as aten_codegen's: `flags` plus GCC precompiled headers of each kind of
    PCH_INCLUDES, built with the same flags, once per set of flags, and offered to the generated
    sources as aten_codegen offers them (ATENGEN_PCH_<KIND> defines; each source includes the
    kind it names). `-Werror=invalid-pch`: a header GCC cannot use fails the compile instead of
    being parsed silently."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.built: dict[tuple[str, ...], tuple[list[str], float, float]] = {}

    def flags(self, flags: list[str]) -> list[str]:
        defines, _, _ = self.build(flags)
        return [*flags, *defines, "-Werror=invalid-pch"]

    def build(self, flags: list[str]) -> tuple[list[str], float, float]:
        """(the flags that offer them, CPU seconds, peak RSS MB) of the precompiled headers for
        `flags`, both kinds together."""
        key = tuple(flags)
        if key not in self.built:
            defines, cpu, rss = [], 0.0, 0.0
            for kind, includes in PCH_INCLUDES.items():
                d = self.tmp / f"pch{len(self.built)}_{kind}"
                d.mkdir()
                header = d / f"atengen_pch_{kind}.h"
                header.write_text("".join(f"#include {h}\n" for h in includes))
                (d / f"atengen_pch_{kind}_stamp.h").write_text("// stamp\n")
                with tempfile.NamedTemporaryFile() as tf:
                    cmd = ["/usr/bin/time", "-f", "%U %S %M", "-o", tf.name, "g++", *flags]
                    cmd += ["-x", "c++-header", "-c", str(header), "-o", f"{header}.gch"]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    user, system, rss_kb = Path(tf.name).read_text().split()[-3:]
                if r.returncode != 0:
                    raise SystemExit(f"precompiling {header} failed:\n{r.stderr[-2000:]}")
                cpu += float(user) + float(system)
                rss = max(rss, int(rss_kb) / 1024)
                macro = f"ATENGEN_PCH_{kind.upper()}"
                defines += [
                    f"-I{d}",
                    f'-D{macro}="{header.name}"',
                    f'-D{macro}_STAMP="atengen_pch_{kind}_stamp.h"',
                ]
            print(f"  precompiled headers {cpu:.1f} CPU s {rss:.0f} MB", flush=True)
            self.built[key] = (defines, cpu, rss)
        return self.built[key]


# The commit of the code a benchmark process runs, read when it starts (this module is imported
# first), so that edits made while it runs do not change what its entry says it measured.
STARTED_AT_COMMIT = checkout_commit()
