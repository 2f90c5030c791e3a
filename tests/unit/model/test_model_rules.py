"""The op-YAML rules on whole op YAMLs: entries, groups, generated variants, dispatch."""

from __future__ import annotations

import pytest

from tests.support.model_helpers import error_of, model_of, schemas

# --- entries ----------------------------------------------------------------------


def test_every_key_of_the_torch_yaml_is_accepted(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: thing.out(Tensor self, int[2] k, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
          structured_inherits: TensorIteratorBase
          precomputed:
          - k -> int kH, int kW
          - int extra
          ufunc_inner_loop:
            Generic: thing (AllAndComplex, BFloat16)
            ScalarOnly: thing (Bool)
          device_check: NoCheck
          device_guard: True
          dispatch:
            Meta: thing_meta
          tags: pointwise
        - func: thing(Tensor self, int[2] k) -> Tensor
          structured_delegate: thing.out
          variants: function, method
          cpp_no_default_args: []
          category_override: dummy
          manual_cpp_binding: False
          manual_kernel_registration: False
        - func: thing_(Tensor(a!) self, int[2] k) -> Tensor(a!)
          structured_delegate: thing.out
          use_const_ref_for_mutable_tensors: True
          variants: method
        - func: other(Tensor self, int x=1) -> Tensor
          python_module: nn
          cpp_no_default_args: ['x']
          dispatch:
            CPU, CUDA: other_impl
          autogen: other.out
        """,
    )
    f = m.by_name["aten::thing.out"]
    assert f.precomputed.replace[0][0] == "k"
    assert [str(a) for a in f.precomputed.replace[0][1]] == ["int kH", "int kW"]
    assert [str(a) for a in f.precomputed.add] == ["int extra"]
    assert [loop.key for loop in f.ufunc_inner_loop] == ["Generic", "ScalarOnly"]
    # ufunc entries get generated CPU/CUDA kernels named after the op.
    assert f.dispatch["CPU"].kernel == "ufunc_thing_CPU"
    assert f.dispatch["CPU"].structured
    assert m.by_name["aten::other"].dispatch["CUDA"].kernel == "other_impl"
    assert "pt2_compliant_tag" in f.tags  # every aten op is pt2-compliant


@pytest.mark.parametrize(
    "yaml, line, message",
    [
        ("- func: f(Tensor self) -> Tensor\n  dispatc:\n    CPU: f\n", 2, "unknown key 'dispatc'"),
        ("- func: f(Tensor self) -> Tensor\n  tags: fancy\n", 2, "unknown tag 'fancy'"),
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPUU: f\n",
            3,
            "dispatch key 'CPUU' is unknown (did you mean 'CPU'?)",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    XLA: f\n",
            3,
            "dispatch key 'XLA' cannot be used in an op YAML",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f\n    CPU, CUDA: g\n",
            4,
            "dispatch key 'CPU' is given twice",
        ),
        ("- variants: function\n", 1, "entry has no 'func:' schema"),
        ("- func: [1]\n", 1, "'func' must be a schema string"),
        ("- just a string\n", 1, "each op YAML item must be a mapping"),
        ("func: f(Tensor self) -> Tensor\n", 1, "op YAML must be a list"),
        ("- func: f(Tensor self) -> Tensor\n  variants: both\n", 2, "illegal variant 'both'"),
        ("- func: f(Tensor self) -> Tensor\n  device_check: Maybe\n", 2, "illegal device_check"),
        ("- func: f(Tensor self) -> Tensor\n  device_guard: sometimes\n", 2, "True or False"),
        ("- func: a::b::f(Tensor self) -> Tensor\n", 1, "illegal namespace"),
        (
            "- func: f(Tensor self, int x) -> Tensor\n  cpp_no_default_args: ['x']\n",
            2,
            "not an argument with a default",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: not-a-name\n",
            3,
            "illegal kernel name 'not-a-name'",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  python_module: nn\n  variants: method\n",
            2,
            "cannot be methods",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  variants: method\n",
            2,
            "only the function variant",
        ),
    ],
)
def test_bad_entries(tmp_path, yaml, line, message):
    err = error_of(tmp_path, yaml)
    assert err.startswith(f"{tmp_path}/ops.yaml:{line}: error: "), err
    assert message in err
    assert "\n" not in err


def test_custom_namespace(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: myops::scale(Tensor self, float f) -> Tensor
          dispatch:
            CPU: myops::scale_cpu
        """,
    )
    f = m.by_name["myops::scale"]
    assert f.namespace == "myops"
    assert f.dispatch["CPU"].kernel == "scale_cpu"
    assert f.dispatch["CPU"].cpp_namespace == "myops::native"
    assert "pt2_compliant_tag" not in f.tags  # only aten ops get it implicitly


def test_duplicate_op_names(tmp_path):
    err = error_of(
        tmp_path,
        "- func: f(Tensor self) -> Tensor\n- func: f(Tensor self) -> Tensor\n",
    )
    assert "ops.yaml:2: error: op 'f' is defined twice (first on line 1)" in err


# --- structured ------------------------------------------------------------------


@pytest.mark.parametrize(
    "yaml, message",
    [
        (
            "- func: f(Tensor self) -> Tensor\n  structured_delegate: f.out\n",
            "'f.out', which does not exist",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n"
            "    CPU: f_out\n- func: f(Tensor self) -> Tensor\n  structured_delegate: f.out\n",
            "not marked 'structured: True'",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  structured: True\n",
            "put structured: True on the out= variant",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
            "  structured_delegate: f.out\n",
            "not allowed on out= ops",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  structured_inherits: Base\n  dispatch:\n"
            "    CPU: f\n",
            "structured_inherits requires structured: True",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  precomputed:\n  - a -> int b\n  dispatch:\n"
            "    CPU: f\n",
            "precomputed requires structured: True",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n"
            "  device_guard: False\n",
            "device_guard: False is not respected",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n"
            "- func: f(Tensor self) -> Tensor\n  structured_delegate: f.out\n  dispatch:\n"
            "    CPU: f_cpu\n",
            "must not list CPU in dispatch",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n"
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: f_cpu\n",
            "disagree on being structured",
        ),
    ],
)
def test_structured_rules(tmp_path, yaml, message):
    assert message in error_of(tmp_path, yaml)


# --- dispatch ----------------------------------------------------------------------------


def test_no_dispatch_table_means_composite_implicit_named_after_the_op(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: f(Tensor self) -> Tensor
        - func: g.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
        - func: g(Tensor self) -> Tensor
        - func: h(Tensor self) -> Tensor
          dispatch: {}
        """,
    )
    assert m.by_name["aten::f"].dispatch["CompositeImplicitAutograd"].kernel == "f"
    assert m.by_name["aten::g.out"].dispatch["CompositeImplicitAutograd"].kernel == "g_out"
    assert dict(m.by_name["aten::h"].dispatch) == {}


def test_more_than_one_composite_key_is_an_error(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: f(Tensor self) -> Tensor
          dispatch:
            CompositeExplicitAutograd: f
            CompositeExplicitAutogradNonFunctional: f2
        """,
    )
    assert "ops.yaml:2: error: cannot specify more than one of CompositeExplicitAutograd, " in err
    assert "or CompositeImplicitAutograd on a single kernel; each strictly subsumes" in err


@pytest.mark.parametrize(
    "yaml, message",
    [
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: f\n",
            "unnecessary dispatch table",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: g\n",
            "expected 'f' but got 'g'",
        ),
        (
            "- func: new_thing(Tensor self) -> Tensor\n",
            "factory function 'new_thing' needs a CompositeExplicitAutograd dispatch entry",
        ),
        (
            "- func: make(int n, *, ScalarType? dtype=None, Layout? layout=None, "
            "Device? device=None, bool? pin_memory=None) -> Tensor\n",
            "factory function 'make'",
        ),
        (
            "- func: rand_thing(Tensor self) -> Tensor\n  dispatch:\n    CPU: r\n",
            "nondeterministic_seeded",
        ),
    ],
)
def test_implicit_dispatch_rules(tmp_path, yaml, message):
    assert message in error_of(tmp_path, yaml)


