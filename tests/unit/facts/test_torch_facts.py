"""atengen/facts/torch_facts.py against the installed wheel: when torch changes, one of these fails and
names the fact to update. And the release blocks themselves: one per supported release, each
later one a real change from the one before.

The expected values come from torch itself (its Tag enum, its dispatch-key parser, its operator
registry and its packaged YAML), never from the generator.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest
import torch
import yaml

from atengen.cli.common import installed_torch_yaml_dir
from atengen.facts import torch_facts as tf
from atengen.facts.wheel_facts import AutogradHelpers, parse_wheel_facts

TESTS = Path(__file__).resolve().parents[2]


def _torch_yaml(name: str):
    with open(f"{installed_torch_yaml_dir()}/{name}", encoding="utf-8") as f:
        return yaml.load(f, Loader=yaml.CSafeLoader)


RELEASE = ".".join(torch.__version__.split("+")[0].split(".")[:2])


# Where each fact of a release block is checked against torch itself (the installed wheel, or
# each release's torchgen, headers and libraries): a new field of ReleaseFacts fails
# test_every_release_fact_is_checked_against_torch until its check is written and named here.
RELEASE_FACT_CHECKS = {
    "stable_scalar_shims": (
        "unit/stable/test_stable_scalar_routes.py",
        "test_the_shim_table_matches_the_wheels_headers",
    ),
    "c10_tags": ("unit/facts/test_torch_facts.py", "test_c10_tags_are_the_wheels_tags"),
    "not_functionalized": (
        "slices/releases/test_releases.py",
        "test_the_codegen_facts_kept_by_hand_are_the_releases_torchgens",
    ),
    "random_name_exempt_parts": (
        "slices/releases/test_releases.py",
        "test_the_codegen_facts_kept_by_hand_are_the_releases_torchgens",
    ),
    "release_only_schema_types": (
        "unit/facts/test_torch_facts.py",
        "test_release_only_schema_types_are_the_ones_the_wheels_parser_takes",
    ),
    "set_output_takes_names": (
        "slices/releases/test_releases.py",
        "test_set_output_takes_names_exactly_on_the_releases_whose_headers_declare_it",
    ),
    "inplace_ops_with_python_meta": (
        "unit/facts/test_torch_facts.py",
        "test_inplace_ops_with_python_meta_are_the_ones_torch_serves_so",
    ),
    "structured_meta_classes": (
        "unit/facts/test_torch_facts.py",
        "test_structured_meta_classes_are_the_ones_libtorch_exports",
    ),
    "stable_conversions": (
        "unit/stable/test_stable_releases.py",
        "test_table_matches_the_wheels_header",
    ),
}


def test_facts_are_for_the_installed_release():
    assert RELEASE in tf.SUPPORTED_RELEASES, (
        f"torch {torch.__version__} is installed but atengen/facts/torch_facts.py describes "
        f"{tf.SUPPORTED_RELEASES}: review every fact there, then add a block for {RELEASE} at "
        "the end of RELEASES (docs/developing/releases.md, Adding a torch release)"
    )
    # Every per-release table, found by its name, has every supported release, in order.
    tables = {name: value for name, value in vars(tf).items() if name.endswith("_BY_RELEASE")}
    assert "C10_TAGS_BY_RELEASE" in tables
    for name, table in tables.items():
        assert tuple(table) == tf.SUPPORTED_RELEASES, name
    assert tf.facts_release(RELEASE, torch.__version__) == (RELEASE, None)


def test_every_supported_release_is_one_block_and_each_change_a_real_one():
    blocks = tf.RELEASES
    assert isinstance(blocks[0], tf.ReleaseFacts), "the oldest release is written whole"
    releases = [b.release for b in blocks]
    assert tuple(releases) == tf.SUPPORTED_RELEASES == tuple(tf.FACTS_BY_RELEASE)
    numbers = [tf.release_number(r) for r in releases]
    assert None not in numbers, releases
    for (major, minor), (next_major, next_minor) in zip(numbers, numbers[1:], strict=False):
        assert (next_major, next_minor) in {(major, minor + 1), (major + 1, 0)}, (
            f"no block between {major}.{minor} and {next_major}.{next_minor}"
        )
    # A change names the same facts as a whole release, and nothing else.
    change_fields = {f.name for f in fields(tf.ReleaseChange)} - {"release", "changes_nothing"}
    assert change_fields == set(tf.FACT_NAMES)
    for before, change in zip(releases, blocks[1:], strict=False):
        assert isinstance(change, tf.ReleaseChange), change.release
        previous = tf.FACTS_BY_RELEASE[before]
        changed = change.changed_facts()
        # A release that changed nothing says so; one that says so changes nothing.
        assert bool(changed) != change.changes_nothing, (
            f"{change.release}: changes {changed or 'nothing'}, and changes_nothing="
            f"{change.changes_nothing}"
        )
        for fact in tf.FACT_NAMES:
            value, old = getattr(change, fact), getattr(previous, fact)
            if isinstance(value, tf.Change):
                assert value.added or value.removed, f"{change.release}.{fact}: an empty Change"
                assert not value.added & old, (change.release, fact, value.added & old)
                assert value.removed <= old, (change.release, fact, value.removed - old)
            elif value is not None:
                assert value != old, f"{change.release}.{fact}: {value!r} as in {before}"


def test_every_release_fact_is_checked_against_torch():
    assert set(RELEASE_FACT_CHECKS) == set(tf.FACT_NAMES)
    for fact, (module, test) in RELEASE_FACT_CHECKS.items():
        tree = ast.parse((TESTS / module).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert test in defined, f"{fact}: no {test} in tests/{module}"


def _probe() -> dict:
    import json
    import subprocess
    import sys
    from pathlib import Path

    probe = Path(__file__).resolve().parents[3] / "tool" / "torch_probe.py"
    out = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.slow
def test_the_probe_reads_the_installed_wheel():
    """What @torch reads of the wheel (tool/torch_probe.py) is what torch says of itself, and
    the generator takes it."""
    facts = _probe()
    assert facts["version"] == torch.__version__
    assert facts["release"] == RELEASE
    assert facts["cuda"] == (torch.version.cuda or "")
    assert facts["cxx11_abi"] == bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    if torch.version.cuda:
        assert facts["arch_list"] == torch.cuda.get_arch_list()
        assert {"libc10_cuda.so", "libtorch_cuda.so"} <= set(facts["libraries"])
        assert facts["cuda_runtime"], "a CUDA wheel without its nvidia-* runtime package"
        assert set(facts["native_kernels"]) == {"libtorch_cpu", "libtorch_cuda"}
    else:
        assert facts["arch_list"] == [] and set(facts["native_kernels"]) == {"libtorch_cpu"}
    assert facts["headers"]["torch/csrc/lazy/core/shape_inference.h"]
    assert facts["release_support"]["verdict"] == "supported"
    assert "wrap_opt_if" in facts["autograd_helpers_defined"]
    assert "wrap_opt_if" in facts["autograd_helpers_declared"]
    assert "copy_range" in facts["autograd_helpers_exported"]
    # The aten operators formulas call unqualified: the wheel's native_functions.yaml's names.
    assert {"mul", "add_", "expand", "_to_copy"} <= set(facts["aten_operators"])
    wheel = parse_wheel_facts(__import__("json").dumps(facts))
    for kernel in sorted(tf.NATIVE_KERNELS_NOT_EXPORTED):
        assert wheel.unexported_kernel(kernel, cuda_key=False), kernel
    assert wheel.unexported_kernel("abs_sparse", cuda_key=False) is None
    assert wheel.unexported_kernel("abs_sparse", cuda_key=True) is None  # (libtorch_cpu)
    if not torch.version.cuda:  # nothing is known of CUDA kernels without libtorch_cuda
        assert wheel.unexported_kernel("bmm_out_sparse_csr_cuda", cuda_key=True) is None


def test_a_release_below_the_floor_is_one_line_and_a_newer_one_a_warning():
    with pytest.raises(
        ValueError,
        match=r"^torch 2\.10\.0 is older than torch 2\.11, the oldest release rules_aten "
        r"supports; install torch 2\.11 or newer$",
    ):
        parse_wheel_facts('{"release": "2.10", "version": "2.10.0"}')
    with pytest.raises(ValueError, match=r"^torch 1\.13\.1 is older than torch 2\.11"):
        parse_wheel_facts('{"release": "1.13", "version": "1.13.1"}')
    with pytest.raises(ValueError, match=r"^torch 2\.x: cannot read its release from '2\.x'$"):
        parse_wheel_facts('{"release": "2.x", "version": "2.x"}')
    newer = parse_wheel_facts('{"release": "2.99", "version": "2.99.0"}')
    assert (newer.release, newer.facts_release) == ("2.99", tf.NEWEST_RELEASE)
    assert newer.warning == (
        f"torch 2.99.0 is newer than the releases rules_aten knows ({tf.OLDEST_RELEASE} to "
        f"{tf.NEWEST_RELEASE}): building it with the facts of torch {tf.NEWEST_RELEASE} "
        "(tool/atengen/facts/torch_facts.py)"
    )
    # The @torch repository warned once already and says so: no second warning.
    warned = parse_wheel_facts(
        f'{{"release": "3.0", "version": "3.0.0", "facts_release": "{tf.NEWEST_RELEASE}"}}'
    )
    assert (warned.facts_release, warned.warning) == (tf.NEWEST_RELEASE, None)
    known = parse_wheel_facts('{"release": "2.11", "version": "2.11.0+cu130"}')
    assert (known.facts_release, known.warning) == ("2.11", None)


def test_the_probe_tells_the_torch_rule_the_release_policy():
    """@torch applies the policy through the probe's release_support (rules/private/repositories/torch.bzl)."""
    from torch_probe import support_of

    supported = list(tf.SUPPORTED_RELEASES)
    major, minor = tf.release_number(tf.NEWEST_RELEASE)
    expected = {
        tf.OLDEST_RELEASE: ("supported", tf.OLDEST_RELEASE),
        tf.NEWEST_RELEASE: ("supported", tf.NEWEST_RELEASE),
        f"{major}.{minor + 1}": ("newer", tf.NEWEST_RELEASE),
        "3.0": ("newer", tf.NEWEST_RELEASE),
        "2.10": ("older", ""),
        "1.13": ("older", ""),
        "unknown": ("unreadable", ""),
        "2.013": ("unreadable", ""),
    }
    for release, (verdict, facts) in expected.items():
        got = support_of(release)
        assert got == {"verdict": verdict, "supported_releases": supported, "facts_release": facts}
        assert verdict in tf.RELEASE_SUPPORT


