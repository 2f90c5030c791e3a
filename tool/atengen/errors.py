"""One error type for every bad input, so the CLI prints ``file:line: error: ...``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    """Where an entry (or one of its keys) sits in its YAML file; lines count from 1."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class AtengenError(Exception):
    """A user-facing error: a location and a one-line message.

    Several errors found in one pass are carried together in ``errors`` so a
    user fixes them all in one edit-run cycle.
    """

    def __init__(self, location: Location | None, message: str):
        # Messages must stay on one line: tools grep them and tests assert it.
        self.location = location
        self.message = bounded(" ".join(message.split()))
        self.errors: list[AtengenError] = [self]
        super().__init__(self.format())

    def format(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}error: {self.message}"

    @classmethod
    def combine(cls, errors: list[AtengenError]) -> AtengenError:
        """One exception holding several errors, first one first."""
        first = errors[0]
        combined = cls(first.location, first.message)
        combined.errors = list(errors)
        return combined

    def format_all(self) -> str:
        """The first MAX_SHOWN_ERRORS errors, one a line, then one line counting the rest."""
        lines = [e.format() for e in self.errors[:MAX_SHOWN_ERRORS]]
        more = len(self.errors) - len(lines)
        if more:
            lines.append(f"error: ... and {more} more error{'s' if more > 1 else ''}")
        return "\n".join(lines)


# At most this many errors are printed, then a line that counts the others: a file with
# thousands of mistakes (a backend YAML written for another torch) would bury the first ones
# under thousands of lines. Work done per error only for its message (a did-you-mean search
# over every op name) is done only for the errors that will be shown: see `shown`.
MAX_SHOWN_ERRORS = 20


# A message quotes what the input says (an op name, a key); an input can make that megabytes
# long. One line stays readable: the middle of a longer message is left out.
MAX_MESSAGE_CHARS = 1000


def bounded(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    left_out = len(message) - MAX_MESSAGE_CHARS + 200
    head, tail = message[: MAX_MESSAGE_CHARS - 400], message[-200:]
    return f"{head} ... ({left_out} characters left out) ... {tail}"


def format_warnings(warnings: Sequence[str]) -> list[str]:
    """The lines to print for ``warnings`` (each one ``file:line: warning: ...``): the first
    MAX_SHOWN_ERRORS, each bounded, then one line counting the rest."""
    lines = [bounded(w) for w in warnings[:MAX_SHOWN_ERRORS]]
    more = len(warnings) - len(lines)
    if more:
        lines.append(f"warning: ... and {more} more warning{'s' if more > 1 else ''}")
    return lines


def shown(errors_so_far: Sequence[object]) -> bool:
    """Whether the next error after ``errors_so_far`` (in the order they are combined) will be
    printed."""
    return len(errors_so_far) < MAX_SHOWN_ERRORS


class SchemaError(ValueError):
    """A malformed schema string; the model layer adds the entry's location."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """' (did you mean 'X'?)' naming the closest candidate, or '' — for error messages."""
    if len(name) > 200:
        return ""  # no candidate is that long; comparing would take seconds
    import difflib  # only on the error path: not worth its import time on every run

    match = difflib.get_close_matches(name, sorted(candidates), n=1)
    return f" (did you mean '{match[0]}'?)" if match else ""


class CannotGenerate(Exception):
    """An operator whose kernel the generator cannot build as the input asks.

    Raised by emitters where the input (not the generator) is at fault; the caller knows the
    operator and dispatch key and turns it into an AtengenError at the operator's entry. Any
    other exception out of an emitter is a bug and keeps its traceback.
    """
