"""One operator entry of an op YAML, validated into a frozen NativeFunction."""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from types import MappingProxyType

from atengen.cached import TYPE_CHECKING, cached_property, interned
from atengen.errors import AtengenError, Location, SchemaError
from atengen.facts import torch_facts as tf
from atengen.model import dispatch_keys as dk
from atengen.model.frozen import frozen_instance
from atengen.model.schema import (
    Argument,
    FunctionSchema,
    OperatorName,
    SchemaKind,
    parse_argument,
    parse_operator_name,
    parse_schema,
)
from atengen.model.schema_names import CPP_KEYWORDS
from atengen.model.torch_schema_text import read_torch_schema
from atengen.yaml.loader import YamlList, YamlMap

# Every key an entry may have; anything else is a typo and an error.
ENTRY_KEYS = (
    "func",
    "dispatch",
    "variants",
    "tags",
    "device_check",
    "device_guard",
    "python_module",
    "autogen",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "precomputed",
    "ufunc_inner_loop",
    "cpp_no_default_args",
    "manual_cpp_binding",
    "manual_kernel_registration",
    "category_override",
    "use_const_ref_for_mutable_tensors",
)
DEFAULT_NAMESPACE = "aten"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UFUNC_KEYS = frozenset(
    {"CUDAFunctor", "CUDAFunctorOnOther", "CUDAFunctorOnSelf", "CPUScalar", "CPUVector"}
    | {"ScalarOnly", "Generic"}
)


@dataclass(frozen=True, slots=True)
class BackendMetadata:
    """The kernel registered for one dispatch key."""

    kernel: str
    cpp_namespace: str  # e.g. "at::native"
    structured: bool


@dataclass(frozen=True, slots=True)
class Precompute:
    """`precomputed:` of a structured kernel: meta() computes these for impl()."""

    replace: tuple[tuple[str, tuple[Argument, ...]], ...]  # kernel arg -> new args
    add: tuple[Argument, ...]


@dataclass(frozen=True, slots=True)
class UfuncInnerLoop:
    """One ``ufunc_inner_loop:`` item: the loop's name and dtypes for one ufunc key."""

    key: str  # a UfuncKey such as Generic or ScalarOnly
    name: str
    dtypes: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class NativeFunction:
    """One operator of the op YAML (or one autogen made), checked and immutable."""

    namespace: str
    func: FunctionSchema
    loc: Location
    variants: frozenset[str]
    tags: frozenset[str]
    # dispatch key -> kernel, in YAML order; after autogen, generated variants
    # carry their composite kernels here too.
    dispatch: Mapping[str, BackendMetadata]
    structured: bool = False
    structured_delegate: OperatorName | None = None
    structured_inherits: str | None = None
    precomputed: Precompute | None = None
    ufunc_inner_loop: tuple[UfuncInnerLoop, ...] = ()
    autogen: tuple[OperatorName, ...] = ()
    device_guard: bool = True
    device_check: str = "ExactSame"
    python_module: str | None = None
    category_override: str | None = None
    cpp_no_default_args: frozenset[str] = frozenset()
    manual_cpp_binding: bool = False
    manual_kernel_registration: bool = False
    use_const_ref_for_mutable_tensors: bool = False
    # A custom namespace's schema as its author spelled it (whitespace runs made one space),
    # which the library registers; None: the canonical spelling, ``str(func)``.
    torch_schema: str | None = None

    @cached_property
    def registered_schema(self) -> str:
        """The schema the library defines, without the namespace."""
        return self.torch_schema if self.torch_schema is not None else self.func.text

    @cached_property
    def name(self) -> OperatorName:
        return self.func.name

    @cached_property
    def kind(self) -> SchemaKind:
        return self.func.kind

    @cached_property
    def generated(self) -> bool:
        return "generated" in self.tags

    @cached_property
    def part_of_structured_group(self) -> bool:
        return self.structured or self.structured_delegate is not None

    @cached_property
    def has_composite_implicit_autograd_kernel(self) -> bool:
        return "CompositeImplicitAutograd" in self.dispatch

    @cached_property  # asked several times per function by autogen and the view groups
    def is_view_op(self) -> bool:
        """Returns an alias of an input: a non-mutating aliased return, an
        inplace_view op, or an input whose alias set widens to a wildcard."""
        # (Loops, not any(): asked of every function, mostly of a few unannotated arguments,
        # where making the generator costs more than the test.)
        for r in self.func.returns:
            if r.annotation is not None and not r.annotation.is_write:
                return True
        # resize_ and resize_as_ are tagged inplace_view but functionalization
        # treats them as ordinary mutations (there is no out-of-place resize view).
        if "inplace_view" in self.tags and str(self.name) not in ("resize_", "resize_as_"):
            return True
        for a in self.func.arguments.flat_all:
            if a.annotation is not None and "*" in a.annotation.alias_set_after:
                return True
        return False


