"""Builds with every action on a Remote Execution API engine: BuildGrid on localhost with
buildbox's stock workers in network namespaces and a root file system of their own
(tests/remote/engine.py says what runs and how).

Every build runs from a cold output base with `--spawn_strategy=remote` (no local fallback) and
without the session's disk cache, so that each action either runs on a worker or comes from the
engine's action cache; Bazel's `INFO: N processes: ...` line must name no kind but `internal`
(what Bazel does in its own process) and `remote` (or, for the second client, `remote cache
hit`). Each build prints its counts in pytest's summary.

On this machine's Bazel 4.2.3:
- the README's quickstart library, loaded into torch and computing;
- a second client, a fresh clone of this checkout at another path with its own output base,
  against the same engine: every action an action-cache hit, none executed;
- //:aten_generated and //:libaten_generated.so in that clone, of two ops (`slow`);
- examples/privateuse1_backend's //:libhost_device.so in that clone: an external_backend_codegen
  backend with a derivatives YAML (generated AutogradPrivateUse1 kernels), its demo run on it;
- an unreachable --remote_executor: Bazel's one line;
- a client that names no toolchain tree for its actions: the compile fails, naming the compiler.

On Bazel 7.7.1 (Bzlmod, WORKSPACE off) in the sid chroot of devtools/bazel7/chroot.sh, against the
same engine: the README's Bzlmod quickstart and examples/stable_ops, each loaded and computing
(in the chroot, whose C library the workers' sid toolchain matches), and the quickstart again from
a second output base, every action from the cache. Bazel 7's execution log gives each action's
digest: the engine's job table says which worker host ran it.

And the tiny mode of benchmarks/bench_remote.py (a one-source cc_binary, local against remote).

The workers show no Python: the generator and the other Python actions (MUST_RUN_REMOTELY,
checked in the execution log) run on @rules_aten_python's interpreter and standard library, which
the build declares as inputs.

`./dev test-remote` runs this module (the `remote` slice, tests/support/slices.py; elsewhere it
skips, saying so); it needs BuildGrid's venv, PostgreSQL 15, the worker image and the Bazel 7
chroot (`./dev setup-remote`, `./dev setup-bazel7`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.remote.engine import (
    TOOLCHAINS,
    Engine,
    EngineError,
    free_port,
    missing_parts,
    veth_addresses,
)
from tests.support import slices
from tests.support.bazel_helpers import (
    EXAMPLE_ENV,
    REPO,
    bazel,
    own_output_base,
    read_execution_log,
    run_demo,
)
from tests.support.model_helpers import printed_ratio, run_benchmark_tiny
from tests.support.quickstart_helpers import (
    MODULE_FILES,
    PYTHON_SNIPPET,
    VENV,
    WORKSPACE_FILES,
    run_snippet,
    write_workspace,
)

pytestmark = pytest.mark.bazel

# Mnemonics of actions that run Python (the generator) and C++, each of
# which a remote build must have run on a worker.
MUST_RUN_REMOTELY = ("AtenCodegen", "CppCompile", "CppLink")
# "INFO: 19 processes: 7 internal, 12 remote."
PROCESSES = re.compile(r"^INFO: (\d+) process(?:es)?(?:: (.*?))?\.?$", re.M)
# BuildGrid answers RESOURCE_EXHAUSTED past its thread pool; Bazel 4.2.3 opens up to 100.
MAX_CONNECTIONS = 4
CHROOT_SH = REPO / "devtools" / "bazel7" / "chroot.sh"
BAZEL7_CHROOT = (
    Path(
        os.environ.get("RULES_ATEN_BAZEL7_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "rules_aten"
        / "bazel7"
    )
    / "root"
)
# Bazel 7 with Bzlmod only, as in tests/slices/bazel7/test_bazel7.py.
BZLMOD = ("--noenable_workspace", "--enable_bzlmod")


def _missing() -> str | None:
    if parts := missing_parts():
        return f"no {', '.join(parts)}"
    if not (BAZEL7_CHROOT / ".rules_aten_stamp").is_file():
        return f"no Bazel 7 chroot at {BAZEL7_CHROOT}: ./dev setup-bazel7 makes it"
    return None


# The builds take minutes: `./dev test` (every module) leaves them to the slice's own command.
if "remote" not in slices.required_slices():
    pytest.skip(
        f"the remote slice: `{slices.SLICES['remote']}` runs these (CI does)",
        allow_module_level=True,
    )
if (_reason := _missing()) is not None:
    slices.missing("remote", f"{_reason}: ./dev setup-remote installs it")


def remote_flags(url: str, log: Path, toolchain: str | None = "bookworm") -> tuple[str, ...]:
    """Bazel's flags for a build on the engine at url; toolchain names the workers' toolchain
    tree for the client's C++ toolchain (engine.TOOLCHAINS), None none."""
    exec_properties = (
        (f"--remote_default_exec_properties={TOOLCHAINS[toolchain]}",) if toolchain else ()
    )
    return (
        f"--remote_executor={url}",
        *exec_properties,
        "--spawn_strategy=remote",
        "--noremote_local_fallback",
        f"--remote_max_connections={MAX_CONNECTIONS}",
        "--remote_timeout=600",
        "--disk_cache=",  # not the session's: every action runs remotely or hits the engine
        f"--execution_log_json_file={log}",
    )


