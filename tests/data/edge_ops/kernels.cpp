// CPU kernels of ops.yaml for aten_codegen's default ABI (bound to the build's torch release),
// against the declarations of the generated edgeops/ops/<op>_native.h.
#include <ATen/ATen.h>

#include "edgeops/ops/maybe_scale_native.h"
#include "edgeops/ops/opt_count_native.h"

namespace at::native {

// x * 2; key, when given, is tripled in place (the schema's `Tensor(a!)? key`). The optional is
// const, but the tensor it holds shares key's storage, so mul_ on a copy of it writes key.
at::Tensor maybe_scale(const at::Tensor& x, const ::std::optional<at::Tensor>& key) {
  if (key.has_value()) {
    at::Tensor k = *key;
    k.mul_(3);
  }
  return x * 2;
}

// n, or -1 when n is None (`int?? n`, which torch reads as `int? n`).
int64_t opt_count(const at::Tensor& self, ::std::optional<int64_t> n) {
  (void)self;
  return n.value_or(-1);
}

}  // namespace at::native
