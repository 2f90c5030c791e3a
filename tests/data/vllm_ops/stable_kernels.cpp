// CPU kernels of ops.yaml for aten_codegen(abi = "stable"): vLLM's operators
// (csrc/torch_bindings.cpp) in torch's stable types only, against the declarations of the
// generated myllm/ops/<op>_native.h. Loops over float32 or float64 data: each input is read
// through a contiguous copy (atengen::stable::contiguous returns the tensor itself when it is
// contiguous already), and each `Tensor!` argument is written in place, or through a contiguous
// copy then copied back when it is strided.
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include <torch/headeronly/util/Exception.h>

#include "atengen/stable/ops/contiguous.h"
#include "atengen/stable/ops/copy.h"
#include "atengen/stable/ops/empty_like.h"
#include "atengen/stable/ops/logical_or.h"
#include "atengen/stable/ops/to.h"
#include "myllm/ops/apply_repetition_penalties__native.h"
#include "myllm/ops/fused_add_rms_norm_native.h"
#include "myllm/ops/rms_norm_native.h"
#include "myllm/ops/rotary_embedding_native.h"
#include "myllm/ops/silu_and_mul_native.h"
#include "myllm/ops/static_scaled_int8_quant_native.h"

namespace myllm {

namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// f.template operator()<scalar_t>() for a float32 or float64 dtype.
template <typename F>
void on_float_dtype(ScalarType dtype, const char* op, F&& f) {
  if (dtype == ScalarType::Float) {
    f.template operator()<float>();
  } else if (dtype == ScalarType::Double) {
    f.template operator()<double>();
  } else {
    STD_TORCH_CHECK(false, op, ": float32 or float64 tensors only");
  }
}

Tensor as_dtype(const Tensor& t, ScalarType dtype) {
  Tensor c = atengen::stable::contiguous(t);
  return t.scalar_type() == dtype ? c : atengen::stable::to(c, dtype, false, false, std::nullopt);
}

// A tensor to write `target`'s values into: itself when contiguous, else a contiguous copy
// (with its values) that finish() copies back.
struct Writable {
  Tensor target;
  Tensor work;
  explicit Writable(const Tensor& t)
      : target(t), work(t.is_contiguous() ? t : atengen::stable::contiguous(t)) {}
  template <typename T>
  T* data() {
    return static_cast<T*>(work.mutable_data_ptr());
  }
  void finish() {
    if (!target.is_contiguous()) {
      atengen::stable::copy_(target, work);
    }
  }
};

int64_t last_size(const Tensor& t) {
  STD_TORCH_CHECK(t.dim() >= 1, "a tensor of at least one dimension");
  return t.size(t.dim() - 1);
}

// x / sqrt(mean(x^2) + epsilon) * w over the rows of x (hidden values each), into out.
template <typename T>
void rms_rows(const T* x, const T* w, T* out, int64_t rows, int64_t hidden, double epsilon) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * hidden;
    T sum = 0;
    for (int64_t i = 0; i < hidden; ++i) {
      sum += xr[i] * xr[i];
    }
    const T inv = T(1) / std::sqrt(sum / static_cast<T>(hidden) + static_cast<T>(epsilon));
    for (int64_t i = 0; i < hidden; ++i) {
      out[r * hidden + i] = xr[i] * inv * w[i];
    }
  }
}

void check_weight(const Tensor& weight, int64_t hidden, const char* op) {
  STD_TORCH_CHECK(weight.dim() == 1 && weight.size(0) == hidden, op,
                  ": weight must be [hidden_size]");
}

// One tensor (query or key) rotated in place: num_tokens rows of heads of head_size values,
// the first rot_dim of each head rotated by the row's cos and sin (rot_dim / 2 each).
template <typename T>
void rotate(const Tensor& t, const int64_t* pos, const T* cache, int64_t num_tokens,
            int64_t head_size, int64_t rot_dim, bool is_neox) {
  STD_TORCH_CHECK(t.numel() % (num_tokens * head_size) == 0,
                  "rotary_embedding: query/key size is not num_tokens * num_heads * head_size");
  Writable out(t);
  T* data = out.data<T>();
  const int64_t heads = t.numel() / (num_tokens * head_size);
  const int64_t half = rot_dim / 2;
  for (int64_t tok = 0; tok < num_tokens; ++tok) {
    const T* cos = cache + pos[tok] * rot_dim;
    const T* sin = cos + half;
    for (int64_t h = 0; h < heads; ++h) {
      T* head = data + (tok * heads + h) * head_size;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t xi = is_neox ? i : 2 * i;
        const int64_t yi = is_neox ? half + i : 2 * i + 1;
        const T x = head[xi];
        const T y = head[yi];
        head[xi] = x * cos[i] - y * sin[i];
        head[yi] = y * cos[i] + x * sin[i];
      }
    }
  }
  out.finish();
}

}  // namespace

