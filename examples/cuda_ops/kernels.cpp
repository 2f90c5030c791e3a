// The CPU kernel of ops.yaml, declared by the generated "cudaops/ops/<op>_native.h".
#include <ATen/ATen.h>

#include "cudaops/ops/mul_add_scalar_native.h"

namespace at::native {

at::Tensor mul_add_scalar_cpu(const at::Tensor& x, const at::Tensor& y, double alpha) {
  return x * y + alpha;
}

}  // namespace at::native