def test_c10_tags_are_the_wheels_tags():
    enum = set(torch._C.Tag.__members__)
    packaged = {entry["tag"] for entry in _torch_yaml("tags.yaml")}
    listed = tf.C10_TAGS_BY_RELEASE[RELEASE]
    assert listed == enum, f"at::Tag gained {enum - listed}, lost {listed - enum}"
    assert packaged == enum
    assert tf.C10_TAGS <= enum


def test_release_only_schema_types_are_the_ones_the_wheels_parser_takes():
    for name, releases in tf.SCHEMA_TYPES_OF_RELEASES.items():
        try:
            torch._C.parse_schema(f"f(Tensor self, {name} x, {name}[] y) -> Tensor")
            taken = True
        except RuntimeError:
            taken = False
        assert taken == (RELEASE in releases), (name, releases)


def test_every_named_dispatch_key_is_a_c10_key():
    named = (
        set(tf.OP_YAML_DISPATCH_KEYS)
        | tf.OTHER_C10_KEYS
        | set(tf.SERVABLE_KEYS)
        | tf.UNSERVABLE_KEYS
        | tf.CUDA_KEYS
        | tf.DEVICE_GUARD_KEYS
        | tf.META_CAPABLE_KEYS
        | tf.STRUCTURED_DISPATCH_KEYS
        | set(tf.UFUNC_DISPATCH_KEYS)
        | set(tf.COMPOSITE_KEYS)
        | {tf.FUNCTIONALIZE_KEY}
    )
    # torch knows a key by name through its DispatchKey enum or its string parser; each misses
    # a few (the enum lacks MkldnnCPU, the parser QuantizedMeta).
    enum = set(torch._C.DispatchKey.__members__)
    unknown = sorted(k for k in named if k not in enum and torch._C._parse_dispatch_key(k) is None)
    assert not unknown, f"not dispatch keys of this torch: {unknown}"


