// TORCH_LIBRARY_IMPL behind the torch release guard
// (atengen/torch_release_guard.h), for the generated sources that register
// through torch/library.h directly (backend and autograd kernels): in a
// process running another torch release, the torch::Library is never made.
// Schema sources use the light ATENGEN_LIBRARY_FRAGMENT of atengen/runtime.h.
#pragma once

#include <torch/library.h>

#include <cstdint>
#include <optional>

#include "atengen/torch_release_guard.h"

namespace atengen {

// torch::detail::TorchLibraryInit, made only when the release matches. Hidden
// (see torch_release_guard.h): with RTLD_GLOBAL, an exported inline
// constructor of another library could run in this library's place.
class __attribute__((visibility("hidden"))) GuardedLibraryInit {
 public:
  GuardedLibraryInit(
      torch::Library::Kind kind,
      void (*init)(torch::Library&),
      const char* ns,
      std::optional<c10::DispatchKey> key,
      const char* file,
      uint32_t line) {
    if (torch_release_matches()) {
      init_.emplace(kind, init, ns, key, file, line);
    }
  }

 private:
  std::optional<torch::detail::TorchLibraryInit> init_;
};

}  // namespace atengen

#define ATENGEN_TORCH_LIBRARY_IMPL(ns, k, m) ATENGEN_TORCH_LIBRARY_IMPL_(ns, k, m, C10_UID)
#define ATENGEN_TORCH_LIBRARY_IMPL_(ns, k, m, uid)                                           \
  static void C10_CONCATENATE(ATENGEN_TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(           \
      torch::Library&);                                                                      \
  static const ::atengen::GuardedLibraryInit C10_CONCATENATE(                                \
      ATENGEN_TORCH_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                            \
      torch::Library::IMPL, &C10_CONCATENATE(ATENGEN_TORCH_LIBRARY_IMPL_init_##ns##_##k##_,  \
                                             uid),                                           \
      C10_STRINGIZE(ns), std::make_optional(c10::DispatchKey::k), __FILE__, __LINE__);       \
  void C10_CONCATENATE(ATENGEN_TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(torch::Library & m)