def processes(stderr: str) -> dict[str, int]:
    """Bazel's last `INFO: N processes: a kind, b kind.` line as {kind: count}."""
    found = PROCESSES.findall(stderr)
    assert found, f"no 'INFO: N processes' line in Bazel's output:\n{stderr[-3000:]}"
    kinds: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in found[-1][1].split(","))):
        count, kind = part.split(" ", 1)
        kinds[kind] = int(count)
    return kinds


def cache_hit(spawn: dict) -> bool:
    """Whether the execution log's spawn came from the cache (Bazel 7 renamed the field)."""
    return bool(spawn.get("remoteCacheHit") or spawn.get("cacheHit"))


def input_counts(log: Path) -> str:
    """The most inputs of one action of each mnemonic in the execution log."""
    most: Counter[str] = Counter()
    for spawn in read_execution_log(log):
        mnemonic = spawn.get("mnemonic", "?")
        most[mnemonic] = max(most[mnemonic], len(spawn.get("inputs", [])))
    return ", ".join(f"{m} {n}" for m, n in most.most_common())


def build_once(workspace: Path, output_base: Path, *args: str) -> subprocess.CompletedProcess:
    """`bazel build args...` in workspace with its own output base, whose server is then shut
    down (each build here is the only one of its output base)."""
    startup = own_output_base(output_base)
    result = bazel("build", *args, cwd=workspace, startup=startup, check=False)
    bazel("shutdown", cwd=workspace, startup=startup, check=False)
    return result


def in_bazel7_chroot(share: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess:
    """command in cwd in the Bazel 7 chroot, which sees share (read-write, at its path) and this
    checkout; every process it starts ends with it (a PID namespace), the Bazel server too. The
    environment of the example workspaces (the dev venv's Python, no CUDA)."""
    return subprocess.run(
        [str(CHROOT_SH), "run", "bash", "-c", 'cd "$0" && exec "$@"', str(cwd), *command],
        env={**EXAMPLE_ENV, "RULES_ATEN_BAZEL7_SHARE": str(share)},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def build_once_bazel7(
    workspace: Path, output_base: Path, *args: str
) -> subprocess.CompletedProcess:
    """`bazel build args...` with Bazel 7.7.1 in its chroot; workspace and output base are under
    one directory, which the chroot shares."""
    share = Path(os.path.commonpath([workspace, output_base]))
    return in_bazel7_chroot(
        share, workspace, "bazel", f"--output_base={output_base}", "build", *args
    )


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]


def remote_build(
    workspace: Path,
    output_base: Path,
    url: str,
    targets: tuple[str, ...],
    name: str,
    summary: list[str],
    executed: bool = True,
    must_run: tuple[str, ...] = MUST_RUN_REMOTELY,
    bazel7: bool = False,
) -> tuple[dict[str, int], Path]:
    """A cold build of targets on the engine: its process kinds and execution log. When
    `executed`, actions of each mnemonic of `must_run` ran on a worker (not from the cache).
    With `bazel7`, Bazel 7.7.1 in its chroot builds it, with Bzlmod only."""
    shutil.rmtree(output_base, ignore_errors=True)
    log = output_base.parent / f"{output_base.name}.exec.json"
    start = time.monotonic()
    if bazel7:
        flags = remote_flags(url, log, toolchain="sid")
        result = build_once_bazel7(workspace, output_base, *BZLMOD, *flags, *targets)
    else:
        result = build_once(workspace, output_base, *remote_flags(url, log), *targets)
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-6000:]
    kinds = processes(result.stderr)
    local = {k: n for k, n in kinds.items() if k not in ("internal", "remote", "remote cache hit")}
    summary.append(
        f"remote execution, {name}: {seconds:.0f} s; {kinds.get('remote', 0)} remote, "
        f"{kinds.get('remote cache hit', 0)} remote cache hit, {kinds.get('internal', 0)} "
        f"internal, {sum(local.values())} local {local or ''}; most inputs per action: "
        f"{input_counts(log)}"
    )
    assert not local, f"{name}: actions ran outside the engine: {kinds}"
    spawns = read_execution_log(log)
    assert {s.get("runner") for s in spawns} <= {"remote", "remote cache hit"}, spawns[:3]
    if executed:
        ran = {s.get("mnemonic") for s in spawns if not cache_hit(s)}
        assert set(must_run) <= ran, f"{name}: no worker ran {set(must_run) - ran}"
    return kinds, log


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    try:
        with Engine() as started:
            yield started
    except EngineError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote_exec")


