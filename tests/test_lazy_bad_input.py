"""`atengen lazy` on bad lazy-backend YAML: one `file:line: error:` line, exit 1,
no output directory. The op YAML is the one torchgen ships with the torch wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
import torchgen

from tests.model_helpers import run_cli

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
