"""The README's quickstart, run as a user would run it.

The code blocks that README.md marks with `<!-- quickstart: NAME -->` are written, unchanged
except for the path of this checkout in the WORKSPACE's local_repository, into a fresh directory
outside the repository as the files NAME. `.venv` there is a link to this checkout's `.venv`, so
rules_aten finds the interpreter the way the quickstart says (no RULES_ATEN_PYTHON). Then
`bazel build //:lib<name>.so` builds the aten_codegen() library, and the README's Python snippet
runs with `.venv/bin/python` against it.

The workspace directory is removed and written again on every run, but at a path kept in the
temporary directory (keyed by this checkout's path), with its output base beside it: a second
run of the suite finds the build up to date instead of fetching and compiling again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import bazel_helpers, slices
from tests.support.quickstart_helpers import (
    CHECKOUT_PLACEHOLDER,
    COMMANDS,
    MODULE_FILES,
    PYTHON_SNIPPET,
    VENV,
    WORKSPACE_FILES,
    quickstart_blocks,
    quickstart_startup,
    run_snippet,
    write_quickstart_workspace,
)
from tests.support.release_guard_helpers import (
    CUDA_LIBRARIES,
    GUARD_PYTHONS_ENV,
    guard_pythons,
    load_copy,
    needed_and_runpath,
    refusal,
    release_of,
)

pytestmark = pytest.mark.bazel

LIBRARY_NAME = re.compile(r'aten_codegen\(\n\s+name = "(\w+)"')

# scale(arange(3), 2.0), computed by hand.
EXPECTED_OUTPUT = "tensor([0., 2., 4.])"


def test_readme_has_every_quickstart_block() -> None:
    blocks = quickstart_blocks()
    assert set(blocks) == {*WORKSPACE_FILES, *MODULE_FILES, PYTHON_SNIPPET, COMMANDS}, sorted(
        blocks
    )
    assert blocks["WORKSPACE"].count(CHECKOUT_PLACEHOLDER) == 1, blocks["WORKSPACE"]
    assert blocks["MODULE.bazel"].count(CHECKOUT_PLACEHOLDER) == 1, blocks["MODULE.bazel"]


@pytest.fixture(scope="module")
def quickstart_workspace() -> Iterator[Path]:
    if shutil.which("bazel") is None:
        pytest.fail("bazel is not on PATH; run ./dev setup")
    if not (VENV / "bin" / "python3").exists():
        pytest.fail(
            f"{VENV}/bin/python3 missing; run ./dev setup (a venv named by RULES_ATEN_PYTHON: "
            "./dev test-releases installs those of the releases)"
        )
    workspace = write_quickstart_workspace()
    # One Bazel server for the module's builds (each restart would analyse the workspace again).
    yield workspace
    quickstart_bazel(workspace, "shutdown")


def quickstart_bazel(workspace: Path, *args: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
    return bazel_helpers.bazel(*args, cwd=workspace, startup=quickstart_startup(), env=env)


def test_quickstart_builds_and_runs(quickstart_workspace: Path, summary: list[str]) -> None:
    blocks = quickstart_blocks()
    names = LIBRARY_NAME.findall(blocks["BUILD.bazel"])
    assert len(names) == 1, blocks["BUILD.bazel"]
    library = f"lib{names[0]}.so"
    commands = blocks[COMMANDS].splitlines()
    assert commands == [f"bazel build //:{library}", f".venv/bin/python {PYTHON_SNIPPET}"], commands

    quickstart_bazel(quickstart_workspace, "build", f"//:{library}")
    output_base = Path(quickstart_bazel(quickstart_workspace, "info", "output_base").stdout.strip())
    assert (quickstart_workspace / "bazel-bin" / library).is_file()
    # The interpreter came from the workspace's .venv, as the quickstart says.
    interpreter = output_base / "external" / "rules_aten_python" / "interpreter.txt"
    assert interpreter.read_text().split("\n")[2] == ".venv", interpreter.read_text()

    assert run_snippet(quickstart_workspace) == EXPECTED_OUTPUT
    summary.append(f"quickstart: built {library} and printed {EXPECTED_OUTPUT}")

    # No CUDA code, so no CUDA library, even from a CUDA build of torch; no RUNPATH, so a copy
    # loads wherever it is, into the torch the process imported.
    built = quickstart_workspace / "bazel-bin" / library
    needed, runpath = needed_and_runpath(built)
    assert [n for n in needed if CUDA_LIBRARIES.match(n)] == [], needed
    assert runpath == [], runpath
    _check_other_releases(quickstart_workspace / ".venv" / "bin" / "python", built, summary)


def _check_other_releases(python: Path, built: Path, summary: list[str]) -> None:
    """A copy of the library in the interpreters of $RULES_ATEN_GUARD_PYTHONS (./dev
    test-releases): computes in its own release, and is refused, registering nothing, in the
    others."""
    pythons = guard_pythons()
    if not pythons:
        slices.fail_if_required("releases", f"${GUARD_PYTHONS_ENV} names no interpreter")
        summary.append(f"quickstart: other torch releases not tried (${GUARD_PYTHONS_ENV} unset)")
        return
    release = release_of(python)
    ways = {}
    for other in pythons:
        report = load_copy(
            other, built, "torch.ops.myops.scale(torch.arange(3.0), 2.0)", "myops::scale"
        )
        if report.release == release:
            assert report.errors == [] and report.value == [0.0, 2.0, 4.0], report
            continue
        ways[report.torch] = refusal(report, release)
    assert ways, f"no interpreter of another release than {release} in ${GUARD_PYTHONS_ENV}"
    summary.append(f"quickstart built on torch {release}, refused by: {ways}")


# The guard's line when a weak reference to torch found nothing in the release it was built for.
UNBOUND_LINE = re.compile(
    r"^rules_aten: \S+ was compiled against torch (?P<built>\d+\.\d+) and cannot load into torch "
    r"\S+ \([^)]*\), which does not define (?P<symbol>\S+): nothing of it is registered; "
    r"rebuild it against this torch$"
)


def test_a_reference_its_own_release_lacks_is_refused_by_the_guard(
    quickstart_workspace: Path, tmp_path: Path, summary: list[str]
) -> None:
    """lib<name>.so's references to torch are weak, so that the loader leaves a release mismatch
    to the guard; in the release it was built for, the guard makes sure each one found its
    symbol. A torch patch release without one of them is played here by renaming one reference
    (the same length, in the library's own string table) to a name no torch defines."""
    library = "libmyops.so"
    quickstart_bazel(quickstart_workspace, "build", f"//:{library}")
    built = quickstart_workspace / "bazel-bin" / library
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", str(built)], capture_output=True, text=True, check=True
    ).stdout
    weak = [line.split()[-1] for line in out.splitlines() if line.split()[-2] == "w"]
    torch_weak = [name for name in weak if name.startswith("_ZN3c10")]
    assert torch_weak, f"no weak reference to c10 in {built}:\n{out}"
    name = torch_weak[0]
    renamed = "_ZN3c1X" + name[len("_ZN3c10") :]
    data = built.read_bytes()
    assert data.count(name.encode() + b"\0") >= 1
    edited = tmp_path / library
    edited.write_bytes(data.replace(name.encode() + b"\0", renamed.encode() + b"\0"))
    report = load_copy(
        VENV / "bin" / "python",
        edited,
        "torch.ops.myops.scale(torch.arange(3.0), 2.0)",
        "myops::scale",
    )
    assert report.value is None and report.dump == "", report
    root_type, root_message = report.errors[-1]
    assert root_type == "ImportError", report.errors
    match = UNBOUND_LINE.match(root_message)
    assert match and match["symbol"] == renamed, root_message
    summary.append(f"quickstart: a reference renamed to {renamed[:40]}... refused by the guard")


