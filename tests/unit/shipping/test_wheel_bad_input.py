"""aten_wheel's action (`atengen wheel`) without Bazel: each bad input is one
`rules_aten: <label>: ...` line, exit 1 and no wheel (a library with no custom operator, a
version that is not PEP 440, a distribution that is not a valid package name, py_srcs importing
what the wheel neither ships nor requires); a good one gives the same bytes twice and the typed
stub; the manylinux table of the C++ runtime equals auditwheel's policies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tests.support.bazel_helpers import REPO

TOOL = REPO / "tool"
TAGS = Path(__import__("torchgen").__file__).parent / "packaged" / "ATen" / "native" / "tags.yaml"
OPS = REPO / "examples" / "stable_ops" / "ops.yaml"
# Any shared library stands in for lib<name>.so: the action reads its ELF facts and copies it.
LIBRARY = Path(__import__("torch").__file__).parent / "lib" / "libc10.so"


def _run(tmp_path: Path, *extra: str, op_yaml: Path = OPS, **flags: str):
    values = {"distribution": "stableops", "version": "1.0", "abi": "stable"} | flags
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    args = [f"--{k}={v}" for k, v in values.items()]
    result = subprocess.run(
        [sys.executable, "-m", "atengen", "wheel", "--label=//:w", f"--library={LIBRARY}"]
        + [f"--op_yaml={op_yaml}", f"--tags_yaml={TAGS}", "--torch_target=2.11"]
        + [*args, *extra, f"--output_dir={out}"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TOOL)},
    )
    return result, out


def _one_line(result: subprocess.CompletedProcess, out: Path, start: str) -> str:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rules_aten: //:w: " + start), lines[0]
    assert not list(out.glob("*.whl")) if out.exists() else True
    return lines[0]


def test_no_ops(tmp_path: Path) -> None:
    empty = tmp_path / "ops.yaml"
    # Only an aten operator: the library registers nothing of a namespace of its own.
    empty.write_text("- func: abs(Tensor self) -> Tensor\n")
    result, out = _run(tmp_path, op_yaml=empty)
    line = _one_line(result, out, "error: the op YAML of libc10.so declares no operator")
    assert "custom namespace" in line


def test_version_not_pep440(tmp_path: Path) -> None:
    result, out = _run(tmp_path, version="1.0-beta_x")
    _one_line(result, out, "version = '1.0-beta_x' is not a PEP 440 version")


@pytest.mark.parametrize(
    ("distribution", "start"),
    [
        ("9ops", "distribution = '9ops' gives the package name '9ops', which is not a valid"),
        ("my ops", "distribution = 'my ops' is not a valid distribution name"),
        ("class", "distribution = 'class' gives the package name 'class'"),
    ],
)
def test_distribution_not_a_package_name(tmp_path: Path, distribution: str, start: str) -> None:
    result, out = _run(tmp_path, distribution=distribution)
    _one_line(result, out, start)


def test_py_srcs_import_what_is_not_shipped(tmp_path: Path) -> None:
    source = tmp_path / "registrations.py"
    source.write_text("import torch\nimport json\n\nimport numpy\n")
    result, out = _run(tmp_path, f"--py_src={source}", "--py_src_label=pkg/registrations.py")
    line = _one_line(result, out, "py_srcs pkg/registrations.py:4 imports numpy, which the wheel")
    assert "requires" in line
    # Named in requires, it is allowed.
    result, out = _run(
        tmp_path, f"--py_src={source}", "--py_src_label=pkg/registrations.py", "--requires=numpy>=2"
    )
    assert result.returncode == 0, result.stderr
    # A sibling imported by its bare name would not be found inside the package.
    source.write_text("import helpers\n")
    (tmp_path / "helpers.py").write_text("")
    result, out = _run(
        tmp_path,
        f"--py_src={source}",
        "--py_src_label=pkg/registrations.py",
        f"--py_src={tmp_path / 'helpers.py'}",
        "--py_src_label=pkg/helpers.py",
    )
    _one_line(result, out, "py_srcs pkg/registrations.py:1 imports helpers by its bare name")


def test_same_bytes_and_the_stub(tmp_path: Path) -> None:
    first, out = _run(tmp_path)
    assert first.returncode == 0, first.stderr
    (wheel,) = out.glob("*.whl")
    data = wheel.read_bytes()
    again, _ = _run(tmp_path)
    assert again.returncode == 0 and wheel.read_bytes() == data
    import zipfile

    stub = zipfile.ZipFile(wheel).read("stableops/ops.pyi").decode()
    assert (
        "def scaled_add(\n    self: Tensor,\n    other: Tensor,\n    alpha: float,\n) -> Tensor:"
        in stub
    )
    assert "    dim: int = ...,\n) -> Tensor:" in stub
    assert "def clamp_abs_inplace(" in stub and ") -> None:" in stub


def test_stub_types(tmp_path: Path) -> None:
    ops = tmp_path / "ops.yaml"
    ops.write_text(
        "- func: t::f(Tensor? a, int[] b, Tensor[] c, *, float? d=None, bool e=False, "
        "Scalar s=1, str m='x') -> (Tensor, Tensor[])\n"
        "- func: t::g(Tensor a) -> Tensor\n- func: t::g.two(Tensor a, Tensor b) -> Tensor\n"
    )
    result, out = _run(tmp_path, op_yaml=ops)
    assert result.returncode == 0, result.stderr
    import zipfile

    (wheel,) = out.glob("*.whl")
    stub = zipfile.ZipFile(wheel).read("stableops/ops.pyi").decode()
    assert (
        "    a: Optional[Tensor],\n    b: Sequence[int],\n    c: Sequence[Tensor],\n    *,\n"
        in stub
    )
    assert "    d: Optional[float] = ...,\n    e: bool = ...,\n    s: Number = ...," in stub
    assert ") -> tuple[Tensor, list[Tensor]]:" in stub
    assert stub.count("@overload\ndef g(") == 2


def test_cxx_runtime_table_is_auditwheels() -> None:
    """Each version of the table is the newest of some manylinux policy, at that policy's
    glibc, and each policy's newest versions are in it."""
    from atengen.shipping.elf import CXX_RUNTIME_GLIBC

    policies = json.loads(
        resources.files("auditwheel.policy").joinpath("manylinux-policy.json").read_text()
    )
    expected: dict[str, dict[tuple[int, ...], tuple[int, int]]] = {}
    for policy in policies:
        if not policy["name"].startswith("manylinux_"):
            continue
        glibc = tuple(int(n) for n in policy["name"].split("_")[1:3])
        if glibc < (2, 17):
            continue
        for name, versions in policy["symbol_versions"]["x86_64"].items():
            if name in CXX_RUNTIME_GLIBC:
                # Numbered versions only (not CXXABI_TM_1, which no compiler here emits).
                numbered = [v for v in versions if v.replace(".", "").isdigit()]
                newest = max(tuple(int(n) for n in v.split(".")) for v in numbered)
                expected.setdefault(name, {}).setdefault(newest, glibc)  # oldest policy first
    assert {k: tuple(sorted(v.items())) for k, v in expected.items()} == CXX_RUNTIME_GLIBC


