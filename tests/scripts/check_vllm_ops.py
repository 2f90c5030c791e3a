"""vLLM's operators built from their own schemas (tests/data/vllm_ops), loaded into a fresh
interpreter and checked against torch.

    python tests/scripts/check_vllm_ops.py LIBRARY SCHEMAS_JSON [BACKEND]

Run by tests/workspace/test_vllm_schemas_unchanged.py once per ABI. SCHEMAS_JSON maps each op name to the
text vLLM's ops.def() hands torch (without the namespace); BACKEND is torch.compile's (default
"inductor"). Prints one JSON line, {"checks": {name: bool}, "details": {name: text}}: every
registered schema equals torch._C.parse_schema("myllm::" + text) (its text, and which arguments
are written); every op's values equal a plain-torch reference (float32; float64 too for some);
torch.library.opcheck passes (its default tests); and one torch.compile(fullgraph=True) function
calling every op gives eager's values.
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
import time
import traceback

import torch
import torch.nn.functional as F

EPS = 1e-6


def fail_text() -> str:
    return traceback.format_exc(limit=3)[-1500:]


# --- the schemas ------------------------------------------------------------------------------


def write_flags(schema) -> list[tuple[str, bool]]:
    return [(a.name, a.alias_info is not None and a.alias_info.is_write) for a in schema.arguments]


def check_schemas(schemas: dict[str, str], checks: dict, details: dict) -> None:
    for name, text in schemas.items():
        try:
            registered = getattr(torch.ops.myllm, name).default._schema
            expected = torch._C.parse_schema("myllm::" + text)
            same = (
                str(registered) == str(expected)
                and registered == expected
                and write_flags(registered) == write_flags(expected)
                and [str(r) for r in registered.returns] == [str(r) for r in expected.returns]
                and registered.is_mutable == expected.is_mutable
            )
            checks[f"schema_{name}"] = same
            if not same:
                details[f"schema_{name}"] = (
                    f"registered {registered} {write_flags(registered)}; "
                    f"torch parses {expected} {write_flags(expected)}"
                )
        except Exception:
            checks[f"schema_{name}"] = False
            details[f"schema_{name}"] = fail_text()


# --- plain-torch references -------------------------------------------------------------------


def ref_rms_norm(x, w, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def ref_rotary(positions, t, head_size, cache, is_neox):
    """vLLM's rotation written with complex numbers: each pair (x, y) of a head's first rot_dim
    values (the two halves for NeoX, neighbours for GPT-J) times exp(i * theta)."""
    if t is None:
        return None
    rot_dim = cache.shape[1]
    half = rot_dim // 2
    num_tokens = positions.numel()
    heads = t.double().reshape(num_tokens, -1, head_size).clone()
    cos_sin = cache.double()[positions.reshape(-1)]
    turn = torch.complex(cos_sin[:, :half], cos_sin[:, half:]).unsqueeze(1)
    rot = heads[..., :rot_dim]
    if is_neox:
        pairs = torch.complex(rot[..., :half], rot[..., half:])
    else:
        pairs = torch.view_as_complex(rot.reshape(num_tokens, -1, half, 2).contiguous())
    turned = pairs * turn
    if is_neox:
        heads[..., :rot_dim] = torch.cat([turned.real, turned.imag], -1)
    else:
        heads[..., :rot_dim] = torch.view_as_real(turned).reshape(num_tokens, -1, rot_dim)
    return heads.reshape(t.shape).to(t.dtype)


def ref_silu_and_mul(x):
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def ref_repetition_penalties(logits, prompt_mask, output_mask, penalties):
    """vLLM's apply_repetition_penalties_torch."""
    logits = logits.clone()
    penalties = penalties.unsqueeze(dim=1).repeat(1, logits.size(1))
    penalties = torch.where(prompt_mask | output_mask, penalties, 1.0)
    scaling = torch.where(logits > 0, 1.0 / penalties, penalties)
    logits *= scaling
    return logits


def ref_int8_quant(x, scale, azp):
    q = torch.round(x.float() / scale.float()).to(torch.int32)
    if azp is not None:
        q = q + azp.to(torch.int32)
    return q.clamp(-128, 127).to(torch.int8)


def rope_cache(max_position, rot_dim, dtype, base=10000.0):
    """vLLM's RotaryEmbedding._compute_cos_sin_cache."""
    inv_freq = 1.0 / (base ** (torch.arange(0, rot_dim, 2, dtype=torch.float64) / rot_dim))
    freqs = torch.outer(torch.arange(max_position, dtype=torch.float64), inv_freq)
    return torch.cat([freqs.cos(), freqs.sin()], -1).to(dtype)


