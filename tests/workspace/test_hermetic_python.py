"""Python build actions run on @rules_aten_python's files alone, not on the host's Python.

The generator's build (//:aten_generated_codegen: `atengen generate` on torch's YAML) and a
probe of the interpreter (//tests/bazel:python_probe) are built in a fresh output base, every action in Bazel's Linux
sandbox, with every Python installation of this machine hidden from the actions by
`--sandbox_block_path` (an empty directory or file mounted over each): the installation of the
interpreter the build found (its pyenv tree, if it is one), the venv, Debian's /usr/lib/python3*
and /usr/local/lib/python3*, and the system libpython3*.so. The venv holds torch's YAML, so there
@torch is overridden by a copy of the checkout's @torch whose YAML files and version.py (which the
generator compares with @torch's facts) are copies, not links into the venv: the action reads the
same bytes by the same paths.

Then:
- the generated tree is byte for byte the one the checkout's ordinary build writes;
- inside the action, the interpreter's prefixes, every sys.path entry and the file of every module
  it imported (the standard library's, PyYAML's and Jinja2's) are in the action's runfiles, and
  its libpython is the repository's copy;
- the hiding is real: the action sees nothing at each hidden path, and the same interpreter file
  started as the launcher started it before it was given its runfiles' libpython and standard
  library (no environment) cannot load its libpython, while in the checkout's ordinary build it
  runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.bazel_helpers import bazel, own_output_base, read_execution_log

pytestmark = pytest.mark.bazel

CODEGEN = "//:aten_generated_codegen"
PROBE = "//tests/bazel:python_probe"
# The probe's action lists what it can read at each of these paths (python_probe.bzl).
HIDDEN_ENV = "RULES_ATEN_HIDDEN_PATHS"
# Python's files that Debian and a local install put outside any one interpreter's prefix.
SYSTEM_PYTHON_GLOBS = (
    "/usr/lib/python3*",
    "/usr/local/lib/python3*",
    "/usr/lib/x86_64-linux-gnu/libpython3*",
)


def tree_files(root: Path) -> dict[str, bytes]:
    """Every regular file under root (a generated directory), by its path relative to root."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def codegen_outputs(bin_dir: Path) -> dict[str, bytes]:
    """The generator's trees (cpu.cc/, cuda.cc/, include/). Not its `generated` stamp beside
    them, which only a build of the library's precompiled headers asks for: the checkout's output
    base may hold one from another test's build."""
    files = {
        name: data
        for name, data in tree_files(bin_dir / "aten_generated_codegen").items()
        if "/" in name
    }
    assert any(name.startswith("cpu.cc/") for name in files), sorted(files)[:20]
    return files