def root_name(f: NativeFunction) -> str:
    """The operator's root: `add` for add.Tensor, add_.Tensor and add.out; `and` for __and__.

    The unit of sharding, and of the wheel's per-operator headers ATen/ops/<root>_native.h.
    """
    return f.name.name.base


def parse_tags_yaml(doc: object, path: str) -> frozenset[str]:
    """tags.yaml: a list of `{tag: name, desc: text}`."""
    if not isinstance(doc, YamlList):
        line = doc.line if isinstance(doc, YamlMap) else 1
        raise AtengenError(Location(path, line), "tags YAML must be a list of '- tag: <name>'")
    tags: set[str] = set()
    for i, e in enumerate(doc):
        loc = doc.item_location(i)
        if not isinstance(e, YamlMap) or not isinstance(tag := e.get("tag"), str):
            raise AtengenError(loc, "each tags YAML item must be a mapping with a string 'tag'")
        extra = set(e) - {"tag", "desc"}
        if extra:
            raise AtengenError(loc, f"unknown key(s) in tag entry: {', '.join(sorted(extra))}")
        desc = e.get("desc")
        if not isinstance(desc, str) or not desc.strip():
            raise AtengenError(loc, f"tag '{tag}' needs a non-empty 'desc'")
        if tag in tags:
            raise AtengenError(loc, f"tag '{tag}' is defined twice")
        tags.add(tag)
    return frozenset(tags)


# The keys checked here only for their value's type: key -> (type, default when absent, what
# the value must be). dispatch, tags and ufunc_inner_loop take several forms; their parsers check.
_TYPED_KEYS: dict[str, tuple[type, object, str]] = {
    "func": (str, None, "a schema string"),
    "variants": (str, "function", "'function', 'method' or 'function, method'"),
    "structured": (bool, False, "True or False"),
    "structured_delegate": (str, None, "a string"),
    "structured_inherits": (str, None, "a string"),
    "device_guard": (bool, True, "True or False"),
    "device_check": (str, "ExactSame", "ExactSame or NoCheck"),
    "python_module": (str, None, "a string"),
    "use_const_ref_for_mutable_tensors": (bool, False, "True or False"),
    "category_override": (str, None, "a string"),
    "manual_cpp_binding": (bool, False, "True or False"),
    "manual_kernel_registration": (bool, False, "True or False"),
    "autogen": (str, "", "a comma-separated string of op names"),
    "cpp_no_default_args": (list, (), "a list of argument names"),
    "precomputed": (list, None, "a list of 'arg -> type name, ...' lines"),
}
_UNTYPED_KEYS = {"dispatch": None, "tags": None, "ufunc_inner_loop": None}
if TYPE_CHECKING:
    from typing import Literal, TypedDict

    class _EntryValues(TypedDict):
        """_EntryReader.values: each key as _TYPED_KEYS checks it (or its default)."""

        func: str | None
        variants: str
        structured: bool
        structured_delegate: str | None
        structured_inherits: str | None
        device_guard: bool
        device_check: str
        python_module: str | None
        use_const_ref_for_mutable_tensors: bool
        category_override: str | None
        manual_cpp_binding: bool
        manual_kernel_registration: bool
        autogen: str
        cpp_no_default_args: Sequence[object]
        precomputed: Sequence[object] | None
        dispatch: object
        tags: object
        ufunc_inner_loop: object