# --- each input the tool once took, and what it does now ----------------------------------


def _source(tmp_path: Path, name: str, text: str = "import torch\n") -> Path:
    path = tmp_path / "src" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _nothing_left(out: Path) -> None:
    assert not out.exists() or not list(out.iterdir()), list(out.iterdir())


@pytest.mark.parametrize("module", ["class", "if", "True", "None", "async"])
def test_py_srcs_keyword_module(tmp_path: Path, module: str) -> None:
    """`from . import class` would not parse: the file is refused, by name."""
    source = _source(tmp_path, f"{module}.py")
    result, out = _run(tmp_path, f"--py_src={source}", f"--py_src_label=pkg/{module}.py")
    line = _one_line(result, out, f"py_srcs: pkg/{module}.py: {module} is a Python keyword")
    assert "rename the file" in line
    _nothing_left(out)


def test_py_srcs_name_python_imports_otherwise(tmp_path: Path) -> None:
    """`ﬁ` (U+FB01) is imported as its NFKC form `fi`, which the wheel has no file of."""
    source = _source(tmp_path, "\ufb01.py")
    result, out = _run(tmp_path, f"--py_src={source}", "--py_src_label=pkg/\ufb01.py")
    line = _one_line(result, out, "py_srcs: pkg/\ufb01.py: Python imports \ufb01 as fi")
    assert "rename the file to fi.py" in line
    _nothing_left(out)


def test_py_srcs_path_holding_equals(tmp_path: Path) -> None:
    """A label may hold `=`: the path and its label are separate flags, and the wheel works."""
    source = _source(tmp_path, "a=b/reg.py")
    result, out = _run(tmp_path, f"--py_src={source}", "--py_src_label=a=b/reg.py")
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("*.whl")
    import zipfile

    assert "stableops/reg.py" in zipfile.ZipFile(wheel).namelist()