def clone_checkout(dest: Path) -> Path:
    """`git clone` of this checkout at dest, with the work tree's uncommitted changes on top
    (modified and untracked files, not ignored ones), so that it builds what is being tested."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
    listed = subprocess.run(
        ["git", "ls-files", "-m", "-o", "-d", "--exclude-standard", "-z"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for rel in filter(None, listed):
        src, dst = REPO / rel, dest / rel
        if src.is_symlink() or not src.exists():  # .venv and node_modules; deleted files
            if not src.exists() and dst.is_file():
                dst.unlink()
            continue
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (dest / ".venv").symlink_to(VENV)
    return dest


def quickstart_workspace(root: Path, checkout: Path) -> Path:
    """The README's quickstart workspace at root, its local_repository naming checkout."""
    write_workspace(root, VENV, (*WORKSPACE_FILES, PYTHON_SNIPPET))
    workspace = root / "WORKSPACE"
    text = workspace.read_text()
    assert text.count(f'"{REPO}"') == 1, text
    workspace.write_text(text.replace(f'"{REPO}"', f'"{checkout}"'))
    return root


@pytest.fixture(scope="module")
def quickstart(engine: Engine, scratch: Path, summary: list[str]) -> Path:
    """The quickstart library built on the engine from a cold output base."""
    ws = quickstart_workspace(scratch / "quickstart", REPO)
    remote_build(
        ws,
        scratch / "ob_quickstart",
        engine.url,
        ("//:libmyops.so",),
        "quickstart //:libmyops.so",
        summary,
        # kernels.cpp's compile, whose worker a remote build does not use: the same command
        # compiles it plainly on the engine's worker.
        must_run=(*MUST_RUN_REMOTELY, "AtenKernelCompile"),
    )
    return ws


@pytest.fixture(scope="module")
def clone(scratch: Path) -> Path:
    return clone_checkout(scratch / "clone_of_rules_aten")


def test_quickstart_builds_remotely_and_computes(quickstart: Path) -> None:
    assert run_snippet(quickstart) == "tensor([0., 2., 4.])"


def test_a_second_clone_gets_every_action_from_the_cache(
    quickstart: Path, clone: Path, engine: Engine, scratch: Path, summary: list[str]
) -> None:
    ws = quickstart_workspace(scratch / "second_client" / "quickstart", clone)
    kinds, log = remote_build(
        ws,
        scratch / "ob_second_client",
        engine.url,
        ("//:libmyops.so",),
        "quickstart, second clone",
        summary,
        executed=False,
    )
    assert "remote" not in kinds, kinds
    assert kinds.get("remote cache hit", 0) > 0, kinds
    missed = [s for s in read_execution_log(log) if not cache_hit(s)]
    assert not missed, [(s.get("mnemonic"), s.get("listedOutputs", [])[:1]) for s in missed]