void rms_norm(Tensor& result, const Tensor& input, const Tensor& weight, double epsilon) {
  const ScalarType dtype = input.scalar_type();
  STD_TORCH_CHECK(result.scalar_type() == dtype, "rms_norm: result and input of one dtype");
  const int64_t hidden = last_size(input);
  check_weight(weight, hidden, "rms_norm");
  STD_TORCH_CHECK(result.numel() == input.numel(), "rms_norm: result and input of one shape");
  on_float_dtype(dtype, "rms_norm", [&]<typename T>() {
    Tensor x = atengen::stable::contiguous(input);
    Tensor w = as_dtype(weight, dtype);
    Tensor y = atengen::stable::empty_like(x);
    rms_rows<T>(static_cast<const T*>(x.const_data_ptr()), static_cast<const T*>(w.const_data_ptr()),
                static_cast<T*>(y.mutable_data_ptr()), x.numel() / hidden, hidden, epsilon);
    atengen::stable::copy_(result, y);
  });
}

void fused_add_rms_norm(Tensor& input, Tensor& residual, const Tensor& weight, double epsilon) {
  const ScalarType dtype = input.scalar_type();
  STD_TORCH_CHECK(residual.scalar_type() == dtype && residual.numel() == input.numel(),
                  "fused_add_rms_norm: input and residual of one dtype and shape");
  const int64_t hidden = last_size(input);
  check_weight(weight, hidden, "fused_add_rms_norm");
  on_float_dtype(dtype, "fused_add_rms_norm", [&]<typename T>() {
    Writable res(residual);
    Writable in(input);
    Tensor w = as_dtype(weight, dtype);
    T* r = res.data<T>();
    T* x = in.data<T>();
    const int64_t n = input.numel();
    for (int64_t i = 0; i < n; ++i) {
      r[i] += x[i];
    }
    rms_rows<T>(r, static_cast<const T*>(w.const_data_ptr()), x, n / hidden, hidden, epsilon);
    res.finish();
    in.finish();
  });
}

void rotary_embedding(const Tensor& positions, Tensor& query, const std::optional<Tensor>& key,
                      int64_t head_size, const Tensor& cos_sin_cache, bool is_neox) {
  const ScalarType dtype = query.scalar_type();
  STD_TORCH_CHECK(cos_sin_cache.dim() == 2 && cos_sin_cache.size(1) % 2 == 0,
                  "rotary_embedding: cos_sin_cache must be [max_position, rot_dim]");
  const int64_t rot_dim = cos_sin_cache.size(1);
  STD_TORCH_CHECK(rot_dim <= head_size, "rotary_embedding: rot_dim > head_size");
  STD_TORCH_CHECK(!key.has_value() || key->scalar_type() == dtype,
                  "rotary_embedding: query and key of one dtype");
  const int64_t num_tokens = positions.numel();
  Tensor pos = as_dtype(positions, ScalarType::Long);
  const int64_t* p = static_cast<const int64_t*>(pos.const_data_ptr());
  for (int64_t i = 0; i < num_tokens; ++i) {
    STD_TORCH_CHECK(p[i] >= 0 && p[i] < cos_sin_cache.size(0),
                    "rotary_embedding: position out of cos_sin_cache");
  }
  on_float_dtype(dtype, "rotary_embedding", [&]<typename T>() {
    Tensor cache = as_dtype(cos_sin_cache, dtype);
    const T* c = static_cast<const T*>(cache.const_data_ptr());
    rotate<T>(query, p, c, num_tokens, head_size, rot_dim, is_neox);
    if (key.has_value()) {
      rotate<T>(*key, p, c, num_tokens, head_size, rot_dim, is_neox);
    }
  });
}

