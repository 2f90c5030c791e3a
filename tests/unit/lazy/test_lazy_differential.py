"""Lazy-tensor codegen vs upstream torchgen's gen_lazy_tensor, on real backend YAMLs.

For torch_xla's YAML and the TorchScript backend's (the torch 2.13 wheel's op set), both
generators must produce the same IR node classes with the same operands and attributes (names
and C++ types, in order), declare the same kernels in ``<Backend>NativeFunctions.h``,
register the same ops for each dispatch key, and expect the same compute_shape declarations.
The oracle runs in the test; it is never skipped (torchgen ships with the torch wheel).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atengen.backend.spec import load_backend_yaml
from atengen.lazy.emit import lazy_files
from atengen.lazy.kernels import check_shape_inference, expected_shape_declarations
from atengen.lazy.model import LazyBackend, resolve_lazy_backend
from atengen.lazy.options import LazyOptions
from atengen.model.operator_model import load_model
from atengen.render.shards import ShardSetting
from atengen.render.templates import Templates
from tests.support.oracle.torchgen_lazy import (
    ATEN,
    LazyFacts,
    NodeFacts,
    declarations_of,
    torchgen_lazy,
    wheel_shape_inference_header,
)

# torchgen's gen_lazy_tensor runs once per YAML in the fixtures: 4 to 9 s each on 2 cores.
pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[2] / "data" / "lazy"
IMPL = re.compile(r'm\.impl\("([^"]+)"')

# (YAML, node base, check the wheel's shape-inference header): torch_xla declares its
# shape functions in its own headers, which we do not have.
CASES = {
    "xla": ("xla_native_functions.yaml", "XlaNode", False),
    "torchscript": ("ts_native_functions_2_13.yaml", "TsNode", True),
}


@pytest.fixture(scope="module")
def model():
    native = ATEN / "native"
    return load_model(str(native / "native_functions.yaml"), str(native / "tags.yaml"))


@pytest.fixture(scope="module", params=sorted(CASES))
def both(request, model, tmp_path_factory) -> tuple[LazyBackend, dict[str, str], LazyFacts]:
    yaml_name, node_base, check_header = CASES[request.param]
    path = str(DATA / yaml_name)
    out = tmp_path_factory.mktemp(f"torchgen_{request.param}")
    oracle = torchgen_lazy(
        path,
        str(out),
        node_base=node_base,
        shape_inference_hdr=wheel_shape_inference_header() if check_header else None,
    )
    lazy = resolve_lazy_backend(load_backend_yaml(path, lazy=True), model)
    files = {f.path: f.text for f in lazy_files(lazy, LazyOptions(), ShardSetting(0), Templates())}
    return lazy, files, oracle


def _ours(nodes) -> dict[str, NodeFacts]:
    return {
        n.class_name: NodeFacts(
            tuple((a.name, a.cpp_type) for a in n.values),
            tuple((a.name, a.cpp_type) for a in n.attributes),
        )
        for n in nodes
    }


def test_node_classes_operands_and_attributes(both):
    lazy, _, oracle = both
    assert len(oracle.nodes) > 50
    ours = _ours(lazy.nodes)
    assert sorted(ours) == sorted(oracle.nodes)
    assert {k: v for k, v in ours.items() if oracle.nodes[k] != v} == {}


def test_non_native_nodes(both):
    lazy, _, oracle = both
    assert _ours(lazy.non_native_nodes) == oracle.non_native_nodes


def test_kernel_declarations(both):
    lazy, files, oracle = both
    header = files[f"{lazy.spec.backend}NativeFunctions.h"]
    ours = declarations_of(header)
    assert len(oracle.declarations) > 100
    assert sorted(ours - oracle.declarations) == []
    assert sorted(oracle.declarations - ours) == []


def test_registered_ops(both):
    lazy, files, oracle = both
    for key, expected in oracle.registered.items():
        ours = {
            name
            for path, text in files.items()
            if path.startswith(f"Register{key}_")
            for name in IMPL.findall(text)
        }
        assert sorted(ours ^ expected) == [], key


def test_shape_inference_declarations(both):
    lazy, _, oracle = both
    assert set(expected_shape_declarations(lazy)) == oracle.shape_declarations


def test_wheel_header_declares_every_ts_shape_function(model):
    """The TorchScript YAML's compute_shape_* functions are all in the wheel's header."""
    lazy = resolve_lazy_backend(
        load_backend_yaml(str(DATA / "ts_native_functions_2_13.yaml"), lazy=True), model
    )
    header = Path(wheel_shape_inference_header())
    assert len(expected_shape_declarations(lazy)) > 30
    check_shape_inference(lazy, header.read_text(), "shape_inference.h")  # raises if missing


def test_every_generated_kernel_has_its_node_class(both):
    lazy, files, _ = both
    for k in lazy.kernels:
        root = k.f.name.name.base
        assert f"class {k.node.class_name} :" in files[f"LazyIr_{root}.h"]
        source = files[f"{lazy.spec.backend}NativeFunctions_{root}.cpp"]
        assert f"{lazy.spec.class_name}::{k.kernel}(" in source


def test_the_oracle_leaves_torchgen_as_it_found_it(both) -> None:
    """gen_lazy_tensor adds its backend to parse_native_yaml's cached result; the oracle drops it
    again, so that the model's differential test in the same process counts torch's keys only."""
    import torchgen.gen

    external = [
        str(key)
        for parsed in torchgen.gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.values()
        for key, index in parsed.backend_indices.items()
        if index.external
    ]
    assert external == []