# --- values -----------------------------------------------------------------------------------


def close(a, b, dtype) -> bool:
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    return a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a, b, **tol)


def strided(shape, dtype):
    """A non-contiguous tensor of `shape`, of random values: every other column of a wider
    one."""
    wide = torch.randn(*shape[:-1], shape[-1] * 2, dtype=dtype)
    return wide[..., ::2]


def rotary(g, dtype, is_neox: bool, rot_dim: int, with_key: bool, layout: str) -> bool:
    """One call of rotary_embedding against ref_rotary: 7 tokens, 4 query and 2 key heads of
    head_size 16."""
    head_size, num_heads, num_kv_heads, tokens = 16, 4, 2, 7
    cache = rope_cache(32, rot_dim, dtype)
    positions = torch.randint(0, 32, (tokens,), generator=g)
    if layout == "qkv_slices":
        widths = [num_heads * head_size, num_kv_heads * head_size, num_kv_heads * head_size]
        qkv = torch.randn(tokens, sum(widths), dtype=dtype, generator=g)
        q, k, _ = qkv.split(widths, dim=-1)
    else:
        q = torch.randn(tokens, num_heads, head_size, dtype=dtype, generator=g)
        k = torch.randn(tokens, num_kv_heads, head_size, dtype=dtype, generator=g)
        positions = positions.reshape(1, tokens)
    key = k if with_key else None
    want_q = ref_rotary(positions, q, head_size, cache, is_neox)
    want_k = ref_rotary(positions, key, head_size, cache, is_neox)
    k_before = k.clone()
    torch.ops.myllm.rotary_embedding(positions, q, key, head_size, cache, is_neox)
    if not close(q, want_q, dtype):
        return False
    return close(k, want_k, dtype) if with_key else torch.equal(k, k_before)


def check_values(checks: dict, details: dict) -> None:
    ops = torch.ops.myllm
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)

    def record(name, fn):
        try:
            ok = fn()
            checks[f"values_{name}"] = bool(ok)
        except Exception:
            checks[f"values_{name}"] = False
            details[f"values_{name}"] = fail_text()

    for dtype in (torch.float32, torch.float64):
        tag = str(dtype).removeprefix("torch.")

        def rms_norm(dtype=dtype, contiguous=True):
            x = torch.randn(4, 3, 16, dtype=dtype, generator=g)
            w = torch.randn(16, dtype=dtype, generator=g)
            if not contiguous:
                x = x.transpose(0, 1)
            out = torch.empty_like(x) if contiguous else strided(x.shape, dtype)
            ops.rms_norm(out, x, w, EPS)
            return close(out, ref_rms_norm(x, w, EPS), dtype)

        record(f"rms_norm_{tag}", rms_norm)
        record(f"rms_norm_strided_{tag}", lambda dtype=dtype: rms_norm(dtype, False))

        def fused(dtype=dtype, contiguous=True):
            x = torch.randn(5, 32, dtype=dtype, generator=g)
            r = torch.randn(5, 32, dtype=dtype, generator=g)
            w = torch.randn(32, dtype=dtype, generator=g)
            if not contiguous:
                x, r = strided(x.shape, dtype).copy_(x), strided(r.shape, dtype).copy_(r)
            want_r = x + r
            want_x = ref_rms_norm(want_r, w, EPS)
            ops.fused_add_rms_norm(x, r, w, EPS)
            return close(r, want_r, dtype) and close(x, want_x, dtype)

        record(f"fused_add_rms_norm_{tag}", fused)
        record(f"fused_add_rms_norm_strided_{tag}", lambda dtype=dtype: fused(dtype, False))

        def silu(dtype=dtype, contiguous=True):
            x = torch.randn(3, 5, 2 * 8, dtype=dtype, generator=g)
            out = torch.empty(3, 5, 8, dtype=dtype) if contiguous else strided((3, 5, 8), dtype)
            if not contiguous:
                x = x.transpose(0, 1)
                out = out.transpose(0, 1)
            ops.silu_and_mul(out, x)
            return close(out, ref_silu_and_mul(x), dtype)

        record(f"silu_and_mul_{tag}", silu)
        record(f"silu_and_mul_strided_{tag}", lambda dtype=dtype: silu(dtype, False))

        # rotary_embedding: NeoX and GPT-J, with a key and without (key=None), the whole head
        # rotated and a partial rot_dim, and query and key as vLLM passes them: slices of one
        # qkv tensor (strided), or 3-D [num_tokens, num_heads, head_size].
        for is_neox, rot_dim, with_key, layout in itertools.product(
            (True, False), (16, 8), (True, False), ("qkv_slices", "heads_3d")
        ):
            style = "neox" if is_neox else "gptj"
            name = f"rotary_embedding_{style}_rot{rot_dim}_{'key' if with_key else 'nokey'}"
            record(
                f"{name}_{layout}_{tag}",
                functools.partial(rotary, g, dtype, is_neox, rot_dim, with_key, layout),
            )

    def penalties(contiguous=True):
        logits = torch.randn(3, 20, generator=g) * 4
        if not contiguous:
            logits = strided(logits.shape, torch.float32).copy_(logits)
        prompt = torch.rand(3, 20, generator=g) < 0.3
        output = torch.rand(3, 20, generator=g) < 0.3
        pen = torch.rand(3, generator=g) + 0.5
        want = ref_repetition_penalties(logits, prompt, output, pen)
        untouched = ~(prompt | output)
        before = logits.clone()
        ops.apply_repetition_penalties_(logits, prompt, output, pen)
        return close(logits, want, torch.float32) and torch.equal(
            logits[untouched], before[untouched]
        )

    record("apply_repetition_penalties_float32", penalties)
    record("apply_repetition_penalties_strided_float32", lambda: penalties(False))

    def quant(with_azp, contiguous=True):
        x = torch.randn(4, 16, generator=g) * 20
        # Halves, to see round-half-to-even, and values past int8's range.
        x[0, :6] = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1000.0]) * 0.25
        scale = torch.tensor([0.25])
        azp = torch.tensor([3], dtype=torch.int32) if with_azp else None
        out = torch.empty(4, 16, dtype=torch.int8)
        if not contiguous:
            out = torch.empty(16, 4, dtype=torch.int8).t()
            x = x.t().contiguous().t()
        ops.static_scaled_int8_quant(out, x, scale, azp)
        return torch.equal(out, ref_int8_quant(x, scale, azp))

    record("static_scaled_int8_quant_float32", lambda: quant(False))
    record("static_scaled_int8_quant_azp_float32", lambda: quant(True))
    record("static_scaled_int8_quant_strided_float32", lambda: quant(True, False))


