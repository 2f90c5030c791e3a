"""Several processes write one output directory at once; exactly one complete run must remain.

    PYTHONPATH=tool:. .venv/bin/python -m tests.fuzz.concurrency --rounds 1000 --writers 4 DIR

Each writer runs ``atengen generate`` (``atengen.cli.main.main``, in a process forked from this
one so that all of them start within a millisecond of each other) with its own op selection,
so each run's files differ. After every round the output directory must hold exactly the files
of one writer's run, byte for byte, and nothing else may be left beside it (no temporary or
moved-aside directory). Prints one line of counts: rounds, complete, broken, failed writers.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import sys

from atengen.cli.main import main as atengen_main
from tests.support.model_helpers import TAGS_YAML

OPS = "".join(
    f"- func: op{i}(Tensor self, float factor) -> Tensor\n  dispatch:\n    CPU: op{i}_cpu\n"
    for i in range(8)
)


def _tree(path: str) -> dict[str, str] | None:
    if not os.path.isdir(path):
        return None
    out = {}
    for d, _, files in os.walk(path):
        for name in files:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _run(op_yaml: str, tags_yaml: str, ops: str, out: str) -> tuple[int, str]:
    """The exit code and what the run printed to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = atengen_main(
            ["atengen", "generate", f"--op_yaml={op_yaml}", f"--tags_yaml={tags_yaml}",
             f"--ops={ops}", f"--output_dir={out}", "--jobs=1"]
        )  # fmt: skip
    return code, err.getvalue()


def _selection(writer: int) -> str:
    return ",".join(f"op{i}" for i in range(writer + 1))


def run_rounds(root: str, rounds: int, writers: int) -> dict[str, int]:
    os.makedirs(root, exist_ok=True)
    op_yaml, tags_yaml = os.path.join(root, "ops.yaml"), os.path.join(root, "tags.yaml")
    with open(op_yaml, "w") as f:
        f.write(OPS)
    with open(tags_yaml, "w") as f:
        f.write(TAGS_YAML)
    expected = []
    for w in range(writers):
        ref = os.path.join(root, "ref", str(w))
        code, err = _run(op_yaml, tags_yaml, _selection(w), ref)
        assert code == 0, f"a solo run failed: {err}"
        expected.append(_tree(ref))
    arena = os.path.join(root, "arena")
    out = os.path.join(arena, "out")
    counts = {"rounds": 0, "complete": 0, "broken": 0, "failed writers": 0}
    for _ in range(rounds):
        shutil.rmtree(arena, ignore_errors=True)
        os.makedirs(arena)
        go_read, go_write = os.pipe()
        pids = []
        for w in range(writers):
            pid = os.fork()
            if pid == 0:  # a writer: wait for the start signal, run, report by exit code
                os.close(go_write)
                os.read(go_read, 1)
                code = 1
                try:
                    code, err = _run(op_yaml, tags_yaml, _selection(w), out)
                    if code != 0:  # the parent prints why, from the writer's own words
                        with open(os.path.join(root, f"writer-{w}.err"), "a") as f:
                            f.write(err)
                except BaseException as e:
                    with open(os.path.join(root, f"writer-{w}.err"), "a") as f:
                        f.write(f"{type(e).__name__}: {e}\n")
                finally:
                    os._exit(code)
            pids.append(pid)
        os.close(go_read)
        os.write(go_write, b"x" * writers)  # all start at once
        os.close(go_write)
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                counts["failed writers"] += 1
        for w in range(writers):
            err_file = os.path.join(root, f"writer-{w}.err")
            if os.path.exists(err_file):
                with open(err_file) as f:
                    print(f"writer {w} failed: {f.read().strip()}", file=sys.stderr)
                os.remove(err_file)
        counts["rounds"] += 1
        left = sorted(os.listdir(arena))
        if left == ["out"] and _tree(out) in expected:
            counts["complete"] += 1
        else:
            counts["broken"] += 1
            print(f"broken round: {left} {sorted(_tree(out) or {})[:5]}", file=sys.stderr)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("root", help="a scratch directory (made if missing)")
    args = parser.parse_args()
    counts = run_rounds(args.root, args.rounds, args.writers)
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    sys.exit(0 if counts["broken"] == 0 and counts["failed writers"] == 0 else 1)


if __name__ == "__main__":
    main()
