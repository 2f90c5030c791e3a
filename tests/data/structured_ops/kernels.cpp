// The structured_ops library's kernels: only meta() and impl() bodies, against the classes
// declared in the generated structured_ops/ops/<op>_native.h. Every functional, in-place,
// out= and Meta kernel is generated around them.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/WrapDimUtils.h>

#include "structured_ops/ops/muladd_native.h"
#include "structured_ops/ops/sumsq_native.h"

// TensorIterator computes the broadcast shape and the promoted dtype of self and other, and
// sets (or, for in-place and out=, checks and resizes) the output.
STRUCTURED_OPS_META_FUNC(muladd)
(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  build_borrowing_binary_op(maybe_get_output(), self, other);
}

// The reduced shape; `dim` is wrapped once here and handed to impl().
STRUCTURED_OPS_PRECOMPUTE_META_FUNC(sumsq_dim)
(const at::Tensor& self, int64_t dim, bool keepdim) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "sumsq: expected a floating point tensor, got ",
              self.scalar_type());
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) {
      sizes[wrapped] = 1;
    } else {
      sizes.erase(sizes.begin() + wrapped);
    }
  }
  set_output_raw_strided(0, sizes, {}, self.options());
  return STRUCTURED_OPS_PRECOMPUTE_STRUCT(sumsq_dim)().set_wrapped_dim(wrapped);
}

namespace at::native {

// The iterator meta() built (this object) walks out, self and other, broadcast and in the
// common dtype; out may alias self (muladd_).
STRUCTURED_OPS_IMPL_FUNC(muladd_out)
(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, const at::Tensor& out) {
  AT_DISPATCH_ALL_TYPES(common_dtype(), "muladd", [&] {
    const auto a = alpha.to<scalar_t>();
    for_each([&](char** data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const auto x = *reinterpret_cast<const scalar_t*>(data[1] + i * strides[1]);
        const auto y = *reinterpret_cast<const scalar_t*>(data[2] + i * strides[2]);
        *reinterpret_cast<scalar_t*>(data[0] + i * strides[0]) = x * y + a;
      }
    });
  });
  // An out= tensor of another dtype got a temporary in the common dtype: copy it back.
  cast_outputs();
}

// Written with ATen ops, which run below autograd as aten's own kernels do: the op has no
// derivative, and its result must not look differentiable.
STRUCTURED_OPS_IMPL_FUNC(sumsq_out)
(const at::Tensor& self, int64_t wrapped_dim, bool keepdim, const at::Tensor& out) {
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  at::sum_out(const_cast<at::Tensor&>(out), self * self, wrapped_dim, keepdim);
}

}  // namespace at::native
