"""aten_codegen in Bazel: //:aten_generated, its shared library, the CUDA library, and
incremental rebuilds of a custom op library (tests/incremental/, tests/data/custom_ops/).

The default build of //:aten_generated is shared by the tests through a session fixture, in the
repository's own output base (so a second run of the suite finds it up to date). The incremental
test builds a copy of tests/incremental/ in a temporary directory with its own output base, and
shuts that Bazel server down afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.bazel_helpers import (
    REPO,
    VENV_PYTHON,
    AtenGenerated,
    bazel,
    own_output_base,
    read_execution_log,
)
from tests.support.script_helpers import run_script

pytestmark = pytest.mark.bazel

INCREMENTAL = REPO / "tests" / "incremental"
CUSTOM_OPS = REPO / "tests" / "data" / "custom_ops"

IMPL_BLOCK = re.compile(
    r"^(?:TORCH|ATENGEN|ATENGEN_TYPED)_LIBRARY_IMPL\((\w+), (\w+), m\) \{\n(.*?)^\}", re.M | re.S
)
IMPL_LINE = re.compile(r'm\.impl(?:_boxed)?\("([^"]+)"')
QUOTED_INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def selected_roots() -> list[str]:
    """The op roots of //:aten_ops.txt, in file order."""
    roots = []
    for line in (REPO / "aten_ops.txt").read_text().splitlines():
        roots += [x.strip() for x in line.split("#", 1)[0].split(",") if x.strip()]
    return roots


def registrations(tree: Path) -> list[tuple[str, str, str, str]]:
    """(namespace, dispatch key, operator name, file name) of every m.impl in the tree's files."""
    found = []
    for path in sorted(tree.glob("*.cpp")):
        for ns, key, body in IMPL_BLOCK.findall(path.read_text()):
            found += [(ns, key, name, path.name) for name in IMPL_LINE.findall(body)]
    return found


# ---------------------------------------------------------------------------------------------
# //:aten_generated and //:libaten_generated.so (built once by the aten_generated fixture)


def test_generated_tree_covers_the_selection(aten_generated: AtenGenerated) -> None:
    files = sorted(p.name for p in aten_generated.cpu_tree.glob("*.cpp"))
    assert files, aten_generated.cpu_tree
    signatures = sorted(p.name for p in aten_generated.signature_tree.glob("*.cpp"))
    # shards = "auto": per key, a power-of-two count of buckets of at most 48 operators on
    # average, and of kernel-signature buckets of at most 64 signatures; the 50-op default
    # selection needs no more than 4 of either (b0..b3).
    assert all(re.fullmatch(r"Register\w+_b[0-3]\.cpp", f) for f in files), files
    assert "KernelSignatures_b0.cpp" in signatures, signatures
    assert all(re.fullmatch(r"KernelSignatures_b[0-3]\.cpp", f) for f in signatures), signatures
    assert "RegisterCPU_b0.cpp" in files or "RegisterCPU_b1.cpp" in files, files
    regs = registrations(aten_generated.cpu_tree)
    assert {ns for ns, *_ in regs} == {"aten"}, regs
    roots = {name.split(".")[0].rstrip("_") for _, _, name, _ in regs}
    for root in selected_roots():
        assert root in roots or root.rstrip("_") in roots, f"{root}: no registration generated"


