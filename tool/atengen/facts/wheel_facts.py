"""What the @torch repository read from the installed wheel: @torch//:torch_facts.json, written
by tool/torch_probe.py (the release, its CUDA version and arch list, its dispatch keys, the
at::native kernels libtorch_cpu and libtorch_cuda export, the structured meta classes and the
FunctionsManual.h helpers libtorch_cpu exports, and the helpers that header declares), which
`atengen generate|backend|autograd --torch_facts` read into a WheelFacts. A run of `atengen
autograd` without it reads the installed torch's helpers directly (atengen.facts.wheel_symbols).

The facts kept by hand per release are atengen/facts/torch_facts.py's; what a WheelFacts does not tell
(a run without --torch_facts) comes from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from atengen.cached import TYPE_CHECKING
from atengen.facts.torch_facts import (
    C10_TAGS,
    C10_TAGS_BY_RELEASE,
    SET_OUTPUT_NAMES_RELEASES,
    TORCH_RELEASE,
    WHEEL_STRUCTURED_META_CLASSES,
    facts_release,
)

if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")
    D = TypeVar("D")

# --- Autograd formula helpers -----------------------------------------------------------------


@dataclass(frozen=True)
class AutogradHelpers:
    """The helpers of torch/csrc/autograd/FunctionsManual.h (namespace
    torch::autograd::generated::details) a generated formula may name, as one wheel has them.
    Read from the wheel (its libtorch_cpu's exports and the header, atengen.facts.wheel_symbols): by
    the @torch repository into torch_facts.json, or by a run without it from the installed torch."""

    # What a formula may call (through a using-declaration): what libtorch_cpu exports, and what
    # the header defines inline (`wrap_opt_if`).
    callable_names: frozenset[str]
    # What the header declares (functions, and the one variable, kCudnnDoubleBackwardMsg) but
    # libtorch_cpu does not export: a formula using one would compile and then fail to link (or
    # to load), so the generator refuses it up front.
    unexported_names: frozenset[str]
    # The aten operators formulas may call unqualified (at::<name>, and the `_symint` forms): the
    # names of the wheel's native_functions.yaml; empty where not read (then any call passes).
    aten_operators: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        exported: frozenset[str],
        declared: frozenset[str],
        defined: frozenset[str],
        aten: frozenset[str] = frozenset(),
    ) -> AutogradHelpers:
        """From the names libtorch_cpu exports in that namespace, those the header declares
        and defines, and the aten operator names of the wheel's native_functions.yaml."""
        usable = (exported | defined) & declared
        operators = frozenset(n for name in aten for n in (name, name + "_symint"))
        return cls(frozenset(usable), frozenset(declared - usable), operators)

    @property
    def declared(self) -> frozenset[str]:
        return self.callable_names | self.unexported_names


# --- What the @torch repository read from the wheel -------------------------------------------

# The libraries whose exports decide whether a registration of a key can call its kernel: a
# CUDA key's kernel may live in libtorch_cpu (shared implementations) or libtorch_cuda.
_KERNEL_LIBRARIES = MappingProxyType(
    {False: ("libtorch_cpu",), True: ("libtorch_cpu", "libtorch_cuda")}
)


@dataclass(frozen=True)
class WheelFacts:
    """@torch//:torch_facts.json (tool/torch_probe.py): facts read from the installed wheel."""

    version: str  # "2.14.1+cu130"
    release: str  # "2.14"
    cuda: str  # "13.0", or "" for a CPU wheel
    arch_list: tuple[str, ...]
    # library name -> the at::native functions it exports; None: unknown (no `nm` at setup)
    native_kernels: dict[str, frozenset[str]] | None
    # the at::meta::structured_<name> classes libtorch_cpu exports; None: unknown
    structured_meta_classes: frozenset[str] | None = None
    # the FunctionsManual.h helpers formulas may call and may not; None: unknown
    autograd_helpers: AutogradHelpers | None = None
    # the release whose facts are used: `release`, or the newest known one for a newer release
    facts_release: str = TORCH_RELEASE
    # the one-line warning to print about that, or None
    warning: str | None = None

    def reusable_meta_classes(self) -> frozenset[str]:
        """The structured meta classes an external backend may reuse: the wheel's, or, where
        they were not read, the list kept for the supported releases."""
        if self.structured_meta_classes is None:
            return WHEEL_STRUCTURED_META_CLASSES
        return self.structured_meta_classes

    def unexported_kernel(self, kernel: str, cuda_key: bool) -> str | None:
        """Why a registration calling at::native::<kernel> would not load, or None."""
        if self.native_kernels is None:
            return None
        if cuda_key and "libtorch_cuda" not in self.native_kernels:
            return None  # a CPU wheel: CUDA registrations are compiled, never loaded
        libraries = [lib for lib in _KERNEL_LIBRARIES[cuda_key] if lib in self.native_kernels]
        if not libraries or any(kernel in self.native_kernels[lib] for lib in libraries):
            return None
        return f"torch {self.version} exports no at::native::{kernel} ({', '.join(libraries)})"


def parse_wheel_facts(text: str) -> WheelFacts:
    """WheelFacts from the JSON text; ValueError with one line when it is malformed or not for a
    supported release."""
    import json  # here: only a run given --torch_facts reads JSON (json costs ~3 ms to import)

    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("torch facts: JSON nested too deeply") from None
    except ValueError as e:
        raise ValueError(f"torch facts: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"torch facts: expected a JSON object, got {type(data).__name__}")
    release = _fact(data, "release", str, "unknown")
    version = _fact(data, "version", str, release)
    used, warning = facts_release(release, version)
    # The @torch repository names the release it warned about once (facts_release), so that
    # each action reading its facts does not warn again.
    if warning and _fact(data, "facts_release", str, "") == used:
        warning = None
    # A JSON object's keys are strings.
    kernel_lists: dict[str, object] | None = _fact(data, "native_kernels", dict, None)
    kernels: dict[str, frozenset[str]] | None = None
    if kernel_lists is not None:
        kernels = {
            lib: frozenset(_strings(names, f"native_kernels.{lib}"))
            for lib, names in kernel_lists.items()
        }
    meta: list[object] | None = _fact(data, "structured_meta_classes", list, None)
    helpers: dict[str, list[object] | None] = {
        key: _fact(data, key, list, None) for key in AUTOGRAD_HELPER_FACTS
    }
    if any(v is not None for v in helpers.values()) and None in helpers.values():
        missing = sorted(key for key, v in helpers.items() if v is None)
        raise ValueError(
            f"torch facts: '{missing[0]}' missing beside the other autograd_helpers_ fields"
        )
    return WheelFacts(
        version=version,
        release=release,
        facts_release=used,
        warning=warning,
        cuda=_fact(data, "cuda", str, ""),
        arch_list=tuple(_strings(_fact(data, "arch_list", list, []), "arch_list")),
        native_kernels=kernels,
        structured_meta_classes=None
        if meta is None
        else frozenset(_strings(meta, "structured_meta_classes")),
        autograd_helpers=None
        if helpers["autograd_helpers_exported"] is None
        else AutogradHelpers.of(
            *_helper_names(helpers),
            aten=frozenset(_strings(_fact(data, "aten_operators", list, []), "aten_operators")),
        ),
    )


# --- The torch the facts are of ---------------------------------------------------------------

# A field of torch/version.py, which every install of torch writes: `__version__ = '2.14.1+cu130'`,
# `cuda: Optional[str] = '13.0'` (the type annotation of newer releases allowed).
_VERSION_PY_FIELD = re.compile(
    r"^(__version__|cuda)\s*(?::\s*\S+\s*)?=\s*['\"]([^'\"]*)['\"]", re.MULTILINE
)


def version_py_fields(text: str) -> dict[str, str]:
    """`__version__` and `cuda` of a torch/version.py's text, those it assigns a string."""
    return dict(_VERSION_PY_FIELD.findall(text))


def stale_facts(wheel: WheelFacts, version_py: str) -> str | None:
    """Why `wheel` (@torch's facts) is not of the torch whose version.py has the text
    `version_py`, or None.

    @torch//:version.py links to the version.py of the torch @torch was set up from, so a build
    sees the torch now at that path: a torch reinstalled there, or a venv link pointed at another,
    after @torch was set up (where Bazel does not set it up again by itself, as for an
    interpreter outside the workspace). Its headers and libraries are then the new torch's,
    its facts still the old one's."""
    found = version_py_fields(version_py).get("__version__")
    if found is None or found == wheel.version:
        return None
    return (
        f"rules_aten: @torch describes torch {wheel.version}, but this torch/version.py now "
        f"names torch {found}: torch changed after @torch was set up; run "
        "`bazel sync --configure` to set it up again"
    )


# The fields of torch_facts.json that tell the autograd helpers, in AutogradHelpers.of's order:
# the names libtorch_cpu exports in torch::autograd::generated::details, and those
# FunctionsManual.h declares and defines there (tool/torch_probe.py).
AUTOGRAD_HELPER_FACTS = (
    "autograd_helpers_exported",
    "autograd_helpers_declared",
    "autograd_helpers_defined",
)


def _helper_names(
    helpers: dict[str, list[object] | None],
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The exported, declared and defined helpers of the facts' AUTOGRAD_HELPER_FACTS fields."""
    exported, declared, defined = (
        frozenset(_strings(helpers[key], key)) for key in AUTOGRAD_HELPER_FACTS
    )
    return exported, declared, defined


_JSON_TYPE_NAMES: Mapping[type, str] = MappingProxyType(
    {str: "a string", list: "a list", dict: "an object"}
)


def _fact(data: Mapping[str, object], key: str, kind: type[T], default: D) -> T | D:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise ValueError(f"torch facts: '{key}' must be {_JSON_TYPE_NAMES[kind]}")
    return value


def _strings(values: object, key: str) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"torch facts: '{key}' must be a list of strings")
    return values


# --- The kept facts of the wheel's release --------------------------------------------------


def c10_tags(wheel: WheelFacts | None) -> frozenset[str]:
    """The at::Tag values of the wheel's release (None: of every supported release)."""
    return C10_TAGS if wheel is None else C10_TAGS_BY_RELEASE[wheel.facts_release]


def set_output_takes_names(wheel: WheelFacts | None) -> bool:
    """Whether the wheel's structured set_output methods take `DimnameList names` (without
    facts: the default release's, which do not)."""
    return wheel is not None and wheel.facts_release in SET_OUTPUT_NAMES_RELEASES
