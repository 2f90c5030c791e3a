// CPU kernels of ops.yaml for aten_codegen's default ABI (bound to the build's torch release),
// against the declarations of the generated edgeops/ops/<op>_native.h.
#include <ATen/ATen.h>

#include "edgeops/ops/count_keys_native.h"
#include "edgeops/ops/maybe_scale_native.h"
#include "edgeops/ops/maybe_self_native.h"
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

// The number of keys, and of `more` when given (-1 for None), as keys * 100 + more, and the
// first key's length in the thousands: the strings themselves arrive.
int64_t count_keys(
    const at::Tensor& self, const c10::List<::std::string>& keys,
    const ::std::optional<c10::List<::std::string>>& more) {
  (void)self;
  const int64_t first = keys.size() ? static_cast<int64_t>(keys.get(0).size()) : 0;
  const int64_t rest = more.has_value() ? static_cast<int64_t>(more->size()) : -1;
  return first * 1000 + static_cast<int64_t>(keys.size()) * 100 + rest;
}

// self incremented in place and returned, or None (`-> Tensor(a!)?`).
::std::optional<at::Tensor> maybe_self(at::Tensor& self, bool give) {
  self.add_(1);
  if (!give) {
    return ::std::nullopt;
  }
  return self;
}

}  // namespace at::native
