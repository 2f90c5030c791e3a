"""A Remote Execution API engine for the tests: PostgreSQL, BuildGrid and buildbox's stock workers.

Test infrastructure, not a deployment: the server listens on 127.0.0.1 and on the workers' veth
only, PostgreSQL trusts every local connection, the CAS and the action cache are in memory and
die with the server.

    python3 tests/remote/engine.py up      start it; prints the --remote_executor URL
    python3 tests/remote/engine.py down    stop what `up` started (and remove its state)
    python3 tests/remote/engine.py status  the URL, or exit 1 when none is up

`./dev remote-up` and `./dev remote-down` run these; tests/slices/remote/test_remote_execution.py uses Engine
as a context manager (a session fixture), which stops everything even when a test fails.

- **BuildGrid** from its own venv (BUILDGRID_VENV, installed by `./dev setup-remote` from
  third_party/requirements_buildgrid.lock): Execution, CAS, ActionCache, ByteStream, Bots.
- **PostgreSQL 15** from Debian (PG_BIN), BuildGrid's scheduler database. It refuses to run as
  root, so as root its data directory belongs to the user `postgres` and initdb and pg_ctl run as
  that user. The URL names psycopg2: with plain `postgresql://`, SQLAlchemy 2.1 picks psycopg 3,
  whose connections lack the `poll` that BuildGrid's LISTEN/NOTIFY uses, and every job then waits
  for the scheduler's periodic poll.
- **Workers**: buildbox (buildbox-casd, buildbox-worker, buildbox-run-bubblewrap), Debian's
  packages in the worker image of devtools/remote/worker_image.sh (Debian sid, not this machine's
  bookworm). WORKERS hosts of JOBS concurrent actions each (a buildbox-worker per action, on one
  buildbox-casd: Engine.bots), every host in a network namespace of its own, reaching the server
  over a veth pair, with the image as its root file system (tests/remote/buildbox_worker.sh).
  Each action runs under bubblewrap in the toolchain tree its platform property `inject` names
  (TOOLCHAINS): nothing of this machine's file system. The scheduler matches `inject` between
  actions and workers and lets a property `salt` through unmatched (benchmarks/bench_remote.py
  gives every action a new key with it). It looks for queued actions every
  ASSIGNMENT_INTERVAL_S.

The server's `thread-pool-size` is also its limit of concurrent RPCs: Bazel 4.2.3 opens up to 100
connections (--remote_max_connections) to upload the torch headers, and a pool of 40 answered
RESOURCE_EXHAUSTED. The tests pass a small --remote_max_connections and the pool is larger.
Stdlib only: any Python 3.11 runs it, without BuildGrid importable. Needs root (namespaces).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rules_aten"
BUILDGRID_VENV = Path(os.environ.get("RULES_ATEN_BUILDGRID_VENV") or CACHE / "venv-buildgrid")
PG_BIN = Path("/usr/lib/postgresql/15/bin")
WORKER_HOST = Path(__file__).resolve().parent / "buildbox_worker.sh"
WORKER_IMAGE_SCRIPT = (
    Path(__file__).resolve().parents[2] / "devtools" / "remote" / "worker_image.sh"
)
# (devtools/remote/worker_image.sh reads the same variable.)
WORKER_IMAGE = (
    Path(os.environ.get("RULES_ATEN_REMOTE_WORKER_DIR") or CACHE / "remote-worker") / "image"
)
# Where `up` keeps what `down` needs (the state directory and the processes).
STATE_FILE = CACHE / "remote-engine.json"
WORKERS = 1
# Concurrent actions per worker host: this machine's two cores.
JOBS = 2
# --remote_default_exec_properties a client passes for the toolchain tree its C++ toolchain
# names: Bazel 4.2.3 on this machine (Debian 12, gcc 12), Bazel 7.7.1 in the sid chroot (gcc 16).
TOOLCHAINS = {"bookworm": "inject=bookworm", "sid": "inject=sid"}
THREAD_POOL_SIZE = 200
# How long a bot session lives without an UpdateBotSession: a worker reports only between two
# actions, and a compile that declares the ~9,400 torch headers can run minutes on 2 loaded cores.
KEEPALIVE_S = 900
# How often the scheduler looks for a queued action to give a worker, in seconds, while it finds
# none (a random share of it again is added). Every action waits for the next look: BuildGrid's
# default, 1 s and up to 1 s more, was most of a worker's wait for an action.
ASSIGNMENT_INTERVAL_S = 0.05
START_TIMEOUT_S = 120
# What buildbox-worker logs once its runner's parameters are checked and it starts leasing.
WORKER_STARTED = "Starting buildbox-worker with BotID"

CONFIG = """\
server:
  - !channel
    address: "127.0.0.1:{port}"
    insecure-mode: true
  - !channel
    address: "{veth_address}:{port}"
    insecure-mode: true
