// CPU kernels of ops.yaml for aten_codegen(abi = "release"): vLLM's operators
// (csrc/torch_bindings.cpp) written with at:: operators, for any floating dtype and any strides,
// against the declarations of the generated myllm/ops/<op>_native.h. Each writes its result into
// the arguments the schema marks `Tensor!`, through copy_ (which takes any strides), and returns
// nothing, as vLLM's CUDA kernels do.
#include <ATen/ATen.h>

#include "myllm/ops/apply_repetition_penalties__native.h"
#include "myllm/ops/fused_add_rms_norm_native.h"
#include "myllm/ops/rms_norm_native.h"
#include "myllm/ops/rotary_embedding_native.h"
#include "myllm/ops/silu_and_mul_native.h"
#include "myllm/ops/static_scaled_int8_quant_native.h"

namespace at::native {

namespace {

// x / sqrt(mean(x^2, -1) + epsilon) * weight, in x's dtype.
at::Tensor rms(const at::Tensor& x, const at::Tensor& weight, double epsilon) {
  TORCH_CHECK(x.is_floating_point(), "rms_norm: a floating input, got ", x.scalar_type());
  TORCH_CHECK(
      weight.dim() == 1 && weight.size(0) == x.size(-1),
      "rms_norm: weight must be [hidden_size]");
  auto variance = x.pow(2).mean(-1, /*keepdim=*/true);
  return x * at::rsqrt(variance + epsilon) * weight.to(x.scalar_type());
}

// One tensor (query or key) rotated in place: [num_tokens, ..., num_heads * head_size] or
// [..., num_heads, head_size], the first rot_dim of each head's head_size rotated.
void rotate(at::Tensor& t, const at::Tensor& cos, const at::Tensor& sin, int64_t num_tokens,
            int64_t head_size, bool is_neox) {
  TORCH_CHECK(
      t.numel() % (num_tokens * head_size) == 0,
      "rotary_embedding: query/key size is not num_tokens * num_heads * head_size");
  const int64_t rot_dim = 2 * cos.size(-1);
  TORCH_CHECK(rot_dim <= head_size, "rotary_embedding: rot_dim ", rot_dim, " > head_size");
  auto heads = t.reshape({num_tokens, -1, head_size});
  auto rot = heads.narrow(-1, 0, rot_dim);
  auto c = cos.to(t.scalar_type()).unsqueeze(1);  // [num_tokens, 1, rot_dim / 2]
  auto s = sin.to(t.scalar_type()).unsqueeze(1);
  at::Tensor x1, x2;
  if (is_neox) {  // GPT-NeoX: the two halves of rot_dim
    x1 = rot.narrow(-1, 0, rot_dim / 2);
    x2 = rot.narrow(-1, rot_dim / 2, rot_dim / 2);
  } else {  // GPT-J: even and odd elements
    x1 = rot.slice(-1, 0, rot_dim, 2);
    x2 = rot.slice(-1, 1, rot_dim, 2);
  }
  auto o1 = x1 * c - x2 * s;
  auto o2 = x2 * c + x1 * s;
  auto rotated = is_neox ? at::cat({o1, o2}, -1) : at::stack({o1, o2}, -1).flatten(-2);
  auto out = at::cat({rotated, heads.narrow(-1, rot_dim, head_size - rot_dim)}, -1);
  t.copy_(out.reshape(t.sizes()));
}

}  // namespace

void rms_norm(at::Tensor& result, const at::Tensor& input, const at::Tensor& weight,
              double epsilon) {
  result.copy_(rms(input, weight, epsilon));
}

void fused_add_rms_norm(at::Tensor& input, at::Tensor& residual, const at::Tensor& weight,
                        double epsilon) {
  residual.add_(input);
  input.copy_(rms(residual, weight, epsilon));
}

void rotary_embedding(const at::Tensor& positions, at::Tensor& query,
                      const ::std::optional<at::Tensor>& key, int64_t head_size,
                      const at::Tensor& cos_sin_cache, bool is_neox) {
  TORCH_CHECK(cos_sin_cache.dim() == 2 && cos_sin_cache.size(1) % 2 == 0,
              "rotary_embedding: cos_sin_cache must be [max_position, rot_dim]");
  const int64_t num_tokens = positions.numel();
  const int64_t half = cos_sin_cache.size(1) / 2;
  auto cache = cos_sin_cache.index_select(0, positions.reshape({-1}).to(at::kLong));
  auto cos = cache.narrow(1, 0, half);
  auto sin = cache.narrow(1, half, half);
  rotate(query, cos, sin, num_tokens, head_size, is_neox);
  if (key.has_value()) {
    // The optional Tensor!? is written through a copy of its handle: the same TensorImpl.
    at::Tensor k = *key;
    rotate(k, cos, sin, num_tokens, head_size, is_neox);
  }
}

void silu_and_mul(at::Tensor& result, const at::Tensor& input) {
  const int64_t d = input.size(-1) / 2;
  result.copy_(at::silu(input.narrow(-1, 0, d)) * input.narrow(-1, d, d));
}

void apply_repetition_penalties_(at::Tensor& logits, const at::Tensor& prompt_mask,
                                 const at::Tensor& output_mask,
                                 const at::Tensor& repetition_penalties) {
  TORCH_CHECK(logits.dim() == 2, "apply_repetition_penalties_: logits must be [num_seqs, vocab]");
  auto penalties = repetition_penalties.to(logits.scalar_type()).unsqueeze(1);
  auto seen = at::logical_or(prompt_mask, output_mask);
  auto penalized = at::where(logits > 0, logits / penalties, logits * penalties);
  logits.copy_(at::where(seen, penalized, logits));
}

void static_scaled_int8_quant(at::Tensor& result, const at::Tensor& input,
                              const at::Tensor& scale, const ::std::optional<at::Tensor>& azp) {
  TORCH_CHECK(result.scalar_type() == at::kChar, "static_scaled_int8_quant: result must be int8");
  TORCH_CHECK(scale.numel() == 1, "static_scaled_int8_quant: one scale");
  // vLLM's float_to_int32_rn: round half to even (nearbyint), in float32.
  auto q = at::round(input.to(at::kFloat) / scale.to(at::kFloat).reshape({})).to(at::kInt);
  if (azp.has_value()) {
    TORCH_CHECK(azp->numel() == 1, "static_scaled_int8_quant: one azp");
    q = q + azp->to(at::kInt).reshape({});
  }
  result.copy_(q.clamp(-128, 127));
}

}  // namespace at::native