# --- generated variants ------------------------------------------------------------------


def test_inplace_op_gets_out_and_functional_variants(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: zero_(Tensor(a!) self) -> Tensor(a!)
          dispatch:
            CPU: zero_cpu_
          autogen: zero, zero.out
          tags: nondeterministic_seeded
        """,
    )
    s = schemas(m)
    assert s["zero.out"] == "zero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    # self is already returned, so it does not become an extra `self_out` return.
    assert s["zero"] == "zero(Tensor self) -> Tensor"
    for name in ("zero", "zero.out"):
        f = m.by_name[f"aten::{name}"]
        assert f.generated and not f.structured
        assert f.variants == {"function"}
        # inherited tags, plus "generated"
        assert {"generated", "nondeterministic_seeded", "pt2_compliant_tag"} <= f.tags
    assert dict(m.by_name["aten::zero.out"].dispatch)["CompositeExplicitAutograd"].kernel == (
        "zero_out"
    )
    assert m.by_name["aten::zero"].dispatch["CompositeExplicitAutograd"].kernel == "zero"
    (g,) = m.groups
    assert (str(g.functional.name), str(g.out.name), str(g.inplace.name)) == (
        "zero",
        "zero.out",
        "zero_",
    )


def test_mutable_op_gets_functional_named_op_functional_and_out0_out1(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: helper(Tensor self, Tensor(a!) rmin, Tensor(b!) rmax, SymInt n) -> (Tensor output, Tensor mask)
          dispatch:
            CPU: helper_cpu
          autogen: helper_functional, helper.out
        """,
    )
    s = schemas(m)
    assert s["helper.out"] == (
        "helper.out(Tensor self, Tensor(a!) rmin, Tensor(b!) rmax, SymInt n, *, "
        "Tensor(c!) out0, Tensor(d!) out1) -> (Tensor(c!), Tensor(d!))"
    )
    assert s["helper_functional"] == (
        "helper_functional(Tensor self, Tensor rmin, Tensor rmax, SymInt n) -> "
        "(Tensor output, Tensor mask, Tensor rmin_out, Tensor rmax_out)"
    )
    # SymInt bases give `_symint` kernels; out kernels are `<name>_<overload>`.
    assert m.by_name["aten::helper.out"].dispatch["CompositeExplicitAutograd"].kernel == (
        "helper_out_symint"
    )
    assert m.by_name["aten::helper_functional"].dispatch["CompositeExplicitAutograd"].kernel == (
        "helper_functional_symint"
    )
    (g,) = m.groups
    assert str(g.mutable.name) == "helper"