# `<!-- runnable: WHERE -->`, then a fenced block, in docs/rules.md: WHERE, the language, the text.
RUNNABLE_BLOCK = re.compile(
    r"^<!-- runnable: (\S+) -->\n```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL
)
RULES_MD = bazel_helpers.REPO / "docs" / "rules.md"


def test_the_runnable_blocks_of_the_reference_run(
    quickstart_workspace: Path, summary: list[str]
) -> None:
    """Every block of docs/rules.md marked `<!-- runnable: quickstart -->` runs, as written, with
    the quickstart workspace's .venv in that workspace once its library is built; no other place
    to run a block is known, so a marker naming one fails here."""
    blocks = RUNNABLE_BLOCK.findall(RULES_MD.read_text())
    markers = RULES_MD.read_text().count("<!-- runnable:")
    assert blocks and len(blocks) == markers, (len(blocks), markers)
    assert {(where, language) for where, language, _ in blocks} == {("quickstart", "python")}
    quickstart_bazel(quickstart_workspace, "build", "//:libmyops.so")
    for i, (_, _, text) in enumerate(blocks):
        script = quickstart_workspace / f"rules_md_block_{i}.py"
        script.write_text(text)
        result = subprocess.run(
            [str(quickstart_workspace / ".venv" / "bin" / "python"), script.name],
            cwd=quickstart_workspace,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, (text, result.stderr[-4000:])
    summary.append(f"docs/rules.md: {len(blocks)} runnable block(s) ran")


# The body edit, and what scale(arange(3), 2.0) prints after it, by hand.
KERNEL_BODY, EDITED_BODY = "return self.mul(factor);", "return self.mul(factor).add(1);"
EDITED_OUTPUT = "tensor([1., 3., 5.])"


def test_a_kernel_edit_recompiles_only_the_kernel_from_its_precompiled_header(
    quickstart_workspace: Path, summary: list[str]
) -> None:
    """The quickstart as written is the fast edit loop: after a first build, an edit of the
    kernel's body compiles kernels.cpp alone, by its persistent worker, which starts from the
    precompiled header of what the kernel includes that it made beside the first compile
    (kernel_objects.bzl), then archives and relinks."""
    library = "libmyops.so"
    log = quickstart_workspace.parent / "edit_exec.json"
    quickstart_bazel(quickstart_workspace, "build", f"//:{library}")
    output_base = Path(quickstart_bazel(quickstart_workspace, "info", "output_base").stdout.strip())
    # Made in the background, at the lowest priority: a few seconds to a minute after the build.
    store = output_base / "rules_aten_kernel_pch"
    deadline = time.monotonic() + 300
    while not list(store.glob("*/ready.json")) and time.monotonic() < deadline:
        time.sleep(0.5)
    kernels = quickstart_workspace / "kernels.cpp"
    text = kernels.read_text()
    assert text.count(KERNEL_BODY) == 1, text
    kernels.write_text(text.replace(KERNEL_BODY, EDITED_BODY))
    result = quickstart_bazel(
        quickstart_workspace, "build", f"--execution_log_json_file={log}", f"//:{library}"
    )
    spawns = bazel_helpers.read_execution_log(log)
    mnemonics = sorted(s.get("mnemonic", "?") for s in spawns)
    # The empty header that orders the generated sources after the kernels (made again, with
    # the same bytes: they do not recompile); the archive of the library's `srcs` objects and the
    # shared library (both CppLink), then lib<name>.so's references to torch made weak
    # (`atengen bound-link`).
    assert mnemonics == [
        "AtenAfter",
        "AtenKernelCompile",
        "AtenReleaseBoundLink",
        "CppLink",
        "CppLink",
    ], mnemonics
    linked = sorted(
        Path(o).name for s in spawns if s.get("mnemonic") == "CppLink" for o in s["listedOutputs"]
    )
    assert linked == sorted([library, "libmyops_srcs_objects.a"]), linked
    (compile_spawn,) = [s for s in spawns if s.get("mnemonic") == "AtenKernelCompile"]
    assert compile_spawn.get("runner") == "worker", compile_spawn.get("runner")
    # The worker's log says which header each compile had (GCC would print -Winvalid-pch's
    # warning if it could not use the .gch and parsed the headers instead).
    worker_log = "\n".join(
        p.read_text() for p in (output_base / "bazel-workers").glob("*AtenKernelCompile*.log")
    )
    last = [line for line in worker_log.splitlines() if "compile-kernel: kernels.cpp:" in line][-1]
    assert last.startswith(f"compile-kernel: kernels.cpp: with {store}/"), worker_log
    assert "Winvalid-pch" not in result.stderr, result.stderr
    assert run_snippet(quickstart_workspace) == EDITED_OUTPUT
    summary.append("quickstart: a kernel edit ran " + ", ".join(mnemonics))


# A second op whose kernel is never written, and the first one's kernel mistyped.
UNDEFINED_OP = """
- func: myops::shift(Tensor self, float offset) -> Tensor
  dispatch:
    CPU: shift_cpu
"""


def test_a_missing_or_mistyped_kernel_fails_the_build(quickstart_workspace: Path) -> None:
    """The build, not the load, fails on a kernel that the generated headers declare and nothing
    defines (`atengen bound-link`): one `header:line: error:` line per kernel, naming the
    declaration to match and, for the mistyped one, what the library defines instead."""
    ops, kernels = quickstart_workspace / "ops.yaml", quickstart_workspace / "kernels.cpp"
    ops_text, kernels_text = ops.read_text(), kernels.read_text()
    assert kernels_text.count("double factor") == 1, kernels_text
    try:
        ops.write_text(ops_text + UNDEFINED_OP)
        kernels.write_text(kernels_text.replace("double factor", "float factor"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}
        result = bazel_helpers.bazel(
            "build",
            "//:libmyops.so",
            cwd=quickstart_workspace,
            startup=quickstart_startup(),
            env=env,
            check=False,
        )
        assert result.returncode != 0
        errors = [line for line in result.stderr.splitlines() if "_native.h:" in line]
        assert len(errors) == 2, result.stderr[-4000:]
        scale, shift = errors
        assert re.match(r"\S*/myops_codegen/include/myops/ops/scale_native\.h:\d+: error: ", scale)
        assert scale.endswith(
            "//:libmyops.so: kernel at::native::scale_cpu(at::Tensor const&, double) is defined "
            "neither by the library nor by torch; defined as "
            "at::native::scale_cpu(at::Tensor const&, float) instead: make its parameters match "
            "this declaration"
        ), scale
        assert "/myops/ops/shift_native.h:" in shift and shift.endswith(
            "kernel at::native::shift_cpu(at::Tensor const&, double) is defined neither by the "
            "library nor by torch; define it in the library's srcs or deps"
        ), shift
        assert not (quickstart_workspace / "bazel-bin" / "libmyops.so").exists()
    finally:
        ops.write_text(ops_text)
        kernels.write_text(kernels_text)


def test_macro_arguments_tags_yaml_default_and_a_bad_name(quickstart_workspace: Path) -> None:
    """`tags_yaml` may be left out (the wheel's `@torch//:tags.yaml`), and a library name that
    lib<name>.so and the generated files cannot carry (a space, a non-ASCII letter) is refused by
    the macro, with one line naming the characters allowed, before anything is built; so is a
    C source among `srcs`, which the kernels' compile (C++) cannot take."""
    build = quickstart_workspace / "BUILD.bazel"
    text = build.read_text()
    line = '    tags_yaml = "@torch//:tags.yaml",\n'
    assert text.count(line) == 1, text
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULES_ATEN_")}

    def analyse(target: str):
        return bazel_helpers.bazel(
            "build",
            "--nobuild",
            target,
            cwd=quickstart_workspace,
            startup=quickstart_startup(),
            env=env,
            check=False,
        )

    try:
        build.write_text(text.replace(line, ""))
        result = analyse("//:libmyops.so")
        assert result.returncode == 0, result.stderr[-4000:]
        for bad in ("my ops", "myöps"):
            build.write_text(
                text + f'\naten_codegen(\n    name = "{bad}",\n    op_yaml = "ops.yaml",\n)\n'
            )
            result = analyse("//:libmyops.so")
            assert result.returncode != 0
            errors = [
                ln for ln in result.stderr.splitlines() if "rules_aten: aten_codegen(name" in ln
            ]
            assert len(errors) == 1, result.stderr[-4000:]
            assert errors[0].split("Error in fail: ")[-1] == (
                f'rules_aten: aten_codegen(name = "{bad}"): a library\'s name may hold only ASCII '
                'letters, digits, "_", "-" and "." (and start with a letter, a digit or "_"): it '
                "names lib<name>.so and the files generated for it"
            ), errors[0]
        (quickstart_workspace / "helper.c").write_text("int helper(void) { return 1; }\n")
        build.write_text(
            text.replace('srcs = ["kernels.cpp"]', 'srcs = ["kernels.cpp", "helper.c"]')
        )
        result = analyse("//:libmyops.so")
        assert result.returncode != 0
        errors = [ln for ln in result.stderr.splitlines() if "Error in fail: rules_aten:" in ln]
        assert len(errors) == 1, result.stderr[-4000:]
        assert errors[0].split("Error in fail: ")[-1] == (
            'rules_aten: aten_codegen(name = "myops"): srcs: helper.c is neither a C++ source '
            "(.cc, .cpp, .cxx, .c++, .C) nor a header: compile it in a cc_library of deps"
        ), errors[0]
    finally:
        build.write_text(text)
        (quickstart_workspace / "helper.c").unlink(missing_ok=True)
