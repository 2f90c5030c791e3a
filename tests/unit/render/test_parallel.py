"""Forked workers (atengen.render.parallel) and `generate --jobs`: the same bytes with any number
of processes, and any failure handed back to the caller instead of half a result."""

from __future__ import annotations

import os
import select
from pathlib import Path

import pytest

from atengen.render.parallel import map_items
from tests.support.model_helpers import run_cli, run_cli_process, tree

ITEMS = [f"item{i}" for i in range(40)]
EXPECTED = [f"{s}:{len(s)}" for s in ITEMS]  # written out, not computed by map_items


def describe(s: str) -> str:
    return f"{s}:{len(s)}"


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_results_come_back_in_item_order(jobs):
    assert map_items(describe, ITEMS, jobs) == EXPECTED


class FirstItemsMeet:
    """Two processes (the caller and one worker) meet on their first items: each, on its first
    item, waits until the other has started its own. So each takes at least one item whatever
    the scheduling: one holding its first item cannot empty the queue alone, and the other
    finds items left (a loaded machine may not run a forked worker for seconds, and a queue of
    sleeping items once emptied before it did). Not a lock on the queue: map_items runs as it
    would. Call it at the start of the work function."""

    def __init__(self):
        self.caller = os.getpid()
        self.to_caller = os.pipe()
        self.to_worker = os.pipe()
        self.met = False  # per process: the worker has its own copy from the fork

    def __call__(self) -> None:
        if self.met:
            return
        self.met = True
        in_caller = os.getpid() == self.caller
        mine, theirs = (
            (self.to_worker, self.to_caller) if in_caller else (self.to_caller, self.to_worker)
        )
        os.write(mine[1], b"x")
        # Bounded, so that a broken map_items fails the test instead of hanging it.
        if not select.select([theirs[0]], [], [], 60)[0]:
            raise TimeoutError("the other process took no item in 60 s")
        os.read(theirs[0], 1)

    def close(self) -> None:
        for fd in (*self.to_caller, *self.to_worker):
            os.close(fd)


@pytest.fixture
def meet():
    m = FirstItemsMeet()
    yield m
    m.close()


def test_every_process_takes_items(meet):
    def pid_of(_):
        meet()
        return os.getpid()

    pids = map_items(pid_of, list(range(24)), 2)
    assert pids is not None and len(pids) == 24
    assert os.getpid() in pids
    assert len(set(pids)) == 2


def test_an_error_in_the_caller_returns_none(meet):
    raised = []  # the caller's own list: a worker appends to its copy

    def fail_in_caller(s):
        meet()
        if os.getpid() == meet.caller:
            raised.append(s)
            raise ValueError(s)
        return s

    assert map_items(fail_in_caller, ITEMS, 2) is None
    assert len(raised) == 1  # the caller's first item failed, and it took no other


def test_an_error_in_a_worker_returns_none(meet):
    ran = []

    def fail_in_worker(s):
        meet()
        if os.getpid() != meet.caller:
            raise ValueError(s)
        ran.append(s)
        return s

    assert map_items(fail_in_worker, ITEMS, 2) is None
    assert 1 <= len(ran) < len(ITEMS)  # the caller went on with the items the worker left


def test_a_worker_that_dies_returns_none(meet):
    def die_in_worker(s):
        meet()
        if os.getpid() != meet.caller:
            os._exit(3)
        return s

    assert map_items(die_in_worker, ITEMS, 2) is None


def _children() -> set[int]:
    """This process's child processes, zombies included (from /proc: Linux, as forking is)."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
                    if f.read().rpartition(")")[2].split()[1] == me:
                        found.add(int(entry))
            except OSError:
                pass  # gone meanwhile
    return found


def test_no_worker_is_left_behind():
    before = _children()
    assert map_items(describe, ITEMS, 4) == EXPECTED
    assert map_items(lambda s: 1 / 0, ITEMS, 4) is None  # the failure path reaps them too
    assert _children() <= before  # none new (an earlier test's child may have ended meanwhile)


@pytest.mark.slow  # two whole-YAML runs
def test_generate_is_the_same_bytes_with_any_jobs(tmp_path):
    outs = []
    for jobs in ("1", "2", "auto"):
        out = tmp_path / f"j{jobs}"
        r = run_cli_process(
            "generate", f"--jobs={jobs}", f"--output_dir={out}", f"--cuda_output_dir={out}_cuda"
        )
        assert r.returncode == 0, r.stderr
        outs.append((tree(out), tree(Path(f"{out}_cuda"))))
    assert outs[0] == outs[1] == outs[2]
    assert len(outs[0][0]) > 100 and outs[0][1]


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_bad_jobs_is_a_usage_error(tmp_path, value):
    r = run_cli("generate", "--ops=add", f"--jobs={value}", f"--output_dir={tmp_path / 'o'}")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--jobs" in r.stderr
    assert not (tmp_path / "o").exists()