def test_overloaded_out_name_and_tensor_list_outs_return_nothing(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: split_it.sizes(Tensor self, int[] s) -> Tensor[]
          dispatch:
            CompositeExplicitAutograd: split_it
          autogen: split_it.sizes_out
        """,
    )
    assert schemas(m)["split_it.sizes_out"] == (
        "split_it.sizes_out(Tensor self, int[] s, *, Tensor(a!)[] out) -> ()"
    )
    assert m.by_name["aten::split_it.sizes_out"].dispatch["CompositeExplicitAutograd"].kernel == (
        "split_it_sizes_out"
    )


def test_missing_autogen_line_is_an_error(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: f_(Tensor(a!) self) -> Tensor(a!)
          dispatch:
            CPU: f_
          autogen: f.out
        """,
    )
    assert "ops.yaml:1: error:" in err
    assert "so the entry needs 'autogen: f, f.out', but it has 'autogen: f.out'" in err


def test_generation_needs_an_autogen_line(tmp_path):
    # Without autogen nothing is generated and the lone inplace op stays ungrouped.
    m = model_of(
        tmp_path,
        "- func: f_(Tensor(a!) self) -> Tensor(a!)\n  dispatch:\n    CPU: f_\n",
    )
    assert [str(f.name) for f in m.functions] == ["f_"]
    assert m.groups == ()