thread-pool-size: {pool}
connections:
  - !sql-connection &sql
    connection-string: {db_url}
    pool-size: 10
    max-overflow: 20
storages:
  - !lru-storage &cas
    size: 4096M
caches:
  - !lru-action-cache &ac
    storage: *cas
    max-cached-refs: 100000
    allow-updates: true
    cache-failed-actions: false
schedulers:
  - !sql-scheduler &scheduler
    sql: *sql
    storage: *cas
    action-cache: *ac
    bot-session-keepalive-timeout: {keepalive}
    poll-interval: 0.5
    assigners:
      - !priority-age-assigner
        interval: {assignment_interval}
        jitter-factor: {assignment_interval}
    property-set: !dynamic-property-set
      match-property-keys: [inject]
      wildcard-property-keys: [salt]
instances:
  - name: ""
    services:
      - !action-cache
        cache: *ac
      - !execution
        scheduler: *scheduler
      - !cas
        storage: *cas
      - !bytestream
        storage: *cas
"""


class EngineError(Exception):
    """The engine could not start: one line that says what is missing or what failed."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EngineError(f"{what} exited {proc.returncode}: {tail(log)}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise EngineError(
        f"{what} did not listen on 127.0.0.1:{port} in {START_TIMEOUT_S} s: {tail(log)}"
    )


