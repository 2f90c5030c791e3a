// CPU kernels of stable_ops.yaml for aten_codegen(abi = "stable"), in torch's stable types only,
// against the declarations of the generated edgestable/ops/<op>_native.h.
#include <cstdint>
#include <optional>

#include "edgestable/ops/f_native.h"
#include "edgestable/ops/g_native.h"

namespace edgestable {

// x + self.numel(), or -1 + self.numel() when x is None.
int64_t f(const torch::stable::Tensor& self, const std::optional<int64_t>& x) {
  return x.value_or(-1) + self.numel();
}

// The length of sizes, or -1 when sizes is None.
int64_t g(const torch::stable::Tensor& self,
          std::optional<torch::headeronly::HeaderOnlyArrayRef<int64_t>> sizes) {
  (void)self;
  return sizes.has_value() ? static_cast<int64_t>(sizes->size()) : -1;
}

}  // namespace edgestable