def test_the_keys_the_shim_cannot_name_are_those_torchs_parser_does_not_know():
    # torch's C shim registers under a key it parses from the key's name.
    unnamed = {k for k in tf.SERVABLE_KEYS if torch._C._parse_dispatch_key(k) is None}
    assert unnamed == tf.SHIM_UNNAMED_KEYS


def test_the_wheels_op_yaml_names_only_known_keys_and_each_is_served_or_not():
    used = set()
    for entry in _torch_yaml("native_functions.yaml"):
        for keys in entry.get("dispatch", {}):
            used.update(k.strip() for k in keys.split(","))
    assert used <= set(tf.OP_YAML_DISPATCH_KEYS), sorted(used - set(tf.OP_YAML_DISPATCH_KEYS))
    servable = set(tf.SERVABLE_KEYS)
    assert not servable & tf.UNSERVABLE_KEYS
    unclassified = set(tf.OP_YAML_DISPATCH_KEYS) - servable - tf.UNSERVABLE_KEYS
    assert not unclassified, f"neither servable nor unservable: {sorted(unclassified)}"


def _schema(qualified: str):
    name, _, overload = qualified.removeprefix("aten::").partition(".")
    return torch._C._get_schema(f"aten::{name}", overload)


def test_named_operators_exist_in_the_wheel():
    named = (
        {f"aten::{n}" for n in tf.LONE_OUT_OPS_ALLOWED}
        | tf.NOT_FUNCTIONALIZED_BY_RELEASE[RELEASE]
        | tf.HANDWRITTEN_FUNCTIONALIZE_GROUPS
        | tf.HANDWRITTEN_FUNCTIONALIZE_VIEWS
        | tf.OUT_DTYPE_OPS
        | {f"aten::{n}" for n in tf.DTYPE_VIEW_REVERSES}
        | {f"aten::{root}.{overload}" for root, overload, _, _ in tf.DTYPE_VIEW_REVERSES.values()}
        | {f"aten::{n}" for n in tf.FUNCTIONAL_BACKEND_EXTRA_OPS}
        | {f"aten::{n}" for n in tf.CROSS_DEVICE_COPY_OPS}
    )
    missing = []
    for qualified in sorted(named):
        try:
            _schema(qualified.rstrip("."))
        except RuntimeError:
            missing.append(qualified)
    assert not missing, f"operators this torch does not have: {missing}"


