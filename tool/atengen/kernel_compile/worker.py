"""The compile of one kernel source, alone or as a persistent worker.

Alone (a remote or sandboxed action), it runs the compiler's command line as given. As Bazel's
persistent worker (`--persistent_worker`), it reads WorkRequests from standard input and answers
each on standard output, which carries nothing else; each compile includes the source's
precompiled header when one is ready (precompiled.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

from atengen.errors import AtengenError
from atengen.kernel_compile.command_line import KernelCompile
from atengen.kernel_compile.precompiled import HeaderChoice, PrecompiledHeaders, store_root
from atengen.kernel_compile.worker_protocol import encode_response, read_request


def _run(argv: tuple[str, ...]) -> tuple[int, str]:
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    return done.returncode, done.stdout.decode("utf-8", errors="replace")


def compile_once(arguments: tuple[str, ...]) -> int:
    """Runs the compile ``arguments`` describe, printing what the compiler printed."""
    try:
        compile = KernelCompile.parse(arguments)
    except AtengenError as e:
        print(e.format_all(), file=sys.stderr)
        return 2
    code, output = _run(compile.argv)
    sys.stderr.write(output)
    return code


def compile_with_store(
    arguments: tuple[str, ...], digests: dict[str, bytes], store: PrecompiledHeaders | None
) -> tuple[int, str]:
    """One worker request's compile: (exit code, what the compiler printed). A line on standard
    error, which Bazel keeps in the worker's log (`bazel-workers/` in the output base), says
    whether it had its precompiled header, and if not, why."""
    try:
        compile = KernelCompile.parse(arguments)
    except AtengenError as e:
        return 2, e.format_all() + "\n"
    if store is None:
        choice = HeaderChoice(None, "no store outside an execroot")
    else:
        choice = store.header_for(compile, digests)
    if choice.header:
        print(f"compile-kernel: {compile.source}: with {choice.header}", file=sys.stderr)
        return _run(compile.with_header(choice.header))
    print(f"compile-kernel: {compile.source}: plain, {choice.why}", file=sys.stderr)
    return _run(compile.argv)


def serve(stdin: BinaryIO, stdout: BinaryIO, cwd: Path) -> int:
    """Answers WorkRequests until standard input ends."""
    root = store_root(cwd)
    store = PrecompiledHeaders(root) if root is not None else None
    while True:
        request = read_request(stdin)
        if request is None:
            return 0
        code, output = compile_with_store(request.arguments, dict(request.inputs), store)
        stdout.write(encode_response(request.request_id, code, output))
        stdout.flush()
        sys.stderr.flush()