def test_functional_is_generated_only_together_with_an_out_variant(tmp_path):
    # The op returns no tensor, so no out= variant, so no functional either:
    # torchgen rejects such a mutable op whether or not it asks for the out= variant.
    err = error_of(
        tmp_path,
        """\
        - func: g(Tensor self, Tensor(a!) st) -> int
          dispatch:
            CPU: g
          autogen: g.out
        """,
    )
    assert "mutable op 'g' returns no tensors, so no out= or functional variant" in err


@pytest.mark.parametrize(
    "extra",
    [
        "  manual_cpp_binding: True\n",  # bypasses the dispatcher
        "",  # handled below: CompositeImplicitAutograd-only (no dispatch table)
    ],
)
def test_skipped_groups_get_no_variants(tmp_path, extra):
    yaml = "- func: f_(Tensor(a!) self) -> Tensor(a!)\n  autogen: f, f.out\n" + extra
    m = model_of(tmp_path, yaml)
    assert not any(f.generated for f in m.functions)


def test_core_composite_ops_do_get_variants(tmp_path):
    m = model_of(
        tmp_path,
        "- func: f_(Tensor(a!) self) -> Tensor(a!)\n  autogen: f, f.out\n  tags: core\n",
    )
    assert sorted(str(f.name) for f in m.functions if f.generated) == ["f", "f.out"]


def test_views_get_no_variants(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: v(Tensor(a) self) -> Tensor(a)
          dispatch:
            CompositeExplicitAutograd: v
          autogen: v.out
        - func: v_copy(Tensor self) -> Tensor
          tags: view_copy
          dispatch:
            CompositeExplicitAutogradNonFunctional: v_copy
        """,
    )
    assert "v.out" not in schemas(m)


def test_lone_out_op_is_an_error(tmp_path):
    err = error_of(
        tmp_path,
        "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU: f\n",
    )
    assert "out= op 'f.out' has no functional or inplace variant to group with" in err


def test_kind_appears_once_per_signature(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: f.a(Tensor self) -> Tensor
          dispatch:
            CPU: f
        - func: f.b(Tensor self) -> Tensor
          dispatch:
            CPU: f
        """,
    )
    assert "'f.b' and 'f.a' (line 1) are both functional variants of the same signature" in err


def test_inplace_and_out_without_functional_need_an_autogen_line(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: f_(Tensor(a!) self) -> Tensor(a!)
          dispatch:
            CPU: f_
        - func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
          dispatch:
            CPU: f_out
        """,
    )
    assert "ops.yaml:1: error: 'f_' needs generated variants 'f'; please add an 'autogen: f'" in err


def test_group_without_functional_is_an_error(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: f_(Tensor(a!) self, Tensor(b!) st) -> Tensor(a!)
          dispatch:
            CPU: f_
        - func: f.m(Tensor self, Tensor(b!) st) -> Tensor
          dispatch:
            CPU: f_m
        """,
    )
    assert "variants f.m, f_ have no functional variant" in err