def test_unfunctionalized_ops_mutate_and_out_dtype_ops_are_out_ops():
    for qualified in sorted(tf.NOT_FUNCTIONALIZED_BY_RELEASE[RELEASE]):
        schema = _schema(qualified)
        assert any(a.alias_info and a.alias_info.is_write for a in schema.arguments), qualified
    for qualified in sorted(tf.OUT_DTYPE_OPS):
        schema = _schema(qualified)
        assert any(a.is_out for a in schema.arguments), qualified
        assert any(a.name == "dtype" for a in schema.arguments), qualified


@pytest.mark.slow
def test_structured_meta_classes_are_the_ones_libtorch_exports():
    import re
    import subprocess
    from pathlib import Path

    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    symbols = subprocess.run(
        ["nm", "-DC", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    exported = set(re.findall(r"at::meta::structured_(\w+)::meta\(", symbols))
    assert len(exported) > 200
    # What @torch reads of the wheel (the generator's facts) ...
    assert set(_probe()["structured_meta_classes"]) == exported
    # ... and the list kept for a run without them.
    listed = tf.WHEEL_STRUCTURED_META_CLASSES_BY_RELEASE[RELEASE]
    assert listed == exported, (
        f"libtorch_cpu gained {sorted(exported - listed)}, lost {sorted(listed - exported)}"
    )


def test_device_defaults_are_the_ones_torchs_schema_parser_takes():
    with pytest.raises(RuntimeError, match="Expected one of ") as e:
        torch._C.parse_schema('f(Device d="not_a_device") -> ()')
    # "Expected one of cpu, cuda, ... device type at start of device string: not_a_device"
    listed = str(e.value).split("Expected one of ", 1)[1].split(" device type", 1)[0]
    names = {n.strip() for n in listed.split(",")}
    assert tf.DEVICE_TYPE_NAMES == names, (
        names - tf.DEVICE_TYPE_NAMES,
        tf.DEVICE_TYPE_NAMES - names,
    )
    torch._C.parse_schema(f'f(Device d="cuda:{tf.MAX_DEVICE_INDEX}") -> ()')
    with pytest.raises(RuntimeError, match="Could not parse device index"):
        torch._C.parse_schema(f'f(Device d="cuda:{tf.MAX_DEVICE_INDEX + 1}") -> ()')


def test_the_wheels_exports_read_from_its_symbol_tables_are_nms():
    """atengen.facts.wheel_symbols reads what `nm -DC --defined-only` shows of each library."""
    from pathlib import Path

    from atengen.facts.wheel_symbols import exported_names
    from tests.support.wheel_oracle import nm_names

    lib = Path(torch.__file__).parent / "lib"
    libraries = ["libtorch_cpu.so"] + (["libtorch_cuda.so"] if torch.version.cuda else [])
    for name in libraries:
        native, meta, details = nm_names(lib / name)
        names = exported_names(str(lib / name))
        assert names.native_functions == native, (name, sorted(names.native_functions ^ native))
        assert names.structured_meta_classes == meta, (name, meta ^ names.structured_meta_classes)
        assert names.autograd_details == details, (name, details ^ names.autograd_details)
        assert len(native) > 500


@pytest.mark.slow
def test_autograd_helpers_are_split_by_what_libtorch_exports():
    """The helpers a formula may call are what libtorch_cpu exports or the header defines, of
    what FunctionsManual.h declares; the rest it declares are refused. The same from the facts
    @torch writes and from a run without them (the installed torch read directly)."""
    from pathlib import Path

    from atengen.cli.common import autograd_helpers, read_autograd_helpers
    from tests.support.wheel_oracle import header_names, nm_names

    root = Path(torch.__file__).parent
    declared, inline = header_names(root)
    _, _, exported = nm_names(root / "lib" / "libtorch_cpu.so")
    assert inline == {"wrap_opt_if"}
    # The aten operators formulas may call unqualified: torchgen's packaged YAML, parsed as YAML.
    import yaml

    native = root.parent / "torchgen" / "packaged" / "ATen" / "native" / "native_functions.yaml"
    entries = yaml.load(native.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    aten = frozenset(e["func"].split("(")[0].split(".")[0] for e in entries)
    assert {"mul", "add_", "expand"} <= aten
    expected = AutogradHelpers.of(frozenset(exported), frozenset(declared), frozenset(inline), aten)
    assert expected.aten_operators == aten | {f"{name}_symint" for name in aten}
    assert expected.callable_names == (exported | inline) & declared
    assert expected.unexported_names == declared - exported - inline
    # Helpers the tests and the README name as callable and as not exported.
    assert {"wrap_opt_if", "copy_range", "not_implemented"} <= expected.callable_names
    assert {"handle_r_to_c", "maybe_multiply"} <= expected.unexported_names
    assert read_autograd_helpers(str(root)) == expected
    assert autograd_helpers(None, None) == expected
    wheel = parse_wheel_facts(__import__("json").dumps(_probe()))
    assert wheel.autograd_helpers == expected


def test_unexported_native_kernels_are_the_ones_libtorch_lacks(installed_model):
    """Every plain (not structured) at::native kernel the wheel's op YAML names for a CPU-side
    key is exported by libtorch_cpu, except the listed ones. (A link of every generated
    registration with --no-undefined finds exactly these, conformance/RESULTS.md.)"""
    import re
    import subprocess
    from pathlib import Path

    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    symbols = subprocess.run(
        ["nm", "-DC", "--defined-only", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    exported = set(re.findall(r"at::native::(\w+)\(", symbols))
    cpu_side = set(tf.SERVABLE_KEYS) - tf.CUDA_KEYS - {tf.FUNCTIONALIZE_KEY}
    named = {
        kernel.kernel
        for f in installed_model.functions
        if f.namespace == "aten"
        for key, kernel in f.dispatch.items()
        if key in cpu_side and not kernel.structured
    }
    assert len(named) > 1500 and len(exported) > 2000
    assert tf.NATIVE_KERNELS_NOT_EXPORTED == named - exported, sorted(
        tf.NATIVE_KERNELS_NOT_EXPORTED ^ (named - exported)
    )


def test_inplace_ops_with_python_meta_are_the_ones_torch_serves_so(installed_model):
    """Of the in-place aten ops that get the no-op Meta kernel (no Meta or composite kernel in
    the YAML), exactly the listed ones have a Python meta kernel active in the dispatcher."""
    from atengen.model.schema import SchemaKind

    candidates = [
        f
        for f in installed_model.functions
        if f.namespace == "aten"
        and f.kind is SchemaKind.inplace
        and len(f.func.returns) == 1
        and "Meta" not in f.dispatch
        and not any(k in f.dispatch for k in tf.COMPOSITE_KEYS)
        and not f.generated
        and not f.part_of_structured_group  # those get the structured Meta kernel
    ]
    python_meta = set()
    for f in candidates:
        meta = [
            line
            for line in torch._C._dispatch_dump(f"aten::{f.name}").splitlines()
            if line.startswith("Meta:")
        ]
        if meta and "_meta_registrations.py" in meta[0]:
            python_meta.add(str(f.name))
    assert len(candidates) > 30
    listed = tf.INPLACE_OPS_WITH_PYTHON_META_BY_RELEASE[RELEASE]
    assert listed == python_meta, sorted(listed ^ python_meta)
    # The generator leaves out the union of every release's list: what other releases list is
    # not an op of this one, so it leaves out nothing more here.
    names = {str(f.name) for f in installed_model.functions if f.namespace == "aten"}
    assert not (tf.INPLACE_OPS_WITH_PYTHON_META - listed) & names
