"""Running a generator's independent work items in forked worker processes.

A whole-YAML ``generate`` builds and renders ~8,000 kernel wrappers for ~20 dispatch keys, and
the keys do not depend on each other: with a second CPU, half of them can be done in a forked
copy of the process, which shares the loaded model without pickling it. The forked workers and
the calling process take items from one queue (a pipe holding the items' indices), so the work
balances itself whatever the items cost; results are put back in item order, so the output is
the same bytes with any number of workers, and whichever process did which item.

Nothing here writes a file or prints: workers send their results back over a pipe and exit.
Any failure (an error in the input, a worker that dies) makes ``map_items`` return None, and
the caller redoes the work in one process, which reports the first error exactly as a serial
run does. Forking needs Linux (``os.fork`` without ``exec`` elsewhere is either missing or
unsafe), so other systems always run serially.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# A queue entry is one byte: an item's index.
MAX_ITEMS = 256
# `auto` uses at most this many processes: past it, forking and copying results back cost
# more than the items they take over (a whole-YAML generate has ~20 items, two of them large).
MAX_AUTO_JOBS = 4


def auto_jobs() -> int:
    """The process count for `--jobs=auto`: the CPUs this process may run on, at most
    MAX_AUTO_JOBS; 1 where forking is not supported."""
    if not _can_fork():
        return 1
    return max(1, min(MAX_AUTO_JOBS, len(os.sched_getaffinity(0))))


def _can_fork() -> bool:
    return sys.platform == "linux" and hasattr(os, "fork")


def map_items(
    work: Callable[[Item], Result], items: Sequence[Item], jobs: int
) -> list[Result] | None:
    """[work(item) for item in items], computed by `jobs` processes (this one included).

    Returns None if anything failed: the caller then runs the items serially, to get the
    first failure exactly as a serial run reports it. Items should come largest first, so
    that no process is left with a large one at the end.
    """
    jobs = min(jobs, len(items))
    if jobs <= 1 or not _can_fork() or len(items) > MAX_ITEMS:
        return [work(item) for item in items]
    queue_read, queue_write = os.pipe()
    os.write(queue_write, bytes(range(len(items))))  # < 64 KiB: the pipe holds it all
    os.close(queue_write)
    workers: dict[int, int] = {}  # pid -> the read end of its result pipe, until reaped
    try:
        for _ in range(jobs - 1):
            result_read, result_write = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the worker (coverage sees only the parent)
                os.close(result_read)
                _worker(work, items, queue_read, result_write)
            os.close(result_write)
            workers[pid] = result_read
        try:
            results = _take_items(work, items, queue_read)
        except Exception:
            return None
        for pid in list(workers):
            with os.fdopen(workers.pop(pid), "rb") as f:
                data = f.read()
            if os.waitpid(pid, 0)[1] != 0:
                return None
            results.update(pickle.loads(data))
    finally:
        os.close(queue_read)
        for pid, result_read in workers.items():  # left only after a failure: stop them
            os.kill(pid, signal.SIGKILL)
            os.close(result_read)
            os.waitpid(pid, 0)
    if len(results) != len(items):
        return None
    return [results[i] for i in range(len(items))]


def _take_items(
    work: Callable[[Item], Result], items: Sequence[Item], queue_read: int
) -> dict[int, Result]:
    """Runs the items this process takes off the queue, until it is empty."""
    done: dict[int, Result] = {}
    while index := os.read(queue_read, 1):
        done[index[0]] = work(items[index[0]])
    return done


def _worker(
    work: Callable[[Item], Result], items: Sequence[Item], queue_read: int, result_write: int
) -> None:
    # os._exit: the worker is a copy of the caller, whose atexit handlers, buffered output and
    # (under pytest) test machinery must not run a second time.
    status = 1
    try:
        data = pickle.dumps(_take_items(work, items, queue_read), pickle.HIGHEST_PROTOCOL)
        with os.fdopen(result_write, "wb") as f:
            f.write(data)
        status = 0
    except BaseException:  # noqa: BLE001 - reported by the exit status; the caller redoes it
        pass
    finally:
        os._exit(status)