void silu_and_mul(Tensor& result, const Tensor& input) {
  const ScalarType dtype = input.scalar_type();
  STD_TORCH_CHECK(result.scalar_type() == dtype, "silu_and_mul: result and input of one dtype");
  const int64_t d = last_size(input) / 2;
  STD_TORCH_CHECK(result.numel() * 2 == input.numel() && last_size(result) == d,
                  "silu_and_mul: result must be input's shape with half its last dimension");
  on_float_dtype(dtype, "silu_and_mul", [&]<typename T>() {
    Tensor x = atengen::stable::contiguous(input);
    Writable out(result);
    const T* xs = static_cast<const T*>(x.const_data_ptr());
    T* o = out.data<T>();
    const int64_t rows = result.numel() / d;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < d; ++i) {
        const T a = xs[r * 2 * d + i];
        o[r * d + i] = a / (T(1) + std::exp(-a)) * xs[r * 2 * d + d + i];
      }
    }
    out.finish();
  });
}

void apply_repetition_penalties_(Tensor& logits, const Tensor& prompt_mask,
                                 const Tensor& output_mask, const Tensor& repetition_penalties) {
  const ScalarType dtype = logits.scalar_type();
  STD_TORCH_CHECK(logits.dim() == 2, "apply_repetition_penalties_: logits must be [num_seqs, vocab]");
  const int64_t seqs = logits.size(0);
  const int64_t vocab = logits.size(1);
  STD_TORCH_CHECK(prompt_mask.numel() == logits.numel() && output_mask.numel() == logits.numel() &&
                      repetition_penalties.numel() == seqs,
                  "apply_repetition_penalties_: masks [num_seqs, vocab], penalties [num_seqs]");
  on_float_dtype(dtype, "apply_repetition_penalties_", [&]<typename T>() {
    Tensor seen = as_dtype(atengen::stable::logical_or(prompt_mask, output_mask), ScalarType::Bool);
    Tensor pen = as_dtype(repetition_penalties, dtype);
    const bool* m = static_cast<const bool*>(seen.const_data_ptr());
    const T* p = static_cast<const T*>(pen.const_data_ptr());
    Writable out(logits);
    T* l = out.data<T>();
    for (int64_t s = 0; s < seqs; ++s) {
      for (int64_t v = 0; v < vocab; ++v) {
        const int64_t i = s * vocab + v;
        if (m[i]) {
          l[i] = l[i] > 0 ? l[i] / p[s] : l[i] * p[s];
        }
      }
    }
    out.finish();
  });
}

void static_scaled_int8_quant(Tensor& result, const Tensor& input, const Tensor& scale,
                              const std::optional<Tensor>& azp) {
  STD_TORCH_CHECK(result.scalar_type() == ScalarType::Char,
                  "static_scaled_int8_quant: result must be int8");
  STD_TORCH_CHECK(result.numel() == input.numel(), "static_scaled_int8_quant: one shape");
  STD_TORCH_CHECK(scale.numel() == 1, "static_scaled_int8_quant: one scale");
  STD_TORCH_CHECK(!azp.has_value() || azp->numel() == 1, "static_scaled_int8_quant: one azp");
  // vLLM's float_to_int32_rn (round half to even, in float32), then the zero point, saturated.
  Tensor x = as_dtype(input, ScalarType::Float);
  const float s = *static_cast<const float*>(as_dtype(scale, ScalarType::Float).const_data_ptr());
  int32_t zero = 0;
  if (azp.has_value()) {
    zero = *static_cast<const int32_t*>(as_dtype(*azp, ScalarType::Int).const_data_ptr());
  }
  const float* xs = static_cast<const float*>(x.const_data_ptr());
  Writable out(result);
  int8_t* q = out.data<int8_t>();
  for (int64_t i = 0; i < input.numel(); ++i) {
    // Saturated to int32 first, as the CUDA intrinsic __float2int_rn is.
    const float r = std::fmin(std::fmax(std::nearbyint(xs[i] / s), -2147483648.0f), 2147483520.0f);
    const int64_t v = static_cast<int64_t>(r) + zero;
    q[i] = static_cast<int8_t>(v < -128 ? -128 : (v > 127 ? 127 : v));
  }
  out.finish();
}

}  // namespace myllm