def test_keyword_namespace(tmp_path: Path) -> None:
    """A namespace C++ takes and Python does not (`lambda`): ops.py names it by string, and the
    stub leaves out the operators it cannot define (a keyword, a name of its own), saying so."""
    ops = tmp_path / "ops.yaml"
    ops.write_text(
        "- func: lambda::f(Tensor self, float lo=0) -> Tensor\n"
        # `try` is a C++ keyword too: its kernel needs a name of its own.
        "- func: lambda::try(Tensor self) -> Tensor\n  dispatch:\n    CPU: try_cpu\n"
        "- func: lambda::Tensor(Tensor self) -> Tensor\n"
    )
    result, out = _run(tmp_path, op_yaml=ops)
    assert result.returncode == 0, result.stderr
    import zipfile

    (wheel,) = out.glob("*.whl")
    files = zipfile.ZipFile(wheel)
    ops_py = files.read("stableops/ops.py").decode()
    stub = files.read("stableops/ops.pyi").decode()
    init = files.read("stableops/__init__.py").decode()
    for name, text in (("ops.py", ops_py), ("ops.pyi", stub), ("__init__.py", init)):
        compile(text, name, "exec")  # a SyntaxError fails the test
    assert "_NAMESPACE = 'lambda'" in ops_py
    namespace: dict[str, object] = {}
    exec(compile(ops_py, "ops.py", "exec"), namespace)
    with pytest.raises(AttributeError):  # torch.ops.lambda, which has no operator f here
        namespace["__getattr__"]("f")  # type: ignore[operator]
    assert "def f(" in stub and "def try(" not in stub and "def Tensor(" not in stub
    assert "# try: not typed here, its name is a Python keyword" in stub
    assert "# Tensor: not typed here" in stub


def test_stub_of_keyword_arguments(tmp_path: Path) -> None:
    """Arguments named after Python keywords (aten's uniform_ has `from`, and a custom op may
    too): a positional one renamed and positional-only, a keyword-only one taken by **kwargs;
    the stub parses."""
    import zipfile

    ops = tmp_path / "ops.yaml"
    ops.write_text(
        "- func: t::u(Tensor self, float from=0, float to=1, *, bool lambda=False) -> Tensor\n"
    )
    result, out = _run(tmp_path, op_yaml=ops)
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("*.whl")
    stub = zipfile.ZipFile(wheel).read("stableops/ops.pyi").decode()
    compile(stub, "ops.pyi", "exec")
    assert (
        "    self: Tensor,\n    from_: float = ...,\n    /,\n    to: float = ...,\n"
        '    # lambda: Python keywords, passed as **{"lambda": ...}\n    **kwargs: Any,\n' in stub
    )


def test_summary_of_two_lines(tmp_path: Path) -> None:
    result, out = _run(tmp_path, summary="one\ntwo")
    _one_line(result, out, "invalid metadata: 'summary' must be a single line")
    _nothing_left(out)


def test_distribution_name_too_long(tmp_path: Path) -> None:
    result, out = _run(tmp_path, distribution="a" * 300)
    line = _one_line(result, out, "the wheel's file name would be ")
    assert "shorten distribution or version" in line
    _nothing_left(out)


@pytest.mark.parametrize(
    "distribution",
    ["os", "sys", "typing", "site", "abc", "sympy", "typing-extensions", "filelock", "networkx",
     "jinja2", "fsspec", "setuptools", "Typing_Extensions"],
)  # fmt: skip
def test_distribution_shadowed_or_replacing(tmp_path: Path, distribution: str) -> None:
    result, out = _run(tmp_path, distribution=distribution)
    line = _one_line(result, out, f"distribution = {distribution!r} ")
    assert "standard library" in line or "torch's dependencies" in line
    _nothing_left(out)