def wait_for_line(line: str, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    """Waits until log has line (a worker that checked its runner and started), or fails."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EngineError(f"{what} exited {proc.returncode}: {tail(log)}")
        if line in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise EngineError(f"{what} did not start in {START_TIMEOUT_S} s: {tail(log)}")


def tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"(no {log})"
    return " | ".join(text[-lines:]) + f" (log: {log})"


def as_postgres(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the user `postgres`."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def missing_parts() -> list[str]:
    """What the engine needs that this machine lacks, each named with how to get it."""
    missing = []
    if not (BUILDGRID_VENV / "bin" / "bgd").is_file():
        missing.append(f"BuildGrid ({BUILDGRID_VENV}/bin/bgd)")
    if not (PG_BIN / "pg_ctl").is_file():
        missing.append(f"PostgreSQL 15 ({PG_BIN}/pg_ctl; apt-get install postgresql-15)")
    if not (WORKER_IMAGE / ".rules_aten_stamp").is_file():
        missing.append(f"the worker image ({WORKER_IMAGE}; {WORKER_IMAGE_SCRIPT} setup)")
    if os.geteuid() != 0:
        missing.append("root (the workers' network and mount namespaces)")
    return missing


def default_staging() -> str:
    """`fuse` where this machine's kernel serves FUSE (buildbox-fuse shows an action's input
    root without making it: a fifth off a warm build, and none of the system time of hard-linking
    torch's 9,450 headers per compile), `copy-or-link` elsewhere."""
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError:
        return "copy-or-link"
    return "fuse"


def check_installed() -> None:
    if missing := missing_parts():
        raise EngineError(f"remote engine: missing {', '.join(missing)}: run ./dev setup-remote")


@dataclass
class Engine:
    """PostgreSQL, a BuildGrid server and WORKERS buildbox worker hosts in a fresh state directory.

    `with Engine() as engine:` starts them and always stops them; engine.url is the value of
    --remote_executor."""

    workers: int = WORKERS
    # How the worker stages an action's input root (buildbox_worker.sh's STAGING).
    staging: str = field(default_factory=default_staging)
    # The scheduler's job-assignment interval (ASSIGNMENT_INTERVAL_S).
    assignment_interval: float = ASSIGNMENT_INTERVAL_S
    # buildbox-workers per host, sharing its JOBS actions: one per action (buildbox_worker.sh).
    bots: int = JOBS
    state: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rules_aten_remote_")))
    port: int = 0
    pg_port: int = 0
    pids: list[int] = field(default_factory=list)
    # The worker hosts' `unshare` processes, whose child runs buildbox-worker.
    host_pids: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    @property
    def db_url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.pg_port}/postgres"

    @property
    def netns(self) -> str:
        return f"rules_aten_{self.port}"

    def bot_id(self, host: int) -> str:
        """The name of worker host `host`, after its network namespace. Its JOBS workers give the
        engine this name and their own (`/bot0`, ...), which it records with each action."""
        return f"{self.netns}/worker{host}"

    def workers_by_action(self) -> dict[str, str]:
        """Where each action the engine executed ran, from BuildGrid's job table: {the action's
        digest (its hash): the bot ID of the worker host that ran it}."""
        query = "SELECT action_digest, worker_name FROM jobs WHERE worker_name IS NOT NULL"
        psql = [str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.pg_port)]
        done = subprocess.run(
            as_postgres([*psql, "-U", "postgres", "-At", "-F", "\t", "-c", query]),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise EngineError(f"psql exited {done.returncode}: {done.stderr.strip()}")
        rows = (line.split("\t") for line in done.stdout.splitlines() if line)
        # (BuildGrid writes a digest as HASH/SIZE, and the bot ID as the worker gave it.)
        return {digest.split("/")[0]: worker.rsplit("/", 1)[0] for digest, worker in rows}

    def __enter__(self) -> Engine:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        check_installed()
        self.state.mkdir(parents=True, exist_ok=True)
        self.start_postgres()
        bgd = str(BUILDGRID_VENV / "bin" / "bgd")
        migrate = subprocess.run(
            [bgd, "migrate", "apply", self.db_url], capture_output=True, text=True
        )
        if migrate.returncode != 0:
            last = (migrate.stderr.strip().splitlines() or ["?"])[-1]
            raise EngineError(f"bgd migrate apply exited {migrate.returncode}: {last}")
        self.port = free_port()
        server_side, worker_side = veth_addresses(self.port)
        self.make_network(server_side, worker_side)
        config = self.state / "buildgrid.yml"
        config.write_text(
            CONFIG.format(
                port=self.port,
                veth_address=server_side,
                pool=THREAD_POOL_SIZE,
                db_url=self.db_url,
                keepalive=KEEPALIVE_S,
                assignment_interval=self.assignment_interval,
            )
        )
        server_log = self.state / "buildgrid.log"
        server = self.spawn([bgd, "server", "start", str(config)], server_log)
        wait_for_port(self.port, server, "bgd server", server_log)
        for i in range(self.workers):
            host = self.state / f"worker{i}"
            host.mkdir()
            worker = self.spawn(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.netns,
                    "unshare",
                    "--mount",
                    "--pid",
                    "--fork",
                    "--kill-child",
                    "--propagation",
                    "private",
                    str(WORKER_HOST),
                    str(WORKER_IMAGE),
                    str(host),
                    f"grpc://{server_side}:{self.port}",
                    str(JOBS),
                    self.bot_id(i),
                    self.staging,
                    str(self.bots),
                ],
                self.state / f"worker{i}.log",
            )
            wait_for_line(WORKER_STARTED, worker, f"worker host {i}", self.state / f"worker{i}.log")
            self.host_pids.append(worker.pid)

    def make_network(self, server_side: str, worker_side: str) -> None:
        """The workers' network namespace, and a veth pair from it to this one's."""
        host_if, ns_if = f"ra{self.port}h", f"ra{self.port}w"
        for command in (
            ["ip", "netns", "add", self.netns],
            ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
            ["ip", "link", "set", ns_if, "netns", self.netns],
            ["ip", "addr", "add", f"{server_side}/30", "dev", host_if],
            ["ip", "link", "set", host_if, "up"],
            ["ip", "-n", self.netns, "addr", "add", f"{worker_side}/30", "dev", ns_if],
            ["ip", "-n", self.netns, "link", "set", ns_if, "up"],
            ["ip", "-n", self.netns, "link", "set", "lo", "up"],
        ):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise EngineError(f"{' '.join(command)}: {done.stderr.strip()}")

    def start_postgres(self) -> None:
        data = self.state / "pgdata"
        data.mkdir()
        if os.geteuid() == 0:
            # The state directory stays root's (the workers' sandboxes bind what is in it), and
            # the user postgres may only pass through it to its own data directory.
            self.state.chmod(0o711)
            shutil.chown(data, "postgres")
        init = subprocess.run(
            as_postgres(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--no-sync",
                ]
            ),
            capture_output=True,
            text=True,
        )
        if init.returncode != 0:
            last = (init.stderr.strip().splitlines() or ["?"])[-1]
            raise EngineError(f"initdb exited {init.returncode}: {last}")
        self.pg_port = free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.pg_port} -k {data} "
            "-c fsync=off -c max_connections=200"
        )
        log = data / "postgres.log"
        started = subprocess.run(
            as_postgres(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    options,
                    "-l",
                    str(log),
                    "-w",
                    "start",
                ]
            ),
            capture_output=True,
            text=True,
        )
        if started.returncode != 0:
            raise EngineError(f"pg_ctl start exited {started.returncode}: {tail(log)}")

    def spawn(self, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pids.append(proc.pid)
        return proc

    def stop(self) -> None:
        # Workers and server at once, with SIGKILL: everything they hold (the in-memory CAS, the
        # bot sessions) is thrown away, and a server busy with RPCs took seconds to end on SIGTERM.
        for pid in self.pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        for pid in self.pids:
            wait_gone(pid)
        self.pids.clear()
        data = self.state / "pgdata"
        if (data / "postmaster.pid").exists():
            subprocess.run(
                as_postgres(
                    [str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
                ),
                capture_output=True,
            )
        if self.port:
            subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)
            subprocess.run(["ip", "link", "del", f"ra{self.port}h"], capture_output=True)
        # (The worker hosts' mounts were in their own mount namespaces, gone with them.)
        shutil.rmtree(self.state, ignore_errors=True)

    def to_json(self) -> str:
        return json.dumps(
            {
                "state": str(self.state),
                "port": self.port,
                "pg_port": self.pg_port,
                "pids": self.pids,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Engine:
        d = json.loads(text)
        return cls(state=Path(d["state"]), port=d["port"], pg_port=d["pg_port"], pids=d["pids"])


def veth_addresses(port: int) -> tuple[str, str]:
    """The server's and the workers' addresses on the veth pair of the engine at port: a /30 of
    10.200.0.0/14 of its own (the port is unique while the engine runs)."""
    block = port * 4
    prefix = f"10.{200 + (block >> 16)}.{(block >> 8) & 255}"
    return f"{prefix}.{(block & 255) + 1}", f"{prefix}.{(block & 255) + 2}"


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    """Waits for pid to exit (reaping it if it is a child); SIGKILLs its group after timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:  # not our child: poll whether it still exists
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> int:
    command = argv[0] if len(argv) == 1 else ""
    if command == "up":
        if STATE_FILE.exists():
            print(f"remote engine: already up ({STATE_FILE}); run `down` first", file=sys.stderr)
            return 1
        engine = Engine()
        try:
            engine.start()
        except EngineError as e:
            engine.stop()
            print(e, file=sys.stderr)
            return 1
        STATE_FILE.parent.mkdir(parents=True, exist_ok=True)
        STATE_FILE.write_text(engine.to_json())
        print(f"--remote_executor={engine.url} (logs in {engine.state})")
        return 0
    if command == "down":
        if not STATE_FILE.exists():
            print("remote engine: none is up", file=sys.stderr)
            return 0
        Engine.from_json(STATE_FILE.read_text()).stop()
        STATE_FILE.unlink()
        return 0
    if command == "status":
        if not STATE_FILE.exists():
            print("remote engine: none is up", file=sys.stderr)
            return 1
        print(f"--remote_executor={Engine.from_json(STATE_FILE.read_text()).url}")
        return 0
    print("usage: engine.py up|down|status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
