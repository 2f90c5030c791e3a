"""atengen/stable/releases.py's table of what each release's stable ABI carries, against the
`stableivalue_conversions.h` of every installed wheel (2.13 in .venv, 2.11 in the release venv
`./dev setup-torches` installs), and --target's parsing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atengen.facts import torch_facts
from atengen.stable.releases import CONVERSIONS_BY_RELEASE, NEWEST_KNOWN, parse_target
from tests.support.release_venvs import VENVS_DIR, installed_venvs

REPO = Path(__file__).resolve().parents[3]
HEADER = Path("include/torch/csrc/stable/stableivalue_conversions.h")


def installed_torch_dirs() -> dict[str, Path]:
    """Release -> torch package directory, for the dev venv and each release venv there is."""
    found = {}
    candidates = [REPO / ".venv"] + installed_venvs()
    for venv in candidates:
        for torch_dir in sorted(venv.glob("lib/python3*/site-packages/torch")):
            version_py = torch_dir / "version.py"
            if (torch_dir / HEADER).is_file() and version_py.is_file():
                m = re.search(r"^__version__ = .(\d+\.\d+)", version_py.read_text(), re.M)
                if m:
                    found[m.group(1)] = torch_dir
    return found


_GATE = re.compile(r"#\s*if\s+TORCH_FEATURE_VERSION\s*>=\s*TORCH_VERSION_(\d+)_(\d+)_0\b")
_SPECIALIZATION = re.compile(r"^struct (?:From|To)Impl<(.+)> \{$")


def conversions_by_gate(text: str) -> dict[str, tuple[int, int]]:
    """Each FromImpl/ToImpl specialization of the header -> the release its gate asks for
    ((0, 0): none). Gates nest; other #if blocks (byte order) gate nothing."""
    gates: list[tuple[int, int]] = []
    found: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        m = _GATE.match(stripped)
        if m:
            gates.append((int(m.group(1)), int(m.group(2))))
        elif stripped.startswith(("#if", "#ifdef", "#ifndef")):
            gates.append((0, 0))
        elif stripped.startswith("#endif"):
            gates.pop()
        m = _SPECIALIZATION.match(stripped)
        if m:
            gate = max(gates, default=(0, 0))
            found[m.group(1)] = min(found.get(m.group(1), gate), gate)
    return found


def carried_for(text: str, release: str) -> frozenset[str]:
    number = torch_facts.release_number(release)
    return frozenset(name for name, gate in conversions_by_gate(text).items() if gate <= number)


INSTALLED = installed_torch_dirs()


@pytest.mark.parametrize("wheel", sorted(INSTALLED))
def test_table_matches_the_wheels_header(wheel):
    text = (INSTALLED[wheel] / HEADER).read_text()
    targets = [
        r
        for r in CONVERSIONS_BY_RELEASE
        if torch_facts.release_number(r) <= torch_facts.release_number(wheel)
    ]
    assert targets, f"torch {wheel}: no entry of CONVERSIONS_BY_RELEASE at or below it"
    for target in targets:
        expected = carried_for(text, target)
        table = CONVERSIONS_BY_RELEASE[target]
        assert table == expected, (
            f"torch {wheel}'s {HEADER} for target {target}: the table lacks "
            f"{sorted(expected - table)} and has {sorted(table - expected)} too many"
        )


def test_both_wheels_are_checked():
    # The 2.13 wheel is the dev venv's; 2.11 is the release venv's (skipped without it).
    assert "2.13" in INSTALLED
    if "2.11" not in INSTALLED:
        pytest.skip(f"no torch 2.11 venv under {VENVS_DIR} (./dev setup-torches installs it)")


def test_the_newest_wheel_gates_nothing_beyond_the_table():
    newest = max(INSTALLED, key=torch_facts.release_number)
    gates = conversions_by_gate((INSTALLED[newest] / HEADER).read_text()).values()
    assert max(gates) <= torch_facts.release_number(NEWEST_KNOWN)


def test_gate_parsing_on_a_small_header():
    text = (
        "struct FromImpl<A> {\n"
        "#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0\n"
        "struct FromImpl<B> {\n"
        "#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__\n"
        "#endif\n"
        "#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_13_0\n"
        "struct ToImpl<C<T>> {\n"
        "#endif\n"
        "#endif\n"
        "struct ToImpl<D> {\n"
    )
    assert conversions_by_gate(text) == {"A": (0, 0), "B": (2, 10), "C<T>": (2, 13), "D": (0, 0)}
    assert carried_for(text, "2.11") == {"A", "B", "D"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("2.10", "must be torch 2.11 or newer, got 2.10"),
        ("1.13", "must be torch 2.11 or newer"),
        ("2.x", "not a torch release"),
        ("2.011", "not a torch release"),
        ("2.11.0", "not a torch release"),
        # Digits int() refuses (`²`) or reads (`١`, Arabic-Indic one): str.isdigit() takes both.
        ("\u00b2.11", "not a torch release"),
        ("2.1\u0661", "not a torch release"),
    ],
)
def test_bad_targets(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_target(text)


def test_targets():
    t = parse_target("2.11")
    assert (t.known, t.version_macro, t.warning) == ("2.11", "0x020B000000000000", None)
    assert parse_target("2.15").version_macro == "0x020F000000000000"
    # The release after the newest supported one: known only from the newest one's conversions.
    major, minor = torch_facts.release_number(torch_facts.NEWEST_RELEASE)
    newer = parse_target(f"{major}.{minor + 1}")
    assert newer.known == NEWEST_KNOWN == torch_facts.NEWEST_RELEASE
    assert newer.version_macro == f"0x{major:02X}{minor + 1:02X}000000000000"
    assert newer.warning is not None and f"{major}.{minor + 1}" in newer.warning
    assert t.first_release_carrying(frozenset({"torch::stable::Generator"})) == "2.13"
    assert t.first_release_carrying(frozenset({"c10::Scalar"})) is None