def installation_paths(output_base: Path) -> list[Path]:
    """The interpreter the checkout's build found (interpreter.txt: its path, version, source,
    real binary) and where it is installed: its venv, and its base prefix (or the pyenv tree that
    holds it)."""
    found, _, _, binary = (
        (output_base / "external" / "rules_aten_python" / "interpreter.txt")
        .read_text()
        .split("\n")[:4]
    )
    base = subprocess.run(
        [binary, "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    installation = Path(os.path.realpath(base))
    pyenv = [p for p in installation.parents if p.name == ".pyenv"]
    paths = [pyenv[0] if pyenv else installation]
    venv = Path(found).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        paths.append(venv)
    return paths


def hidden_paths(output_base: Path) -> list[str]:
    """What the sandbox hides: real paths (a bind mount follows links), none under another."""
    candidates = [str(p) for p in installation_paths(output_base)]
    for pattern in SYSTEM_PYTHON_GLOBS:
        candidates += [str(p) for p in Path("/").glob(pattern.lstrip("/"))]
    real = sorted({os.path.realpath(p) for p in candidates if os.path.exists(p)})
    return [p for p in real if not any(p.startswith(q + "/") for q in real if q != p)]


def torch_copy(checkout_output_base: Path, dest: Path) -> Path:
    """The checkout's @torch with the files the generator reads (its YAML files and version.py)
    copied in place of their links into the wheel."""
    shutil.copytree(checkout_output_base / "external" / "torch", dest, symlinks=True)
    copied = []
    for link in [*dest.glob("*.yaml"), dest / "version.py"]:
        if link.is_symlink():
            target = link.resolve()
            link.unlink()
            shutil.copyfile(target, link)
            copied.append(link.name)
    assert {"native_functions.yaml", "tags.yaml", "version.py"} <= set(copied), copied
    return dest


@dataclass(frozen=True)
class Build:
    output_base: Path
    bin_dir: Path
    spawns: list[dict]
    hidden: list[str]


@pytest.fixture(scope="module")
def checkout_build() -> Build:
    """The ordinary build in the checkout (its output base and flags)."""
    bazel("build", CODEGEN, PROBE)
    output_base = Path(bazel("info", "output_base").stdout.strip())
    bin_dir = Path(bazel("info", "bazel-bin").stdout.strip())
    return Build(output_base, bin_dir, [], hidden_paths(output_base))


@pytest.fixture(scope="module")
def hidden_build(
    checkout_build: Build, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Build]:
    """The same targets in a fresh output base, every action in the Linux sandbox with the
    host's Python hidden, no cache (each action runs)."""
    base = tmp_path_factory.mktemp("hermetic")
    torch = torch_copy(checkout_build.output_base, base / "torch")
    output_base = base / "output_base"
    log = base / "exec.json"
    startup = own_output_base(output_base)
    hidden = checkout_build.hidden
    try:
        bazel(
            "build",
            "--disk_cache=",
            "--symlink_prefix=/",
            "--spawn_strategy=linux-sandbox",
            *[f"--sandbox_block_path={p}" for p in hidden],
            f"--action_env={HIDDEN_ENV}={' '.join(hidden)}",
            f"--override_repository=torch={torch}",
            f"--execution_log_json_file={log}",
            CODEGEN,
            PROBE,
            startup=startup,
        )
        bin_dir = Path(bazel("info", "bazel-bin", startup=startup).stdout.strip())
        yield Build(output_base, bin_dir, read_execution_log(log), hidden)
    finally:
        bazel("shutdown", startup=startup, check=False)


def probe_paths(build: Build) -> dict:
    return json.loads((build.bin_dir / "tests" / "bazel" / "python_probe.json").read_text())


def test_the_hidden_paths_are_this_machines_python(checkout_build: Build) -> None:
    hidden = checkout_build.hidden
    assert any(p.startswith("/usr/lib/python3") for p in hidden), hidden
    assert any("libpython3" in p for p in hidden), hidden
    assert len(installation_paths(checkout_build.output_base)) >= 1
    for path in installation_paths(checkout_build.output_base):
        assert os.path.realpath(path) in hidden, (path, hidden)


def test_python_actions_ran_in_the_sandbox(hidden_build: Build) -> None:
    ran = {s.get("mnemonic"): s for s in hidden_build.spawns}
    for mnemonic in ("AtenCodegen", "PythonProbe"):
        assert mnemonic in ran, sorted(ran)
        assert ran[mnemonic].get("runner") == "linux-sandbox", ran[mnemonic].get("runner")
        assert not ran[mnemonic].get("remoteCacheHit"), mnemonic


def test_the_actions_see_nothing_at_the_hidden_paths(hidden_build: Build) -> None:
    def seen(build: Build) -> dict[str, int]:
        text = (build.bin_dir / "tests" / "bazel" / "python_probe_hidden.txt").read_text()
        return {path: int(n) for path, n in (line.rsplit(" ", 1) for line in text.splitlines())}

    assert set(seen(hidden_build)) == set(hidden_build.hidden)
    assert all(n == 0 for n in seen(hidden_build).values()), seen(hidden_build)
    # There is something at each of them.
    for path in map(Path, hidden_build.hidden):
        assert any(path.iterdir()) if path.is_dir() else path.stat().st_size > 0, path


def test_the_generated_tree_is_the_ordinary_builds(
    checkout_build: Build, hidden_build: Build
) -> None:
    ordinary = codegen_outputs(checkout_build.bin_dir)
    hermetic = codegen_outputs(hidden_build.bin_dir)
    assert sorted(hermetic) == sorted(ordinary)
    differ = sorted(name for name in ordinary if hermetic[name] != ordinary[name])
    assert differ == [], differ


def test_the_interpreter_reads_only_its_runfiles(
    checkout_build: Build, hidden_build: Build
) -> None:
    found = probe_paths(hidden_build)
    runfiles = found["cwd"] + "/bazel-out/"
    python_home = ".runfiles/rules_aten_python"
    for key in ("prefix", "exec_prefix", "base_prefix"):
        assert found[key].startswith(runfiles) and found[key].endswith(python_home), found[key]
    outside = [p for p in found["path"] if not p.startswith(runfiles)]
    assert outside == [], outside
    modules = found["modules"]
    assert len(modules) > 50, modules
    assert [m for m in modules if not m.startswith(runfiles)] == []
    for package in ("yaml", "jinja2"):
        assert any(f".runfiles/rules_aten_pip/site/{package}/__init__.py" in m for m in modules)
    # The interpreter the checkout's build found, not the system's (Debian's is 3.11.2).
    version = (
        (checkout_build.output_base / "external" / "rules_aten_python" / "interpreter.txt")
        .read_text()
        .split("\n")[1]
    )
    assert ".".join(map(str, found["version"])) == version
    stdlib = "/lib/python{}.{}/".format(*found["version"][:2])
    assert any(m.endswith(python_home + stdlib + "os.py") for m in modules), modules
    # The standard library's compiled modules, from its zip in the runfiles.
    zipped = python_home + "/lib/python{}{}.zip/".format(*found["version"][:2])
    assert any(m.endswith(zipped + "json/__init__.pyc") for m in modules), modules
    # The mapped file is the declared copy's real file, in the output base's repository.
    repository = hidden_build.output_base / "external" / "rules_aten_python" / "lib"
    assert found["libpython"] == [str(p) for p in repository.glob("libpython*.so*")]


def test_the_interpreter_started_without_its_runfiles_environment_fails_there(
    checkout_build: Build, hidden_build: Build
) -> None:
    """The negative control: the copied binary still names the installation's lib/ (RUNPATH),
    and without the launcher's LD_LIBRARY_PATH it finds no libpython where the host's is
    hidden; in the ordinary build it runs."""

    def direct(build: Build) -> str:
        return (build.bin_dir / "tests" / "bazel" / "python_probe_direct.txt").read_text()

    hermetic = direct(hidden_build)
    assert hermetic.endswith("exit status 127\n"), hermetic
    assert "error while loading shared libraries" in hermetic and "libpython" in hermetic
    ordinary = direct(checkout_build)
    assert ordinary.endswith("exit status 0\n"), ordinary


def test_the_standard_librarys_zip_is_the_same_bytes_from_any_copy(tmp_path: Path) -> None:
    """Two copies of the interpreter made apart (the repository rule's program, as it runs it)
    hold the same zip, and the copy imports its modules from it, from that directory alone."""
    program = Path(__file__).resolve().parents[2] / "rules/private/programs/copy_python_runtime.py"
    python = os.path.realpath(shutil.which("python3") or "")
    zips = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        out = subprocess.run(
            [python, "-B", str(program)],
            cwd=root,
            env=dict(os.environ, PYTHONHASHSEED="0"),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        zips.append((root / json.loads(out)["stdlib_zip"]).read_bytes())
    assert zips[0] == zips[1]
    root = tmp_path / "a"
    env = {"PYTHONHOME": str(root), "LD_LIBRARY_PATH": str(root / "lib"), "PYTHONPATH": ""}
    found = subprocess.run(
        [str(root / "bin" / "python3"), "-c", "import json, email.message; print(json.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found.startswith(str(root / "lib")) and ".zip/json/__init__.pyc" in found, found
