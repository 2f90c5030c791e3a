"""`atengen stable` without a compiler: the stable type mapping, bad input (one `file:line:
error:` line, exit 1, nothing written), sharding, determinism, and the call API's names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atengen.model.schema_types import parse_type
from atengen.stable.releases import parse_target
from atengen.stable.types import NotCarried, spell, spell_for
from tests.support.model_helpers import TAGS_YAML, run_cli

REPO = Path(__file__).resolve().parents[3]
QUICKSTART_YAML = (
    "- func: myops::scale(Tensor self, float factor) -> Tensor\n  dispatch:\n    CPU: scale_cpu\n"
)
LINE_RE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.+)$")


@pytest.mark.parametrize(
    "schema_type, param, result",
    [
        ("Tensor", "torch::stable::Tensor", "torch::stable::Tensor"),
        ("int", "int64_t", "int64_t"),
        ("SymInt", "int64_t", "int64_t"),
        ("float", "double", "double"),
        ("bool", "bool", "bool"),
        ("str", "std::string", "std::string"),
        ("ScalarType", "torch::headeronly::ScalarType", "torch::headeronly::ScalarType"),
        ("Layout", "torch::headeronly::Layout", "torch::headeronly::Layout"),
        ("MemoryFormat", "torch::headeronly::MemoryFormat", "torch::headeronly::MemoryFormat"),
        ("Device", "torch::stable::Device", "torch::stable::Device"),
        ("Tensor?", "std::optional<torch::stable::Tensor>", "std::optional<torch::stable::Tensor>"),
        ("int[]", "torch::headeronly::HeaderOnlyArrayRef<int64_t>", "std::vector<int64_t>"),
        ("SymInt[2]", "torch::headeronly::HeaderOnlyArrayRef<int64_t>", "std::vector<int64_t>"),
        ("float[]?", "std::optional<torch::headeronly::HeaderOnlyArrayRef<double>>", None),
        ("Tensor[]", "std::vector<torch::stable::Tensor>", "std::vector<torch::stable::Tensor>"),
        ("Tensor?[]", "std::vector<std::optional<torch::stable::Tensor>>", None),
    ],
)
def test_type_mapping(schema_type, param, result):
    s = spell_for(parse_type(schema_type), parse_target("2.11"))
    assert s.param == param
    if result is not None:
        assert s.result == result


@pytest.mark.parametrize("schema_type", ["Scalar", "Dimname", "Storage", "bool[3]", "Scalar[]"])
def test_types_no_release_carries(schema_type):
    with pytest.raises(NotCarried) as e:
        spell(parse_type(schema_type))
    assert "torch 2." not in e.value.reason


def test_generator_needs_2_13():
    with pytest.raises(NotCarried, match=r"torch 2\.11 cannot carry it; torch 2\.13 carries it"):
        spell_for(parse_type("Generator?"), parse_target("2.11"))
    assert spell_for(parse_type("Generator?"), parse_target("2.13")).param == (
        "std::optional<torch::stable::Generator>"
    )


def _stable(tmp_path: Path, yaml_text: str, *extra: str):
    op = tmp_path / "ops.yaml"
    op.write_text(yaml_text)
    (tmp_path / "tags.yaml").write_text(TAGS_YAML)
    out, inc = tmp_path / "out", tmp_path / "inc"
    r = run_cli(
        "stable", f"--op_yaml={op}", f"--output_dir={out}", f"--header_output_dir={inc}", *extra
    )
    return r, op, out, inc


BAD_YAMLS = {
    # (YAML, extra flags, line, words in the message)
    "scalar": (
        QUICKSTART_YAML
        + "- func: myops::shift(Tensor self, Scalar amount) -> Tensor\n"
        + "  dispatch:\n    CPU: shift_cpu\n",
        (),
        4,
        ["'myops::shift'", "type 'Scalar'", "argument 'amount'", "no C++ type"],
    ),
    "generator_before_2_13": (
        "\n- func: myops::noise(Tensor self, Generator? gen) -> Tensor\n"
        "  tags: nondeterministic_seeded\n  dispatch:\n    CPU: noise_cpu\n",
        ("--target=2.11",),
        2,
        ["type 'Generator?'", "torch 2.11 cannot carry it", "torch 2.13 carries it"],
    ),
    "bool_list_result": (
        "- func: myops::mask(Tensor self) -> bool[]\n  dispatch:\n    CPU: mask_cpu\n",
        (),
        1,
        ["type 'bool[]'", "result 0"],
    ),
    "structured": (
        "- func: myops::st(Tensor self) -> Tensor\n  structured_delegate: st.out\n"
        "- func: myops::st.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
        "  structured: True\n  dispatch:\n    CPU: st_out\n",
        (),
        3,
        ["structured kernels"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_YAMLS))
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, case):
    text, extra, line, words = BAD_YAMLS[case]
    r, op, out, inc = _stable(tmp_path, text, *extra)
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    m = LINE_RE.match(lines[0])
    assert m, lines[0]
    assert (m["path"], int(m["line"])) == (str(op), line)
    for w in words:
        assert w in m["msg"], m["msg"]
    assert not out.exists() and not inc.exists()


def test_the_custom_ops_example_names_its_scalar_op(tmp_path):
    # tests/data/custom_ops: myops::shift takes a Scalar; scale_ and scale are fine.
    op = REPO / "tests" / "data" / "custom_ops" / "ops.yaml"
    r = run_cli(
        "stable",
        f"--op_yaml={op}",
        f"--output_dir={tmp_path / 'out'}",
        f"--header_output_dir={tmp_path / 'inc'}",
    )
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    shift_line = (
        op.read_text()
        .splitlines()
        .index("- func: myops::shift(Tensor self, Scalar amount, SymInt repeat=1) -> Tensor")
    )
    assert line.startswith(f"{op}:{shift_line + 1}: error: 'myops::shift'"), line


def test_target_below_2_11_is_one_line(tmp_path):
    r, _, out, _ = _stable(tmp_path, QUICKSTART_YAML, "--target=2.10")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "2.11 or newer" in r.stderr
    assert not out.exists()


def test_quickstart_sources(tmp_path):
    r, _, out, inc = _stable(tmp_path, QUICKSTART_YAML, "--shards=0")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "RegisterStableCPU_myops_scale.cpp",
        "StableSchema_myops_scale.cpp",
    ]
    schema = (out / "StableSchema_myops_scale.cpp").read_text()
    assert "STABLE_TORCH_LIBRARY_FRAGMENT(myops, m) {" in schema
    assert 'm.def("myops::scale(Tensor self, float factor) -> Tensor");' in schema
    reg = (out / "RegisterStableCPU_myops_scale.cpp").read_text()
    assert "STABLE_TORCH_LIBRARY_IMPL(myops, CPU, m) {" in reg
    assert 'm.impl("scale", TORCH_BOX(&myops::scale_cpu));' in reg
    header = (inc / "myops" / "ops" / "scale_native.h").read_text()
    assert (
        "torch::stable::Tensor scale_cpu(const torch::stable::Tensor& self, double factor);"
        in header
    )
    for text in (schema, reg, header):
        assert "ATen" not in text and "at::" not in text and "c10::" not in text


MANY_OPS = (
    "- func: myops::a_(Tensor(a!) self, int[] dims, float? eps=None) -> Tensor(a!)\n"
    "  dispatch:\n    CPU: a_cpu_\n    CUDA: a_cuda_\n  autogen: a, a.out\n"
    "- func: myops::b(Tensor[] xs, ScalarType dtype, Device device, str mode) -> (Tensor, Tensor)\n"
    "  dispatch:\n    CompositeExplicitAutograd: b\n    Meta: other::b_meta\n"
    "- func: myops::c(Tensor self, Layout layout, MemoryFormat? fmt, SymInt n) -> ()\n"
    "  dispatch:\n    CPU: c_cpu\n"
)


def test_types_keys_and_autogen(tmp_path):
    r, op, out, inc = _stable(tmp_path, MANY_OPS, "--shards=0")
    assert r.returncode == 0, r.stderr
    # the autogen'd a and a.out: schemas defined, no kernels, one warning each at the entry
    assert r.stderr.count("warning:") == 2 and "'myops::a.out' is autogen'd" in r.stderr
    assert r.stderr.startswith(f"{op}:1: warning:")
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "RegisterStableCPU_myops_a.cpp",
        "RegisterStableCPU_myops_c.cpp",
        "RegisterStableCUDA_myops_a.cpp",
        "RegisterStableCompositeExplicitAutograd_myops_b.cpp",
        "RegisterStableMeta_myops_b.cpp",
        "StableSchema_myops_a.cpp",
        "StableSchema_myops_b.cpp",
        "StableSchema_myops_c.cpp",
    ]
    assert (
        "myops::a.out(Tensor self, int[] dims, float? eps=None, *, Tensor(a!) out)"
        in (out / "StableSchema_myops_a.cpp").read_text()
    )
    a = (inc / "myops/ops/a_native.h").read_text()
    assert (
        "torch::stable::Tensor a_cpu_(torch::stable::Tensor& self, "
        "torch::headeronly::HeaderOnlyArrayRef<int64_t> dims, const std::optional<double>& eps);"
    ) in a
    b = (inc / "myops/ops/b_native.h").read_text()
    assert "namespace other::native {" in b  # a qualified kernel keeps its namespace
    assert (
        "std::tuple<torch::stable::Tensor, torch::stable::Tensor> b("
        "const std::vector<torch::stable::Tensor>& xs, torch::headeronly::ScalarType dtype, "
        "const torch::stable::Device& device, const std::string& mode);"
    ) in b
    assert (
        'm.impl("b", TORCH_BOX(&other::native::b_meta));'
        in (out / "RegisterStableMeta_myops_b.cpp").read_text()
    )
    c = (inc / "myops/ops/c_native.h").read_text()
    assert (
        "void c_cpu(const torch::stable::Tensor& self, torch::headeronly::Layout layout, "
        "std::optional<torch::headeronly::MemoryFormat> fmt, int64_t n);"
    ) in c


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_deterministic_and_sharded_like_generate(tmp_path):
    trees = []
    for i in range(2):
        d = tmp_path / str(i)
        d.mkdir()
        r, _, out, inc = _stable(d, MANY_OPS, "--shards=2")
        assert r.returncode == 0, r.stderr
        trees.append((_tree(out), _tree(inc)))
    assert trees[0] == trees[1]
    outs = trees[0][0]
    assert all(re.fullmatch(r"(StableSchema|RegisterStable\w+?)_myops_b\d\.cpp", n) for n in outs)
    assert len([n for n in outs if n.startswith("StableSchema_")]) <= 2


@pytest.fixture(scope="module")
def call_api_2_11(tmp_path_factory):
    d = tmp_path_factory.mktemp("api")
    r = run_cli("stable", f"--call_api_dir={d / 'api'}", f"--report={d / 'report.txt'}")
    assert r.returncode == 0, r.stderr
    return d, r


def test_call_api_coverage_report(call_api_2_11):
    d, r = call_api_2_11
    m = re.fullmatch(
        r"stable call API: (\d+) of (\d+) aten overloads covered \([\d.]+%\), (\d+) headers\n",
        r.stdout,
    )
    assert m, r.stdout
    covered, total = int(m[1]), int(m[2])
    assert 0.5 * total < covered < total
    report = (d / "report.txt").read_text()
    assert report.startswith("// @generated by atengen: stable call API coverage")
    assert "aten::rsub.Tensor: type 'Scalar' (argument 'alpha')" in report
    assert "torch 2.13 carries it" in report  # Generator? arguments
    # (Tensor, Tensor[]): torch_call_dispatcher would convert the list as a Tensor.
    histogramdd = [line for line in report.splitlines() if "aten::histogramdd" in line]
    assert histogramdd and all("mirrored positions" in line for line in histogramdd), histogramdd
    # An operator with no call has a header that is one #error with the reason.
    header = (d / "api" / "atengen" / "stable" / "ops" / "histogramdd.h").read_text()
    assert '#error "atengen::stable has no call of aten::histogramdd' in header
    assert "mirrored positions" in header


def test_call_api_names(call_api_2_11):
    d, _ = call_api_2_11
    ops = d / "api" / "atengen" / "stable" / "ops"
    mul = (ops / "mul.h").read_text()
    assert "inline torch::stable::Tensor mul(const torch::stable::Tensor& self, " in mul
    assert (
        'torch_call_dispatcher(\n      "aten::mul", "Tensor", stack.data(), TORCH_ABI_VERSION)'
        in mul
    )
    assert "mul_outf(" in mul and "mul_(" in mul
    # a single overload gets its defaults; SymInt is an int64_t
    assert "int64_t start_dim = 0, int64_t end_dim = -1" in (ops / "flatten.h").read_text()
    # narrow(Tensor, int, SymInt, SymInt) and narrow.Tensor(Tensor, int, Tensor, SymInt) differ
    narrow = (ops / "narrow.h").read_text()
    assert narrow.count("inline torch::stable::Tensor narrow(") == 2
    # results of several tensors are tuples
    assert (
        "inline std::tuple<torch::stable::Tensor, torch::stable::Tensor> max("
        in (ops / "max.h").read_text()
    )
    assert "inline std::vector<torch::stable::Tensor> unbind(" in (ops / "unbind.h").read_text()


def test_call_api_is_deterministic(tmp_path):
    trees = []
    for i in range(2):
        d = tmp_path / str(i)
        r = run_cli("stable", "--ops=mul,narrow,max,cat,sum", f"--call_api_dir={d}")
        assert r.returncode == 0, r.stderr
        trees.append(_tree(d))
    assert trees[0] == trees[1]
    assert sorted(trees[0]) == [
        f"atengen/stable/ops/{root}.h" for root in ("cat", "max", "mul", "narrow", "sum")
    ]
