// The CPU kernels of ops.yaml, in torch's stable types only: this file is compiled with
// -DTORCH_TARGET_VERSION=0x020B000000000000, under which <ATen/ATen.h> is an #error, and the
// library links nothing of torch but its C shim.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <torch/headeronly/util/Exception.h>

#include "atengen/stable/ops/add.h"
#include "atengen/stable/ops/cat.h"
#include "atengen/stable/ops/contiguous.h"
#include "atengen/stable/ops/copy.h"
#include "atengen/stable/ops/empty_like.h"
#include "atengen/stable/ops/full.h"
#include "atengen/stable/ops/full_like.h"
#include "atengen/stable/ops/mul.h"
#include "atengen/stable/ops/scalar_tensor.h"
#include "atengen/stable/ops/sub.h"
#include "stableops/ops/clamp_abs_inplace_native.h"
#include "stableops/ops/mulcat_native.h"
#include "stableops/ops/scalar_calls_native.h"
#include "stableops/ops/scaled_add_native.h"

namespace stableops {

namespace {

void check_float_tensors(const torch::stable::Tensor& self, const torch::stable::Tensor& other) {
  STD_TORCH_CHECK(
      self.scalar_type() == torch::headeronly::ScalarType::Float &&
          other.scalar_type() == torch::headeronly::ScalarType::Float,
      "scaled_add: float32 tensors only");
  STD_TORCH_CHECK(self.dim() == other.dim(), "scaled_add: self and other must have one shape");
  for (int64_t d = 0; d < self.dim(); ++d) {
    STD_TORCH_CHECK(self.size(d) == other.size(d), "scaled_add: self and other must have one shape");
  }
}

}  // namespace

torch::stable::Tensor scaled_add_cpu(
    const torch::stable::Tensor& self, const torch::stable::Tensor& other, double alpha) {
  check_float_tensors(self, other);
  // Through the call API: aten::contiguous and aten::empty_like of the running torch.
  torch::stable::Tensor a = atengen::stable::contiguous(self);
  torch::stable::Tensor b = atengen::stable::contiguous(other);
  torch::stable::Tensor out = atengen::stable::empty_like(a);
  const float* x = static_cast<const float*>(a.const_data_ptr());
  const float* y = static_cast<const float*>(b.const_data_ptr());
  float* z = static_cast<float*>(out.mutable_data_ptr());
  for (int64_t i = 0; i < a.numel(); ++i) {
    z[i] = x[i] + static_cast<float>(alpha) * y[i];
  }
  return out;
}

torch::stable::Tensor mulcat(
    const torch::stable::Tensor& a, const torch::stable::Tensor& b, int64_t dim) {
  return atengen::stable::cat({atengen::stable::mul(a, b), a}, dim);
}

void clamp_abs_inplace(torch::stable::Tensor& self, double bound) {
  STD_TORCH_CHECK(
      self.scalar_type() == torch::headeronly::ScalarType::Float, "clamp_abs_inplace: float32 only");
  STD_TORCH_CHECK(bound >= 0, "clamp_abs_inplace: bound must not be negative, got ", bound);
  // Written in place: a strided self is walked through a contiguous copy, then copied back.
  const bool contiguous = self.is_contiguous();
  torch::stable::Tensor work = contiguous ? self : atengen::stable::contiguous(self);
  float* x = static_cast<float*>(work.mutable_data_ptr());
  const float b = static_cast<float>(bound);
  for (int64_t i = 0; i < work.numel(); ++i) {
    x[i] = std::clamp(x[i], -b, b);
  }
  if (!contiguous) {
    atengen::stable::copy_(self, work);
  }
}

std::vector<torch::stable::Tensor> scalar_calls(
    const torch::stable::Tensor& a, const torch::stable::Tensor& b, double alpha) {
  namespace ops = atengen::stable;
  std::vector<int64_t> sizes(a.sizes().begin(), a.sizes().end());
  return {
      ops::add(a, b, alpha),  // aten::add.Tensor: a Scalar (double) alpha
      ops::sub(a, b, alpha),  // aten::sub.Tensor
      ops::mul(a, alpha),  // aten::mul.Scalar
      ops::full(sizes, alpha),  // a double: torch's default dtype
      ops::full(sizes, int64_t{3}),  // an integer: int64
      ops::full_like(a, 7),  // an integer, a's dtype
      ops::full_like(a, true, torch::headeronly::ScalarType::Bool),
      ops::scalar_tensor(alpha),
      ops::scalar_tensor(-2, torch::headeronly::ScalarType::Long),
  };
}

}  // namespace stableops
