"""Schemas: parsing/printing, SchemaKind, signature() and the restrictions."""

from __future__ import annotations

import re

import pytest

from atengen.errors import SchemaError
from atengen.model.schema import (
    ListType,
    OptionalType,
    SchemaKind,
    parse_annotation,
    parse_schema,
    parse_type,
)
from atengen.model.schema_names import SCHEMA_KEYWORDS
from tests.support.model_helpers import error_of, run_cli, write_yamls


@pytest.mark.parametrize(
    "s",
    [
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], SymInt[1] p=0) -> Tensor",
        "f(Tensor?[] indices, int[]? dims, SymInt[1] names, str? mode=None) -> Tensor[]",
        "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
        "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
        "f(Tensor(a|b) self) -> Tensor(a|b)",
        "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
        "__iadd__.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        "f(__torch__.torch.classes.quantized.Conv2dPackedParamsBase packed) -> ()",
        "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        'f(Tensor self, str pad="valid", float[] ws=[1.0, 2.0]) -> Tensor',
    ],
)
def test_parse_print_round_trip(s):
    assert str(parse_schema(s)) == s


def test_types_nest_from_the_right():
    assert parse_type("Tensor?[]") == ListType(OptionalType(parse_type("Tensor")), None)
    assert parse_type("int[]?") == OptionalType(ListType(parse_type("int"), None))
    assert parse_type("int[2]").size == 2


def test_annotation_before_after_sets_and_wildcard():
    a = parse_annotation("a! -> a|b")
    assert (a.alias_set, a.is_write, a.alias_set_after) == (("a",), True, ("a", "b"))
    assert parse_annotation("a -> *").alias_set_after == ("*",)


def test_tensor_options_are_grouped_only_as_the_four_kwargs():
    f = parse_schema(
        "ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor"
    )
    assert f.arguments.tensor_options is not None
    assert not f.arguments.pre_tensor_options_kwarg_only
    g = parse_schema("f(Tensor self, *, ScalarType? dtype=None) -> Tensor")
    assert g.arguments.tensor_options is None


@pytest.mark.parametrize(
    "s, message",
    [
        ("f(Tensor self) Tensor", "no return type"),
        ("f(Tensor self -> Tensor", "unbalanced"),
        ("f(Tensr self) -> Tensor", "unrecognized type 'Tensr'"),
        ("f(Tensor(A!) self) -> Tensor", "unrecognized alias annotation 'A!'"),
        ("f(Tensor(a|b!) self) -> Tensor", "alias set larger than 1 cannot be mutable"),
        ("f(Tensor self, Tensor self) -> Tensor", "duplicate argument name 'self'"),
        ("f(Tensor self, *, int a, *, int b) -> Tensor", "may appear only once"),
        ("f(Tensor self,  int a) -> Tensor", "stray or missing space"),
        ("f(Tensor self) ->  Tensor", "stray or missing space"),
        ("f(Tensor self, int[ 2] a) -> Tensor", "unrecognized type 'int['"),
        ("f(Tensor) -> Tensor", "needs a type and a name"),
        ("f(Tensor self, int x=) -> Tensor", "empty default"),
        ("f.o-l(Tensor self) -> Tensor", "illegal overload name"),
        ("f(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)", "out arguments must come last"),
        ("__ifoo__(Tensor(a!) self) -> Tensor(a!)", "not a known inplace augmented"),
        # torch's parser rejects these (its lexer reads True/False/None as constants; it reads
        # numbers with std::stoll and std::stod).
        ("f(int[99999999999999999999] x) -> ()", "list size in 'int[99999999999999999999]'"),
        ("f(int[2147483648] x) -> ()", "is larger than 2147483647"),
        ("True(Tensor self) -> Tensor", "'True' cannot be an operator name"),
        ("False(Tensor self) -> Tensor", "'False' cannot be an operator name"),
        ("None(Tensor self) -> Tensor", "'None' cannot be an operator name"),
        ("f.True(Tensor self) -> Tensor", "'True' cannot be an overload name"),
        ("f(Tensor None) -> Tensor", "'None' cannot be an argument name"),
        ("f(Tensor self) -> (Tensor False, Tensor b)", "'False' cannot be a return name"),
        ("f(int x=9223372036854775808) -> ()", "is not a 64-bit integer"),
        ("f(int x=-9223372036854775809) -> ()", "is not a 64-bit integer"),
        ("f(SymInt[2] x=[1,9223372036854775808]) -> ()", "is not a list like [1,2]"),
        ("f(Scalar x=9223372036854775808) -> ()", "is not a number"),
        ("f(float x=1.7976931348623159e308) -> ()", "is not a number a double holds"),
        ("f(float x=1e-400) -> ()", "is not a number a double holds"),
        ("f(float x=5e-324) -> ()", "is not a number a double holds"),
    ],
)
def test_malformed_schemas(s, message):
    with pytest.raises(SchemaError, match=re.escape(message)):
        parse_schema(s)