def test_mutable_group_needs_functional_overload_name(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: m(Tensor self, Tensor(a!) st) -> Tensor
          dispatch:
            CPU: m
        - func: m.out(Tensor self, Tensor(a!) st, *, Tensor(b!) out) -> Tensor(b!)
          dispatch:
            CPU: m_out
        - func: m.f(Tensor self, Tensor st) -> (Tensor, Tensor)
          dispatch:
            CPU: m_f
        """,
    )
    assert "must be named 'm_functional'" in err


# --- view groups ---------------------------------------------------------------------


def test_view_group_pairs_view_inplace_view_and_view_copy(tmp_path):
    m = model_of(
        tmp_path,
        """\
        - func: t(Tensor(a) self) -> Tensor(a)
          dispatch:
            CompositeExplicitAutograd: t
        - func: t_(Tensor(a!) self) -> Tensor(a!)
          tags: inplace_view
          dispatch:
            CompositeExplicitAutograd: t_
        - func: t_copy(Tensor self) -> Tensor
          tags: view_copy
          dispatch:
            CompositeExplicitAutogradNonFunctional: t_copy
        """,
    )
    (g,) = m.view_groups
    assert (str(g.view.name), str(g.view_inplace.name), str(g.view_copy.name)) == (
        "t",
        "t_",
        "t_copy",
    )


@pytest.mark.parametrize(
    "yaml, message",
    [
        (
            "- func: v(Tensor(a) self) -> Tensor(a)\n  dispatch:\n    CPU: v\n",
            "needs its non-aliasing counterpart 'v_copy'",
        ),
        (
            "- func: v(Tensor(a) self) -> Tensor(a)\n  dispatch:\n    CPU: v\n"
            "- func: v_copy(Tensor self) -> Tensor\n  dispatch:\n    CPU: vc\n",
            "needs the view_copy tag",
        ),
        (
            "- func: v_(Tensor(a!) self) -> Tensor(a!)\n  tags: inplace_view\n"
            "  dispatch:\n    CPU: v\n",
            "needs its out-of-place view op 'v'",
        ),
        (
            "- func: v(Tensor(a) self) -> Tensor(a)\n  tags: inplace_view\n"
            "  dispatch:\n    CPU: v\n",
            "tagged inplace_view but its name has no trailing '_'",
        ),
    ],
)
def test_view_group_rules(tmp_path, yaml, message):
    if message is None:  # an inplace view alone is fine
        assert model_of(tmp_path, yaml).view_groups == ()
    else:
        assert message in error_of(tmp_path, yaml)


def test_all_errors_are_reported_in_one_pass(tmp_path):
    err = error_of(
        tmp_path,
        """\
        - func: f(Tensor self) -> Tensor
          bogus: 1
        - func: g(Tensor self) -> Tensor
          tags: nope
        """,
    )
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{tmp_path}/ops.yaml:2: error: unknown key 'bogus'")
    assert lines[1].startswith(f"{tmp_path}/ops.yaml:4: error: unknown tag 'nope'")


def test_a_custom_view_copy_without_a_dispatch_table_is_an_error(tmp_path):
    # It would be CompositeImplicitAutograd with a kernel nobody writes: the library would
    # build and then fail to load on an undefined at::native::head_copy.
    yaml = """\
        - func: vops::head(Tensor(a) self, SymInt length) -> Tensor(a)
          dispatch:
            CompositeExplicitAutograd: head
        - func: vops::head_copy(Tensor self, SymInt length) -> Tensor
          tags: view_copy
        """
    err = error_of(tmp_path, yaml)
    assert err.count("\n") == 0, err
    assert err.endswith(
        "ops.yaml:5: error: 'head_copy' is tagged view_copy but has no dispatch table; give it "
        "`dispatch: {CompositeExplicitAutogradNonFunctional: head_copy}` and atengen generates "
        "its kernel from the view (or name the kernels you write)"
    ), err
    # With the key named, the model takes it, and the generator writes the kernel.
    fixed = yaml.rstrip(" ") + (
        "          dispatch:\n            CompositeExplicitAutogradNonFunctional: head_copy\n"
    )
    m = model_of(tmp_path, fixed)
    assert set(m.by_name["vops::head_copy"].dispatch) == {"CompositeExplicitAutogradNonFunctional"}