# --- opcheck ----------------------------------------------------------------------------------


def opcheck_samples() -> dict[str, tuple]:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 16, generator=g)
    cache = rope_cache(32, 16, torch.float32)
    positions = torch.randint(0, 32, (5,), generator=g)
    ops = torch.ops.myllm
    return {
        "rms_norm": (ops.rms_norm.default, (torch.empty_like(x), x, torch.randn(16), EPS)),
        "fused_add_rms_norm": (
            ops.fused_add_rms_norm.default,
            (x.clone(), torch.randn(4, 16, generator=g), torch.randn(16), EPS),
        ),
        "rotary_embedding": (
            ops.rotary_embedding.default,
            (
                positions,
                torch.randn(5, 64, generator=g),
                torch.randn(5, 32, generator=g),
                16,
                cache,
                True,
            ),
        ),
        "rotary_embedding_nokey": (
            ops.rotary_embedding.default,
            (positions, torch.randn(5, 64, generator=g), None, 16, cache, False),
        ),
        "silu_and_mul": (ops.silu_and_mul.default, (torch.empty(4, 8), x)),
        "apply_repetition_penalties_": (
            ops.apply_repetition_penalties_.default,
            (
                x.clone(),
                torch.rand(4, 16, generator=g) < 0.5,
                torch.rand(4, 16, generator=g) < 0.5,
                torch.rand(4, generator=g) + 0.5,
            ),
        ),
        "static_scaled_int8_quant": (
            ops.static_scaled_int8_quant.default,
            (
                torch.empty(4, 16, dtype=torch.int8),
                x * 10,
                torch.tensor([0.1]),
                torch.tensor([2], dtype=torch.int32),
            ),
        ),
        "static_scaled_int8_quant_noazp": (
            ops.static_scaled_int8_quant.default,
            (torch.empty(4, 16, dtype=torch.int8), x * 10, torch.tensor([0.1]), None),
        ),
    }