def test_shared_library_links_torch_dynamically(aten_generated: AtenGenerated) -> None:
    lib = aten_generated.library
    assert lib.is_file(), lib
    needed = subprocess.run(
        ["readelf", "-d", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    assert "libtorch_cpu.so" in needed and "libc10.so" in needed, needed
    # The library holds our registrations and no torch code: far smaller than libtorch_cpu.
    assert lib.stat().st_size < 50_000_000, lib.stat().st_size
    defined = subprocess.run(
        ["nm", "-DC", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    assert "at::native::structured_add_out::impl" not in defined


def dependency_files(bin_dir: Path, library: str) -> dict[str, list[str]]:
    """Source name -> the paths its compile's GCC dependency file (.d) names."""
    found = {}
    for path in (bin_dir / "_pic_dotd" / library).rglob("*.d"):
        text = path.read_text().replace("\\\n", " ")
        found[path.name.split(".")[0]] = text.split(":", 1)[1].split()
    return found


def test_sources_compile_with_the_precompiled_header(aten_generated: AtenGenerated) -> None:
    """GCC used one of the library's precompiled headers (//:aten_generated_pch's full and
    light) for every generated source, the one the source names: their .d files name no header it holds (a source
    that parsed ATen/core/Tensor.h itself would), and name its stamp, which makes them recompile
    when the .gch changes (pch.bzl). Registration sources that need no dispatcher take the light
    one."""
    stamps = {}
    for kind, target in [
        ("FULL", "aten_generated_pch_full"),
        ("LIGHT", "aten_generated_pch_light"),
    ]:
        pch_dir = aten_generated.bin / f"{target}_pch"
        gch = pch_dir / f"{target}.h.gch"
        assert gch.stat().st_size > 10_000_000, gch
        stamp = (pch_dir / f"{target}_stamp.h").read_text()
        assert re.fullmatch(r"// [0-9a-f]{64}\n", stamp), stamp
        stamps[kind] = f"/{target}_stamp.h"
    # (The output base may also hold .d files of earlier builds' sources, e.g. another --//:aten_ops.)
    deps = dependency_files(aten_generated.bin, "aten_generated_objects")
    deps |= dependency_files(aten_generated.bin, "aten_generated_signature_objects")
    sources = sorted(
        [*aten_generated.cpu_tree.glob("*.cpp"), *aten_generated.signature_tree.glob("*.cpp")]
    )
    names = [p.stem for p in sources]
    assert names and not set(names) - set(deps), sorted(set(names) - set(deps))
    kinds = {}
    for path in sources:
        paths = deps[path.stem]
        kind = re.search(r"^#ifdef ATENGEN_PCH_(FULL|LIGHT)$", path.read_text(), re.M).group(1)
        kinds.setdefault(kind, []).append(path.stem)
        assert not [p for p in paths if p.endswith("ATen/core/Tensor.h")], path.stem
        assert any(p.endswith(stamps[kind]) for p in paths), (path.stem, paths[:5])
    assert any(n.startswith("RegisterCompositeExplicitAutograd_") for n in kinds["LIGHT"]), kinds
    full = [n for n in names if n.startswith(("KernelSignatures_", "RegisterFunctionalize_"))]
    assert full and set(full) <= set(kinds["FULL"]), kinds


# Ops of aten_ops.txt that the comparison does not call, with the reason. (None so far: every
# selected op has a deterministic call in tests/scripts/load_and_compare.py; `empty` compares
# shapes only.)
NOT_CALLED: dict[str, str] = {}


def test_load_library_registers_and_keeps_results(
    aten_generated: AtenGenerated, summary: list[str]
) -> None:
    roots = selected_roots()
    called = [r for r in roots if r not in NOT_CALLED]
    for root, reason in NOT_CALLED.items():
        summary.append(f"aten_generated: not called: {root} ({reason})")
    expected = sorted(
        {(key, name, file) for _, key, name, file in registrations(aten_generated.cpu_tree)}
    )
    result = run_script(
        "load_and_compare.py",
        str(aten_generated.library),
        json.dumps(expected),
        json.dumps(called),
    )
    assert result.returncode == 0, result.stderr[-6000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    summary.append(
        f"aten_generated: {report['checked']} (key, op) registrations in the dispatch table, "
        f"{report['called']} ops called before/after load_library"
    )
    assert report["called"] == len(called)
    assert report["checked"] == len(expected) > 0
    assert report["missing"] == [], report["missing"][:20]
    assert report["differ"] == [], report["differ"]


def test_ops_setting_overrides_the_selection_file(aten_generated: AtenGenerated) -> None:
    """--//:aten_ops=abs regenerates the tree for abs alone (the codegen action only)."""
    try:
        bazel("build", "//:aten_generated_codegen", "--//:aten_ops=abs,neg")
        regs = registrations(aten_generated.cpu_tree)
        assert {name.split(".")[0].rstrip("_") for _, _, name, _ in regs} == {"abs", "neg"}, regs
    finally:
        bazel("build", "//:aten_generated_codegen")
    regs = registrations(aten_generated.cpu_tree)
    assert len({name.split(".")[0] for _, _, name, _ in regs}) > 2


# ---------------------------------------------------------------------------------------------
# //:aten_generated_cuda


def test_cuda_library_compiles(summary: list[str]) -> None:
    output_base = Path(bazel("info", "output_base").stdout.strip())
    bazel("build", "@local_cuda//:cuda_headers")
    defs = (output_base / "external" / "local_cuda" / "defs.bzl").read_text()
    if "HAS_CUDA = True" not in defs:
        pytest.skip("no CUDA toolkit ($RULES_ATEN_CUDA_DIR, $CUDA_HOME, /usr/local/cuda)")
    start = time.monotonic()
    result = bazel("build", "--keep_going", "//:aten_generated_cuda", check=False)
    assert result.returncode == 0, result.stderr[-8000:]
    summary.append(f"bazel build //:aten_generated_cuda: {time.monotonic() - start:.0f} s")
    bin_dir = Path(bazel("info", "bazel-bin").stdout.strip())
    tree = bin_dir / "aten_generated_codegen" / "cuda.cc"
    sources = sorted(p.stem for p in tree.glob("*.cpp"))
    assert any(s.startswith("RegisterCUDA_") for s in sources), sources
    # The CUDA library instantiates its own kernels' signatures (kernel_signatures.py).
    assert any(s.startswith("KernelSignatures_") for s in sources), sources
    assert {key for _, key, _, _ in registrations(tree)} >= {"CUDA"}
    archive = bin_dir / "libaten_generated_cuda_objects.lo"  # alwayslink: .lo
    members = subprocess.run(
        ["ar", "t", str(archive)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(m.removesuffix(".pic.o") for m in members) == sources


# ---------------------------------------------------------------------------------------------
# Incremental rebuilds of a custom op library (tests/incremental, shards = 0)


class Workspace:
    """A copy of tests/incremental with its own output base."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.output_base = root.parent / "output_base"
        # No CUDA here (myops has no CUDA kernels): also checks that myops_cuda degrades to an
        # empty library with a warning. //:aten_generated_cuda covers the toolkit.
        self.env = {
            **os.environ,
            "RULES_ATEN_PYTHON": str(VENV_PYTHON),
            "RULES_ATEN_CUDA_DIR": "none",
        }
        root.mkdir()
        workspace = (INCREMENTAL / "WORKSPACE.template").read_text()
        (root / "WORKSPACE").write_text(workspace.replace("@RULES_ATEN_PATH@", str(REPO)))
        shutil.copy(INCREMENTAL / "BUILD.template", root / "BUILD.bazel")
        shutil.copy(REPO / ".bazelrc", root / ".bazelrc")
        for name in ("ops.yaml", "kernels.cpp", "derivatives.yaml"):
            shutil.copy(CUSTOM_OPS / name, root / name)
        self.logs = 0
        self.stderr = ""

    def bazel(self, *args: str) -> subprocess.CompletedProcess[str]:
        return bazel(
            *args,
            cwd=self.root,
            env=self.env,
            startup=own_output_base(self.output_base, max_idle_secs=300),
        )

    def build(self, *targets: str) -> list[dict]:
        """Builds; returns the spawns Bazel ran (from --execution_log_json_file)."""
        self.logs += 1
        log = self.root.parent / f"exec{self.logs}.json"
        self.stderr = self.bazel("build", f"--execution_log_json_file={log}", *targets).stderr
        return read_execution_log(log)

    def edit(self, name: str, old: str, new: str) -> None:
        path = self.root / name
        text = path.read_text()
        assert text.count(old) == 1, (name, old)
        path.write_text(text.replace(old, new))

    def sources(self) -> dict[str, str]:
        """The generated sources: registrations (cpu.cc), kernel signatures (signatures.cc) and
        autograd kernels (autograd.cc)."""
        base = self.root / "bazel-bin" / "myops_codegen"
        return {
            p.name: p.read_text()
            for tree in ("cpu.cc", "signatures.cc", "autograd.cc")
            for p in (base / tree).glob("*.cpp")
        }

    def plan(self) -> str:
        """The precompiled headers' plan (rules/private/programs/pch_plan.sh)."""
        return (self.root / "bazel-bin" / "myops_codegen" / "pch_plan.txt").read_text()

    def headers(self) -> dict[str, str]:
        base = self.root / "bazel-bin" / "myops_codegen" / "include"
        return {str(p.relative_to(base)): p.read_text() for p in base.rglob("*.h")}


def compiled_source(spawn: dict) -> str | None:
    """The name of the source a compile spawn compiles (None for another spawn): a CppCompile
    names it after `-c`; the kernel compile worker's spawn names only its parameter file, so
    the source is its input of the object's name."""
    mnemonic = spawn.get("mnemonic")
    args = spawn.get("commandArgs", [])
    if mnemonic == "CppCompile" and "-c" in args:
        return Path(args[args.index("-c") + 1]).name
    if mnemonic == "AtenKernelCompile":
        (obj,) = spawn["listedOutputs"]
        stem = Path(obj).name.removesuffix(".pic.o")
        (source,) = [
            Path(i["path"]).name
            for i in spawn["inputs"]
            if Path(i["path"]).stem == stem and Path(i["path"]).suffix in (".cc", ".cpp")
        ]
        return source
    return None


def describe(spawn: dict) -> str:
    """`CppCompile kernels.cpp`, `AtenCodegen`, `CppLink libmyops.so`, ..."""
    mnemonic = spawn.get("mnemonic", "?")
    source = compiled_source(spawn)
    if source:
        return f"{mnemonic} {source}"
    if mnemonic in ("CppLink", "CppArchive"):
        outputs = sorted(Path(o).name for o in spawn.get("listedOutputs", []))
        return f"{mnemonic} {' '.join(outputs)}"
    return mnemonic


def compiled(spawns: list[dict]) -> set[str]:
    return {source for spawn in spawns if (source := compiled_source(spawn))}


def expected_compiles(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """The sources whose bytes changed (the kernel headers are inlined into the compiled tree),
    and kernels.cpp, which every step edits."""
    return {"kernels.cpp"} | {name for name, text in after.items() if before.get(name) != text}


def changed_headers(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def check_myops(ws: Workspace, *extra_ops: str) -> None:
    lib = ws.root / "bazel-bin" / "libmyops.so"
    result = run_script("check_myops.py", str(lib), *extra_ops, timeout=300)
    assert result.returncode == 0 and "myops ok" in result.stdout, result.stderr[-4000:]


def check_myops_autograd(ws: Workspace, summary: list[str]) -> None:
    """The generated autograd kernels of libmyops.so: tests/scripts/check_myops_autograd.py."""
    lib = ws.root / "bazel-bin" / "libmyops.so"
    result = run_script("check_myops_autograd.py", str(lib))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-4000:]
    lines = result.stdout.splitlines()
    for expected in (
        "gradcheck+gradgradcheck ok: scale",
        "gradcheck+gradgradcheck ok: scale_",
        "gradcheck+gradgradcheck ok: shift",
        "opcheck ok: scale, scale_, shift",
        "gradients equal the torch-op reference",
        "in-place: version counter and leaf check ok",
        "out=: refused with requires_grad as torch does; version counter bumped",
    ):
        assert expected in lines, (expected, result.stdout)
    summary.append("myops autograd (Bazel, derivatives=): " + "; ".join(lines))


NEW_OP_YAML = """
- func: myops::twice(Tensor self) -> Tensor
  dispatch:
    CPU: twice_cpu
"""

NEW_OP_KERNEL = """
namespace at::native {

at::Tensor twice_cpu(const at::Tensor& self) {
  return self * 2;
}

}  // namespace at::native
"""


def test_incremental_rebuilds(tmp_path: Path, summary: list[str]) -> None:
    ws = Workspace(tmp_path / "ws")
    targets = ("//:myops", "//:libmyops.so", "//:myops_cuda")
    try:
        start = time.monotonic()
        first = ws.build(*targets)
        summary.append(
            f"incremental: first build {time.monotonic() - start:.0f} s, "
            f"{len(compiled(first))} compiles"
        )
        cpu0, inc0 = ws.sources(), ws.headers()
        assert set(inc0) == {"myops/ops/scale_native.h", "myops/ops/shift_native.h"}, set(inc0)
        # And the runtime's torch release guard, a source of each library.
        expected = set(cpu0) | {"kernels.cpp", "torch_release_guard.cc"}
        assert compiled(first) == expected, sorted(compiled(first))
        # The compiled sources carry their kernel declarations inline, not as tree includes:
        # only the runtime's own headers are quoted.
        includes = {i for text in cpu0.values() for i in QUOTED_INCLUDE.findall(text)}
        assert includes == {
            "atengen/runtime.h",
            "atengen/library.h",
            "atengen/dispatch.h",
            "atengen/functionalize.h",
            "atengen/guarded_library.h",
            "atengen/kernel_signatures.h",
            "atengen/shim_library.h",
            "atengen/boxed_kernels.h",
        }, includes
        assert {"Autograd_scale.cpp", "Autograd_shift.cpp"} <= set(cpu0), sorted(cpu0)
        check_myops(ws)
        check_myops_autograd(ws, summary)
        assert "no CUDA toolkit was found" in ws.stderr, ws.stderr[-3000:]

        # (a) Rename scale's CPU kernel: only scale's sources (and kernels.cpp) recompile.
        ws.edit("ops.yaml", "    CPU: scale_cpu\n", "    CPU: scale_cpu2\n")
        ws.edit("kernels.cpp", "at::Tensor scale_cpu(", "at::Tensor scale_cpu2(")
        spawns = ws.build(*targets)
        cpu1, inc1 = ws.sources(), ws.headers()
        print("(a) rename scale_cpu -> scale_cpu2:", sorted(describe(s) for s in spawns))
        want = expected_compiles(cpu0, cpu1)
        assert changed_headers(inc0, inc1) == {"myops/ops/scale_native.h"}
        # Only the CPU shard names the renamed kernel (the generated scale.out kernel in the
        # CompositeExplicitAutograd shard calls the op, not the kernel, so it is unchanged).
        assert want == {"RegisterCPU_myops_scale.cpp", "kernels.cpp"}, want
        assert compiled(spawns) == want, (sorted(compiled(spawns)), sorted(want))
        summary.append(f"incremental (a) rename a kernel: compiled {sorted(compiled(spawns))}")
        check_myops(ws)

        # (b) Add an operator: only its new sources (and kernels.cpp) compile, and the
        # kernel-signature source that instantiates its signature, which no other op has.
        plan1 = ws.plan()
        ws.edit(
            "ops.yaml",
            "    CompositeExplicitAutograd: shift_composite\n",
            "    CompositeExplicitAutograd: shift_composite\n" + NEW_OP_YAML,
        )
        ws.edit(
            "kernels.cpp",
            '#include "myops/ops/shift_native.h"\n',
            '#include "myops/ops/shift_native.h"\n#include "myops/ops/twice_native.h"\n',
        )
        (ws.root / "kernels.cpp").write_text((ws.root / "kernels.cpp").read_text() + NEW_OP_KERNEL)
        spawns = ws.build(*targets)
        cpu2, inc2 = ws.sources(), ws.headers()
        print("(b) add myops::twice:", sorted(describe(s) for s in spawns))
        assert changed_headers(inc1, inc2) == {"myops/ops/twice_native.h"}
        want = expected_compiles(cpu1, cpu2)
        assert want == {
            "kernels.cpp",
            "KernelSignatures_b0.cpp",
            "RegisterCPU_myops_twice.cpp",
            "RegisterSchema_myops_twice.cpp",
        }
        if ws.plan() != plan1:
            # The new op's sources took a kind of precompiled header past its threshold: the
            # header is made for real from now on, and every source recompiles once (pch.bzl).
            want = set(cpu2) | {"kernels.cpp"}
        assert compiled(spawns) == want, (sorted(compiled(spawns)), sorted(want))
        summary.append(f"incremental (b) add an op: compiled {sorted(compiled(spawns))}")
        check_myops(ws, "twice")

        # (c) Nothing changed: nothing runs.
        spawns = ws.build(*targets)
        print("(c) no-op rebuild:", sorted(describe(s) for s in spawns))
        assert spawns == [], [describe(s) for s in spawns]
        summary.append("incremental (c) no-op rebuild: 0 actions")
    finally:
        ws.bazel("shutdown")


def test_ltc_attributes_reach_the_generated_code() -> None:
    """external_backend_codegen's LTC attributes in a package below the root (generation only):
    the node base and its header, a shape-inference header of the package, checked and included
    by its workspace-relative path, no TorchScript lowerings, headers under the package."""
    target = "//tests/data/lazy:custom_lazy_codegen"
    bazel("build", target)
    bin_dir = Path(bazel("info", "bazel-bin").stdout.strip())
    codegen = bin_dir / "tests" / "data" / "lazy" / "custom_lazy_codegen"
    headers = codegen / "include" / "tests" / "data" / "lazy"
    assert sorted(p.name for p in headers.iterdir()) == [
        "LazyIr.h", "LazyIrCommon.h", "LazyIr_abs.h", "LazyIr_mm.h", "LazyIr_selu.h",
        "LazyNonNativeIr.h", "XLANativeFunctions.h",
    ]  # fmt: skip
    common = (headers / "LazyIrCommon.h").read_text()
    assert '#include "tests/data/lazy/test_node.h"' in common
    assert "ts_lowering_context.h" not in common
    abs_node = (headers / "LazyIr_abs.h").read_text()
    assert re.search(r"class Abs : public test_lazy::TestNode\b", abs_node), abs_node
    assert "Lower(" not in abs_node
    kernels = (codegen / "srcs.cc" / "XLANativeFunctions_abs.cpp").read_text()
    assert '#include "tests/data/lazy/test_shape_inference.h"' in kernels
    assert '#include "tests/data/lazy/LazyIr_abs.h"' in kernels
    assert "torch/csrc/lazy/core/shape_inference.h" not in kernels