_DEFAULTS = {key: default for key, (_, default, _) in _TYPED_KEYS.items()} | _UNTYPED_KEYS
if _DEFAULTS.keys() != set(ENTRY_KEYS):
    raise AssertionError("_TYPED_KEYS and _UNTYPED_KEYS must cover ENTRY_KEYS")


class _EntryReader:
    """One entry's values, each key's type checked (``values``: every key of the format, absent
    ones at their defaults); every error points at the key's line.

    The entry is read in one pass over the keys it has: most entries have three or four of the
    format's eighteen."""

    def __init__(self, entry: YamlMap):
        self.entry = entry
        values = _DEFAULTS.copy()
        # Each value's type is checked below against _TYPED_KEYS, which _EntryValues spells
        # out for type checkers: they cannot follow a table.
        self.values: _EntryValues = values  # type: ignore[assignment]
        for key, value in entry.items():
            spec = _TYPED_KEYS.get(key)
            if spec is None:
                if key not in _UNTYPED_KEYS:
                    raise self.err(
                        key, f"unknown key '{key}' in entry; allowed keys: {', '.join(ENTRY_KEYS)}"
                    )
            elif value is not spec[1] and not isinstance(value, spec[0]):
                raise self.err(key, f"'{key}' must be {spec[2]}, got {describe_value(value)}")
            values[key] = value

    def err(self, key: str | None, message: str) -> AtengenError:
        loc = self.entry.key_location(key) if key else self.entry.location
        return AtengenError(loc, message)


