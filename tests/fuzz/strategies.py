"""Hypothesis generators for schema strings, op-YAML entries, backend YAMLs and CLI flag values.

Each draws mostly from small pools of valid pieces, with hostile pieces mixed in (Python
keywords, `..`, non-ASCII, bad defaults, odd types), so that a good share of inputs pass
the early checks and reach the emitters and the writer.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

NAMES = ["f", "g", "h", "f", "g", "my_inverse", "v_copy", "foo_", "__iand__", "from", "x1"]
ARG_NAMES = ["other", "x", "dim", "alpha", "size", "y", "z", "out", "from", "self", "_scratch_a"]
COMMON_TYPES = ["Tensor", "Tensor", "Tensor", "int", "bool", "float", "Scalar", "SymInt[]", "int[]"]
BASE_TYPES = [
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Layout",
    "Device", "MemoryFormat", "Generator", "Dimname", "Storage", "Stream", "DeviceIndex",
    "SymBool", "QScheme", "GraphModule", "DimVector", "Bogus",
]  # fmt: skip
SUFFIXES = ["", "", "", "", "", "", "?", "[]", "[1]", "[2]", "[]?", "[3]?", "?[]"]
ANNOTATIONS = ["", "", "", "", "", "", "", "(a)", "(a!)", "(b!)", "(a -> *)", "(a|b)", "(c!)"]
DEFAULTS = [
    None, None, None, None, None, None, None, None, None, None, None, "None", "1", "-1", "0", "1.5", "1e-05", "True", "False", "[]", "[0,1]",
    "[1, 2]", '"x"', "'linear'", '"\u00e9"', "Mean", "long", "contiguous_format", "strided",
    "Fp=False", "inf", "0x10", '"a\\\\nb"', "[True,False]", "foo", "1j", "",
]  # fmt: skip
RETURNS = [
    "Tensor", "Tensor", "Tensor", "Tensor", "()", "Tensor", "Tensor(a)", "Tensor(a!)", "(Tensor, Tensor)", "(Tensor(a!), Tensor(b!))",
    "Tensor[]", "Tensor(a)[]", "int", "Scalar", "Scalar?", "int[]?", "int[1]?", "SymInt[3]",
    "Dimname[1]", "bool", "float[]", "Tensor?", "(Tensor values, Tensor indices)", "str",
]  # fmt: skip


@st.composite
def argument(draw) -> str:
    if draw(st.integers(0, 2)):  # mostly plain, valid types
        t, suffix = draw(st.sampled_from(COMMON_TYPES)), ""
    else:
        t, suffix = draw(st.sampled_from(BASE_TYPES)), draw(st.sampled_from(SUFFIXES))
    annotation = draw(st.sampled_from(ANNOTATIONS)) if t == "Tensor" else ""
    text = f"{t}{annotation}{suffix} {draw(st.sampled_from(ARG_NAMES))}"
    default = draw(st.sampled_from(DEFAULTS))
    return text if default is None else f"{text}={default}"


@st.composite
def schema(draw) -> str:
    name = draw(st.sampled_from(NAMES))
    overload = draw(st.sampled_from(["", "", "", "", "Tensor", "out", "default", "functional"]))
    args = draw(st.lists(argument(), max_size=4))
    if args and draw(st.integers(0, 3)) == 0:
        args.insert(draw(st.integers(0, len(args))), "*")
    if draw(st.integers(0, 3)):
        args.insert(0, "Tensor(a!) self" if name.endswith("_") else "Tensor self")
    head = f"{name}.{overload}" if overload else name
    text = f"{head}({', '.join(args)}) -> {draw(st.sampled_from(RETURNS))}"
    if draw(st.integers(0, 14)) == 0:  # a raw edit: a stray character somewhere
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from(list("(), -=>!*?[]a\u00e9 "))) + text[i:]
    return text


DISPATCH_KEYS = [
    "CPU", "CPU", "CPU", "CompositeExplicitAutograd", "CPU", "CUDA", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
    "SparseCPU", "GPU", "CPU, CUDA",
]  # fmt: skip
EXTRA_KEYS = [
    "  variants: function, method\n", "  variants: method\n", "  tags: core\n",
    "  tags: [inplace_view]\n", "  tags: view_copy\n", "  autogen: {name}.out\n",
    "  autogen: {name}, {name}.out\n", "  structured: True\n", "  device_guard: False\n",
    "  manual_cpp_binding: True\n", "  variants: !!int x\n", "  tags: !foo [core]\n",
    "  python_module: nn\n", "  device_check: NoCheck\n", "  structured_delegate: {name}.out\n",
]  # fmt: skip


@st.composite
def op_entry(draw) -> str:
    func = draw(schema())
    if draw(st.integers(0, 4)) == 0:
        func = "myops::" + func
    name = func.split("(", 1)[0].split("::")[-1]
    text = f"- func: {func}\n"
    if draw(st.integers(0, 3)):
        keys = draw(st.lists(st.sampled_from(DISPATCH_KEYS), min_size=1, max_size=2, unique=True))
        text += "  dispatch:\n" + "".join(f"    {k}: k_{i}\n" for i, k in enumerate(keys))
    extras = draw(st.lists(st.sampled_from(EXTRA_KEYS), max_size=2, unique=True))
    for extra in extras if draw(st.booleans()) else ():
        text += extra.format(name=name.split(".")[0])
    return text


HOSTILE_DOCUMENTS = [
    "- &a [*a]\n",
    '- &a ["x","x","x","x","x","x","x","x","x"]\n'
    + "".join(
        f"- &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)
    ),
    "[" * 300 + "]" * 300 + "\n",
    "".join(f"{' ' * i}k{i}:\n" for i in range(300)),
    "",
    "\x00\x01",
    "- func: f(Tensor self) -> Tensor\n  dispatch: !!omap {CPU: k}\n",
]


@st.composite
def op_yaml(draw) -> str:
    if draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(HOSTILE_DOCUMENTS))
    return "".join(draw(st.lists(op_entry(), min_size=1, max_size=3)))


BACKEND_NAMES = [
    "PrivateUse1", "PrivateUse1", "PrivateUse1", "PrivateUse1", "XLA", "XLA", "XLA", "CPU", "Meta", "../../x", "my backend", "caf\u00e9",
    "a/b", "Autograd", "Lazy", "NotAKey", "", "1x",
]  # fmt: skip
BACKEND_OPS = [
    "abs", "abs.out", "abs_", "neg", "add.Tensor", "add.out", "add_.Tensor", "mul.Tensor",
    "view", "view_copy", "abs", "neg", "add.Tensor", "nope", "add.Ten-sor",
]  # fmt: skip


@st.composite
def backend_yaml(draw) -> str:
    if draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(HOSTILE_DOCUMENTS))
    name = draw(st.sampled_from(BACKEND_NAMES))
    text = f'backend: "{name}"\n' if draw(st.booleans()) else f"backend: {name}\n"
    namespaces = ["my_backend", "my_backend", "my_backend", "a::b", "a/b", ".."]
    text += f"cpp_namespace: {draw(st.sampled_from(namespaces))}\n"
    if draw(st.integers(0, 3)) == 0:
        text += f'class_name: "{draw(st.sampled_from(["Kernels", "../x", "a b", "K1"]))}"\n'
    for key in ("supported", "autograd", "symint"):
        if draw(st.integers(0, 2)) or key == "supported":
            ops = draw(st.lists(st.sampled_from(BACKEND_OPS), max_size=5))
            text += f"{key}:\n" + "".join(f"- {op}\n" for op in ops)
    if draw(st.integers(0, 9)) == 0:
        text += draw(
            st.sampled_from(
                ["extra_headers: [../x.h]\n", "use_out_as_primary: 1\n", "full_codegen: [abs]\n"]
            )
        )
    return text


# CLI flag values. Paths are relative to the fuzz workspace, whose `out*` names are the
# declared output directories; `file` is a regular file there (so `file/sub` cannot be made).
OUTPUT_DIRS = ["out", "out", "out", "out", "out/nested", "file/sub", "file", "out2"]
GENERATE_FLAGS = st.fixed_dictionaries(
    {
        "ops": st.sampled_from(["all", "all", "all", "all", "f", "f,g", "nope", ",", "f.Tensor"]),
        "keys": st.sampled_from(["auto"] * 6 + ["CPU", "CPU,Meta", "Bogus", "Functionalize"]),
        "shards": st.sampled_from(["0"] * 6 + ["1", "3", "-1", "x"]),
        "output_dir": st.sampled_from(OUTPUT_DIRS),
        "header_output_dir": st.sampled_from([None, "headers", "headers", "out", "file/sub"]),
        "cuda_output_dir": st.sampled_from([None, None, "cuda", "out"]),
        "functionalize": st.booleans(),
    }
)
BACKEND_FLAGS = st.fixed_dictionaries(
    {
        "output_dir": st.sampled_from(OUTPUT_DIRS),
        "header_output_dir": st.sampled_from([None, None, "headers", "file/sub"]),
        "include_prefix": st.sampled_from(["", "", "", "my/backend", "../..", "/abs", "a b"]),
        "shards": st.sampled_from(["0"] * 6 + ["2", "-1"]),
        "functional_backend": st.booleans(),
        "check_stamp": st.sampled_from([None, None, "stamp", "file/stamp", "out3/stamp"]),
    }
)


# --- lazy-tensor backend YAMLs (`atengen lazy`) ----------------------------------------------

LAZY_BACKEND_NAMES = (["Lazy", "XLA", "PrivateUse1"], ["CPU", "../x", "a b", ""])
LAZY_NAMESPACES = (["torch::lazy", "my_lazy"], ["a/b", ".."])
LAZY_OPS = (
    ["abs", "neg", "add.Tensor", "mul.Tensor", "view_copy", "abs.out", "abs_", "add_.Tensor"],
    ["view", "nope", "add.Ten-sor"],
)
NON_NATIVE_PROPERTIES = [
    "ShapeCompute", "ShapeCache", "CanBeReused", "Lower", "TreatScalarsAsConstants",
    "ShapeComputeX", "", "ShapeCompute ShapeCache",
]  # fmt: skip


@st.composite
def non_native_entry(draw) -> str:
    text = f"- func: {draw(schema())}\n"
    if draw(st.integers(0, 3)):
        text += f"  opkind: {draw(st.sampled_from(['ltc_f', 'at::aten::abs', 'a b', '']))}\n"
    if draw(st.booleans()):
        props = draw(st.lists(st.sampled_from(NON_NATIVE_PROPERTIES), max_size=3))
        text += "  properties:\n" + "".join(f"  - {p}\n" for p in props)
    return text


def mostly(pools: tuple[list[str], list[str]]):
    """A value of pools[0] (valid) when a drawn digit is not 5, else of pools[1] (hostile): so
    that most inputs get past the first checks. (Hypothesis draws boundary indices often, so duplicating
    valid values in one list does not weight them.)"""
    valid, hostile = pools
    return st.integers(0, 9).flatmap(
        lambda n: st.sampled_from(hostile if n == 5 else valid)  # 5: not a boundary
    )


@st.composite
def lazy_yaml(draw) -> str:
    if draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(HOSTILE_DOCUMENTS))
    text = f"backend: {draw(mostly(LAZY_BACKEND_NAMES))}\n"
    text += f"cpp_namespace: {draw(mostly(LAZY_NAMESPACES))}\n"
    for key in ("full_codegen", "ir_gen", "supported", "autograd", "symint"):
        if key == "full_codegen" or draw(st.integers(0, 2)) == 0:
            # An op listed twice (an error across lists) now and then, not in most inputs.
            unique = draw(st.integers(0, 5)) > 0
            ops = draw(st.lists(mostly(LAZY_OPS), max_size=4, unique=unique))
            text += f"{key}:\n" + "".join(f"- {op}\n" for op in ops)
    if draw(st.integers(0, 3)) == 0:
        entries = draw(st.lists(non_native_entry(), min_size=1, max_size=2))
        text += "non_native:\n" + "".join(entries)
    return text


# The shape-inference header given to --shape_inference_file: absent, the workspace's regular
# file, a missing path, or `shapes.h` (harness.LAZY_SHAPES_H, declaring some compute_shape_*).
LAZY_FLAGS = st.fixed_dictionaries(
    {
        "output_dir": st.sampled_from(OUTPUT_DIRS),
        "shards": mostly((["0", "2"], ["-1"])),
        "include_prefix": mostly((["", "my/lazy"], ["../..", "/abs", "a b"])),
        "node_base": st.sampled_from([None, None, "XlaNode", "a b", "::x::Node"]),
        "shape_inference_file": st.sampled_from([None, None, "shapes.h", "file", "missing.h"]),
        "no_ts_lowerings": st.booleans(),
    }
)


# --- derivatives YAMLs (`atengen autograd`) --------------------------------------------------

DERIVATIVE_NAMES = (
    [
        "abs(Tensor self) -> Tensor", "neg(Tensor self) -> Tensor",
        "abs_(Tensor(a!) self) -> Tensor(a!)",
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "mul.Tensor(Tensor self, Tensor other) -> Tensor",
        "myops::scale(Tensor self, float factor) -> Tensor",
    ],
    ["view(Tensor(a) self, SymInt[] size) -> Tensor(a)", "nope(Tensor self) -> Tensor"],
)  # fmt: skip
FORMULAS = [
    "grad", "grad * self.sgn()", "-grad", "grad * other", "maybe_multiply(grad, alpha.conj())",
    "non_differentiable", "grads[0]", "grad * result", "grad.reshape_symint(self.sym_sizes())",
    "auto_element_wise", "auto_linear", "self_t * other_p", "not_implemented(\"x\")", "grad +",
    "grad_nope", "", "self_t.sgn() * result", "\"grad\"",
]  # fmt: skip
DERIVATIVE_KEYS = (["self", "other", "result", "factor", "self, other"], ["alpha", "size", "x"])


@st.composite
def derivative_entry(draw) -> str:
    name = draw(mostly(DERIVATIVE_NAMES))
    if draw(st.integers(0, 19)) == 5:
        name = draw(schema())
    text = f'- name: "{name}"\n'
    for key in draw(st.lists(mostly(DERIVATIVE_KEYS), max_size=3, unique=True)):
        formula = draw(st.sampled_from(FORMULAS))
        # Plain, as derivatives.yaml writes most formulas, or double-quoted.
        text += f"  {key}: {formula if draw(st.booleans()) else json.dumps(formula)}\n"
    if draw(st.integers(0, 5)) == 0:
        text += draw(
            st.sampled_from(
                [
                    "  output_differentiability: [True]\n",
                    "  output_differentiability: [False, True]\n",
                    "  dispatch:\n    Default:\n      self: grad\n",
                    "  dispatch: CPU\n",
                    "  bogus_key: 1\n",
                ]
            )
        )
    return text


@st.composite
def derivatives_yaml(draw) -> str:
    if draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(HOSTILE_DOCUMENTS))
    return "".join(draw(st.lists(derivative_entry(), min_size=1, max_size=3)))


AUTOGRAD_FLAGS = st.fixed_dictionaries(
    {
        "output_dir": st.sampled_from([None, *OUTPUT_DIRS]),
        "namespace": mostly(([None, "aten", "myops"], ["a b"])),
        "cpp_namespace": mostly(([None], ["my::grad", "a b"])),
        "ops": mostly(([None, "abs", "scale,neg"], ["nope"])),
        "shards": mostly((["0", "2"], ["-1"])),
    }
)


# Spellings torch's tokenizer takes between tokens, beyond the op YAML's canonical single space.
_GAPS = ["", " ", "  ", "\n", "\n    ", "\t"]


@st.composite
def torch_language_schema(draw) -> str:
    """A schema() respelled as custom-op authors write theirs for TORCH_LIBRARY: `Tensor!` for
    an annotation, any whitespace around `,`, `->` and parentheses."""
    text = draw(schema())
    if draw(st.booleans()):
        text = text.replace("(a!)", "!").replace("(b!)", "!")
    out = []
    for piece in text.split(", "):
        out.append(piece)
        out.append("," + draw(st.sampled_from(_GAPS)))
    text = "".join(out[:-1])
    text = text.replace(" -> ", draw(st.sampled_from(["->", " -> ", "\n  -> ", " ->"])), 1)
    if draw(st.booleans()):
        text = text.replace("(", "(" + draw(st.sampled_from(_GAPS)), 1)
    return text
