"""README.md stays a front page: at most 200 lines and 1,500 words, and nothing in it that goes
stale by itself, neither a date (YYYY-MM-DD) nor a commit hash (7 to 40 hex digits with a digit
and a letter), which belong in CHANGELOG.md, DEVELOPING.md and docs/ (measurements with their
dates)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
MAX_LINES = 200
MAX_WORDS = 1500
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
# Hex runs of 7 to 40 with at least one digit and one of a-f: a word like "deadbeef" or a
# number like "20261127" is no commit.
HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def test_readme_is_short() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_LINES, len(text.splitlines())
    assert len(text.split()) <= MAX_WORDS, len(text.split())


def test_readme_has_no_dates_or_commit_hashes() -> None:
    text = README.read_text()
    assert DATE.findall(text) == []
    assert HEX.findall(text) == []


def test_the_patterns_catch_what_they_are_for() -> None:
    assert DATE.findall("measured 2026-11-27 here") == ["2026-11-27"]
    assert HEX.findall("at 91b4612, not 20261127 or deadbeef") == ["91b4612"]
