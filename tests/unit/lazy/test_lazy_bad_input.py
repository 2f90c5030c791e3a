"""`atengen lazy` on bad lazy-backend YAML: one `file:line: error:` line, exit 1,
no output directory. The op YAML is the one torchgen ships with the torch wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
import torchgen

from atengen.lazy.options import LazyOptions, check_field
from tests.support.model_helpers import run_cli

NATIVE = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"
HEAD = "backend: XLA\ncpp_namespace: my_lazy\n"

# name: (backend YAML, expected line, message fragments)
BAD: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "mapping_where_a_name_belongs": (
        HEAD + "full_codegen:\n- abs\n- {op: neg}\n",
        5,
        ('item 2 of "full_codegen" must be an operator name, got a mapping',),
    ),
    "unknown_full_codegen_op": (
        HEAD + "full_codegen:\n- abz\n",
        4,
        ("Found an invalid operator name: abz", "did you mean 'abs'?"),
    ),
    "unknown_ir_gen_op": (
        HEAD + "ir_gen:\n- selu\n- sellu\n",
        5,
        ("Found an invalid operator name: sellu", "did you mean 'selu'?"),
    ),
    "unknown_property": (
        HEAD + "non_native:\n- func: cast(Tensor input, ScalarType dtype) -> Tensor\n"
        "  properties:\n  - ShapeCompue\n",
        6,
        ("unknown property 'ShapeCompue'", "did you mean 'ShapeCompute'?"),
    ),
    "conflicting_properties": (
        HEAD + "non_native:\n- func: cast(Tensor input) -> Tensor\n"
        "  properties:\n  - ShapeCompute\n  - ShapeCache\n",
        7,
        ("properties 'ShapeCompute' and 'ShapeCache' exclude each other",),
    ),
    "schema_does_not_parse": (
        HEAD + "non_native:\n- func: scalar(Scalar value, ScalarType type -> Tensor\n",
        4,
        ("invalid non_native schema",),
    ),
    "non_native_type_nested_too_deep": (
        HEAD + "non_native:\n- func: cast(Tensor" + "?[]" * 200 + " input) -> Tensor\n",
        4,
        ("invalid non_native schema", "nests more than 32"),
    ),
    "non_native_not_a_mapping": (
        HEAD + "non_native:\n- scalar\n",
        4,
        ('item 1 of "non_native" must be a mapping with a "func" schema',),
    ),
    "non_native_unknown_key": (
        HEAD + "non_native:\n- func: cast(Tensor input) -> Tensor\n  opkidn: ltc_cast\n",
        5,
        ("unknown key 'opkidn' in a non_native entry",),
    ),
    "opkind_not_a_name": (
        HEAD + "non_native:\n- func: cast(Tensor input) -> Tensor\n  opkind: 'x; abort()'\n",
        5,
        ("opkind must be a C++ OpKind name like 'ltc_cast' or 'at::prim::Constant'",),
    ),
    "listed_under_full_codegen_and_supported": (
        HEAD + "full_codegen:\n- abs\nsupported:\n- abs\n",
        4,
        ("operator 'abs' is listed twice (first on line 6)",),
    ),
    "listed_under_full_codegen_and_ir_gen": (
        HEAD + "full_codegen:\n- abs\nir_gen:\n- abs\n",
        6,
        ("operator 'abs' is listed twice (first on line 4)",),
    ),
    "mixed_with_autograd": (
        HEAD + "full_codegen:\n- add.Tensor\nautograd:\n- add_.Tensor\n",
        6,
        ("all variants of an op must either be registered to a backend key",),
    ),
    "view_instead_of_view_copy": (
        HEAD + "full_codegen:\n- view\n",
        4,
        ("it is a view", "list 'view_copy' instead"),
    ),
    "non_tensor_return": (
        HEAD + "full_codegen:\n- _local_scalar_dense\n",
        4,
        ("returns Scalar", "hand-written kernel"),
    ),
    "unsupported_argument_type": (
        HEAD + "ir_gen:\n- _cufft_get_plan_cache_size\n",
        4,
        ("argument 'device_index' has type DeviceIndex", "cannot hold"),
    ),
}


def run_lazy(tmp_path: Path, yaml_text: str, *extra: str):
    backend = tmp_path / "backend.yaml"
    backend.write_text(yaml_text)
    out = tmp_path / "out"
    r = run_cli(
        "lazy",
        f"--backend_yaml={backend}",
        f"--output_dir={out}",
        f"--op_yaml={NATIVE / 'native_functions.yaml'}",
        f"--tags_yaml={NATIVE / 'tags.yaml'}",
        *extra,
    )
    return r, backend, out


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_lazy_yaml(tmp_path, name):
    text, line, fragments = BAD[name]
    r, backend, out = run_lazy(tmp_path, text)
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"{backend}:{line}: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    assert not out.exists()


def test_missing_shape_inference_declarations_are_all_listed(tmp_path):
    # cholesky and inverse have no meta kernel: both need a compute_shape_* declaration;
    # exp is structured, so its meta kernel infers shapes
    header = tmp_path / "shapes.h"
    header.write_text("#pragma once\n")
    r, backend, out = run_lazy(
        tmp_path,
        HEAD + "full_codegen:\n- exp\n- cholesky\n- inverse\n",
        f"--shape_inference_file={header}",
    )
    assert r.returncode == 1
    [line] = r.stderr.splitlines()
    assert line.startswith(f"{backend}:5: error: 2 full_codegen op(s) have no meta kernel")
    assert (
        "TORCH_API std::vector<torch::lazy::Shape> compute_shape_cholesky(const at::Tensor & "
        "self, bool upper);" in line
    )
    assert "compute_shape_inverse(const at::Tensor & self);" in line
    assert "compute_shape_exp" not in line
    assert not out.exists()


def test_good_yaml_writes_files(tmp_path):
    header = tmp_path / "shapes.h"
    header.write_text(
        "TORCH_API std::vector<torch::lazy::Shape> compute_shape_cholesky(const at::Tensor & "
        "self, bool upper);\n"
    )
    r, _, out = run_lazy(
        tmp_path, HEAD + "full_codegen:\n- exp\n- cholesky\n", f"--shape_inference_file={header}"
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "LazyIr.h",
        "LazyIrCommon.h",
        "LazyIr_cholesky.h",
        "LazyIr_exp.h",
        "LazyNonNativeIr.h",
        "RegisterXLA_cholesky.cpp",
        "RegisterXLA_exp.cpp",
        "XLANativeFunctions.h",
        "XLANativeFunctions_cholesky.cpp",
        "XLANativeFunctions_exp.cpp",
    ]


# Every flag that is pasted into the C++ is checked as the token it becomes there.
BAD_FLAGS = [
    ("--node_base=a b;", "must be a C++ name like"),
    ("--node_base=", "must be a C++ name like"),
    ("--tensor_class=Foo<int>", "must be a C++ name like"),
    ("--tensor_ptr=std::shared_ptr<X>", "must be a C++ name like"),
    ("--backend_namespace=1x::", "must be a C++ namespace like"),
    ("--backend_namespace=a::", "must be a C++ namespace like"),
    ("--get_device_fn=f()", "must be a C++ name like"),
    ("--lazy_value_class=torch::lazy::Value v", "must be a C++ name like"),
    ("--create_aten_from_tensor=a.b", "must be a C++ name like"),
    ("--tuple_aten_from_tensors=a::b;", "must be a C++ name like"),
    ("--node_base_hdr=../ts_node.h", "must be empty, or a relative header path like"),
    ("--tensor_class_hdr=/usr/include/tensor.h", "must be a relative header path like"),
    ('--shape_inference_hdr=shape.h"\n#include "x.h', "must be a relative header path like"),
    ("--shape_inference_hdr=", "must be a relative header path like"),
    ('--metrics_counter=F("x"); abort()', "must be empty, or a macro call"),
    ("--metrics_counter=COUNTER", "must be empty, or a macro call"),
    ("--include_prefix=/abs/inc", "must be empty, or a relative path of plain names"),
    ("--include_prefix=a/../b", "must be empty, or a relative path of plain names"),
]


@pytest.mark.parametrize("flag, message", BAD_FLAGS)
def test_bad_lazy_flag_is_one_line_naming_the_flag(tmp_path, flag, message):
    r, _, out = run_lazy(tmp_path, HEAD + "full_codegen:\n- abs\n", flag)
    assert r.returncode == 2
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    name = flag.split("=")[0]
    assert line.startswith(f"atengen lazy: error: argument {name}: {message}"), line
    assert not out.exists()


@pytest.mark.parametrize("flag, message", BAD_FLAGS)
def test_bad_lazy_flag_of_backend_allow_lazy(tmp_path, flag, message):
    backend = tmp_path / "backend.yaml"
    backend.write_text(HEAD + "full_codegen:\n- abs\n")
    out = tmp_path / "out"
    r = run_cli("backend", "--allow_lazy", f"--backend_yaml={backend}", f"--output_dir={out}", flag)
    assert r.returncode in (1, 2)  # --include_prefix is backend's own flag: checked later
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    assert flag.split("=")[0] in line and message in line, line
    assert not out.exists()


@pytest.mark.parametrize(
    "name, value",
    [
        ("node_base", "XlaNode"),
        ("node_base", "::torch::lazy::TsNode"),
        ("node_base_hdr", ""),
        ("node_base_hdr", "torch_xla/csrc/ir.h"),
        ("tensor_class_hdr", "my-backend/lazy+tensor.h"),
        ("metrics_counter", 'XLA_FN_COUNTER("xla::")'),
        ("metrics_counter", 'COUNTER("a\\"b", ns::kName, -1)'),
        ("metrics_counter", ""),
        ("include_prefix", "my//pkg/"),
        ("include_prefix", ""),
    ],
)
def test_customizations_real_backends_use_are_accepted(name, value):
    assert check_field(name, value) is None
    assert getattr(LazyOptions(**{name: value}), name) == value


def test_lazy_options_refuse_a_bad_field_when_built_directly():
    with pytest.raises(ValueError, match="LazyOptions.node_base must be a C.. name like"):
        LazyOptions(node_base="a b;")
