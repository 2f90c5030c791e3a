"""A Remote Execution API worker for the tests: test infrastructure, not a production worker.

It runs in BuildGrid's venv (tests/remote/engine.py starts it) and uses the gRPC stubs BuildGrid
ships. One process holds one lease at a time: it leases work through the Bots API
(CreateBotSession, then UpdateBotSession), fetches the Action, its Command and its input root
from the CAS, runs the command in a bubblewrap sandbox, uploads the outputs (files, and output
directories as REAPI `Tree` messages), stdout and stderr, and reports the ActionResult with the
lease. No retries, no resource limits, no cancellation, no partial execution metadata; the input
files are hard links into the blob cache, so an action that wrote to one of its inputs would
change it for later actions (no action of a Bazel build does).

The sandbox shows the action's input root (materialized as hard links into a blob cache shared
by the workers of one engine) and a read-only base image: /usr/bin, /usr/lib, /usr/lib64,
/usr/include (with /bin, /lib, /lib64 as links into /usr) and a few files of /etc, the C++
compiler and the C library. It hides every Python of the host (HIDDEN: Debian's interpreter,
its libpython and its standard library; nothing under /usr/local, the home directory, pyenv or a
venv is bound), the checkout, the home directory and the host's /tmp, and has no network.
An action therefore sees the interpreter, torch and CUDA only where the build declares them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import (
    bots_pb2,
    bots_pb2_grpc,
    worker_pb2,
)
from buildgrid._protos.google.rpc import code_pb2, status_pb2

# The base image: these directories of the host, read-only, without HIDDEN.
IMAGE_DIRS = ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/include")
IMAGE_LINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64"}
# /etc: the dynamic loader's cache, users and groups (some tools ask for a name), and the
# alternatives that /usr/bin/cc and friends link through.
IMAGE_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "alternatives",
)
# Names of a Python installation, at any depth of IMAGE_DIRS that is scanned.
HIDDEN = re.compile(r"python|pydoc|^py3|^pip3?(\.|$)")
# Where the input root is in the sandbox (actions use paths relative to it).
EXEC_ROOT = "/execroot"
BATCH_BYTES = 2 << 20
CHUNK = 1 << 20
# Concurrent CAS reads of one worker (the engine limits its RPCs to its thread pool).
READERS = 4
POLL_S = 20.0


def digest_of(data: bytes) -> re_pb2.Digest:
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


class Cas:
    """CAS reads into a local blob cache (one file per digest), and uploads."""

    def __init__(self, channel: grpc.Channel, instance: str, cache: Path) -> None:
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bytestream = bytestream_pb2_grpc.ByteStreamStub(channel)
        self.instance = instance
        self.cache = cache
        cache.mkdir(parents=True, exist_ok=True)

    def path(self, digest: re_pb2.Digest, executable: bool = False) -> Path:
        return self.cache / (digest.hash + (".x" if executable else ""))

    def _store(self, digest: re_pb2.Digest, data: bytes) -> None:
        if hashlib.sha256(data).hexdigest() != digest.hash:
            raise RuntimeError(f"CAS returned wrong content for {digest.hash}")
        fd, tmp = tempfile.mkstemp(dir=self.cache)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o444)
        os.replace(tmp, self.path(digest))

    def linkable(self, digest: re_pb2.Digest, executable: bool) -> Path:
        """The cached blob with the mode a file of the input root has (hard links share it)."""
        path = self.path(digest, executable)
        if executable and not path.exists():
            fd, tmp = tempfile.mkstemp(dir=self.cache)
            os.close(fd)
            shutil.copyfile(self.path(digest), tmp)
            os.chmod(tmp, 0o555)
            os.replace(tmp, path)
        return path

    def fetch(self, digests: list[re_pb2.Digest]) -> None:
        """Makes sure every digest is in the blob cache: batches of reads, READERS at a time."""
        wanted = {d.hash: d for d in digests if not self.path(d).exists()}
        batches: list[list[re_pb2.Digest]] = [[]]
        size = 0
        large = []
        for d in wanted.values():
            if d.size_bytes > BATCH_BYTES:
                large.append(d)
                continue
            if size + d.size_bytes > BATCH_BYTES or len(batches[-1]) >= 1000:
                batches.append([])
                size = 0
            batches[-1].append(d)
            size += d.size_bytes
        with ThreadPoolExecutor(READERS) as pool:
            done = [pool.submit(self._read_batch, b) for b in batches if b]
            done += [pool.submit(lambda d: self._store(d, self.read_stream(d)), d) for d in large]
            for future in done:
                future.result()

    def _read_batch(self, digests: list[re_pb2.Digest]) -> None:
        request = re_pb2.BatchReadBlobsRequest(instance_name=self.instance, digests=digests)
        for response in self.cas.BatchReadBlobs(request).responses:
            if response.status.code != code_pb2.OK:
                raise RuntimeError(f"BatchReadBlobs {response.digest.hash}: {response.status}")
            self._store(response.digest, response.data)

    def read_stream(self, d: re_pb2.Digest) -> bytes:
        name = f"{self.instance}/blobs/{d.hash}/{d.size_bytes}".lstrip("/")
        request = bytestream_pb2.ReadRequest(resource_name=name)
        return b"".join(r.data for r in self.bytestream.Read(request))

    def read(self, digest: re_pb2.Digest) -> bytes:
        self.fetch([digest])
        return self.path(digest).read_bytes()

    def upload(self, blobs: dict[str, tuple[re_pb2.Digest, bytes | Path]]) -> None:
        """Uploads the blobs (by hash: digest and bytes, or a file) the CAS does not have."""
        request = re_pb2.FindMissingBlobsRequest(
            instance_name=self.instance, blob_digests=[d for d, _ in blobs.values()]
        )
        missing = self.cas.FindMissingBlobs(request).missing_blob_digests
        batch: list[re_pb2.BatchUpdateBlobsRequest.Request] = []
        size = 0
        for d in missing:
            source = blobs[d.hash][1]
            data = source.read_bytes() if isinstance(source, Path) else source
            if d.size_bytes > BATCH_BYTES:
                self._write_stream(d, data)
                continue
            if size + d.size_bytes > BATCH_BYTES:
                self._write_batch(batch)
                batch, size = [], 0
            batch.append(re_pb2.BatchUpdateBlobsRequest.Request(digest=d, data=data))
            size += d.size_bytes
        if batch:
            self._write_batch(batch)

    def _write_batch(self, requests: list[re_pb2.BatchUpdateBlobsRequest.Request]) -> None:
        request = re_pb2.BatchUpdateBlobsRequest(instance_name=self.instance, requests=requests)
        for response in self.cas.BatchUpdateBlobs(request).responses:
            if response.status.code != code_pb2.OK:
                raise RuntimeError(f"BatchUpdateBlobs {response.digest.hash}: {response.status}")

    def _write_stream(self, d: re_pb2.Digest, data: bytes) -> None:
        name = f"{self.instance}/uploads/{uuid.uuid4()}/blobs/{d.hash}/{d.size_bytes}".lstrip("/")

        def chunks():  # type: ignore[no-untyped-def]
            for offset in range(0, max(len(data), 1), CHUNK):
                piece = data[offset : offset + CHUNK]
                yield bytestream_pb2.WriteRequest(
                    resource_name=name if offset == 0 else "",
                    write_offset=offset,
                    data=piece,
                    finish_write=offset + len(piece) >= len(data),
                )

        self.bytestream.Write(chunks())


def materialize(cas: Cas, root: re_pb2.Digest, dest: Path) -> None:
    """The input root `root` under dest: files as hard links into the blob cache."""
    directories: dict[str, re_pb2.Directory] = {}
    level = [root]
    while level:  # one batch of reads per depth of the tree
        cas.fetch(level)
        children = []
        for d in level:
            if d.hash in directories:
                continue
            directory = re_pb2.Directory.FromString(cas.path(d).read_bytes())
            directories[d.hash] = directory
            children += [c.digest for c in directory.directories]
        level = [c for c in children if c.hash not in directories]
    files = [f.digest for directory in directories.values() for f in directory.files]
    cas.fetch(files)

    def write(digest: re_pb2.Digest, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        directory = directories[digest.hash]
        for f in directory.files:
            os.link(cas.linkable(f.digest, f.is_executable), path / f.name)
        for s in directory.symlinks:
            os.symlink(s.target, path / s.name)
        for sub in directory.directories:
            write(sub.digest, path / sub.name)

    write(root, dest)


class Outputs:
    """What an action wrote, as REAPI messages, and the blobs to upload for them."""

    def __init__(self) -> None:
        self.blobs: dict[str, tuple[re_pb2.Digest, bytes | Path]] = {}

    def file_digest(self, path: Path) -> re_pb2.Digest:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(CHUNK), b""):
                h.update(block)
        d = re_pb2.Digest(hash=h.hexdigest(), size_bytes=path.stat().st_size)
        self.blobs[d.hash] = (d, path)
        return d

    def message_digest(self, data: bytes) -> re_pb2.Digest:
        d = digest_of(data)
        self.blobs[d.hash] = (d, data)
        return d

    def directory(self, path: Path, children: list[re_pb2.Directory]) -> re_pb2.Directory:
        """path as a Directory message (entries sorted by name, as REAPI requires); every
        directory below it is appended to children."""
        out = re_pb2.Directory()
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            p = Path(entry.path)
            if entry.is_symlink():
                out.symlinks.add(name=entry.name, target=os.readlink(p))
            elif entry.is_dir():
                sub = self.directory(p, children)
                children.append(sub)
                digest = digest_of(sub.SerializeToString())
                out.directories.add(name=entry.name, digest=digest)
            elif entry.is_file():
                executable = bool(entry.stat().st_mode & stat.S_IXUSR)
                out.files.add(name=entry.name, digest=self.file_digest(p), is_executable=executable)
        return out

    def collect(self, command: re_pb2.Command, workdir: Path, result: re_pb2.ActionResult) -> None:
        files = list(command.output_files)
        dirs = list(command.output_directories)
        for p in command.output_paths:  # REAPI 2.1: the kind is whatever the action made
            (dirs if (workdir / p).is_dir() else files).append(p)
        for name in files:
            path = workdir / name
            if path.is_file():
                executable = bool(path.stat().st_mode & stat.S_IXUSR)
                result.output_files.add(
                    path=name, digest=self.file_digest(path), is_executable=executable
                )
        for name in dirs:
            path = workdir / name
            if path.is_dir():
                children: list[re_pb2.Directory] = []
                tree = re_pb2.Tree(root=self.directory(path, children), children=children)
                result.output_directories.add(
                    path=name, tree_digest=self.message_digest(tree.SerializeToString())
                )


def make_image(dest: Path, without: list[str]) -> None:
    """The base image under dest (usr/ and etc/), unless dest has it already for this host;
    without: more paths of the host to leave out (a test of an image that lacks the compiler).

    Hard links (`cp -al`) of IMAGE_DIRS without HIDDEN, or a copy where dest is on another file
    system: one bind mount of the image per action.
    Bind mounts of the entries of /usr/bin and /usr/lib one by one, to leave out the few of
    Python, took 15 s per action here (1,600 mounts)."""
    status = Path("/var/lib/dpkg/status")
    info = status.stat() if status.exists() else None
    stamp = f"{HIDDEN.pattern} {info and (info.st_mtime_ns, info.st_size)} {sorted(without)}"
    if (dest / ".stamp").is_file() and (dest / ".stamp").read_text() == stamp:
        return
    tmp = dest.with_name(f"{dest.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "usr").mkdir(parents=True)
    (tmp / "etc").mkdir()
    tops = [t for t in IMAGE_DIRS if os.path.isdir(t) and not os.path.islink(t)]
    linked = subprocess.run(["cp", "-a", "--link", *tops, str(tmp / "usr")], capture_output=True)
    if linked.returncode != 0:
        # Hard links need the image on /usr's file system; elsewhere, a copy (slower, larger).
        shutil.rmtree(tmp / "usr")
        (tmp / "usr").mkdir()
        subprocess.run(["cp", "-a", *tops, str(tmp / "usr")], check=True)
    etc = [f"/etc/{n}" for n in IMAGE_ETC if os.path.lexists(f"/etc/{n}")]
    subprocess.run(["cp", "-a", *etc, str(tmp / "etc")], check=True)
    for top in tops:
        for base in (top, f"{top}/x86_64-linux-gnu"):
            copy = tmp / base.lstrip("/")
            for name in os.listdir(copy) if copy.is_dir() else []:
                if HIDDEN.search(name):
                    path = copy / name
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
    for path in without:
        (tmp / path.lstrip("/")).unlink()
    (tmp / ".stamp").write_text(stamp)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def image_args(image: Path) -> list[str]:
    """The bwrap arguments of the base image made by make_image."""
    args = ["--ro-bind", str(image / "usr"), "/usr", "--ro-bind", str(image / "etc"), "/etc"]
    for link, target in IMAGE_LINKS.items():
        if (image / target).is_dir():
            args += ["--symlink", target, link]
    return args


class Worker:
    def __init__(self, args: argparse.Namespace) -> None:
        channel = grpc.insecure_channel(
            args.server.removeprefix("grpc://"),
            options=[
                ("grpc.max_receive_message_length", 64 << 20),
                ("grpc.max_send_message_length", 64 << 20),
            ],
        )
        self.bots = bots_pb2_grpc.BotsStub(channel)
        self.instance = args.instance
        self.bot_id = args.bot_id
        self.cas = Cas(channel, args.instance, Path(args.cache_dir))
        self.work = Path(args.work_dir)
        image = Path(args.image)
        make_image(image, args.image_without)
        self.image = image_args(image)

    def run_forever(self) -> None:
        session = self.bots.CreateBotSession(
            bots_pb2.CreateBotSessionRequest(
                parent=self.instance,
                bot_session=bots_pb2.BotSession(
                    bot_id=self.bot_id,
                    status=bots_pb2.OK,
                    worker=worker_pb2.Worker(devices=[worker_pb2.Device(handle=self.bot_id)]),
                ),
            )
        )
        log(f"session {session.name}")
        while True:
            for lease in session.leases:
                if lease.state == bots_pb2.PENDING:  # acknowledge first, run once it is ACTIVE
                    lease.state = bots_pb2.ACTIVE
                elif lease.state == bots_pb2.ACTIVE:
                    self.run_lease(lease)
            try:
                session = self.bots.UpdateBotSession(
                    bots_pb2.UpdateBotSessionRequest(name=session.name, bot_session=session),
                    timeout=POLL_S,
                )
            except grpc.RpcError as e:
                if e.code() not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
                    raise
                time.sleep(0.2)

    def run_lease(self, lease: bots_pb2.Lease) -> None:
        start = time.monotonic()
        result = re_pb2.ActionResult()
        try:
            self.execute(lease, result)
            lease.status.CopyFrom(status_pb2.Status(code=code_pb2.OK))
        except subprocess.TimeoutExpired as e:
            lease.status.CopyFrom(
                status_pb2.Status(code=code_pb2.DEADLINE_EXCEEDED, message=str(e))
            )
        except Exception as e:  # reported to the client, which prints it
            lease.status.CopyFrom(
                status_pb2.Status(code=code_pb2.INTERNAL, message=f"test worker: {e!r}")
            )
        lease.result.Pack(result)
        lease.state = bots_pb2.COMPLETED
        log(
            f"lease {lease.id}: exit {result.exit_code}, status {lease.status.code}, "
            f"{time.monotonic() - start:.1f} s"
        )

    def execute(self, lease: bots_pb2.Lease, result: re_pb2.ActionResult) -> None:
        action = re_pb2.Action()
        if lease.payload.Is(re_pb2.Action.DESCRIPTOR):
            lease.payload.Unpack(action)
        else:
            digest = re_pb2.Digest()
            lease.payload.Unpack(digest)
            action = re_pb2.Action.FromString(self.cas.read(digest))
        command = re_pb2.Command.FromString(self.cas.read(action.command_digest))
        shutil.rmtree(self.work, ignore_errors=True)
        root = self.work / "root"
        t0 = time.monotonic()
        materialize(self.cas, action.input_root_digest, root)
        t1 = time.monotonic()
        workdir = root / command.working_directory
        for name in [*command.output_files, *command.output_paths]:
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        for name in command.output_directories:
            (workdir / name).mkdir(parents=True, exist_ok=True)
        argv = [
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            *self.image,
            "--bind",
            str(root),
            EXEC_ROOT,
            "--chdir",
            f"{EXEC_ROOT}/{command.working_directory}".rstrip("/"),
            "--clearenv",
        ]
        for var in command.environment_variables:
            argv += ["--setenv", var.name, var.value]
        argv += ["--", *command.arguments]
        timeout = action.timeout.seconds or None
        stdout, stderr = self.work / "stdout", self.work / "stderr"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            result.execution_metadata.worker = self.bot_id
            result.execution_metadata.execution_start_timestamp.GetCurrentTime()
            proc = subprocess.run(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, timeout=timeout
            )
            result.execution_metadata.execution_completed_timestamp.GetCurrentTime()
        result.exit_code = proc.returncode
        t2 = time.monotonic()
        outputs = Outputs()
        outputs.collect(command, workdir, result)
        result.stdout_digest.CopyFrom(outputs.file_digest(stdout))
        result.stderr_digest.CopyFrom(outputs.file_digest(stderr))
        self.cas.upload(outputs.blobs)
        shutil.rmtree(self.work, ignore_errors=True)
        log(
            f"{command.arguments[0]} -> {[*command.output_files, *command.output_paths][:1]}: "
            f"inputs {t1 - t0:.1f} s, run {t2 - t1:.1f} s, outputs {time.monotonic() - t2:.1f} s"
        )


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", help="grpc://HOST:PORT of the Bots API")
    parser.add_argument("--instance", default="", help="the instance name")
    parser.add_argument("--bot-id")
    parser.add_argument("--work-dir", help="where an action's inputs are made")
    parser.add_argument("--cache-dir", help="the blob cache (may be shared)")
    parser.add_argument("--image", required=True, help="the base image (made if missing)")
    parser.add_argument("--make-image", action="store_true", help="make --image, and exit")
    parser.add_argument(
        "--image-without",
        action="append",
        default=[],
        metavar="PATH",
        help="leave this file of the host out of the image (repeatable)",
    )
    args = parser.parse_args()
    if args.make_image:
        make_image(Path(args.image), args.image_without)
        return 0
    missing = [n for n in ("server", "bot_id", "work_dir", "cache_dir") if not getattr(args, n)]
    if missing:
        parser.error(f"--{missing[0].replace('_', '-')} is required")
    Worker(args).run_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
