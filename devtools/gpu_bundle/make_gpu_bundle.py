"""Builds the GPU run kit (`./dev gpu-bundle`): three libraries built here, two against the torch
of the GPU machines and one stable-ABI library against another release, and a standalone script
that checks them there.

    make_gpu_bundle.py [--out DIR] [--ops auto|ROOT,...] [--python PY] [--stable_python SPY]
        [--cuda_archs 9.0] [--no-check]
    make_gpu_bundle.py --verify DIR

With the interpreter PY (default: $RULES_ATEN_PYTHON, else the venv of torch 2.11.0+cu130 that
`./dev setup-torches` installs, the GPU machines' build), it

1. picks the op selection: `auto` (the default) is every op root of that torch's
   native_functions.yaml with a CUDA kernel and an OpInfo on cuda in op_db; `--ops` names roots,
   each of which must have both (devtools/gpu_bundle/run_gpu.py --select, run with PY);
2. builds //:libaten_generated.so with `--//:aten_ops=<selection>` (CPU-side and CUDA keys,
   linked against libtorch_cuda) and examples/cuda_ops' //:libcudaops.so (custom op with a CPU
   kernel, an nvcc-compiled CUDA kernel and generated autograd; its kernels for --cuda_archs,
   the GPU machines' 9.0 by default), each in its own output base with the shared disk cache,
   RULES_ATEN_PYTHON=PY; and examples/stable_ops' //:libstableops.so (abi = "stable", target
   2.11, its CUDA kernel for --cuda_archs) with RULES_ATEN_PYTHON=SPY (default: the checkout's
   .venv, torch 2.13.0), which must not need torch's CUDA libraries;
3. reads the (CUDA key, op) pairs the generated CUDA tree registers (at least one, or the build
   had no CUDA toolkit);
4. writes into DIR (default dist/gpu-bundle; replaced if it is a bundle, refused if it is
   anything else): the libraries stripped of their symbol tables (`strip --strip-unneeded`),
   run_gpu.py and the module it imports, opinfo_records.py, the stable example's demo.py as
   stable_demo.py with its registrations.py and generated stableops_registrations.py, and
   manifest.json (torch version, op selection,
   OpInfos, CUDA registrations, sha256 and size of each file). A bundle over 64 MiB, what can
   travel to a GPU machine, is refused;
5. unless --no-check, runs DIR/run_gpu.py with PY: the libraries load and their dispatch tables
   check here, and with no GPU the script exits 77.

--verify DIR checks an existing bundle: every file's sha256 and size, and the size limit.
Errors are one line `gpu-bundle: error: ...`, exit 1.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
RUN_SCRIPT = Path(__file__).resolve().parent / "run_gpu.py"
# What the bundle carries of this directory: the script and the module it imports.
SCRIPTS = (RUN_SCRIPT, RUN_SCRIPT.with_name("opinfo_records.py"))
EXAMPLE = REPO / "examples" / "cuda_ops"
# The stable-ABI example, built against the checkout's own torch (.venv, another release than the
# GPU machines'): one file that loads into every torch from its target on, there too. Its demo
# checks it, its CUDA kernel included where there is a GPU.
STABLE_EXAMPLE = REPO / "examples" / "stable_ops"
STABLE_LIBRARY, STABLE_DEMO = "libstableops.so", "stable_demo.py"
# The module stable mode generates from the example's op and derivatives YAML (its target, and
# where it lies under bazel-bin), and its name in the bundle.
STABLE_PYTHON_TARGET = "//:stableops_python"
STABLE_GENERATED_MODULE = "stableops_codegen/stableops_registrations.py"
STABLE_REGISTRATIONS = "stableops_registrations.py"
DEFAULT_STABLE_PYTHON = REPO / ".venv" / "bin" / "python"
# What can travel to a GPU machine beside the working tree (the device tool's carry limit).
LIMIT_BYTES = 64 * 1024 * 1024
DEFAULT_VENV = (
    Path(
        os.environ.get("RULES_ATEN_RELEASE_VENVS_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rules_aten"
    )
    / "venv-torch-2.11.0"
)
DISK_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rules_aten" / "disk_cache"
)
ATEN_LIBRARY, EXAMPLE_LIBRARY = "libaten_generated.so", "libcudaops.so"
MARKERS = {
    "aten_cuda": "aten_generated_codegen/cuda.cc/",
    "example_cuda": "cudaops_codegen/cuda.cc/",
    "example_autograd": "cudaops_codegen/autograd.cc/",
}
BLOCK = re.compile(r"ATENGEN_LIBRARY_IMPL\(\s*aten\s*,\s*(\w+)\s*,\s*m\s*\)")
IMPL = re.compile(r'm\.impl\(\s*"([^"]+)"')
NO_GPU = 77
CUDA_LIBRARIES = ("libtorch_cuda.so", "libc10_cuda.so", "libcudart.so")
# The GPU machines' H100 and H200 are both compute capability 9.0.
GPU_MACHINE_ARCHS = "9.0"


class BundleError(Exception):
    pass


def log(message: str) -> None:
    print(f"gpu-bundle: {message}", file=sys.stderr, flush=True)


def check_size(sizes: dict[str, int]) -> int:
    """The total of a file listing ({name: bytes}); over LIMIT_BYTES is an error."""
    total = sum(sizes.values())
    if total > LIMIT_BYTES:
        largest = max(sizes, key=sizes.__getitem__)
        raise BundleError(
            f"the bundle is {total / 2**20:.1f} MiB, over the {LIMIT_BYTES // 2**20} MiB that "
            f"can travel to a GPU machine (largest: {largest}, {sizes[largest] / 2**20:.1f} MiB); "
            "select fewer ops with --ops"
        )
    return total


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(bundle: Path) -> dict:
    """Checks an existing bundle; its manifest."""
    try:
        manifest = json.loads((bundle / "manifest.json").read_text())
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BundleError(f"{bundle}: not a GPU bundle (manifest.json: {e})") from None
    sizes = {"manifest.json": (bundle / "manifest.json").stat().st_size}
    for name, entry in sorted(files.items()):
        path = bundle / name
        if not path.is_file():
            raise BundleError(f"{path}: missing (the manifest lists it)")
        sizes[name] = path.stat().st_size
        if sizes[name] != entry["bytes"] or sha256(path) != entry["sha256"]:
            raise BundleError(f"{path}: size or sha256 differs from the manifest's")
    extra = sorted(p.name for p in bundle.iterdir() if p.name not in sizes)
    if extra:
        raise BundleError(f"{bundle}: files the manifest does not list: {', '.join(extra)}")
    check_size(sizes)
    return manifest


def interpreter(given: str | None) -> Path:
    python = given or os.environ.get("RULES_ATEN_PYTHON") or str(DEFAULT_VENV / "bin" / "python")
    if not os.access(python, os.X_OK):
        raise BundleError(
            f"no interpreter at {python}: `./dev setup-torches` installs the venv of torch "
            f"2.11.0+cu130 at {DEFAULT_VENV}, or pass --python"
        )
    return Path(python)


def torch_version(python: Path) -> str:
    proc = subprocess.run(
        [str(python), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise BundleError(f"{python} cannot import torch: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


def selection(python: Path, ops: str) -> dict:
    proc = subprocess.run(
        [str(python), str(RUN_SCRIPT), "--select", ops],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BundleError(
            f"selecting the ops with {python}: {last.removeprefix('run_gpu: error: ')}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Each of the two builds is one command in a server of its own: with the JVM's client JIT compiler
# and serial collector the server takes a quarter to a third less CPU than with its defaults, whose
# compiler and collector threads take a second core while it starts.
SERVER_JVM = ("--host_jvm_args=-XX:TieredStopAtLevel=1", "--host_jvm_args=-XX:+UseSerialGC")


def bazel(workspace: Path, output_base: Path, *args: str, python: Path) -> str:
    env = {**os.environ, "RULES_ATEN_PYTHON": str(python)}
    cmd = ["bazel", f"--output_base={output_base}", "--max_idle_secs=60", *SERVER_JVM, *args]
    proc = subprocess.run(
        cmd, cwd=workspace, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-6000:])
        raise BundleError(f"`{' '.join(cmd)}` in {workspace} exited {proc.returncode}")
    return proc.stdout


def build(
    workspace: Path,
    output_base: Path,
    target: str,
    flags: list[str],
    python: Path,
    also: tuple[str, ...] = (),
) -> Path:
    """Builds target (`//:lib<name>.so`) and the targets `also`; the built file of target."""
    common = [f"--disk_cache={DISK_CACHE}", "--symlink_prefix=/", *flags]
    bazel(workspace, output_base, "build", *common, target, *also, python=python)
    bin_dir = bazel(workspace, output_base, "info", *common, "bazel-bin", python=python).strip()
    bazel(workspace, output_base, "shutdown", python=python)
    return Path(bin_dir) / target.split(":")[1]


def cuda_registrations(tree: Path) -> list[list[str]]:
    """[key, op] of every m.impl in the generated CUDA tree."""
    found = set()
    for path in sorted(tree.glob("Register*.cpp")):
        text = path.read_text()
        blocks = list(BLOCK.finditer(text))
        for i, block in enumerate(blocks):
            end = blocks[i + 1].start() if i + 1 < len(blocks) else len(text)
            found.update((block.group(1), op) for op in IMPL.findall(text, block.end(), end))
    if not any(key == "CUDA" for key, _ in found):
        raise BundleError(
            f"no CUDA-key registrations in {tree}: the build found no CUDA toolkit "
            "(RULES_ATEN_CUDA_DIR, CUDA_HOME or /usr/local/cuda)"
        )
    return [list(pair) for pair in sorted(found)]


def needed(library: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def prepare_out(out: Path) -> None:
    """DIR may be absent, empty, or an earlier bundle (replaced); anything else is refused."""
    if out.exists() and not out.is_dir():
        raise BundleError(f"--out {out}: not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").is_file():
        raise BundleError(f"--out {out}: not empty and not a GPU bundle; refusing to replace it")


def commit() -> str:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        return proc.stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    return head + (" (with uncommitted changes)" if git("status", "--porcelain") else "")


def make(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    prepare_out(out)
    python = interpreter(args.python)
    start = time.monotonic()
    chosen = selection(python, args.ops)
    log(
        f"torch {chosen['torch']}: {len(chosen['ops'])} op roots with a CUDA kernel and an "
        f"OpInfo ({len(chosen['opinfos'])} OpInfos)"
    )
    key = hashlib.sha256(f"{REPO}:{python}".encode()).hexdigest()[:12]
    bases = Path(args.output_base_root or tempfile.gettempdir()) / f"rules_aten_gpu_bundle_{key}"
    flags = [f"--//:aten_ops={','.join(chosen['ops'])}"]
    t = time.monotonic()
    aten = build(REPO, bases / "main", f"//:{ATEN_LIBRARY}", flags, python)
    log(f"built //:{ATEN_LIBRARY} in {time.monotonic() - t:.0f} s")
    t = time.monotonic()
    # The kernels are compiled for the GPU machines' architecture only (nvcc once, not once per
    # architecture of the wheel's list): a smaller library, and a build minutes shorter.
    archs = [f"--@rules_aten//:cuda_archs={args.cuda_archs}"]
    example = build(EXAMPLE, bases / "example", f"//:{EXAMPLE_LIBRARY}", archs, python)
    log(f"built examples/cuda_ops //:{EXAMPLE_LIBRARY} in {time.monotonic() - t:.0f} s")
    # Linked as needed: each depends on the CUDA libraries its code uses (the example's kernel on
    # the CUDA runtime), and on at least one.
    for library in (aten, example):
        if not any(n.startswith(CUDA_LIBRARIES) for n in needed(library)):
            raise BundleError(f"{library} is not linked against any of {', '.join(CUDA_LIBRARIES)}")
    t = time.monotonic()
    stable_python = Path(args.stable_python)
    stable = build(
        STABLE_EXAMPLE,
        bases / "stable",
        f"//:{STABLE_LIBRARY}",
        archs,
        stable_python,
        also=(STABLE_PYTHON_TARGET,),
    )
    log(
        f"built examples/stable_ops //:{STABLE_LIBRARY} with {stable_python} in "
        f"{time.monotonic() - t:.0f} s"
    )
    if any(n.startswith(("libtorch_cuda", "libc10_cuda")) for n in needed(stable)):
        raise BundleError(f"{stable} needs torch's CUDA libraries: a stable library must not")
    pairs = cuda_registrations(aten.parent / "aten_generated_codegen" / "cuda.cc")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".gpu-bundle-", dir=out.parent))
    staging.chmod(0o755)  # (mkdtemp makes it private)
    try:
        for library in (aten, example, stable):
            dest = staging / library.name
            subprocess.run(["strip", "--strip-unneeded", "-o", str(dest), str(library)], check=True)
        for script in SCRIPTS:
            shutil.copy(script, staging / script.name)
        shutil.copy(STABLE_EXAMPLE / "demo.py", staging / STABLE_DEMO)
        # The example's Python registrations: the hand-written fake kernel, which demo.py
        # imports from beside it, and the module generated from its YAML files (autograd, fake
        # kernels), whose path demo.py takes.
        shutil.copy(STABLE_EXAMPLE / "registrations.py", staging / "registrations.py")
        shutil.copy(stable.parent / STABLE_GENERATED_MODULE, staging / STABLE_REGISTRATIONS)
        files = {
            p.name: {"sha256": sha256(p), "bytes": p.stat().st_size}
            for p in sorted(staging.iterdir())
        }
        manifest = {
            "torch": chosen["torch"],
            "torch_cuda": chosen["torch_cuda"],
            "built": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit(),
            "aten_library": ATEN_LIBRARY,
            "example_library": EXAMPLE_LIBRARY,
            "example_op": "cudaops::mul_add_scalar",
            "stable_library": STABLE_LIBRARY,
            "stable_demo": STABLE_DEMO,
            "stable_registrations": STABLE_REGISTRATIONS,
            "stable_built_with": torch_version(stable_python),
            "markers": MARKERS,
            "ops": chosen["ops"],
            "opinfos": chosen["opinfos"],
            "cuda_registrations": pairs,
            "files": files,
        }
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        sizes = {p.name: p.stat().st_size for p in staging.iterdir()}
        total = check_size(sizes)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log(
        f"{out}: {total / 2**20:.1f} MiB ({', '.join(f'{n} {s / 2**20:.1f} MiB' for n, s in sorted(sizes.items()))}); "
        f"{len(pairs)} CUDA-key registrations; {time.monotonic() - start:.0f} s in all"
    )
    if not args.no_check:
        check_here(out, python)
    log(f"on a GPU machine: python3 {out.name}/run_gpu.py --json $OUT/gpu.json")
    return 0


def check_here(out: Path, python: Path) -> None:
    """Runs the bundled script here: without a GPU it must stop at exit 77, all else passed."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [str(python), str(out / "run_gpu.py"), "--json", f"{tmp}/summary.json"],
            capture_output=True,
            text=True,
        )
    last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    if proc.returncode not in (0, NO_GPU):
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise BundleError(f"{out}/run_gpu.py exited {proc.returncode} here: {last}")
    log(f"checked here with {python}: exit {proc.returncode}: {last}")


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line, as every other error here (no usage block)."""

    def error(self, message: str):
        raise BundleError(message)


def main(argv: list[str]) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "dist" / "gpu-bundle"), help="the bundle")
    parser.add_argument("--ops", default="auto", help="`auto` or comma-separated op roots")
    parser.add_argument("--python", help="the interpreter whose torch to build against")
    parser.add_argument(
        "--cuda_archs",
        default=GPU_MACHINE_ARCHS,
        help="TORCH_CUDA_ARCH_LIST syntax, for the example's kernels (default: the GPU machines')",
    )
    parser.add_argument(
        "--stable_python",
        default=str(DEFAULT_STABLE_PYTHON),
        help="the interpreter whose torch the stable example is built against (default: .venv's)",
    )
    parser.add_argument("--no-check", action="store_true", help="do not run the script here")
    parser.add_argument("--verify", metavar="DIR", help="check an existing bundle, build nothing")
    parser.add_argument(
        "--output_base_root", help="where the two Bazel output bases go (default: the temp dir)"
    )
    args = parser.parse_args(argv)
    if args.verify:
        manifest = verify(Path(args.verify))
        log(
            f"{args.verify}: {len(manifest['files'])} files as the manifest lists them, "
            f"{len(manifest['ops'])} op roots, torch {manifest['torch']}"
        )
        return 0
    return make(args)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BundleError as e:
        print(f"gpu-bundle: error: {e}", file=sys.stderr)
        sys.exit(1)
