"""The backend YAML of an out-of-tree backend (gen_backend_stubs' input format).

This is the first layer for external backends: it reads the file and checks
everything that can be checked without the operator model (types, allowed
keys, dispatch key names, duplicates). Operator names are resolved against the
model in ``backend_model``. Every error points at the offending key or list
item, so a user can jump straight to it.

Keys: backend, cpp_namespace (required); class_name, supported, autograd,
structured, symint, use_out_as_primary, device_guard, extra_headers; and LTC's
full_codegen, ir_gen and non_native. Those three are read only for the lazy
codegen (``lazy=True``, see ``atengen.lazy``); elsewhere they must be empty,
since silently dropping the ops listed there would leave a backend without
kernels it asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from atengen.errors import AtengenError, Location, SchemaError
from atengen.facts import torch_facts
from atengen.model import dispatch_keys as dk
from atengen.model.native_function import describe_value
from atengen.model.schema import parse_operator_name
from atengen.yaml.loader import YamlList, YamlMap, load_yaml

# In the order of torchgen's own list, which its "unexpected keys" message prints.
BACKEND_YAML_KEYS = (
    "backend",
    "class_name",
    "cpp_namespace",
    "extra_headers",
    "supported",
    "autograd",
    "full_codegen",
    "non_native",
    "ir_gen",
    "symint",
    "use_out_as_primary",
    "device_guard",
    # ours: out= ops of structured groups the backend implements by impl() alone, reusing
    # torch's meta(); their functional, in-place and out= kernels are generated
    "structured",
)
# LTC IR generation: rejected when non-empty unless the lazy codegen reads the file.
# The keys of a lazy-tensor backend: its IR nodes (and kernels) are generated.
LAZY_TENSOR_KEYS = ("full_codegen", "ir_gen", "non_native")
_CPP_NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_HEADER_PATH = rf"{_PATH_PART.pattern}(?:/{_PATH_PART.pattern})*"
# An include path as written: `my/backend.h`, `"my/backend.h"` or `<my/backend.h>`.
_EXTRA_HEADER = re.compile(rf'<{_HEADER_PATH}>|"{_HEADER_PATH}"|(?P<bare>{_HEADER_PATH})')
# Alias keys and per-functionality keys cannot hold a backend's kernels.
_NOT_BACKEND_KEYS = frozenset(
    {
        "Autograd",
        "Functionalize",
        "BackendSelect",
        "Python",
        "Undefined",
        *torch_facts.COMPOSITE_KEYS,
    }
    | {"CompositeImplicitAutogradNestedTensor"}
)


@dataclass(frozen=True)
class OpEntry:
    """One operator name in a list of the backend YAML."""

    name: str  # as written: `add.Tensor`, `abs`
    loc: Location


@dataclass(frozen=True)
class BackendYaml:
    path: str
    loc: Location  # the top-level mapping
    backend: str
    cpp_namespace: str
    class_name: str  # `<backend>NativeFunctions` unless given
    supported: tuple[OpEntry, ...]
    autograd: tuple[OpEntry, ...]
    structured: tuple[OpEntry, ...]
    symint: tuple[OpEntry, ...]
    use_out_as_primary: bool
    device_guard: bool
    extra_headers: tuple[str, ...]  # `<a/b.h>` or `"a/b.h"`, ready for #include
    # Lazy-tensor keys (only with lazy=True): IR node + generated kernel; IR node only;
    # the raw non_native list, which atengen.lazy checks item by item.
    full_codegen: tuple[OpEntry, ...] = ()
    ir_gen: tuple[OpEntry, ...] = ()
    non_native: YamlList | None = None
    backend_loc: Location | None = None  # the `backend:` key
    warnings: tuple[str, ...] = ()  # `file:line: warning: ...` lines for stderr

    @property
    def autograd_key(self) -> str:
        return f"Autograd{self.backend}"

    @property
    def keys(self) -> tuple[str, ...]:
        """The dispatch keys this backend registers kernels for."""
        return (self.backend,) + ((self.autograd_key,) if self.autograd else ())


def load_backend_yaml(path: str, *, lazy: bool = False) -> BackendYaml:
    try:
        doc = load_yaml(path)
    except AtengenError as e:
        raise _tab_error(path, e) or e from None
    return parse_backend_yaml(doc, path, lazy=lazy)


def _tab_error(path: str, e: AtengenError) -> AtengenError | None:
    """PyYAML reports a tab in indentation as some token it cannot start; say what it is."""
    if e.location is None or not e.message.startswith("invalid YAML"):
        return None
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[: e.location.line]
    for i, line in enumerate(lines):
        if b"\t" in line[: len(line) - len(line.lstrip())]:
            return AtengenError(
                Location(path, i + 1), "invalid YAML: tab character; indentation must use spaces"
            )
    return None


def parse_backend_yaml(doc: object, path: str, *, lazy: bool = False) -> BackendYaml:
    if not isinstance(doc, YamlMap):
        line = doc.line if isinstance(doc, YamlList) else 1
        raise AtengenError(
            Location(path, line),
            f"a backend YAML must be a mapping with keys {', '.join(BACKEND_YAML_KEYS)}; "
            f"got {describe_value(doc)}",
        )
    unexpected = [k for k in doc if k not in BACKEND_YAML_KEYS]
    if unexpected:
        raise AtengenError(
            doc.key_location(unexpected[0]),
            f"{path} contains unexpected keys: {', '.join(unexpected)}. "
            f"Only the following keys are supported: {', '.join(BACKEND_YAML_KEYS)}",
        )
    for key in () if lazy else LAZY_TENSOR_KEYS:
        if doc.get(key):
            raise AtengenError(
                doc.key_location(key),
                f"'{key}' makes this a lazy-tensor backend: generate it with `atengen lazy`, or "
                "`atengen backend --allow_lazy` (what external_backend_codegen() runs); or list "
                "these ops under 'supported' with hand-written kernels",
            )
    backend = _required_string(doc, "backend")
    if not _IDENT.fullmatch(backend):
        # It names files (<backend>NativeFunctions.h) and C++ classes.
        raise AtengenError(
            doc.key_location("backend"),
            f'"backend" must be a dispatch key name like PrivateUse1 or XLA (letters, digits '
            f"and _), got '{backend}'",
        )
    cpp_namespace = _required_string(doc, "cpp_namespace")
    if not _CPP_NAMESPACE.fullmatch(cpp_namespace):
        raise AtengenError(
            doc.key_location("cpp_namespace"),
            f"cpp_namespace must be a C++ namespace like 'my_backend' or 'a::b', got "
            f"'{cpp_namespace}'",
        )
    class_name = doc.get("class_name", f"{backend}NativeFunctions")
    if not isinstance(class_name, str) or not _IDENT.fullmatch(class_name):
        raise AtengenError(
            doc.key_location("class_name"),
            f"class_name must be a C++ identifier, got {describe_value(class_name)}",
        )
    warnings: list[str] = []
    supported = _without_repeats(_op_list(doc, "supported"), "supported", warnings)
    autograd = _without_repeats(_op_list(doc, "autograd"), "autograd", warnings)
    structured = _without_repeats(_op_list(doc, "structured"), "structured", warnings)
    symint = _without_repeats(_op_list(doc, "symint"), "symint", warnings)
    full_codegen = _op_list(doc, "full_codegen")
    ir_gen = _op_list(doc, "ir_gen")
    non_native = doc.get("non_native")
    if non_native is not None and not isinstance(non_native, YamlList):
        raise AtengenError(
            doc.key_location("non_native"),
            f'expected "non_native" to be a list of entries with a "func" schema, got '
            f"{describe_value(non_native)}",
        )
    # full_codegen ops get generated kernels, so they count as supported; an IR-only
    # (ir_gen) op may also be supported by a hand-written kernel, but not generated twice.
    _check_no_repeats(
        supported + autograd + structured + full_codegen,
        '"supported", "autograd", "structured" and "full_codegen"',
    )
    _check_no_repeats(full_codegen + ir_gen, '"full_codegen" and "ir_gen"')
    listed = {e.name for e in supported + autograd + full_codegen}
    for e in symint:
        if e.name not in listed:
            raise AtengenError(
                e.loc, f"'{e.name}' is listed under \"symint\" but not under \"supported\" or "
                "\"autograd\"",
            )  # fmt: skip
    if supported or autograd or structured or full_codegen:
        _check_backend_key(doc, backend, bool(autograd))
    return BackendYaml(
        path=path,
        loc=doc.location,
        backend=backend,
        cpp_namespace=cpp_namespace,
        class_name=class_name,
        supported=supported,
        autograd=autograd,
        structured=structured,
        symint=symint,
        use_out_as_primary=_boolean(doc, "use_out_as_primary"),
        device_guard=_boolean(doc, "device_guard"),
        extra_headers=_extra_headers(doc),
        full_codegen=full_codegen,
        ir_gen=ir_gen,
        non_native=non_native,
        backend_loc=doc.key_location("backend"),
        warnings=tuple(warnings),
    )


def _required_string(doc: YamlMap, key: str) -> str:
    value = doc.get(key)
    if value is None:
        raise AtengenError(doc.location, f'You must provide a value for "{key}"')
    if not isinstance(value, str):
        raise AtengenError(
            doc.key_location(key), f'"{key}" must be a string, got {describe_value(value)}'
        )
    return value


def _boolean(doc: YamlMap, key: str) -> bool:
    value = doc.get(key, False)
    if not isinstance(value, bool):
        raise AtengenError(
            doc.key_location(key),
            f"You must provide either True or False for {key}. Provided: {value}",
        )
    return value


def _op_list(doc: YamlMap, key: str) -> tuple[OpEntry, ...]:
    value = doc.get(key)
    if value is None:  # absent, or `supported:` with nothing after it
        return ()
    if not isinstance(value, YamlList):
        raise AtengenError(
            doc.key_location(key),
            f'expected "{key}" to be a list, but got: {value} (of type {type(value)})'
            if not isinstance(value, dict)
            else f'expected "{key}" to be a list, but got a mapping',
        )
    entries = []
    for i, item in enumerate(value):
        loc = value.item_location(i)
        if isinstance(item, dict) and (name := _per_operator_options_name(item)) is not None:
            raise AtengenError(loc, _per_operator_options_refusal(key, name))
        if not isinstance(item, str):
            raise AtengenError(
                loc, f'item {i + 1} of "{key}" must be an operator name, got {describe_value(item)}'
            )
        try:
            parse_operator_name(item)
        except SchemaError as e:  # the name itself is malformed
            raise AtengenError(loc, f"Found an invalid operator name: {item} ({e})") from None
        entries.append(OpEntry(item, loc))
    return tuple(entries)


def _per_operator_options_name(item: dict[object, object]) -> str | None:
    """The operator of a per-operator options item, as torch's main branch writes them (its
    OpenReg example: `- maximum.out:` then `structured: true`, which YAML reads as one mapping
    of both); None for another mapping."""
    for k, v in item.items():
        if isinstance(k, str) and (v is None or isinstance(v, dict)):
            return k
    return None


def _per_operator_options_refusal(key: str, name: str) -> str:
    """No release reads per-operator options; rules_aten reads what the releases read."""
    return (
        f'per-operator options under "{key}" (`- {name}:` then `structured: true`, as torch\'s '
        f"main branch writes them) are read by no torch release up to "
        f"{torch_facts.NEWEST_RELEASE}, whose gen_backend_stubs takes operator names only; "
        f'write `- {name}`, and for a structured kernel list `{name}` under "structured:" too'
    )


def _without_repeats(
    entries: tuple[OpEntry, ...], key: str, warnings: list[str]
) -> tuple[OpEntry, ...]:
    """An op listed twice in one list means the same as once (torchgen accepts it, and
    vendor YAMLs do it): a warning, and the repeat is dropped."""
    first: dict[str, OpEntry] = {}
    for e in entries:
        if e.name in first:
            warnings.append(
                f"{e.loc}: warning: operator '{e.name}' is listed twice under \"{key}\" "
                f"(first on line {first[e.name].loc.line}); the repeat is ignored"
            )
        else:
            first[e.name] = e
    return tuple(first.values())


def check_include_prefix(prefix: str) -> None:
    """--include_prefix becomes part of an output path and of #include lines."""
    parts = [p for p in prefix.split("/") if p]
    if prefix.startswith("/") or any(
        p in (".", "..") or not _PATH_PART.fullmatch(p) for p in parts
    ):
        raise AtengenError(
            None,
            f"--include_prefix must be a relative path of plain names like 'my/backend', "
            f"got '{prefix}'",
        )