@pytest.mark.slow
def test_aten_generated_builds_remotely(
    clone: Path, engine: Engine, scratch: Path, summary: list[str]
) -> None:
    # Two ops, not the default sixty: the same kinds of action (the generator over the whole
    # op YAML, the precompiled headers, a shard of each key, the link and its check), a tenth of
    # the compiles, which the workers on this machine would run on its two cores.
    targets = ("--//:aten_ops=add,abs", "//:aten_generated", "//:libaten_generated.so")
    kinds, _ = remote_build(
        clone,
        scratch / "ob_aten_generated",
        engine.url,
        targets,
        "//:aten_generated //:libaten_generated.so (--//:aten_ops=add,abs)",
        summary,
    )
    assert kinds.get("remote", 0) > 0, kinds
    library = clone / "bazel-bin" / "libaten_generated.so"
    check = (
        f"import torch; torch.ops.load_library({str(library)!r}); "
        "print(torch.ops.aten.add(torch.ones(2), torch.ones(2)).tolist())"
    )
    run = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", check], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "[2.0, 2.0]"


def test_a_backend_with_derivatives_builds_remotely(
    clone: Path, engine: Engine, scratch: Path, summary: list[str]
) -> None:
    example = clone / "examples" / "privateuse1_backend"  # its WORKSPACE names ../.. (the clone)
    (example / ".venv").symlink_to(VENV)  # the interpreter with torch, as a user's workspace has
    remote_build(
        example,
        scratch / "ob_privateuse1",
        engine.url,
        ("//:libhost_device.so",),
        "examples/privateuse1_backend //:libhost_device.so",
        summary,
        # The backend's generator, and its check that every kernel is defined.
        must_run=("AtenBackendCodegen", "AtenBackendKernelCheck", "CppCompile", "CppLink"),
    )
    # Every check of the demo passed (run_demo fails otherwise), the generated autograd's among
    # them: a training step through tanh's AutogradPrivateUse1 kernel, from derivatives.yaml.
    report = run_demo(example / "demo.py", example / "bazel-bin" / "libhost_device.so")
    assert report["checks"]["train_generated_autograd"], report