# --- SchemaKind ----------------------------------------------------------------


@pytest.mark.parametrize(
    "s, kind",
    [
        ("abs_(Tensor(a!) self) -> Tensor(a!)", SchemaKind.inplace),
        ("__iadd__(Tensor(a!) self, Tensor other) -> Tensor(a!)", SchemaKind.inplace),
        (
            "f.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> Tensor(a!)",
            SchemaKind.scratch,
        ),
        ("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", SchemaKind.out),
        (
            "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor(a!) running_min, "
            "float c) -> (Tensor output, Tensor mask)",
            SchemaKind.mutable,
        ),
        ("abs(Tensor self) -> Tensor", SchemaKind.functional),
        # An inplace (or out) op may also mutate positionals and keeps its kind.
        ("f_(Tensor(a!) self, Tensor(b!) other) -> Tensor(a!)", SchemaKind.inplace),
        ("f.out(Tensor self, Tensor(b!) st, *, Tensor(a!) out) -> Tensor(a!)", SchemaKind.out),
    ],
)
def test_schema_kind_precedence(s, kind):
    assert parse_schema(s).kind is kind


# --- signature() ---------------------------------------------------------------


def sig(s: str, **kw) -> str:
    return str(parse_schema(s).signature(**kw))


def test_signature_drops_overload_inplace_outs_annotations_and_return_names():
    assert sig("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)") == (
        "add(Tensor self, Tensor other) -> Tensor"
    )
    assert sig("add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)") == (
        "add(Tensor self, Tensor other) -> Tensor"
    )
    assert sig("min.dim(Tensor self) -> (Tensor values, Tensor indices)") == (
        "min(Tensor self) -> (Tensor, Tensor)"
    )


def test_signature_keeps_the_dunder_flag():
    assert sig("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)") == (
        "__and__(Tensor self, Tensor other) -> Tensor"
    )


def test_signature_turns_unreturned_mutable_inputs_into_returns_in_order():
    s = "f(Tensor self, Tensor(a!) x, Tensor(b!) y) -> (Tensor output, Tensor mask)"  # mutable kind: positionals x, y become returns after the originals
    assert sig(s) == "f(Tensor self, Tensor x, Tensor y) -> (Tensor, Tensor, Tensor, Tensor)"
    named = parse_schema(s).signature(keep_return_names=True)
    assert [r.name for r in named.returns] == ["output", "mask", "x_out", "y_out"]
    # self first, then outs, then post-self positionals
    t = "g.out(Tensor(a!) self, Tensor(b!) st, *, Tensor(c!)[] o) -> ()"
    named = parse_schema(t).signature(keep_return_names=True)
    assert [r.name for r in named.returns] == ["self_out", "o_out", "st_out"]


def test_signature_drops_tensor_options_so_factories_pair_with_their_outs():
    start_step = (
        "range.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor"
    )
    start_out = (
        "range.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)"
    )
    assert sig(start_step) == sig(start_out)


