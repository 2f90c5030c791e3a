"""atengen/stable/scalar_routes.py: the typed C shims each release's table says the call API may
use (torch_facts' stable_scalar_shims), against the headers of every installed wheel (2.13 in
.venv; 2.11 and 2.15 in the release venvs), each prototype as the generator spells it against the
wheel's declaration; the routes it picks; and an operator with no call as one build error."""

from __future__ import annotations

import re
import subprocess

import pytest

from atengen.facts import torch_facts
from atengen.model.operator_model import load_model
from atengen.stable import scalar_routes
from atengen.stable.releases import parse_target
from tests.support.model_helpers import run_cli
from tests.unit.stable.test_stable_releases import INSTALLED

SHIM_DIR = "include/torch/csrc/inductor/aoti_torch/generated"
_DECLARATION = re.compile(r"AOTI_TORCH_EXPORT (AOTITorchError (aoti_torch_\w+)\((.*?)\));", re.S)


def declarations(torch_dir) -> dict[str, str]:
    """Every typed shim of the wheel -> its declaration, on one line."""
    found = {}
    for device in scalar_routes.SHIM_DEVICES:
        text = (torch_dir / SHIM_DIR / f"c_shim_{device}.h").read_text()
        for m in _DECLARATION.finditer(text):
            found[m[2]] = " ".join(m[1].split())
    return found


@pytest.mark.parametrize("wheel", sorted(INSTALLED))
def test_the_shim_table_matches_the_wheels_headers(wheel):
    torch_dir = INSTALLED[wheel]
    declared = declarations(torch_dir)
    yaml_dir = torch_dir.parent / "torchgen" / "packaged" / "ATen" / "native"
    model = load_model(str(yaml_dir / "native_functions.yaml"), str(yaml_dir / "tags.yaml"))
    table = torch_facts.STABLE_SCALAR_SHIMS_BY_RELEASE[wheel]
    spelled = {}
    for f in model.functions:
        if f.namespace != "aten" or not scalar_routes.has_scalar(f.func):
            continue
        route = scalar_routes.shim_route(f.func, frozenset(declared))
        for call in route.calls if route is not None else ():
            spelled[call.function] = route.prototype(call.function)
    # Every shim of the table is declared, exactly as the call API declares it ...
    for name in sorted(table):
        assert spelled.get(name) == declared.get(name), (wheel, name)
    # ... and every shim of the wheel the call API could use is in the table.
    usable = {n for n, p in spelled.items() if declared.get(n) == p}
    assert usable == table, (
        f"torch {wheel}: the table lacks {sorted(usable - table)}, "
        f"has {sorted(table - usable)} too many"
    )


def test_a_route_needs_every_release_from_the_target_on():
    for release in torch_facts.STABLE_SCALAR_SHIMS_BY_RELEASE:
        shims = scalar_routes.shims_for(parse_target(release))
        later = [
            s
            for r, s in torch_facts.STABLE_SCALAR_SHIMS_BY_RELEASE.items()
            if torch_facts.valid_release_number(r) >= torch_facts.valid_release_number(release)
        ]
        assert shims == frozenset.intersection(*later)
    assert "aoti_torch_cpu_mul_Scalar" in scalar_routes.shims_for(parse_target("2.11"))


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    d = tmp_path_factory.mktemp("api")
    ops = "add,sub,mul,full,full_like,scalar_tensor,fill,rsub,addcmul,new_full"
    r = run_cli("stable", f"--ops={ops}", f"--call_api_dir={d / 'api'}", f"--report={d / 'r.txt'}")
    assert r.returncode == 0, r.stderr
    return d / "api" / "atengen" / "stable" / "ops", (d / "r.txt").read_text()


def test_each_route_and_its_cpp_type(api):
    ops, report = api
    add = (ops / "add.h").read_text()
    # A typed shim per device, the device picked at run time; the Scalar a double.
    assert (
        "inline torch::stable::Tensor add(const torch::stable::Tensor& self, "
        "const torch::stable::Tensor& other, double alpha)" in add
    )
    assert "aoti_torch_cpu_add_Tensor(self.get(), other.get(), alpha, &ret0)" in add
    assert (
        "__attribute__((weak)) AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_add_Tensor(" in add
    )
    # sub.Tensor through subtract.Tensor's shim, which dispatches (any device).
    sub = (ops / "sub.h").read_text()
    assert "aoti_torch_aten_subtract_Tensor(self.get(), other.get(), alpha, &ret0)" in sub
    assert "device_type" not in sub
    # The fill family: an empty tensor filled with an exact atengen::stable::Scalar.
    full_like = (ops / "full_like.h").read_text()
    assert "const atengen::stable::Scalar& fill_value" in full_like
    assert (
        '"aten::empty_like"' in full_like and "detail::fill_with(result, fill_value)" in full_like
    )
    assert "#include <atengen/stable/scalar.h>" in full_like
    assert "fill_value.full_dtype()" in (ops / "full.h").read_text()
    assert (ops.parent / "scalar.h").is_file()
    # Left out: counted, with the reason, in the report and the header.
    for op in ("aten::rsub.Tensor", "aten::addcmul", "aten::add_.Tensor"):
        assert f"{op}: type 'Scalar'" in report, op
    assert "//   aten::add_.Tensor: type 'Scalar' (argument 'alpha')" in add


def test_an_operator_without_a_call_is_one_build_error(api, tmp_path):
    ops, _ = api
    rsub = (ops / "rsub.h").read_text()
    assert rsub.count("#error") == 1
    source = tmp_path / "use.cpp"
    source.write_text(
        '#include "atengen/stable/ops/rsub.h"\n'
        "int f() { int x = atengen::stable::rsub(1, 2.0); return x; }\n"
    )
    r = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", f"-I{ops.parent.parent.parent}", str(source)],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if ": error:" in line]
    assert len(errors) == 1, r.stderr
    assert "aten::rsub" in errors[0] and "carries no Scalar" in errors[0], errors[0]
    assert re.match(r"\S+rsub\.h:\d+:\d+: error: #error ", errors[0]), errors[0]