def check_opcheck(checks: dict, details: dict) -> None:
    for name, (op, args) in opcheck_samples().items():
        try:
            results = torch.library.opcheck(op, args, raise_exception=False)
            failed = {k: str(v)[-600:] for k, v in results.items() if v != "SUCCESS"}
            checks[f"opcheck_{name}"] = not failed
            if failed:
                details[f"opcheck_{name}"] = failed
        except Exception:
            checks[f"opcheck_{name}"] = False
            details[f"opcheck_{name}"] = fail_text()


# --- torch.compile ----------------------------------------------------------------------------


def every_op(positions, query, key, cache, x, residual, weight, logits, prompt, output, pen, qin):
    """All six ops in one graph, as vLLM calls them: results into fresh buffers, and the
    graph's inputs written in place (residual, query, key, logits)."""
    ops = torch.ops.myllm
    normed = torch.empty_like(x)
    ops.rms_norm(normed, x, weight, EPS)
    h = normed * 2
    ops.fused_add_rms_norm(h, residual, weight, EPS)
    ops.rotary_embedding(positions, query, key, 16, cache, True)
    act = torch.empty(x.shape[0], x.shape[1] // 2, dtype=x.dtype)
    ops.silu_and_mul(act, h)
    ops.apply_repetition_penalties_(logits, prompt, output, pen)
    q8 = torch.empty(qin.shape, dtype=torch.int8)
    ops.static_scaled_int8_quant(q8, qin, torch.tensor([0.05]), None)
    q8z = torch.empty(qin.shape, dtype=torch.int8)
    ops.static_scaled_int8_quant(
        q8z, qin, torch.tensor([0.05]), torch.tensor([-4], dtype=torch.int32)
    )
    gptj = query.clone()
    ops.rotary_embedding(positions, gptj, None, 16, cache, False)
    return normed, h, act, q8, q8z, gptj


def check_compile(backend: str, checks: dict, details: dict) -> None:
    g = torch.Generator().manual_seed(2)
    positions = torch.randint(0, 32, (6,), generator=g)
    args = (
        positions,
        torch.randn(6, 64, generator=g),
        torch.randn(6, 32, generator=g),
        rope_cache(32, 16, torch.float32),
        torch.randn(6, 32, generator=g),
        torch.randn(6, 32, generator=g),
        torch.randn(32, generator=g),
        torch.randn(6, 50, generator=g) * 3,
        torch.rand(6, 50, generator=g) < 0.3,
        torch.rand(6, 50, generator=g) < 0.3,
        torch.rand(6, generator=g) + 0.5,
        torch.randn(6, 24, generator=g),
    )
    eager_args = [a.clone() for a in args]
    compiled_args = [a.clone() for a in args]
    try:
        want = every_op(*eager_args)
        start = time.monotonic()
        compiled = torch.compile(every_op, fullgraph=True, backend=backend)
        got = compiled(*compiled_args)
        details["compile_seconds"] = round(time.monotonic() - start, 1)
        same_outputs = all(
            w.dtype == o.dtype and torch.allclose(w.double(), o.double(), rtol=1e-5, atol=1e-5)
            for w, o in zip(want, got, strict=True)
        )
        # The inputs the graph wrote in place (residual, query, key, logits) and the rest.
        same_inputs = all(
            torch.allclose(e.double(), c.double(), rtol=1e-5, atol=1e-5)
            for e, c in zip(eager_args, compiled_args, strict=True)
        )
        changed = [
            i
            for i, (a, e) in enumerate(zip(args, eager_args, strict=True))
            if not torch.equal(a, e)
        ]
        checks[f"compile_{backend}_outputs"] = same_outputs
        checks[f"compile_{backend}_mutated_inputs"] = same_inputs and changed == [1, 2, 5, 7]
        if not (same_outputs and same_inputs and changed == [1, 2, 5, 7]):
            details[f"compile_{backend}"] = f"changed inputs {changed}"
    except Exception:
        checks[f"compile_{backend}_outputs"] = False
        details[f"compile_{backend}"] = fail_text()


def main(argv: list[str]) -> int:
    library, schemas = argv[0], json.loads(argv[1])
    backend = argv[2] if len(argv) > 2 else "inductor"
    checks: dict[str, bool] = {}
    details: dict = {}
    torch.ops.load_library(library)
    check_schemas(schemas, checks, details)
    check_values(checks, details)
    check_opcheck(checks, details)
    check_compile(backend, checks, details)
    print(json.dumps({"checks": checks, "details": details}, sort_keys=True))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
