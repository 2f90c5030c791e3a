"""What the stable ABI of each torch release carries, and the ``--target`` release.

A stable-ABI library passes every argument and result through a ``StableIValue`` (a 64-bit
word): ``torch::stable::detail::from``/``to`` in ``torch/csrc/stable/stableivalue_conversions.h``
convert each C++ type, and libtorch turns the word into an IValue by the schema's type. A type
is carried when the header specializes a conversion for it (``FromImpl<T>``/``ToImpl<T>``) under
a gate the target release passes (``#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_x_0``);
trivially copyable scalars (``int64_t``, ``double``, ``bool``) take the catch-all conversion of
every release. CONVERSIONS_BY_RELEASE keeps those specializations, by the names the header gives
them, per target release (each release's `stable_conversions` in atengen/facts/torch_facts.py);
tests/unit/stable/test_stable_releases.py reads the header of every installed wheel and checks the table
against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from atengen.facts import torch_facts

# Below 2.11 the shim lacks what the generated sources call (torch_call_dispatcher with a
# version, torch_library_impl), and rules_aten supports no older torch anyway.
OLDEST_TARGET = "2.11"

# The conversions a library built for each target release may use (the names of the
# specializations in stableivalue_conversions.h): kept in each release's block of
# atengen/facts/torch_facts.py, with its other facts (tests/unit/stable/test_stable_releases.py names what differs).
CONVERSIONS_BY_RELEASE = torch_facts.STABLE_CONVERSIONS_BY_RELEASE
NEWEST_KNOWN = max(CONVERSIONS_BY_RELEASE, key=torch_facts.valid_release_number)


@dataclass(frozen=True)
class StableTarget:
    """The release a stable-ABI library is built for: it loads into that release and later."""

    release: str  # as asked: "2.11"
    known: str  # the release whose conversions apply (NEWEST_KNOWN for a newer target)

    @property
    def number(self) -> tuple[int, int]:
        return torch_facts.valid_release_number(self.release)  # parse_target checked it

    @property
    def version_macro(self) -> str:
        """The value of -DTORCH_TARGET_VERSION for this target: 0x020B000000000000 for 2.11."""
        major, minor = self.number
        return f"0x{major:02X}{minor:02X}000000000000"

    @property
    def conversions(self) -> frozenset[str]:
        return CONVERSIONS_BY_RELEASE[self.known]

    @property
    def warning(self) -> str | None:
        if self.known == self.release:
            return None
        return (
            f"warning: stable ABI target {self.release} is newer than the releases whose "
            f"conversions rules_aten knows (up to {NEWEST_KNOWN}): generating with those of "
            f"{NEWEST_KNOWN} (tool/atengen/stable/releases.py)"
        )

    def first_release_carrying(self, conversions: frozenset[str]) -> str | None:
        """The oldest known release after this target whose conversions include all of
        ``conversions``; None when no known release has them."""
        later = sorted(
            (
                r
                for r in CONVERSIONS_BY_RELEASE
                if torch_facts.valid_release_number(r) > self.number
            ),
            key=torch_facts.valid_release_number,
        )
        return next((r for r in later if conversions <= CONVERSIONS_BY_RELEASE[r]), None)


def parse_target(text: str) -> StableTarget:
    """``--target``: a major.minor release, 2.11 or newer. ValueError with one line otherwise."""
    number = torch_facts.release_number(text)
    if number is None or text != f"{number[0]}.{number[1]}":
        raise ValueError(f"not a torch release such as {OLDEST_TARGET}: {text!r}")
    if number < torch_facts.valid_release_number(OLDEST_TARGET):
        raise ValueError(
            f"the stable ABI target must be torch {OLDEST_TARGET} or newer, got {text}"
        )
    if number > torch_facts.valid_release_number(NEWEST_KNOWN):
        return StableTarget(text, NEWEST_KNOWN)
    return StableTarget(text, text)