def _check_no_repeats(entries: tuple[OpEntry, ...], lists: str) -> None:
    """An op in two of ``lists`` (repeats within one list were dropped with a warning)."""
    first: dict[str, OpEntry] = {}
    for e in entries:
        if e.name in first:
            raise AtengenError(
                e.loc,
                f"operator '{e.name}' is listed twice (first on line {first[e.name].loc.line}): "
                f"an operator goes under only one of {lists}",
            )
        first[e.name] = e


def _check_backend_key(doc: YamlMap, backend: str, has_autograd: bool) -> None:
    loc = doc.key_location("backend")
    if not dk.is_known_dispatch_key(backend):
        raise AtengenError(
            loc,
            f'unknown dispatch key {backend}: the provided value for "backend" must be a valid '
            f"DispatchKey{dk.closest_key(backend)}",
        )
    if backend in _NOT_BACKEND_KEYS or dk.is_autograd_key(backend):
        raise AtengenError(
            loc, f'"backend" must be a backend dispatch key (XLA, PrivateUse1, ...), not {backend}'
        )
    if has_autograd and not dk.is_known_dispatch_key(f"Autograd{backend}"):
        raise AtengenError(
            doc.key_location("autograd"),
            f'The "autograd" key was specified, which indicates that you would like to override '
            f"the behavior of autograd for some operators on your backend. However "
            f'"Autograd{backend}" is not a valid DispatchKey.',
        )


def _extra_headers(doc: YamlMap) -> tuple[str, ...]:
    value = doc.get("extra_headers")
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(h, str) for h in items):
        raise AtengenError(
            doc.key_location("extra_headers"),
            f'"extra_headers" must be a list of header paths, got {describe_value(value)}',
        )
    headers = []
    for h in items:
        # Generated sources are compiled in sandboxes and on other machines: an
        # absolute or ../ path would bake this checkout's layout into them. And the path is
        # pasted into an #include line: nothing but a path may follow it there.
        m = _EXTRA_HEADER.fullmatch(h.strip())
        if m is None:
            raise AtengenError(
                doc.key_location("extra_headers"),
                f"extra header {h!r} must be a workspace-relative path like 'my/backend.h' "
                "(or <my/backend.h>)",
            )
        headers.append(h.strip() if m.group("bare") is None else f'"{m.group("bare")}"')
    return tuple(headers)