def test_torch_dependencies_are_the_installed_torchs() -> None:
    """The kept list holds every distribution the installed torch requires (without extras),
    and theirs: the tool's environment need not have a torch to read them from. Where it has
    one, as here, what it reads is refused too."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from atengen.shipping.wheel_file import TORCH_DEPENDENCIES, torch_dependencies

    def requires(name: str) -> set[str]:
        found = set()
        for text in metadata.requires(name) or []:
            r = Requirement(text)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                found.add(canonicalize_name(r.name))
        return found

    direct = requires("torch")
    assert direct, "torch's metadata names no requirement"
    everything = direct.union(*(requires(name) for name in direct))
    everything = {n for n in everything if not n.startswith("nvidia-")}
    assert everything <= TORCH_DEPENDENCIES, everything - TORCH_DEPENDENCIES
    assert direct | TORCH_DEPENDENCIES == torch_dependencies()


def test_requires_not_pep508_one_line(tmp_path: Path) -> None:
    result, out = _run(tmp_path, "--requires=bad req")
    _one_line(result, out, "requires: 'bad req' is not a PEP 508 requirement: Expected")
    _nothing_left(out)


def test_library_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    result, out = _run(tmp_path, f"--library={tmp_path / 'dir'}/..")
    _one_line(result, out, "library ")  # `..` is no lib<name>.so
    link = tmp_path / "dir" / "libx.so"
    link.mkdir()
    result, out = _run(tmp_path, f"--library={link}")
    _one_line(result, out, f"cannot read the library: {link}: not a regular file")
    _nothing_left(out)


def test_library_name_with_a_quote(tmp_path: Path) -> None:
    """The name is written into __init__.py: one that is not lib<name>.so is refused."""
    library = tmp_path / 'lib"x.so'
    shutil.copyfile(LIBRARY, library)
    result, out = _run(tmp_path, f"--library={library}")
    _one_line(result, out, "library ")
    _nothing_left(out)


def _with_dynamic_link(data: bytes, link: int) -> bytes:
    """The ELF file ``data`` with its .dynamic section's sh_link set to ``link``."""
    import struct

    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    (shnum,) = struct.unpack_from("<H", data, 0x3C)
    edited = bytearray(data)
    for i in range(shnum):
        at = shoff + i * 64
        if struct.unpack_from("<I", data, at + 4)[0] == 6:  # SHT_DYNAMIC
            struct.pack_into("<I", edited, at + 40, link)
    return bytes(edited)


def test_library_symbol_versions_past_the_end(tmp_path: Path) -> None:
    """What the symbol-version reader (wheel_symbols.py) refuses is said the same way."""
    import struct

    data = bytearray(LIBRARY.read_bytes())
    shoff, shnum = struct.unpack_from("<Q", data, 0x28)[0], struct.unpack_from("<H", data, 0x3C)[0]
    for i in range(shnum):
        if struct.unpack_from("<I", data, shoff + 64 * i + 4)[0] == 0x6FFFFFFE:  # VERNEED
            struct.pack_into("<Q", data, shoff + 64 * i + 24, 10**9)  # sh_offset
    library = tmp_path / "libbroken.so"
    library.write_bytes(bytes(data))
    result, out = _run(tmp_path, f"--library={library}")
    _one_line(
        result,
        out,
        "cannot read the library: libbroken.so is not a valid ELF shared library: "
        ".gnu.version_r runs past the end of the file",
    )
    _nothing_left(out)


@pytest.mark.parametrize("link", [0, 0xFFFF, 1])
def test_library_dynamic_strings_missing(tmp_path: Path, link: int) -> None:
    library = tmp_path / "libbroken.so"
    library.write_bytes(_with_dynamic_link(LIBRARY.read_bytes(), link))
    result, out = _run(tmp_path, f"--library={library}")
    _one_line(result, out, "cannot read the library: libbroken.so is not a valid ELF shared")
    _nothing_left(out)


def test_stub_docstring_of_string_defaults(tmp_path: Path) -> None:
    """A string default holding quotes and backslashes: the stub parses, and each function's
    docstring is its schema, character for character."""
    import ast
    import zipfile

    ops = tmp_path / "ops.yaml"
    ops.write_text('- func: fz::f(Tensor a, str t=\'"""\', str u="x\\\\") -> Tensor\n')
    result, out = _run(tmp_path, op_yaml=ops)
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("*.whl")
    tree = ast.parse(zipfile.ZipFile(wheel).read("stableops/ops.pyi").decode())
    (function,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert ast.get_docstring(function) == 'fz::f(Tensor a, str t=\'"""\', str u="x\\\\") -> Tensor'


def test_op_yaml_of_two_problems(tmp_path: Path) -> None:
    """One line per problem of the op YAML, each saying whose it is."""
    ops = tmp_path / "ops.yaml"
    ops.write_text(
        "- func: fz::f(Tensor self, Foo x) -> Tensor\n- func: fz::g(Tensor self, Bar y) -> Tensor\n"
    )
    result, out = _run(tmp_path, op_yaml=ops)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert [line.split(" error: ")[0] for line in lines] == [
        f"rules_aten: //:w: {ops}:1:",
        f"rules_aten: //:w: {ops}:2:",
    ], lines
    _nothing_left(out)
