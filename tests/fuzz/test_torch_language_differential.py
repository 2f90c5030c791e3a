"""The op YAML's reading of custom-namespace schemas against torch's own parser.

Outside aten, `func:` takes a schema as torch's `TORCH_LIBRARY` takes it (`Tensor!`, any
whitespace, `->` without spaces). Whatever atengen accepts, torch must accept; the library
registers a text torch parses exactly as the author's; and the model reads every argument and
return as torch does. Where atengen refuses what torch takes, the reason must be one of
JUSTIFIED_REJECTIONS: what a C++ kernel cannot carry, or a default torch would misread.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz import harness, strategies

JUSTIFIED_REJECTIONS = {
    r"argument '…': default value .* is not .*": "torch parses defaults without checking them "
    "against the type; the C++ and Python bindings then disagree about the value",
    r"duplicate argument name '…': .*": "a C++ kernel cannot have two parameters of one name",
    r"return type '…' has no C\+\+ return type.*": "no C++ return type for it",
    r"positional argument '…' has no default but follows '…'.*": "C++ default arguments must "
    "come last",
    r"unrecognized type '…'": "torch reads an unknown name as some type; a kernel needs a C++ type",
    r"kwarg-only marker '…' may appear only once": "torch accepts a second '*' silently",
    r"list size in '…' is larger than 2147483647": "torch registers another size",
    r"'…' cannot be an? \w+ name .*": "torch reads True, False, None as constants",
    r"mutable arguments before self are not supported": "the C++ method API puts self first",
    r"TensorOptions arguments .*": "C++ packs dtype, layout, device, pin_memory into "
    "TensorOptions only for functional ops",
    r"overload name '…' contains '…'.*": "reserved for generated functional variants",
    r"argument '…' follows the out arguments.*": "keyword-only mutable arguments are out "
    "arguments, which come last in C++",
    r"type '…' is for precomputed declarations only": "not a type of torch's parser",
    r"'…' is not a legal overload name .*": "torch names the unnamed overload `default`",
    r"type '…' is not known to torch .*'s parser": "`generate` refuses Dimname where the "
    "release's parser does not know it",
    r"unrecognized alias analysis form '…'": "the model annotates Tensor, Tensor? and Tensor[] "
    "(torchgen's forms); no real schema annotates another type, such as `Tensor(a)[3]?`",
}


def _justified(message: str) -> bool:
    normalised = re.sub(r"'[^']*'", "'…'", message)
    return any(re.fullmatch(p, normalised) for p in JUSTIFIED_REJECTIONS)


@pytest.mark.parametrize(
    "text",
    [
        "rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()",
        "rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
        "Tensor cos_sin_cache, bool is_neox) -> ()",
        "apply_repetition_penalties_(Tensor! logits, Tensor prompt_mask, Tensor output_mask, "
        "Tensor repetition_penalties) -> ()",
        "moe_permute(Tensor input, Tensor topk_ids, int n_expert)->()",
        "marlin_gemm(Tensor a, Tensor? b_bias_or_none,Tensor b_scales) -> Tensor",
        "get_problem_sizes(\n    Tensor expert_offsets, Tensor! problem_sizes1,\n"
        "    int n, int k) -> ()",
        "compressor_metadata_out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
        "linear_1bit.out(Tensor x, Tensor w, *, Tensor(a!) out) -> Tensor(a!)",
        "f(Tensor self, int?? x) -> int",
        "f(Tensor(aa!) x, Tensor[](b!) ys, int[2] k=[1, 2]) -> Tensor(aa!)",
        "f(Tensor! a, Tensor! b) -> (Tensor, Tensor)",
        "foo_(Tensor(a!) self) -> Tensor(a!)",
        "foo_(Tensor(a!) self) -> ()",
        # vLLM's CPU bindings (csrc/cpu/torch_bindings.cpp): a list annotated as a whole,
        # optional; alias sets of two characters; no arguments at all.
        "shm_gather(int handle, Tensor data, Tensor[](a!)? outputs, int dst) -> ()",
        "shm_send_tensor_list(int handle, Tensor[](a) tensor_list, int dst) -> ()",
        "shm_recv_tensor_list(int handle, int src) -> Tensor[](a)",
        "weight_packed_linear(Tensor(a0!) mat1, Tensor(a1!) mat2, Tensor(a2!)? bias, "
        "bool is_vnni) -> Tensor",
        "static_scaled_fp8_quant() -> ()",
    ],
)
def test_real_spellings_are_read_as_torch_reads_them(text):
    assert harness.torch_language_verdict(text) == ("accept", "accept", "")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("offload_tensor(Tensor a, int id, int id) -> Tensor", "duplicate argument name 'id'"),
        ("f(Tensor x) -> int[1]?", "no C++ return type"),
        ("f(Tensor! x, Tensor(a!) y, int y) -> ()", "duplicate argument name 'y'"),
    ],
)
def test_what_cpp_cannot_carry_is_refused_with_the_reason(text, fragment):
    ours, theirs, detail = harness.torch_language_verdict(text)
    assert (ours, theirs) == ("reject", "accept"), detail
    assert fragment in detail and _justified(detail), detail


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(strategies.torch_language_schema())
def test_fuzzed_torch_spellings_are_read_alike(text):
    ours, theirs, detail = harness.torch_language_verdict(text)
    if ours == "accept":
        assert (theirs, detail) == ("accept", ""), text
    elif theirs == "accept":
        assert _justified(detail), f"unjustified rejection of {text!r}: {detail}"