def describe_value(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{value!r} ({type(value).__name__})"


def native_function_from_entry(
    entry: object, loc: Location, valid_tags: frozenset[str], suggest: bool = True
) -> NativeFunction:
    """``suggest``: whether its errors' did-you-mean hints are worth their search (only the
    first errors of a file are printed; see atengen.errors.shown)."""
    if not isinstance(entry, YamlMap):
        raise AtengenError(loc, f"each op YAML item must be a mapping, got {describe_value(entry)}")
    r = _EntryReader(entry)
    v = r.values
    raw_func = v["func"]
    if raw_func is None:
        raise r.err(None, "entry has no 'func:' schema")
    namespace, func, torch_schema = _parse_func(r, raw_func)

    variants = _parse_variants(r)
    structured = v["structured"]
    # (The parsers of keys most entries leave out run only where they are given.)
    delegate = None
    if v["structured_delegate"] is not None:
        delegate = _parse_op_name(r, "structured_delegate")
    inherits = v["structured_inherits"]
    if inherits is not None and "::" in inherits:
        raise r.err("structured_inherits", "structured_inherits cannot name a namespace")
    device_guard = v["device_guard"]
    device_check = v["device_check"]
    if device_check not in ("ExactSame", "NoCheck"):
        raise r.err(
            "device_check", f"illegal device_check '{device_check}'; use ExactSame or NoCheck"
        )
    python_module = v["python_module"]
    if python_module is not None and "method" in variants:
        raise r.err("python_module", "functions in a python_module cannot be methods")
    use_const_ref = v["use_const_ref_for_mutable_tensors"]
    if use_const_ref and func.arguments.out:
        raise r.err(
            "use_const_ref_for_mutable_tensors",
            "use_const_ref_for_mutable_tensors is not supported on out= ops",
        )
    tags = _parse_tags(r, namespace, func, valid_tags)
    if "view_copy" in tags and namespace != DEFAULT_NAMESPACE and v["dispatch"] is None:
        # Without a dispatch table the copy would be CompositeImplicitAutograd with a kernel
        # nobody writes: the library would build, then fail to load on the undefined symbol.
        name = str(func.name.name)
        raise r.err(
            "tags",
            f"'{name}' is tagged view_copy but has no dispatch table; give it `dispatch: "
            f"{{CompositeExplicitAutogradNonFunctional: {name}}}` and atengen generates its "
            "kernel from the view (or name the kernels you write)",
        )
    dispatch = _parse_dispatch(r, func, structured, delegate, suggest)
    ufunc_loops: tuple[UfuncInnerLoop, ...] = ()
    if v["ufunc_inner_loop"] is not None:
        ufunc_loops = _parse_ufunc_inner_loop(r, structured)
    if ufunc_loops:
        for key in tf.UFUNC_DISPATCH_KEYS:
            if key in dispatch:
                raise r.err(
                    "dispatch", f"ufunc ops must not list {key} in dispatch; it is generated"
                )
            dispatch[key] = BackendMetadata(f"ufunc_{func.name.name}_{key}", "at::native", True)

    nf = new_native_function(
        namespace=namespace,
        func=func,
        loc=loc,
        variants=variants,
        tags=tags,
        dispatch=MappingProxyType(dispatch),
        structured=structured,
        structured_delegate=delegate,
        structured_inherits=inherits,
        precomputed=(
            _parse_precomputed(r, func, structured) if v["precomputed"] is not None else None
        ),
        ufunc_inner_loop=ufunc_loops,
        autogen=_parse_autogen(r) if v["autogen"] else (),
        device_guard=device_guard,
        device_check=device_check,
        python_module=python_module,
        category_override=v["category_override"],
        cpp_no_default_args=(
            _parse_cpp_no_default_args(r, func) if v["cpp_no_default_args"] else _NO_NAMES
        ),
        manual_cpp_binding=v["manual_cpp_binding"],
        manual_kernel_registration=v["manual_kernel_registration"],
        use_const_ref_for_mutable_tensors=use_const_ref,
        torch_schema=torch_schema,
    )
    _check_function(r, nf)
    return nf


def new_native_function(
    *,
    func: FunctionSchema,
    tags: frozenset[str],
    dispatch: Mapping[str, BackendMetadata],
    **values: object,
) -> NativeFunction:
    """``NativeFunction(**values)``, filled in one step (frozen_instance); fields left out
    take their defaults."""
    values["func"] = func
    values["tags"] = tags
    values["dispatch"] = dispatch
    if not (_REQUIRED_FIELDS <= values.keys() <= _FIELD_DEFAULTS.keys()):
        raise TypeError(
            f"NativeFunction takes {sorted(_FIELD_DEFAULTS)}, with {sorted(_REQUIRED_FIELDS)} "
            f"required; got {sorted(values)}"
        )
    attributes = values if len(values) == len(_FIELD_DEFAULTS) else _FIELD_DEFAULTS | values
    # The cached properties that grouping asks of every function, filled now: a first access
    # through cached_property is a Python-level call (~15,000 of them for torch's YAML).
    attributes["name"] = func.name
    attributes["kind"] = func.kind
    attributes["generated"] = "generated" in tags
    attributes["has_composite_implicit_autograd_kernel"] = "CompositeImplicitAutograd" in dispatch
    # The keyword arguments' dict (this call's own) becomes the instance's: nothing is copied.
    return frozen_instance(NativeFunction, attributes)


_FIELD_DEFAULTS = {f.name: f.default for f in fields(NativeFunction)}
_REQUIRED_FIELDS = frozenset(name for name, d in _FIELD_DEFAULTS.items() if d is MISSING)


def _parse_func(r: _EntryReader, raw: str) -> tuple[str, FunctionSchema, str | None]:
    """The namespace, the schema, and for a custom namespace the text to register."""
    namespace = DEFAULT_NAMESPACE
    text = raw
    head = raw.split("(", 1)[0]
    if "::" in head:
        namespace, _, _ = head.partition("::")
        namespace = namespace.strip()
        text = raw[raw.index("::") + 2 :]
        if not _IDENT.fullmatch(namespace) or "::" in text.split("(", 1)[0]:
            raise r.err("func", f"illegal namespace in '{head}'; use one level, e.g. myops::foo")
        if namespace in CPP_KEYWORDS:
            raise r.err(
                "func",
                f"namespace '{namespace}' is a C++ keyword, and the library's C++ names it "
                "(TORCH_LIBRARY(ns, m)); choose another",
            )
    try:
        if namespace == DEFAULT_NAMESPACE:
            return namespace, parse_schema(text), None
        # Outside aten the YAML takes torch's own schema language (torch_schema_text).
        spelled = read_torch_schema(text)
        return namespace, parse_schema(spelled.canonical, custom=True), spelled.registered
    except SchemaError as e:
        shown = " ".join(raw.split())
        raise r.err("func", f"bad schema '{shown}': {e}") from None


def _parse_op_name(r: _EntryReader, key: Literal["structured_delegate"]) -> OperatorName | None:
    s = r.values[key]
    if s is None:
        return None
    if "::" in s:
        raise r.err(key, f"{key} cannot name a namespace; it uses the op's own")
    try:
        return parse_operator_name(s)
    except SchemaError as e:
        raise r.err(key, f"bad {key} '{s}': {e}") from None


def _parse_variants(r: _EntryReader) -> frozenset[str]:
    raw = r.values["variants"]
    variants = _variant_set(raw)
    for v in variants:
        if v not in ("function", "method"):
            raise r.err("variants", f"illegal variant '{v}'; use function and/or method")
    return variants


@interned  # a handful of spellings: one set each, not one per entry
def _variant_set(raw: str) -> frozenset[str]:
    return frozenset(v.strip() for v in raw.split(","))


@interned  # a few dozen distinct tag sets among thousands of entries
def _shared_tag_set(tags: frozenset[str]) -> frozenset[str]:
    return tags


def _parse_tags(
    r: _EntryReader, namespace: str, func: FunctionSchema, valid_tags: frozenset[str]
) -> frozenset[str]:
    raw = r.values["tags"] if "tags" in r.entry else []
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        raise r.err(
            "tags", f"'tags' must be a tag name or a list of tag names, got {describe_value(raw)}"
        )
    for t in items:
        if t not in valid_tags:
            raise r.err("tags", f"unknown tag '{t}'; tags must be defined in the tags YAML")
    tags = set(items)
    # torch's convention: every aten op is pt2-compliant, out= ops carry "out" and
    # inplace ops "inplace" (when the tags YAML defines those tags).
    if namespace == "aten" and "pt2_compliant_tag" in valid_tags:
        tags.add("pt2_compliant_tag")
    if func.is_out_fn() and "out" in valid_tags:
        tags.add("out")
    if func.name.name.inplace and "inplace" in valid_tags:
        tags.add("inplace")
    return _shared_tag_set(frozenset(tags))


def default_kernel_name(func: FunctionSchema) -> str:
    """The default kernel name of an op: its base name, plus `_out` for out= ops."""
    return str(func.name.name) + ("_out" if func.is_out_fn() else "")


def _parse_dispatch(
    r: _EntryReader,
    func: FunctionSchema,
    structured: bool,
    delegate: OperatorName | None,
    suggest: bool,
) -> dict[str, BackendMetadata]:
    raw = r.values["dispatch"]
    dispatch: dict[str, BackendMetadata] = {}
    if raw is None:
        if structured or delegate is not None:
            return dispatch
        name = str(func.name.name)
        args = func.arguments
        is_factory = args.tensor_options is not None and not any(
            a.type.is_tensor_like() for a in args.flat_non_out
        )
        if name.startswith("new_") or name.endswith("_like") or is_factory:
            raise r.err(
                None,
                f"factory function '{name}' needs a CompositeExplicitAutograd dispatch entry; "
                "without a dispatch table it would be CompositeImplicitAutograd, and factories "
                "must not decompose",
            )
        if default_kernel_name(func) in CPP_KEYWORDS:
            raise r.err(
                None,
                f"'{name}' without a dispatch table has a CompositeImplicitAutograd kernel of its "
                "own name, a C++ keyword; name the kernel in `dispatch:`",
            )
        dispatch["CompositeImplicitAutograd"] = BackendMetadata(
            default_kernel_name(func), "at::native", False
        )
        return dispatch
    # `dispatch: {}` is allowed: an op with no kernels at all (not even the
    # implicit CompositeImplicitAutograd one), registered by hand elsewhere.
    if not isinstance(raw, YamlMap):
        raise r.err(
            "dispatch",
            f"'dispatch' must be a mapping of keys to kernels, got {describe_value(raw)}",
        )
    for keys, kernel in raw.items():
        if not isinstance(kernel, str) or not kernel:
            raise AtengenError(
                raw.key_location(keys),
                f"dispatch kernel for '{keys}' must be a name, got {describe_value(kernel)}",
            )
        split = _split_keys(keys)
        if not dk.are_op_yaml_dispatch_keys(split):
            key = next(k for k in split if not dk.is_op_yaml_dispatch_key(k))
            why = "cannot be used in an op YAML" if dk.is_known_dispatch_key(key) else "is unknown"
            hint = dk.closest_key(key) if suggest else ""
            raise AtengenError(raw.key_location(keys), f"dispatch key '{key}' {why}{hint}")
        for key in split:
            if key in dispatch:
                raise AtengenError(raw.key_location(keys), f"dispatch key '{key}' is given twice")
            metadata = _kernel_metadata(kernel, structured and key in tf.STRUCTURED_DISPATCH_KEYS)
            if metadata is None:
                raise AtengenError(raw.key_location(keys), f"illegal kernel name '{kernel}'")
            if metadata.kernel in CPP_KEYWORDS:
                raise AtengenError(
                    raw.key_location(keys),
                    f"kernel name '{kernel}' is a C++ keyword: the kernel is a C++ function; "
                    f"name it otherwise (e.g. '{metadata.kernel}_kernel')",
                )
            dispatch[key] = metadata

    composites = [k for k in tf.COMPOSITE_KEYS if k in dispatch]
    if len(composites) > 1:
        raise r.err(
            "dispatch",
            "cannot specify more than one of CompositeExplicitAutograd, "
            "CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single "
            "kernel; each strictly subsumes the other. If you wanted to provide an explicit "
            "autograd implementation, specify CompositeExplicitAutograd; otherwise specify "
            "CompositeImplicitAutograd only",
        )
    if len(dispatch) == 1 and "CompositeImplicitAutograd" in dispatch and delegate is None:
        kernel = dispatch["CompositeImplicitAutograd"].kernel
        if kernel == default_kernel_name(func):
            raise r.err("dispatch", "unnecessary dispatch table for this function; just delete it")
        if "_symint" not in kernel:
            raise r.err(
                "dispatch",
                f"unexpected name for a lone CompositeImplicitAutograd kernel: expected "
                f"'{default_kernel_name(func)}' but got '{kernel}'; rename the implementation and delete "
                "the dispatch table",
            )
    if delegate is not None:
        for key in sorted(tf.STRUCTURED_DISPATCH_KEYS & set(dispatch)):
            raise r.err(
                "dispatch",
                f"a structured_delegate op must not list {key} in dispatch; it is delegated",
            )
    return dispatch


@interned  # `CPU, CUDA` and friends recur thousands of times
def _split_keys(keys: str) -> tuple[str, ...]:
    return tuple(k.strip() for k in keys.split(","))


@interned  # kernels recur across keys and ops, and BackendMetadata is immutable
def _kernel_metadata(kernel: str, structured: bool) -> BackendMetadata | None:
    # `CPU: at::native::foo` or `CPU: foo`; up to three namespace levels.
    if "::" not in kernel:  # the common case
        return (
            BackendMetadata(kernel, "at::native", structured) if _IDENT.fullmatch(kernel) else None
        )
    *namespaces, name = kernel.split("::")
    if (
        not _IDENT.fullmatch(name)
        or len(namespaces) > 3
        or not all(_IDENT.fullmatch(n) for n in namespaces)
    ):
        return None
    cpp_namespace = "::".join(namespaces)
    if not cpp_namespace.endswith("::native"):
        cpp_namespace += "::native"
    return BackendMetadata(name, cpp_namespace, structured)


def _parse_autogen(r: _EntryReader) -> tuple[OperatorName, ...]:
    raw = r.values["autogen"]
    names = []
    for s in (x.strip() for x in raw.split(",")) if raw else ():
        try:
            names.append(parse_operator_name(s))
        except SchemaError as e:
            raise r.err("autogen", f"bad autogen name '{s}': {e}") from None
    return tuple(names)


_NO_NAMES: frozenset[str] = frozenset()  # one object, not one per entry (each is GC-tracked)


def _parse_cpp_no_default_args(r: _EntryReader, func: FunctionSchema) -> frozenset[str]:
    raw = r.values["cpp_no_default_args"]
    if not raw:
        return _NO_NAMES
    defaulted = {a.name for a in func.arguments.flat_all if a.default is not None}
    names: set[str] = set()
    for name in raw:
        if not isinstance(name, str) or name not in defaulted:
            raise r.err(
                "cpp_no_default_args",
                f"cpp_no_default_args names '{name}', which is not an argument with a default",
            )
        names.add(name)
    return frozenset(names)


def _parse_precomputed(
    r: _EntryReader, func: FunctionSchema, structured: bool
) -> Precompute | None:
    raw = r.values["precomputed"]
    if raw is None:
        return None
    if not structured:
        raise r.err("precomputed", "precomputed requires structured: True")
    lines = [x for x in raw if isinstance(x, str)]
    if not raw or len(lines) != len(raw):
        raise r.err("precomputed", "precomputed must be a non-empty list of strings")
    # The last line may list added parameters that replace nothing.
    add_line = lines.pop() if " -> " not in lines[-1] else None
    arg_names = {a.name for a in func.arguments.flat_non_out}
    replace: list[tuple[str, tuple[Argument, ...]]] = []
    try:
        for line in lines:
            if " -> " not in line:
                raise r.err(
                    "precomputed", f"'{line}': only the last precomputed line may omit ' -> '"
                )
            arg, _, decls = line.partition(" -> ")
            if arg not in arg_names:
                raise r.err(
                    "precomputed", f"precomputed replaces '{arg}', which is not an argument"
                )
            replace.append((arg, tuple(parse_argument(d.strip()) for d in decls.split(","))))
        add = tuple(parse_argument(d.strip()) for d in add_line.split(",")) if add_line else ()
    except SchemaError as e:
        raise r.err("precomputed", f"bad precomputed declaration: {e}") from None
    return Precompute(tuple(replace), add)


def _parse_ufunc_inner_loop(r: _EntryReader, structured: bool) -> tuple[UfuncInnerLoop, ...]:
    raw = r.values["ufunc_inner_loop"]
    if raw is None:
        return ()
    if not structured:
        raise r.err("ufunc_inner_loop", "ufunc_inner_loop requires structured: True")
    items = {"Generic": raw} if isinstance(raw, str) else raw
    if not isinstance(items, dict):
        raise r.err(
            "ufunc_inner_loop",
            f"ufunc_inner_loop must be a string or mapping, got {describe_value(raw)}",
        )
    loops = []
    for key, value in items.items():
        if key not in _UFUNC_KEYS:
            raise r.err(
                "ufunc_inner_loop",
                f"unknown ufunc key '{key}'; allowed: {', '.join(sorted(_UFUNC_KEYS))}",
            )
        m = re.fullmatch(r"(\w+) \((.+)\)", value) if isinstance(value, str) else None
        if m is None:
            raise r.err(
                "ufunc_inner_loop",
                f"ufunc_inner_loop value for {key} must look like 'name (Dtype, ...)'",
            )
        loops.append(
            UfuncInnerLoop(key, m.group(1), tuple(d.strip() for d in m.group(2).split(",")))
        )
    return tuple(loops)


def _check_function(r: _EntryReader, f: NativeFunction) -> None:
    """Cross-key rules of one entry."""
    kind = f.kind
    if f.func.arguments.out and f.variants != {"function"}:
        raise r.err("variants", "ops with out arguments must have only the function variant")
    if f.structured:
        if kind is not SchemaKind.out:
            raise r.err(
                "structured",
                "put structured: True on the out= variant; did you mean structured_delegate?",
            )
        if not f.device_guard:
            raise r.err(
                "device_guard", "device_guard: False is not respected by structured kernels"
            )
    if f.structured_delegate is not None:
        if kind is SchemaKind.out:
            raise r.err(
                "structured_delegate",
                "structured_delegate is not allowed on out= ops; did you mean structured?",
            )
        if not f.device_guard:
            raise r.err(
                "device_guard", "device_guard: False is not respected by structured kernels"
            )
    if f.structured_inherits is not None and not f.structured:
        raise r.err("structured_inherits", "structured_inherits requires structured: True")
    name = str(f.name)
    for a in f.func.arguments.flat_all if f.namespace == DEFAULT_NAMESPACE else ():
        # torch's generated Python bindings take every argument by name; torch's own YAML has
        # three exceptions. A custom op has no such bindings (its wheel's stubs make such an
        # argument positional-only), so torch's schema language is the rule there.
        if keyword.iskeyword(a.name) and (name, a.name) not in tf.PYTHON_KEYWORD_ARGUMENTS_ALLOWED:
            raise r.err(
                "func", f"argument name '{a.name}' in '{f.name}' is a reserved Python keyword"
            )
    if name.startswith("_foreach") and f.device_check != "NoCheck":
        raise r.err(None, "foreach ops must use device_check: NoCheck")
    if (
        "inplace_view" in f.tags
        and name not in ("resize_", "resize_as_")
        and str(f.name.name) != "set_"
    ):
        if not f.name.name.inplace:
            raise r.err(
                "tags", f"'{f.name}' is tagged inplace_view but its name has no trailing '_'"
            )
    if f.namespace == DEFAULT_NAMESPACE and not_tagged_random(f):
        raise r.err(
            None,
            f"'{f.name}' looks random (rand/dropout/Generator) and needs the nondeterministic_seeded tag",
        )


def not_tagged_random(f: NativeFunction) -> bool:
    """Looks random (by its name or a Generator argument) but lacks the nondeterministic_seeded
    tag: an error for aten's ops, a warning for a custom namespace's (model_warnings)."""
    return "nondeterministic_seeded" not in f.tags and _looks_random(f.func, str(f.name))


def _looks_random(func: FunctionSchema, name: str) -> bool:
    if "rand" in name and not any(part in name for part in tf.RANDOM_NAME_EXEMPT_PARTS):
        return True
    # Each search of the arguments runs only where the schema's text has the word at all.
    # An argument's (cached) text starts with its type, unless it is an annotated
    # Tensor, whose text starts with "Tensor(": so this asks whether the type does.
    if "Generator" in func.text and any(
        a.text.startswith("Generator") for a in func.arguments.flat_non_out
    ):
        return True
    dropout = "dropout" in name or (
        "dropout" in func.text and any("dropout" in a.name for a in func.arguments.flat_all)
    )
    return dropout and "backward" not in name and str(func.name.name) != "_cudnn_init_dropout_state"
