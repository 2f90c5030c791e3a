// CPU kernels for tests/data/custom_ops/ops.yaml, declared by the generated
// myops/ops/<op>_native.h headers. Written by hand, as a user would.
#include <ATen/ATen.h>

#include "myops/ops/scale_native.h"
#include "myops/ops/shift_native.h"

namespace at::native {

at::Tensor scale_cpu(const at::Tensor& self, double factor) {
  return self * factor;
}

at::Tensor& scale_cpu_(at::Tensor& self, double factor) {
  return self.mul_(factor);
}

at::Tensor shift_cpu_symint(const at::Tensor& self, const at::Scalar& amount, c10::SymInt repeat) {
  return self + amount.toDouble() * repeat.guard_int(__FILE__, __LINE__);
}

at::Tensor shift_composite(const at::Tensor& self, const at::Scalar& amount, int64_t repeat) {
  return self.add(amount.toDouble() * repeat);
}

}  // namespace at::native
