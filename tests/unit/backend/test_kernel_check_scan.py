"""The missing-kernel check's scan of `--impl_path` sources (atengen/backend/kernel_check.py).

It finds what the quadratic scan it replaced found, on the repository's kernel sources and on
fixed-seed token soup (the reference below is that scan, kept for comparison), and takes time
linear in the size of its input, adversarial inputs included: a long kernel source, thousands of
unclosed definitions and comments, and deep qualification and nesting.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from atengen.backend import kernel_check
from tests.support.model_helpers import REPO, run_cli

# --- the reference: the scan as it was (quadratic: it looked back over the whole prefix) ----------

_REFERENCE_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_REFERENCE_NOT_TYPES = frozenset({"return", "co_return", "throw", "case", "else", "do"})


def _reference_definitions(class_name: str, text: str) -> Counter[str]:
    pattern = re.compile(rf"(?<![\w:])(?:\w+\s*::\s*)*{re.escape(class_name)}\s*::\s*(\w+)\s*\(")
    code = _REFERENCE_COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    names: Counter[str] = Counter()
    for m in pattern.finditer(code):
        before = code[: m.start()].rstrip()
        word = re.search(r"(\w+)$", before)
        if (before.endswith(("&", "*", ">")) or word) and not (
            word and word.group(1) in _REFERENCE_NOT_TYPES
        ):
            names[m.group(1)] += 1
    return names


def _definitions(class_name: str, text: str) -> Counter[str]:
    found = kernel_check._definitions(kernel_check._without_comments(text))
    return Counter({name: n for (c, name), n in found.items() if c == class_name})


CLASSES = ("PrivateUse1NativeFunctions", "XLANativeFunctions", "native", "at", "X", "impl")


def _sources() -> list[Path]:
    root = Path(REPO)
    found = [*root.glob("tests/data/*/*.cpp"), *root.glob("examples/*/*.cpp")]
    found += [*root.glob("examples/*/*.h"), *root.glob("rules/runtime/atengen/*.h")]
    assert len(found) >= 8
    return sorted(found)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_same_definitions_as_the_reference_on_real_sources(path):
    text = path.read_text()
    for class_name in CLASSES:
        assert _definitions(class_name, text) == _reference_definitions(class_name, text)


_TOKENS = (
    "X", "::", " :: ", " ", "\n", "(", ")", "f", "return", "&", "*", ">", "/*", "*/", "//", "ns",
    ",", "=", ";", "{", "}", "\t", "é", "x_1", ":", "do", "Tensor", "impl", "/", "\r\n", "\u00a0",
    "٣", "co_return", "else", "case",
)  # fmt: skip


def test_the_same_definitions_as_the_reference_on_token_soup():
    rng = random.Random(20261125)
    for _ in range(4000):
        text = "".join(rng.choice(_TOKENS) for _ in range(rng.randint(0, 40)))
        for class_name in ("X", "ns", "f"):
            assert _definitions(class_name, text) == _reference_definitions(class_name, text), text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("at::Tensor X::f(int a) {}", {"f": 1}),
        ("Tensor& ns::X::f (int a) {}", {"f": 1}),
        ("std::vector<Tensor> X :: f(int a);", {"f": 1}),
        ("return X::f(a);", {}),
        ("auto t = X::f(a);", {}),
        ("Tensor ::X::f(a)", {}),  # as before: a leading `::` names nothing
        ("/* Tensor X::f( */ Tensor X::g(", {"g": 1}),
        ("/* unclosed Tensor X::f(", {"f": 1}),  # an unclosed `/*` starts no comment
        ("/* a */ /* unclosed // Tensor X::f(\nTensor X::g(", {"g": 1}),
        ("Tensor X::f( /* x */ Tensor X::f(", {"f": 2}),
    ],
)
def test_what_counts_as_a_definition(text, expected):
    assert _definitions("X", text) == expected == _reference_definitions("X", text)


# --- time -------------------------------------------------------------------------------------


def _realistic(n: int) -> str:
    """n kernels of a backend, with comments, calls and bodies: ~270 bytes each."""
    return "".join(
        f"// kernel {i}\nat::Tensor XLANativeFunctions::op_{i}(const at::Tensor & self, int d) {{\n"
        f"  /* checked */\n  auto r = at::native::op_{i}(self, d);\n"
        f"  r = XLANativeFunctions::helper_{i}(r);\n" + "  r = r + 1;\n" * 6 + "  return r;\n}\n\n"
        for i in range(n)
    )


def _adversarial(n: int) -> str:
    """Definitions without bodies, unclosed comments, deep qualification, nesting and runs of
    whitespace: what made the old scan quadratic, n times each."""
    return (
        "at::Tensor XLANativeFunctions::f(" * n
        + "Tensor " + "a :: " * n + "XLANativeFunctions::g(" + "((((<<<<{{{{" * n
        + "a" * n + " " * n + "XLANativeFunctions::h(" + "a::" * n + "(" * n
        + "/* a */ x" * n + "/* " * n + "// x\n" * n
    )  # fmt: skip


def _cpu_seconds(text: str) -> float:
    """The least CPU time of three scans (the least is the one least disturbed)."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        kernel_check._definitions(kernel_check._without_comments(text))
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("make, n", [(_realistic, 450), (_adversarial, 4000)])
def test_the_scan_is_linear(make, n):
    # The old scan took 10.7 s for 192 KB of realistic kernels, and 24 s for 70 KB of unclosed
    # definitions; this one takes well under a second for either at 8 times the size.
    small, large = make(n), make(8 * n)
    assert len(small) > 100_000
    t_large = _cpu_seconds(large)
    assert t_large < 2.0, f"{len(large)} bytes took {t_large:.2f} s of CPU"
    t_small = max(_cpu_seconds(small), 0.005)
    # Quadratic would be 64 times; linear 8 times, with room for a noisy machine.
    assert t_large < 24 * t_small, (t_small, t_large)


def test_a_large_impl_path_is_checked_quickly(tmp_path):
    yaml_path = tmp_path / "backend.yaml"
    yaml_path.write_text(
        "backend: PrivateUse1\ncpp_namespace: my_backend\nsupported:\n- abs\n- neg\n"
    )
    impl = tmp_path / "kernels.cpp"
    noise = _realistic(2000).replace("XLANativeFunctions", "PrivateUse1NativeFunctions")
    impl.write_text(
        noise
        + "at::Tensor PrivateUse1NativeFunctions::abs(const at::Tensor& self) { return self; }\n"
        + _adversarial(20000).replace("XLANativeFunctions", "PrivateUse1NativeFunctions")
    )
    assert impl.stat().st_size > 1_000_000
    start = time.process_time()
    r = run_cli("backend", f"--backend_yaml={yaml_path}", f"--impl_path={impl}")
    assert time.process_time() - start < 10  # the op YAML's load included
    assert r.returncode == 1
    [line] = r.stderr.strip().splitlines()
    assert "missing a kernel definition for neg. We found 0 kernel(s)" in line