def worker_processes(engine: Engine) -> list[int]:
    """The buildbox-worker processes of the engine's worker hosts (each the child of a host's
    `unshare`, which runs it as its namespace's first process)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        comm, rest = text.split("(", 1)[1].rsplit(")", 1)
        parent = int(rest.split()[1])
        # (/proc's command names are cut at 15 characters.)
        if parent in engine.host_pids and comm.startswith("buildbox-worke"):
            found.append(int(stat.parent.name))
    return found


def test_the_worker_is_another_host(quickstart: Path, engine: Engine) -> None:
    """The worker that ran the quickstart's actions is not on the client's network or file
    system: its own network namespace, and the worker image (Debian sid, no Python) as its root."""
    (pid,) = worker_processes(engine)
    proc = Path(f"/proc/{pid}")
    assert os.readlink(proc / "ns" / "net") != os.readlink("/proc/self/ns/net")
    assert os.readlink(proc / "ns" / "mnt") != os.readlink("/proc/self/ns/mnt")
    os_release = (proc / "root" / "etc" / "os-release").read_text()
    assert "sid" in os_release and "sid" not in Path("/etc/os-release").read_text(), os_release
    assert not list((proc / "root" / "usr" / "bin").glob("python*"))
    # Its network has none of the client's addresses: only the loopback and its veth.
    theirs, ours = (
        set(re.findall(r"\d+\.\d+\.\d+\.\d+", (root / "net" / "fib_trie").read_text()))
        for root in (proc, Path("/proc/self"))
    )
    veth = ipaddress.ip_network(f"{veth_addresses(engine.port)[0]}/30", strict=False)
    shared = {
        a for a in theirs & ours if not ipaddress.ip_address(a).is_loopback and a != "0.0.0.0"
    }
    assert {a for a in shared if ipaddress.ip_address(a) not in veth} == set(), (theirs, ours)


def test_an_unreachable_executor_is_one_line(quickstart: Path, scratch: Path) -> None:
    port = free_port()  # nothing listens there
    result = build_once(
        quickstart,
        scratch / "ob_unreachable",
        f"--remote_executor=grpc://127.0.0.1:{port}",
        "--spawn_strategy=remote",
        "--disk_cache=",
        "//:libmyops.so",
    )
    assert result.returncode != 0
    assert error_lines(result) == [
        f"ERROR: Failed to query remote execution capabilities: Connection refused: "
        f"/127.0.0.1:{port}"
    ], result.stderr[-3000:]


def test_a_client_that_names_no_toolchain_tree_gets_the_compiler_named(
    engine: Engine, scratch: Path
) -> None:
    """The C++ toolchain is configured on the client (@local_config_cc: `which gcc`), and the
    workers give an action the toolchain tree its `inject` property names: without
    --remote_default_exec_properties its sandbox has no compiler, and the compile fails naming
    it. A plain cc_binary, so that no header upload comes first."""
    compiler = shutil.which("gcc")
    assert compiler, "no gcc on PATH"
    ws = scratch / "no_toolchain"
    ws.mkdir()
    (ws / "WORKSPACE").write_text(
        f'local_repository(name = "rules_aten", path = "{REPO}")\n\n'
        'load("@rules_aten//rules:repositories.bzl", "rules_aten_debian_dependencies")\n\n'
        "rules_aten_debian_dependencies()\n"
    )
    (ws / "BUILD.bazel").write_text('cc_binary(name = "hello", srcs = ["hello.cc"])\n')
    (ws / "hello.cc").write_text('#include <cstdio>\nint main() { std::puts("hello"); }\n')
    flags = remote_flags(engine.url, scratch / "no_toolchain.exec.json", toolchain=None)
    result = build_once(ws, scratch / "ob_no_toolchain", *flags, "//:hello")
    assert result.returncode != 0
    errors = error_lines(result)
    assert len(errors) == 1, result.stderr[-3000:]
    assert "Compiling hello.cc failed" in errors[0] and compiler in errors[0], errors[0]
    print(result.stderr[-1500:])


# --- Bazel 7.7.1 (Bzlmod) in its chroot, on the same engine -----------------------------------


def bazel7_snippet(share: Path, workspace: Path) -> str:
    """The README's Python snippet in the chroot (the library links sid's C library)."""
    run = in_bazel7_chroot(share, workspace, str(VENV / "bin" / "python"), PYTHON_SNIPPET)
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def bazel7_quickstart(engine: Engine, scratch: Path, summary: list[str]) -> Path:
    ws = write_workspace(scratch / "bazel7_quickstart", VENV, (*MODULE_FILES, PYTHON_SNIPPET))
    remote_build(
        ws,
        scratch / "ob_bazel7_quickstart",
        engine.url,
        ("//:libmyops.so",),
        "Bazel 7.7.1: quickstart //:libmyops.so",
        summary,
        must_run=(*MUST_RUN_REMOTELY, "AtenKernelCompile"),
        bazel7=True,
    )
    return ws


def test_bazel7_quickstart_builds_remotely_and_computes(
    bazel7_quickstart: Path, scratch: Path
) -> None:
    assert bazel7_snippet(scratch, bazel7_quickstart) == "tensor([0., 2., 4.])"


def test_bazel7_second_output_base_gets_every_action_from_the_cache(
    bazel7_quickstart: Path, engine: Engine, scratch: Path, summary: list[str]
) -> None:
    kinds, log = remote_build(
        bazel7_quickstart,
        scratch / "ob_bazel7_quickstart_again",
        engine.url,
        ("//:libmyops.so",),
        "Bazel 7.7.1: quickstart, a second output base",
        summary,
        executed=False,
        bazel7=True,
    )
    assert "remote" not in kinds and kinds.get("remote cache hit", 0) > 0, kinds
    missed = [s for s in read_execution_log(log) if not cache_hit(s)]
    assert not missed, [(s.get("mnemonic"), s.get("listedOutputs", [])[:1]) for s in missed]


def seconds(duration: str) -> float:
    """A protobuf Duration as JSON ("2.454s") in seconds."""
    assert duration.endswith("s"), duration
    return float(duration[:-1])


def test_the_execution_log_says_where_each_action_ran(
    bazel7_quickstart: Path, engine: Engine, scratch: Path, summary: list[str]
) -> None:
    """Bazel 7's execution log gives each remote action's digest, and the engine's job table the
    worker host that ran it: every action the quickstart executed ran on the engine's worker
    host, whose name says its network namespace. The log's metrics also give the worker's time
    per action: setting it up (setupTime: from the worker's taking the action to the command's
    start, the staging of its inputs among it) against running it (executionWallTime)."""
    executed = [
        s
        for s in read_execution_log(scratch / "ob_bazel7_quickstart.exec.json")
        if not cache_hit(s)
    ]
    assert executed
    where = engine.workers_by_action()
    ran_on = Counter(where.get(s["digest"]["hash"], "(not in the job table)") for s in executed)
    assert ran_on == {engine.bot_id(0): len(executed)}, ran_on
    phases: dict[str, list[tuple[float, float]]] = {}
    for spawn in executed:
        metrics = spawn["metrics"]
        phases.setdefault(spawn["mnemonic"], []).append(
            (seconds(metrics.get("setupTime", "0s")), seconds(metrics["executionWallTime"]))
        )
    per_mnemonic = "; ".join(
        f"{mnemonic} x{len(runs)} {sum(s for s, _ in runs):.1f} s setting up, "
        f"{sum(e for _, e in runs):.1f} s running"
        for mnemonic, runs in sorted(phases.items())
    )
    summary.append(
        f"Bazel 7.7.1 quickstart's execution log: {len(executed)} actions, all on "
        f"{engine.bot_id(0)} ({engine.staging} staging); on the worker: {per_mnemonic}"
    )


def test_bazel7_stable_example_builds_remotely_and_loads(
    clone: Path, engine: Engine, scratch: Path, summary: list[str]
) -> None:
    examples = clone / "examples"  # one module; its MODULE.bazel names .. (the clone)
    (examples / ".venv").symlink_to(VENV)
    remote_build(
        examples,
        scratch / "ob_bazel7_stable",
        engine.url,
        # (the flags of the module's presubmit, .bcr/presubmit.yml)
        ("--cxxopt=-std=c++20", "--host_cxxopt=-std=c++20", "//stable_ops:libstableops.so"),
        "Bazel 7.7.1: examples //stable_ops:libstableops.so",
        summary,
        must_run=("AtenStableCodegen", "AtenStableCallApi", "CppCompile", "CppLink"),
        bazel7=True,
    )
    library = examples / "bazel-bin" / "stable_ops" / "libstableops.so"
    check = (
        f"import torch; torch.ops.load_library({str(library)!r}); "
        "print(torch.ops.stableops.scaled_add(torch.ones(2), torch.ones(2), 2.0).tolist())"
    )
    run = in_bazel7_chroot(scratch, examples, str(VENV / "bin" / "python"), "-c", check)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "[3.0, 3.0]", run.stdout


# --- benchmarks/bench_remote.py --------------------------------------------------------------

BENCH_ROW = re.compile(
    r"^\| (local|remote \(.*?\), (?:fresh|warm) engine), median of 1 \(s\) \| ([\d.]+) \|", re.M
)
PHASE_ROW = re.compile(
    r"^\| remote \((.*?)\), (fresh|warm) engine: (compile|link) \(1 actions\) \| ([\d.]+) \|", re.M
)
WAYS = ("tests' scheduling", "defaults' scheduling")


def test_bench_remote_tiny_mode(summary: list[str]) -> None:
    """The tiny mode runs: a one-source cc_binary local, then on a fresh engine of its own and on
    it again warm, for the tests' way of scheduling actions and for BuildGrid's and buildbox's
    defaults, with the per-action phases of Bazel's profile."""
    stdout = run_benchmark_tiny("bench_remote.py", "--scheduling=tests,defaults", timeout=900)
    walls = {label: float(wall) for label, wall in BENCH_ROW.findall(stdout)}
    assert set(walls) == {"local"} | {
        f"remote ({way}), {state} engine" for way in WAYS for state in ("fresh", "warm")
    }, stdout
    assert all(wall > 0 for wall in walls.values()), stdout
    # Each engine's compile and link, with the local run of the same action beside them.
    assert {(way, state, kind) for way, state, kind, _ in PHASE_ROW.findall(stdout)} == {
        (way, state, kind)
        for way in WAYS
        for state in ("fresh", "warm")
        for kind in ("compile", "link")
    }, stdout
    ratio = walls["remote (tests' scheduling), warm engine"] / walls["local"]
    assert printed_ratio(stdout, "P14") == pytest.approx(ratio, rel=0.02)
    defaults = walls["remote (defaults' scheduling), warm engine"] / walls["local"]
    summary.append(
        f"bench_remote --tiny: local {walls['local']:.1f} s, warm engine {ratio:.2f}x "
        f"(with BuildGrid's and buildbox's default scheduling {defaults:.2f}x)"
    )
