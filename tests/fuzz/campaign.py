"""The long fuzzing campaign: many inputs per entry point, counted rather than asserted.

    .venv/bin/python tests/fuzz/campaign.py --entry generate --inputs 100000 --seed 1
    .venv/bin/python tests/fuzz/campaign.py --entry all --inputs 2000 --seed 7 --budget_s 900
    .venv/bin/python tests/fuzz/campaign.py --entry classes --inputs 1000 --seed 1
    .venv/bin/python tests/fuzz/campaign.py --entry wheel --inputs 5000 --seed 1

Entry points: ``schema`` (atengen's schema parser against torch._C.parse_schema), ``check``,
``generate``, ``backend``, ``lazy`` (lazy-tensor backend YAMLs) and ``autograd`` (derivatives
YAMLs) (the CLI in-process, judged by harness.py); ``wheel`` (`atengen wheel`'s flags) and
``elf`` (a mutated library through every ELF-reading command), judged by wheel_fuzz.py. Prints,
per entry
point: inputs, exit codes, tracebacks, writes outside, partial outputs, bad error lines
and, for ``schema``, agreement with torch; then up to 5 examples of each failure kind.
``classes`` runs the hostile-input classes of classes.py (and ``concurrency``: --inputs
rounds of 4 writers on one directory), which also count changed inputs and slow error paths
and print the slowest error path.
Inputs come from the same Hypothesis strategies as the CI slice, driven by a fixed seed;
``--budget_s`` stops an entry point early (the count actually run is printed), and so does
SIGINT or SIGTERM; ``--progress N`` prints the counts so far every N inputs.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import signal
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [REPO, os.path.join(REPO, "tool")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.fuzz import classes, concurrency, harness, strategies, wheel_fuzz  # noqa: E402
from tests.fuzz.entry_points import YAML_AND_FLAGS  # noqa: E402

# The wheel tool and the ELF readers: one strategy, one case each (wheel_fuzz.py).
WHEEL_ENTRIES = {
    "wheel": (wheel_fuzz.WHEEL_ARGS, wheel_fuzz.wheel_case),
    "elf": (wheel_fuzz.ELF_SEEDS, wheel_fuzz.elf_case),
}
ENTRIES = (
    "schema",
    "torch_language",
    "check",
    "generate",
    "backend",
    "lazy",
    "autograd",
    *WHEEL_ENTRIES,
)
# The hostile-input classes (classes.py), and several writers on one directory.
CLASS_ENTRIES = (*classes.CLASSES, "concurrency")
JUDGED = ("traceback", "writes outside", "input changed", "partial output", "bad error lines",
          "slow error path", "broken wheel")  # fmt: skip


class _Stop(Exception):  # noqa: N818 - ends a campaign whose time budget is spent
    pass


def run_entry(entry: str, inputs: int, seed_value: int, budget_s: float, progress: int = 0) -> dict:
    counts: collections.Counter = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    deadline = time.monotonic() + budget_s

    def record(kind: str, text: str) -> None:
        counts[kind] += 1
        if len(examples[kind]) < 5:
            examples[kind].append(text[:400])

    def one_cli(verdict: harness.Verdict, shown: str) -> None:
        counts["inputs"] += 1
        counts[f"exit {verdict.rc}"] += 1
        for problem in verdict.problems:
            record(problem.split(":", 1)[0], f"{problem} <- {shown!r}")

    def one_schema(text: str) -> None:
        counts["inputs"] += 1
        verdict = (
            harness.torch_language_verdict if entry == "torch_language" else harness.schema_verdict
        )
        ours, theirs, detail = verdict(text)
        counts[f"atengen {ours}, torch {theirs}"] += 1
        if ours == "accept" and theirs == "reject":
            record("accepted by atengen only", text)
        elif ours == "accept" and detail:
            record("accepted by both, differently", f"{text} : {detail}")
        elif ours == "reject" and theirs == "accept":
            examples.setdefault("rejected by atengen only (reasons)", [])
            counts[f"rejected by atengen only: {_reason(detail)}"] += 1

    if entry == "schema":
        strategy, body = (strategies.schema(),), one_schema
    elif entry == "torch_language":  # a custom namespace's schema, spelled as torch takes it
        strategy, body = (strategies.torch_language_schema(),), one_schema
    elif entry == "check":
        strategy = (strategies.op_yaml(),)

        def body(y):
            one_cli(harness.check_case(y), y)
    elif entry in WHEEL_ENTRIES:
        drawn, wheel_case = WHEEL_ENTRIES[entry]
        strategy = (drawn,)

        def body(value):
            one_cli(wheel_case(value), repr(value))
    else:
        strategy, case = YAML_AND_FLAGS[entry]

        def body(y, flags):
            one_cli(case(y, flags), f"{flags} {y}")

    def guarded(args: tuple):
        if time.monotonic() > deadline:
            raise _Stop
        body(*args)
        if progress and counts["inputs"] % progress == 0:
            print(f"   {entry}: {dict(sorted(counts.items()))}", flush=True)

    test = settings(
        max_examples=inputs,
        phases=[Phase.generate],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )(seed(seed_value)(given(st.tuples(*strategy))(guarded)))
    try:
        test()
    except _Stop:
        counts["stopped by --budget_s"] = 1
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: report what ran
        counts["stopped by a signal"] = 1
    except Exception as e:  # noqa: BLE001 - an escaped failure is itself a finding
        record("campaign error", repr(e))
    return {"counts": counts, "examples": examples}


def run_class(name: str, runs: int, seed_value: int, budget_s: float, progress: int = 0) -> dict:
    """``runs`` cases of one hostile-input class (classes.py), counted like run_entry's, with
    the slowest error path (CPU seconds and lines) and the case that took it."""
    counts: collections.Counter = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    slowest = (0.0, 0, "")
    if name == "concurrency":
        import tempfile

        with tempfile.TemporaryDirectory(prefix="atengen-conc-") as root:
            result = concurrency.run_rounds(root, runs, writers=4)
        counts.update(inputs=result["rounds"], **{
            "partial output": result["broken"], "failed writer": result["failed writers"]})  # fmt: skip
        return {"counts": counts, "examples": examples, "slowest": slowest}
    real = classes.RealInputs(seed_value)
    draw = classes.CLASSES[name]
    rng = random.Random(seed_value)
    deadline = time.monotonic() + budget_s
    try:
        for index in range(runs):
            if time.monotonic() > deadline:
                counts["stopped by --budget_s"] = 1
                break
            case = draw(real, rng, index)
            verdict = case.run()
            counts["inputs"] += 1
            counts[f"exit {verdict.rc}"] += 1
            if verdict.rc != 0 and verdict.cpu_s > slowest[0]:
                slowest = (verdict.cpu_s, verdict.lines, case.label[:200])
            for problem in verdict.problems:
                kind = problem.split(":", 1)[0]
                counts[kind] += 1
                if len(examples[kind]) < 5:
                    examples[kind].append(f"{problem} <- {case.label[:300]}")
            if progress and counts["inputs"] % progress == 0:
                print(f"   {name}: {dict(sorted(counts.items()))}", flush=True)
    except KeyboardInterrupt:
        counts["stopped by a signal"] = 1
    return {"counts": counts, "examples": examples, "slowest": slowest}


def _reason(message: str) -> str:
    """Our rejection message without the names and values in it, to group reasons."""
    return re.sub(r"'[^']*'", "'…'", message)[:120] or "(no message)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--entry",
        choices=(*ENTRIES, *CLASS_ENTRIES, "all", "classes"),
        default="all",
        help="an entry point, a hostile-input class, `all` (the entry points) or `classes`",
    )
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget_s", type=float, default=float("inf"), help="per entry point")
    parser.add_argument("--progress", type=int, default=10_000, help="print counts every N inputs")
    args = parser.parse_args()
    # SIGTERM ends the campaign like Ctrl-C: the counts so far are still printed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    chosen = {"all": ENTRIES, "classes": CLASS_ENTRIES}.get(args.entry, (args.entry,))
    for entry in chosen:
        start = time.monotonic()
        if entry in CLASS_ENTRIES:
            result = run_class(entry, args.inputs, args.seed, args.budget_s, args.progress)
        else:
            result = run_entry(entry, args.inputs, args.seed, args.budget_s, args.progress)
        counts = result["counts"]
        print(f"== {entry}: seed {args.seed}, {time.monotonic() - start:.0f} s")
        if entry in ("schema", "torch_language"):
            for key in ("accepted by atengen only", "accepted by both, differently"):
                counts.setdefault(key, 0)
        else:
            for key in JUDGED:
                counts.setdefault(key, 0)
        if "slowest" in result:
            cpu, lines, label = result["slowest"]
            print(f"  slowest error path: {cpu:.2f} s CPU, {lines} lines <- {label}")
        for key, n in sorted(counts.items(), key=lambda kv: (kv[0] != "inputs", kv[0])):
            print(f"  {key}: {n}")
        for kind, shown in result["examples"].items():
            for text in shown:
                print(f"  example of {kind}: {text}")
        sys.stdout.flush()
        if "stopped by a signal" in counts:
            break


if __name__ == "__main__":
    main()
