// CPU kernels of tests/data/fzops/ops.yaml, written as a library author would, against the
// generated declarations in fzops/ops/<op>_native.h. The functional and out= variants of
// bump_ and track, and head_copy, are generated.
#include <ATen/ATen.h>

#include "fzops/ops/axpy_native.h"
#include "fzops/ops/bump_native.h"
#include "fzops/ops/head_native.h"
#include "fzops/ops/track_native.h"

namespace at::native {

at::Tensor& bump_cpu_(at::Tensor& self, const at::Scalar& amount) {
  return self.add_(amount);
}

// Decays `total` and adds the sum of `input`, counts the call, and returns the running mean
// and the decayed input.
std::tuple<at::Tensor, at::Tensor> track_cpu(
    const at::Tensor& input, at::Tensor& total, at::Tensor& count, double decay) {
  total.mul_(decay).add_(input.sum());
  count.add_(1);
  return std::make_tuple(total / count, input * decay);
}

at::Tensor axpy_cpu(const at::Tensor& x, const at::Tensor& y, double alpha) {
  return y + x * alpha;
}

at::Tensor& axpy_out_cpu(const at::Tensor& x, const at::Tensor& y, double alpha, at::Tensor& out) {
  return at::add_out(out, y, x, alpha);
}

// The first `length` rows of `self`: a view.
at::Tensor head(const at::Tensor& self, int64_t length) {
  return self.narrow(0, 0, length);
}

}  // namespace at::native