def test_signature_strip_default_and_view_copy_name():
    assert sig("f(Tensor self, int x=1) -> Tensor", strip_default=True) == (
        "f(Tensor self, int x) -> Tensor"
    )
    assert sig("view_copy(Tensor self, SymInt[] size) -> Tensor", strip_view_copy_name=True) == (
        "view(Tensor self, SymInt[] size) -> Tensor"
    )
    assert sig("slice_scatter(Tensor self) -> Tensor", strip_view_copy_name=True) == (
        "slice_inverse(Tensor self) -> Tensor"
    )


# --- schema restrictions ---------------------------------------------------------


@pytest.mark.parametrize(
    "s, message",
    [
        (
            "f.out(Tensor self, *, Tensor(a!) out) -> Tensor(b!)",
            "must alias the return in the same position",
        ),
        (
            "f(Tensor self, Tensor(a!) x) -> Tensor(a!)",
            "mutable positional argument 'x' must not be returned; return only out arguments",
        ),
        (
            # The fix named: torchgen knows an in-place op's mutated argument by its name.
            "clip_boxes_(Tensor(a!) boxes, int[2] size) -> Tensor(a!)",
            "mutable positional argument 'boxes' must not be returned; rename it 'self', as "
            "torchgen requires of the argument an op mutates and returns: "
            "clip_boxes_(Tensor(a!) self, ...)",
        ),
        (
            "f.out(Tensor self, *, Tensor(a!) out) -> (Tensor(a!), Tensor)",
            "must be all mutable or all immutable",
        ),
        ("f(Tensor(a!) self, Tensor(b!) x) -> Tensor(c!)", "must alias an out argument or self"),
        (
            "f.out(Tensor self, *, Tensor(a!)[] out) -> Tensor(a!)[]",
            "must return ()",
        ),
        ("f.out(Tensor self, *, Tensor(a!) o, Tensor(b!) p) -> Tensor(a!)", "as many values"),
        ("f_(Tensor self) -> Tensor", "needs a mutable self argument"),
        ("f_(Tensor(a!) self) -> Tensor", "must return self"),
        ("f_(Tensor(a!)[] self) -> Tensor(a!)[]", "non-Tensor self must return ()"),
        (
            "f.out(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,"
            " bool? pin_memory=None, Tensor(a!) out) -> Tensor(a!)",
            "only allowed on functional ops",
        ),
        ("f_.functional(Tensor(a!) self) -> Tensor(a!)", "contains 'functional'"),
        ("f(Tensor(a!) x, Tensor self) -> ()", "mutable arguments before self"),
        ("foo_out(Tensor self) -> Tensor", "ends in '_out', which is reserved"),
    ],
)
def test_schema_restrictions(s, message):
    with pytest.raises(SchemaError) as info:
        parse_schema(s)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "s",
    [
        "f(int[2147483647] x) -> ()",
        "True_(Tensor(a!) self) -> Tensor(a!)",
        "f.Nonesuch(Tensor self, int Falsey) -> (Tensor Truer, Tensor b)",
        "f(int x=9223372036854775807, int y=-9223372036854775808) -> ()",
        "f(float x=1.7976931348623157e308, float y=2.2250738585072014e-308) -> ()",
        "f(float x=0e-400, Scalar y=9223372036854775808.0) -> ()",
    ],
)
def test_the_edges_torch_accepts_are_accepted(s):
    assert str(parse_schema(s)) == s


def test_a_schema_torch_rejects_is_a_file_line_error(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: ok(Tensor self) -> Tensor
        - func: True(Tensor self) -> Tensor
        """,
    )
    assert err == (
        f"{tmp_path}/ops.yaml:2: error: bad schema 'True(Tensor self) -> Tensor': 'True' cannot "
        "be an operator name (in 'True'): torch's schema parser reads it as a constant"
    )


def test_restriction_errors_name_the_entry_with_file_and_line(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: ok(Tensor self) -> Tensor
          dispatch:
            CPU: ok
        - func: bad(Tensor self, Tensor(a!) x) -> Tensor(a!)
          dispatch:
            CPU: bad
        """,
    )
    assert err.startswith(f"{tmp_path}/ops.yaml:4: error: bad schema 'bad(")
    assert "must not be returned" in err
    assert "\n" not in err


# A type stacking hundreds of suffixes overflowed Python's stack (parsing, printing, hashing).
_DEEP_TYPES = ["Tensor" + "?[]" * 200, "Tensor" + "[]" * 400, "int" + "[]?" * 17]


@pytest.mark.parametrize("t", _DEEP_TYPES)
def test_deeply_nested_type_is_a_schema_error(t):
    with pytest.raises(SchemaError, match=r"nests more than 32 '\?' and '\[\]' suffixes"):
        parse_type(t)


def test_nesting_up_to_the_limit_parses_and_prints():
    t = "Tensor" + "?[]" * 16
    assert str(parse_type(t)) == t
    assert str(parse_schema(f"f({t} x) -> ()")) == f"f({t} x) -> ()"


@pytest.mark.parametrize("t", _DEEP_TYPES)
@pytest.mark.parametrize("command", ["check", "generate"])
def test_deeply_nested_type_is_a_file_line_error_in_every_command(tmp_path, t, command):
    op_yaml, tags_yaml = write_yamls(
        tmp_path, f"- func: ok(Tensor self) -> Tensor\n- func: f({t} x) -> ()\n"
    )
    extra = [f"--output_dir={tmp_path / 'out'}"] if command == "generate" else []
    r = run_cli(command, f"--op_yaml={op_yaml}", f"--tags_yaml={tags_yaml}", *extra)
    assert r.returncode == 1
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith(f"{op_yaml}:2: error: bad schema 'f(")
    assert "nests more than 32" in line
    assert not (tmp_path / "out").exists()


# Every word torch's schema lexer keeps as a keyword, in each place a schema names something:
# torch's parser (the installed wheel's) refuses them all, and so do we, at the YAML line, where
# the library would otherwise build and fail as it loads.
KEYWORD_PLACES = {
    "an operator": "ns::{k}(Tensor self) -> Tensor",
    "an overload": "ns::f.{k}(Tensor self) -> Tensor",
    "an argument": "ns::f(Tensor {k}) -> Tensor",
    "a return": "ns::f(Tensor self) -> Tensor {k}",
}


@pytest.mark.parametrize("place", sorted(KEYWORD_PLACES))
def test_keywords_of_torchs_schema_parser_are_refused_as_names(place):
    import torch

    for keyword in sorted(SCHEMA_KEYWORDS):
        schema = KEYWORD_PLACES[place].format(k=keyword)
        with pytest.raises(RuntimeError):
            torch._C.parse_schema(schema)
        with pytest.raises(SchemaError, match=f"'{keyword}' cannot be {place} name"):
            parse_schema(schema.removeprefix("ns::"), custom=True)
    # A name that only starts with one is a name to both.
    schema = KEYWORD_PLACES[place].format(k="passthrough")
    torch._C.parse_schema(schema)
    parse_schema(schema.removeprefix("ns::"), custom=True)


def test_the_keywords_are_those_of_every_installed_wheels_lexer():
    from tests.unit.stable.test_stable_releases import installed_torch_dirs

    token = re.compile(r'_\(TK_\w+, "[^"]*", "([A-Za-z_]\w*)"\)')
    dirs = installed_torch_dirs()
    assert dirs, "no installed wheel"
    for release, torch_dir in dirs.items():
        header = torch_dir / "include/torch/csrc/jit/frontend/lexer.h"
        assert set(token.findall(header.read_text())) == SCHEMA_KEYWORDS, release
